#!/usr/bin/env python3
"""Fails when a Linux-only (Glibc/Musl) name appears in Swift code outside a platform #if.

Stowage is built and tested on Linux only, so nothing compiles its Apple branches. This check
catches the one mistake the Linux build cannot: a Glibc-only spelling (`st_mtim`, `Glibc.open`,
`"/proc/..."`, `SOCK_CLOEXEC`) written where Darwin would compile it too.

Usage: check-portability.py [PATH ...]   (default: Sources Tests, relative to the package root)
Prints `file:line: NAME outside a platform #if` for each hit and exits 1 if there was any; exits 2
when a PATH does not exist, so a mistyped path never passes for a clean tree.

What counts as guarded: a line no Apple platform compiles, judged as the compiler would on each of
macOS, iOS, tvOS, watchOS and visionOS. There canImport(Darwin) and os(<that platform>) are true,
canImport(Glibc|SwiftGlibc|Musl|Android|Bionic|WinSDK) and any other os(...) are false, and
`true`/`false` are themselves; any other condition (DEBUG, swift(>=6), arch(...)) may go either
way. `!`, `&&`, `||` and parentheses combine them. A branch (#if, #elseif, #else) is taken when
its condition may be true and no earlier branch of its chain is surely true, so `#if
canImport(Darwin) ... #else` guards the #else, while `#if !os(Linux)`, `#if os(Linux) || true` and
the #else of `#if os(Linux)` guard nothing. Nesting is tracked: a line is guarded when, on every
Apple platform, some enclosing branch is not taken.

Comments (`//`, `///`, nested `/* */`) are ignored: they are prose, not code, and name Linux
mechanisms on purpose. String literals (single-line, multi-line and raw, including
interpolations) are checked: a path such as "/proc/self/fd" compiles everywhere but only means
something on Linux, so it needs a guard as much as a Glibc symbol does. Extended regex literals
(`#/.../#`) are text too, so a `/*` or a quote inside one opens no comment or string. A module
name and its member may be split over lines (`Glibc` then `.open` on the next): that counts as
`Glibc.` on the first.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

# (pattern, name reported). Names that exist on Darwin with the same meaning (statvfs, fsync,
# flock, dirent's d_type, fts) are not here: they compile on both.
LINUX_ONLY: list[tuple[str, str]] = [
    (r"\b(Swift)?Glibc\s*\.", "Glibc."),
    (r"\bMusl\s*\.", "Musl."),
    (r"\bimport\s+(Swift)?Glibc\b|\bimport\s+Musl\b", "import Glibc"),
    (r"\bst_[amcb]tim\b", "st_*tim (Darwin: st_*timespec)"),
    (r"\bepoll\w*|\bEPOLL\w+", "epoll"),
    (r"\binotify\w*|\bIN_(CREATE|DELETE|MODIFY|MOVED_\w+|CLOSE_WRITE|NONBLOCK|CLOEXEC)\b", "inotify"),
    (r"\bstatx\b|\bstatx_\w+|\bSTATX_\w+|\bstx_\w+", "statx"),
    (r"\bO_TMPFILE\b", "O_TMPFILE"),
    (r"\bO_PATH\b", "O_PATH"),
    (r"\bO_NOATIME\b", "O_NOATIME"),
    (r"\bO_DIRECT\b", "O_DIRECT (Darwin: F_NOCACHE)"),
    (r"\"/proc(/|\")", '"/proc'),
    (r"\"/sys(/|\")", '"/sys'),
    (r"\bSOCK_CLOEXEC\b", "SOCK_CLOEXEC"),
    (r"\bSOCK_NONBLOCK\b", "SOCK_NONBLOCK"),
    (r"\bSOCK_(STREAM|DGRAM|RAW|SEQPACKET)\.rawValue\b", "SOCK_*.rawValue (Darwin: a plain Int32)"),
    (r"\bMSG_NOSIGNAL\b", "MSG_NOSIGNAL (Darwin: SO_NOSIGPIPE)"),
    (r"\bsysinfo\b", "sysinfo"),
    (r"\bprctl\b", "prctl"),
    (r"\bPR_SET\w*|\bPR_GET\w*", "PR_SET"),
    (r"\bfdatasync\b", "fdatasync"),
    (r"\bfallocate\b", "fallocate"),
    (r"\bposix_fallocate\b", "posix_fallocate"),
    (r"\bposix_fadvise\b", "posix_fadvise"),
    (r"\baccept4\b", "accept4"),
    (r"\bpipe2\b", "pipe2"),
    (r"\bcopy_file_range\b", "copy_file_range"),
    (r"\brenameat2\b|\bRENAME_NOREPLACE\b|\bRENAME_EXCHANGE\b", "renameat2"),
    (r"\bmemfd_create\b", "memfd_create"),
    (r"\beventfd\w*|\btimerfd_\w+|\bsignalfd\b", "eventfd/timerfd/signalfd"),
    (r"\bgettid\b", "gettid"),
    (r"\bmalloc_trim\b|\bmalloc_usable_size\b", "malloc_trim"),
    (r"\bsched_getaffinity\b|\bget_nprocs\w*", "sched_getaffinity"),
    (r"\bCLOCK_BOOTTIME\b|\bCLOCK_MONOTONIC_COARSE\b", "CLOCK_BOOTTIME"),
    (r"\bAT_EMPTY_PATH\b", "AT_EMPTY_PATH"),
    (r"\bl(get|set|remove|list)xattr\b", "l*xattr (Darwin: XATTR_NOFOLLOW)"),
    (r"\b__errno_location\b", "__errno_location"),
    (r"\bgetdents(64)?\b", "getdents"),
]
PATTERNS = [(re.compile(pattern), name) for pattern, name in LINUX_ONLY]

# How #if conditions come out on Apple platforms (see the module's docstring).
APPLE_PLATFORMS = ("macOS", "iOS", "tvOS", "watchOS", "visionOS")
NOT_ON_APPLE = {"Glibc", "SwiftGlibc", "Musl", "Android", "Bionic", "WinSDK"}
CONDITION_TOKEN = re.compile(r"\|\||&&|!|\(|\)|\w+\s*\([^()]*\)|\w+")
# A module name ending a line, whose member may follow on the next line (`Glibc` / `.open`).
MODULE_AT_END = re.compile(r"\b((?:Swift)?Glibc|Musl)\s*$")
DIRECTIVE = re.compile(r"^\s*#(if|elseif|else|endif)\b(.*)$")


# What a finding says after the name it found.
OUTSIDE = " outside a platform #if"


def outside_finding(path: str, line: int, name: str) -> checklib.Finding:
    """The shared `path:line: message` finding, for `name` found outside a platform #if."""
    return checklib.Finding(path, line, name + OUTSIDE)


