#!/usr/bin/env python3
"""Fails when a target imports a module that Package.swift does not declare as its dependency.

SwiftPM builds a module a target reaches only transitively, and `import X` then compiles: until
the target in between drops X, or a clean build orders the modules differently. Each target's
imports must be among its own `dependencies`, as the compiler's
`--explicit-target-dependency-import-check error` would say.

Usage: check-target-imports.py [PACKAGE_DIR]   (default: the package root, this script's parent)
Prints `file:line: TARGET imports X, not among its dependencies in Package.swift` for each hit
and exits 1 if there was any.

Package.swift is read as text, not evaluated: each `.target(`, `.executableTarget(` and
`.testTarget(` call gives a name, an optional `path:` and `dependencies: [...]`, where a string
(`"StowageCore"`), `.target(name:)`, `.byName(name:)` or `.product(name:package:)` declares the
module of that name (a product of our dependencies is named after its module). Files are found
under `path:`, else Sources/NAME (Tests/NAME for a test target). The toolchain's own modules
(Foundation, Glibc, Darwin, Synchronization, Testing, …) need no declaration.
"""

from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checklib  # noqa: E402

check_portability = checklib.load("check-portability.py")
Finding = checklib.Finding

# Modules of the toolchain and the platforms, which no Package.swift declares.
SYSTEM_MODULES = frozenset(
    (
        "Swift _Concurrency _StringProcessing RegexBuilder Observation Distributed Synchronization "
        "Foundation FoundationEssentials FoundationInternationalization FoundationNetworking FoundationXML "
        "Dispatch Glibc Musl Bionic Darwin Android WinSDK ucrt CRT os XCTest Testing "
        "CoreFoundation ObjectiveC Security System SystemConfiguration Network CoreServices UIKit AppKit "
        "WatchKit UniformTypeIdentifiers BackgroundTasks Combine CryptoKit"
    ).split()
)

TARGET_CALL = re.compile(r"\.(target|executableTarget|testTarget)\s*\(")
IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_]\w*)"
)


class Target(NamedTuple):
    name: str
    kind: str
    path: str
    dependencies: frozenset[str]


def without_comments(text: str) -> str:
    """Package.swift with its comments blanked, line breaks kept."""
    return "\n".join(line for _, line, _ in check_portability.code_lines(text))


def balanced(text: str, start: int, opening: str, closing: str) -> str:
    """The text after `text[start]` (an `opening` bracket) up to its matching `closing` one."""
    depth = 0
    in_string = False
    for index in range(start, len(text)):
        character = text[index]
        if character == '"' and text[index - 1] != "\\":
            in_string = not in_string
        elif not in_string and character == opening:
            depth += 1
        elif not in_string and character == closing:
            depth -= 1
            if depth == 0:
                return text[start + 1 : index]
    raise ValueError(f"unbalanced {opening}{closing} from offset {start}")


def top_level_argument(arguments: str, label: str) -> str | None:
    """The value text of `label:` among `arguments`, at the call's own nesting level."""
    depth = 0
    in_string = False
    for index, character in enumerate(arguments):
        if character == '"' and (index == 0 or arguments[index - 1] != "\\"):
            in_string = not in_string
        elif in_string:
            continue
        elif character in "([":
            depth += 1
        elif character in ")]":
            depth -= 1
        elif depth == 0 and re.match(rf"(?<!\w){label}\s*:", arguments[index:]) and (
            index == 0 or not (arguments[index - 1].isalnum() or arguments[index - 1] == "_")
        ):
            rest = arguments[index:].split(":", 1)[1].lstrip()
            offset = len(arguments) - len(rest)
            if rest.startswith("["):
                return "[" + balanced(arguments, offset, "[", "]") + "]"
            string = re.match(r'"([^"]*)"', rest)
            return string.group(1) if string else None
    return None


def declared_modules(dependencies: str) -> frozenset[str]:
    names: set[str] = set()
    inner = dependencies[1:-1]
    # `.product(name: "X", …)`, `.target(name: "X")`, `.byName(name: "X")`.
    for match in re.finditer(r"\.(?:product|target|byName)\s*\(\s*name\s*:\s*\"([^\"]+)\"", inner):
        names.add(match.group(1))
    # Plain strings outside any call.
    depth = 0
    for match in re.finditer(r'[()]|"([^"]*)"', inner):
        token = match.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            names.add(match.group(1))
    return frozenset(names)


def parse_targets(package_swift: str) -> list[Target]:
    text = without_comments(package_swift)
    targets: list[Target] = []
    end = 0
    for match in TARGET_CALL.finditer(text):
        # `.target(name:)` inside a target's dependencies names a dependency, not a target.
        if match.start() < end:
            continue
        arguments = balanced(text, match.end() - 1, "(", ")")
        end = match.end() + len(arguments)
        name = top_level_argument(arguments, "name")
        if not name or name.startswith("["):
            continue
        kind = match.group(1)
        path = top_level_argument(arguments, "path") or os.path.join(
            "Tests" if kind == "testTarget" else "Sources", name
        )
        dependencies = top_level_argument(arguments, "dependencies") or "[]"
        targets.append(Target(name, kind, path, declared_modules(dependencies)))
    return targets


def imports(source: str) -> list[tuple[int, str]]:
    """The modules a Swift file imports, by line: not in comments, not in multi-line string literals."""
    found: list[tuple[int, str]] = []
    in_multiline = False
    for number, text, _ in check_portability.code_lines(source):
        if '"""' in text:
            in_multiline = in_multiline != (text.count('"""') % 2 == 1)
            continue
        if in_multiline:
            continue
        match = IMPORT.match(text)
        if match:
            found.append((number, match.group(1)))
    return found


def check_target(target: Target, files: dict[str, str]) -> list[Finding]:
    findings: list[Finding] = []
    for path, source in sorted(files.items()):
        for number, module in imports(source):
            if module in SYSTEM_MODULES or module == target.name or module in target.dependencies:
                continue
            findings.append(
                Finding(path, number, f"{target.name} imports {module}, not among its dependencies in Package.swift")
            )
    return findings


def main(arguments: list[str]) -> int:
    root = arguments[0] if arguments else os.path.dirname(HERE)
    manifest = os.path.join(root, "Package.swift")
    if not os.path.isfile(manifest):
        print(f"check-target-imports.py: {manifest}: no such file", file=sys.stderr)
        return 2
    with open(manifest, encoding="utf-8") as file:
        targets = parse_targets(file.read())
    findings: list[Finding] = []
    for target in targets:
        directory = os.path.join(root, target.path)
        if not os.path.isdir(directory):
            continue
        files: dict[str, str] = {}
        for path in check_portability.swift_files([directory]):
            with open(path, encoding="utf-8") as file:
                files[os.path.relpath(path, root)] = file.read()
        findings.extend(check_target(target, files))
    for finding in findings:
        print(finding)
    if findings:
        print(
            f"{len(findings)} import(s) of a module the target does not declare: add it to the target's "
            "dependencies in Package.swift",
            file=sys.stderr,
        )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
