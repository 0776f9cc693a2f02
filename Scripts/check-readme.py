#!/usr/bin/env python3
"""Fails when the README says something about the tree that the tree contradicts.

Three claims a newcomer acts on in the first ten minutes are checked against the files that
decide them:

- the toolchain: every "Swift X.Y toolchain" in the README names the `swift-tools-version` of
  Package.swift (a 6.0 toolchain cannot even read a 6.2 manifest);
- the apt list: the packages the README says CI installs with apt are exactly those `.ci/run`
  adds to its `missing` list;
- the folder map: the fenced block after "Where things are, folder by folder" names every folder
  under each module of Sources/ (nested ones too; `*.docc` catalogs and a C target's `include/`
  excepted), each under its module's line, and names no folder or file that does not exist.

Usage: check-readme.py [PACKAGE_DIR]   (default: the package root, this script's parent)
Prints `README.md:LINE: message` for each finding and exits 1 if there was any.
"""

from __future__ import annotations

import os
import re
import sys
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))

TOOLS_VERSION = re.compile(r"^//\s*swift-tools-version:\s*([0-9]+(?:\.[0-9]+)*)", re.MULTILINE)
TOOLCHAIN_CLAIM = re.compile(r"\bSwift ([0-9]+(?:\.[0-9]+)*)(?: or later)? toolchain")
APT_CLAIM = re.compile(r"with apt\s*\(`([^`]*)`\)")
CI_MISSING = re.compile(r"missing\+=\(([^)]*)\)")
MAP_HEADING = "Where things are, folder by folder"
FOLDER_TOKEN = re.compile(r"(?<![\w./-])([A-Za-z][\w-]*(?:/[A-Za-z][\w-]*)*)/(?=[\s(),]|$)")
FILE_TOKEN = re.compile(r"(?<![\w./-])([A-Za-z][\w+-]*(?:/[A-Za-z][\w+-]*)*\.swift)\b")


class Finding(NamedTuple):
    line: int
    message: str

    def __str__(self) -> str:
        return f"README.md:{self.line}: {self.message}"


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def check_toolchain(readme: str, manifest: str) -> list[Finding]:
    match = TOOLS_VERSION.search(manifest)
    if not match:
        return [Finding(1, "Package.swift has no `// swift-tools-version:` line to check the README against")]
    version = match.group(1)
    claims = list(TOOLCHAIN_CLAIM.finditer(readme))
    if not claims:
        return [Finding(1, f"the README names no toolchain; say \"the Swift {version} toolchain\" (Package.swift)")]
    return [
        Finding(
            line_of(readme, claim.start()),
            f"says the Swift {claim.group(1)} toolchain, but Package.swift needs {version} "
            f"(swift-tools-version: {version})",
        )
        for claim in claims
        if claim.group(1) != version
    ]


def ci_packages(ci_script: str) -> set[str]:
    packages: set[str] = set()
    for line in ci_script.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for match in CI_MISSING.finditer(line):
            packages.update(match.group(1).split())
    return packages


def check_apt(readme: str, ci_script: str) -> list[Finding]:
    installed = ci_packages(ci_script)
    claims = list(APT_CLAIM.finditer(readme))
    if not claims:
        return [Finding(1, "the README does not list what .ci/run installs with apt: with apt (`…`)")]
    findings = []
    for claim in claims:
        listed = set(claim.group(1).split())
        line = line_of(readme, claim.start())
        for package in sorted(installed - listed):
            findings.append(Finding(line, f"the apt list omits {package}, which .ci/run installs"))
        for package in sorted(listed - installed):
            findings.append(Finding(line, f"the apt list names {package}, which .ci/run does not install"))
    return findings


def folder_map(readme: str) -> tuple[int, list[str]] | None:
    """The first line number and the lines of the fenced block after the map's heading."""
    lines = readme.splitlines()
    for index, line in enumerate(lines):
        if MAP_HEADING in line:
            break
    else:
        return None
    start = next((i for i in range(index, len(lines)) if lines[i].startswith("```")), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), len(lines))
    return start + 2, lines[start + 1 : end]


def module_folders(sources: str, module: str) -> set[str]:
    """Every folder under Sources/MODULE, relative to it, but DocC catalogs and C headers."""
    root = os.path.join(sources, module)
    is_c_target = os.path.isdir(os.path.join(root, "include"))
    folders = set()
    for directory, subdirectories, _ in os.walk(root):
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.endswith(".docc") and not (is_c_target and directory == root and name == "include")
        )
        for name in subdirectories:
            folders.add(os.path.relpath(os.path.join(directory, name), root))
    return folders


def check_folder_map(readme: str, sources: str) -> list[Finding]:
    found = folder_map(readme)
    if found is None:
        return [Finding(1, f'no folder map: a fenced block after "{MAP_HEADING}"')]
    first_line, lines = found
    modules = sorted(name for name in os.listdir(sources) if os.path.isdir(os.path.join(sources, name)))
    # The map, module by module: a line that starts at column 0 opens a module's section.
    sections: dict[str, list[tuple[int, str]]] = {}
    current = None
    findings = []
    for number, line in enumerate(lines, start=first_line):
        if line and not line[0].isspace():
            current = line.split("/", 1)[0]
            if current not in modules:
                findings.append(Finding(number, f"the folder map names {current}/, which is not a module in Sources/"))
            line = line[len(current) + 1 :]
            sections.setdefault(current, [])
        if current is not None:
            sections[current].append((number, line))
    for module in modules:
        folders = module_folders(sources, module)
        if not folders:
            continue
        if module not in sections:
            names = " ".join(f"{folder}/" for folder in sorted(folders))
            findings.append(Finding(first_line, f"the folder map omits {module}/ ({names})"))
            continue
        named: set[str] = set()
        for number, line in sections[module]:
            # Parenthesised notes describe a folder; only its own names count as names.
            for token in FOLDER_TOKEN.findall(line):
                named.add(token)
                if not any(folder == token or folder.endswith("/" + token) for folder in folders):
                    findings.append(Finding(number, f"the folder map names {module}/{token}/, which does not exist"))
            for token in FILE_TOKEN.findall(line):
                if not os.path.isfile(os.path.join(sources, module, token)):
                    findings.append(Finding(number, f"the folder map names {module}/{token}, which does not exist"))
        for folder in sorted(folders):
            if not any(folder == name or folder.endswith("/" + name) for name in named):
                findings.append(
                    Finding(sections[module][0][0], f"the folder map omits {module}/{folder}/ under {module}/")
                )
    return findings


def check(package: str) -> list[Finding]:
    def read(*path: str) -> str:
        with open(os.path.join(package, *path), encoding="utf-8") as file:
            return file.read()

    readme = read("README.md")
    return (
        check_toolchain(readme, read("Package.swift"))
        + check_apt(readme, read(".ci", "run"))
        + check_folder_map(readme, os.path.join(package, "Sources"))
    )


def main(arguments: list[str]) -> int:
    package = arguments[0] if arguments else os.path.dirname(HERE)
    findings = check(package)
    for finding in findings:
        print(finding)
    if findings:
        print(f"{len(findings)} README claim(s) the tree contradicts", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