def code_lines(source: str) -> Iterator[tuple[int, str, bool]]:
    """Yields (line number, the line with comments blanked, whether the line starts in code).

    A line that starts inside a block comment or a multi-line string cannot hold a directive.
    """
    # The lexer's mode stack: "code", "block" (comment, nests), or a string mode
    # ('"', '"""', with the raw-string hash count). An interpolation pushes a code mode that
    # remembers its parenthesis depth.
    stack: list[dict] = [{"mode": "code", "parens": 0}]
    for number, line in enumerate(source.split("\n"), start=1):
        starts_in_code = stack[-1]["mode"] == "code" and len(stack) == 1
        out: list[str] = []
        i = 0
        while i < len(line):
            top = stack[-1]
            mode = top["mode"]
            if mode == "block":
                if line.startswith("/*", i):
                    stack.append({"mode": "block"})
                    out.append("  ")
                    i += 2
                elif line.startswith("*/", i):
                    stack.pop()
                    out.append("  ")
                    i += 2
                else:
                    out.append(" ")
                    i += 1
                continue
            if mode == "code":
                if line.startswith("//", i):
                    out.append(" " * (len(line) - i))
                    break
                if line.startswith("/*", i):
                    stack.append({"mode": "block"})
                    out.append("  ")
                    i += 2
                    continue
                match = re.match(r"(#+)/", line[i:])
                if match:  # an extended regex literal; multi-line when the line ends after `#/`
                    multiline = i + len(match.group(0)) == len(line)
                    stack.append({"mode": "regex", "hashes": len(match.group(1)), "multiline": multiline})
                    out.append(match.group(0))
                    i += len(match.group(0))
                    continue
                match = re.match(r'(#*)("""|")', line[i:])
                if match:
                    hashes, quote = len(match.group(1)), match.group(2)
                    stack.append({"mode": "string", "quote": quote, "hashes": hashes})
                    out.append(match.group(0))
                    i += len(match.group(0))
                    continue
                if line[i] == "(":
                    top["parens"] += 1
                elif line[i] == ")":
                    if top["parens"] == 0 and len(stack) > 1:
                        stack.pop()  # end of an interpolation: back in its string
                        out.append(")")
                        i += 1
                        continue
                    top["parens"] -= 1
                out.append(line[i])
                i += 1
                continue
            if mode == "regex":
                closing = "/" + "#" * top["hashes"]
                if line[i] == "\\":
                    out.append(line[i : i + 2])
                    i += 2
                elif line.startswith(closing, i):
                    stack.pop()
                    out.append(closing)
                    i += len(closing)
                else:
                    out.append(line[i])
                    i += 1
                continue
            # In a string literal.
            hashes = "#" * top["hashes"]
            closing = top["quote"] + hashes
            escape = "\\" + hashes
            if line.startswith(escape + "(", i):
                stack.append({"mode": "code", "parens": 0})
                out.append(escape + "(")
                i += len(escape) + 1
                continue
            if line.startswith(escape, i) and i + len(escape) < len(line):
                out.append(line[i : i + len(escape) + 1])
                i += len(escape) + 1
                continue
            if line.startswith(closing, i):
                stack.pop()
                out.append(closing)
                i += len(closing)
                continue
            out.append(line[i])
            i += 1
        top = stack[-1]
        if (top["mode"] == "string" and top["quote"] == '"') or (top["mode"] == "regex" and not top["multiline"]):
            stack.pop()  # a single-line literal cannot span lines; recover rather than drift
        yield number, "".join(out), starts_in_code


