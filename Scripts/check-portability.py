#!/usr/bin/env python3
"""Fails when a Linux-only (Glibc/Musl) name appears in Swift code outside a platform #if.

Stowage is built and tested on Linux only, so nothing compiles its Apple branches. This check
catches the one mistake the Linux build cannot: a Glibc-only spelling (`st_mtim`, `Glibc.open`,
`"/proc/..."`, `SOCK_CLOEXEC`) written where Darwin would compile it too.

Usage: check-portability.py [PATH ...]   (default: Sources Tests, relative to the package root)
Prints `file:line: NAME outside a platform #if` for each hit and exits 1 if there was any.

What counts as guarded: any branch (#if, #elseif, #else) of an #if chain once a condition in that
chain mentions a platform: canImport(Glibc|Musl|Darwin|Android|Bionic|WinSDK) or
os(Linux|macOS|iOS|tvOS|watchOS|visionOS|Android|Windows|FreeBSD|OpenBSD|WASI). Branches of the
same chain before the first platform condition (`#if DEBUG … #elseif os(Linux)`) are not guarded.
Nesting is tracked: code inside a non-platform #if inside a platform #if is guarded.

Comments (`//`, `///`, nested `/* */`) are ignored: they are prose, not code, and name Linux
mechanisms on purpose. String literals (single-line, multi-line and raw, including
interpolations) are checked: a path such as "/proc/self/fd" compiles everywhere but only means
something on Linux, so it needs a guard as much as a Glibc symbol does.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Iterator, NamedTuple

# (pattern, name reported). Names that exist on Darwin with the same meaning (statvfs, fsync,
# flock, dirent's d_type, fts) are not here: they compile on both.
LINUX_ONLY: list[tuple[str, str]] = [
    (r"\bGlibc\.", "Glibc."),
    (r"\bMusl\.", "Musl."),
    (r"\bimport\s+(Glibc|Musl)\b", "import Glibc"),
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

PLATFORM_CONDITION = re.compile(
    r"canImport\(\s*(Glibc|Musl|Darwin|Android|Bionic|WinSDK)\s*\)"
    r"|os\(\s*(Linux|macOS|iOS|tvOS|watchOS|visionOS|Android|Windows|FreeBSD|OpenBSD|WASI)\s*\)"
)
DIRECTIVE = re.compile(r"^\s*#(if|elseif|else|endif)\b(.*)$")


class Finding(NamedTuple):
    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} outside a platform #if"


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
        if stack[-1]["mode"] == "string" and stack[-1]["quote"] == '"':
            stack.pop()  # a single-line string cannot span lines; recover rather than drift
        yield number, "".join(out), starts_in_code


def check_source(path: str, source: str) -> list[Finding]:
    findings: list[Finding] = []
    # One entry per open #if: [this chain has seen a platform condition, the current branch is guarded].
    levels: list[list[bool]] = []
    for number, text, starts_in_code in code_lines(source):
        directive = DIRECTIVE.match(text) if starts_in_code else None
        if directive:
            keyword, condition = directive.group(1), directive.group(2)
            if keyword == "if":
                platform = bool(PLATFORM_CONDITION.search(condition))
                levels.append([platform, platform])
            elif keyword == "elseif" and levels:
                levels[-1][0] = levels[-1][0] or bool(PLATFORM_CONDITION.search(condition))
                levels[-1][1] = levels[-1][0]
            elif keyword == "else" and levels:
                levels[-1][1] = levels[-1][0]
            elif keyword == "endif" and levels:
                levels.pop()
            continue
        if any(guarded for _, guarded in levels):
            continue
        for pattern, name in PATTERNS:
            if pattern.search(text):
                findings.append(Finding(path, number, name))
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
    findings: list[Finding] = []
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