def condition_value(condition: str, platform: str) -> bool | None:
    """The #if condition's value on the Apple `platform`: True, False, or None when it may go either way."""
    tokens = CONDITION_TOKEN.findall(condition)
    position = 0

    def atom(token: str) -> bool | None:
        call = re.fullmatch(r"(\w+)\s*\(\s*(\w*)[^()]*\)", token)
        if token in ("true", "false"):
            return token == "true"
        if call and call.group(1) == "canImport" and call.group(2) == "Darwin":
            return True
        if call and call.group(1) == "canImport" and call.group(2) in NOT_ON_APPLE:
            return False
        if call and call.group(1) == "os":
            return {"OSX": "macOS"}.get(call.group(2), call.group(2)) == platform
        return None

    def unary() -> bool | None:
        nonlocal position
        token = tokens[position] if position < len(tokens) else ""
        position += 1
        if token == "!":
            value = unary()
            return None if value is None else not value
        if token == "(":
            value = either()
            position += 1  # the closing parenthesis
            return value
        return atom(token)

    def both() -> bool | None:  # a && b: false if either is, true if both are
        nonlocal position
        value = unary()
        while position < len(tokens) and tokens[position] == "&&":
            position += 1
            right = unary()
            value = False if False in (value, right) else (True if value and right else None)
        return value

    def either() -> bool | None:  # a || b: true if either is, false if both are
        nonlocal position
        value = both()
        while position < len(tokens) and tokens[position] == "||":
            position += 1
            right = both()
            value = True if True in (value, right) else (False if value is False and right is False else None)
        return value

    return either()


def is_guarded(levels: list[tuple[list[str], str | None]]) -> bool:
    """Whether no Apple platform compiles a line inside `levels`: one (earlier conditions, this
    branch's condition or None for #else) per open #if, outermost first."""

    def taken(earlier: list[str], current: str | None, platform: str) -> bool:
        if any(condition_value(condition, platform) is True for condition in earlier):
            return False
        return current is None or condition_value(current, platform) is not False

    return not any(all(taken(*level, platform) for level in levels) for platform in APPLE_PLATFORMS)


def check_source(path: str, source: str) -> list[checklib.Finding]:
    findings: list[checklib.Finding] = []
    levels: list[tuple[list[str], str | None]] = []
    guarded = False
    pending: checklib.Finding | None = None  # a module name ending a line, waiting for `.member`
    for number, text, starts_in_code in code_lines(source):
        if pending and text.strip():
            if text.lstrip().startswith("."):
                findings.append(pending)
            pending = None
        directive = DIRECTIVE.match(text) if starts_in_code else None
        if directive:
            keyword, condition = directive.group(1), directive.group(2)
            if keyword == "if":
                levels.append(([], condition))
            elif keyword in ("elseif", "else") and levels:
                earlier, current = levels[-1]
                levels[-1] = (earlier + [current or "true"], condition if keyword == "elseif" else None)
            elif keyword == "endif" and levels:
                levels.pop()
            guarded = is_guarded(levels)
            continue
        if guarded:
            continue
        for pattern, name in PATTERNS:
            if pattern.search(text):
                findings.append(outside_finding(path, number, name))
        module = MODULE_AT_END.search(text)
        if module:
            pending = outside_finding(path, number, "Musl." if module.group(1) == "Musl" else "Glibc.")
    return findings


def swift_files(roots: list[str]) -> Iterator[str]:
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for directory, subdirectories, files in os.walk(root):
            subdirectories.sort()
            for name in sorted(files):
                if name.endswith(".swift"):
                    yield os.path.join(directory, name)


def main(arguments: list[str]) -> int:
    roots = arguments or ["Sources", "Tests"]
    missing = [root for root in roots if not os.path.exists(root)]
    for root in missing:
        print(f"check-portability.py: {root}: no such file or directory", file=sys.stderr)
    if missing:
        return 2
    findings: list[checklib.Finding] = []
    for path in swift_files(roots):
        with open(path, encoding="utf-8") as file:
            findings.extend(check_source(path, file.read()))
    for finding in findings:
        print(finding)
    if findings:
        print(
            f"{len(findings)} Linux-only name(s) outside a platform #if: wrap each in "
            "`#if canImport(Darwin) … #elseif canImport(Glibc) … #endif` with a Darwin branch",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
