#!/usr/bin/env python3
"""Fails when a raw file system call appears in library code outside Sources/StowageCore/FileSystem.

Every store writes, flushes, renames and examines files the same careful way (O_NOFOLLOW, EINTR
retried, short transfers continued, temporaries removed on failure, errors as StowageError naming
the path); that care lives in StowageCore/FileSystem (TemporaryFile, FileDescriptorIO, RegularFile,
OpenDirectory, LockFile, …). A raw `open(2)` or `rename(2)` elsewhere is a second copy that drifts.
This check keeps new ones out; the files that still hold some are listed in ALLOWED below, each
with the reason, and the list only shrinks.

Usage: check-file-syscalls.py [PATH ...]   (default: Sources, relative to the package root)
Prints `file:line: NAME(2) outside StowageCore/FileSystem` for each hit and exits 1 if there was
any; exits 2 when a PATH does not exist. An allow-listed file that no longer makes any forbidden
call is reported too (exit 1), so the list cannot go stale.

What counts as a call: a forbidden NAME followed by `(` with a first argument that has no label
(`open(path, flags)`, `Glibc.open(...)`, `Darwin.rename(...)`), not a member (`file.write(...)`),
not a declaration (`func write(`), not `stat()` (the struct's initializer). Comments and string
literals are ignored. A file that declares a function of a forbidden name (`func write(_ value:`)
calls its own unqualified: there only module-qualified calls (`Glibc.write`) count, so write
raw calls in such a file qualified.
"""

from __future__ import annotations

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checklib  # noqa: E402

check_portability = checklib.load("check-portability.py")
Finding = checklib.Finding

# The system calls (and libc wrappers) that touch files by path or descriptor. close(2) is not
# here: sockets, pipes and descriptors a FileSystem type handed out are closed everywhere.
FORBIDDEN = (
    "open openat creat "
    "read pread readv preadv write pwrite writev pwritev "
    "fsync fdatasync ftruncate truncate "
    "rename renameat renameat2 link linkat symlink symlinkat unlink unlinkat "
    "mkdir mkdirat rmdir mkstemp mkostemp mkdtemp "
    "stat fstat lstat fstatat statx "
    "chmod fchmod fchmodat"
).split()

# The one directory allowed to make them.
BOUNDARY = "Sources/StowageCore/FileSystem/"

# Files that still make forbidden calls, with the reason. Each is to move behind the FileSystem
# API; remove an entry once its file is clean (the check fails on a stale entry).
ALLOWED: dict[str, str] = {
    # Walkers and confinement: openat/fstatat relative to a directory descriptor they hold, the
    # primitive OpenDirectory would have to grow a descriptor-relative API for.
    "Sources/StowageCore/Container/BackupAudit+Walker.swift": "descriptor-relative tree walk",
    "Sources/StowageCore/Container/Container+Confinement.swift": "openat/mkdirat confinement walk",
    "Sources/StowageCore/DiskUsage/DiskUsage+Walker.swift": "descriptor-relative tree walk",
    "Sources/StowageHousekeeping/MarkedItems/MarkedItemsWalk.swift": "descriptor-relative tree walk",
    "Sources/StowageHousekeeping/Purgeable/PurgeSweep.swift": "unlinkat under an open directory",
    "Sources/StowageCore/Clearing/ClearingTarget.swift": "opens and examines the target it clears",
    "Sources/StowageCore/Container/DirectoryCreation.swift": "mkdir with lstat checks, one level at a time",
    # Store formats that map, lock or truncate their own file in place (not a write-aside).
    "Sources/StowageCore/Generation/SharedCounterFile.swift": "opens and maps the shared counters (store generation, removals)",
    "Sources/StowageCore/Generation/StoreGeneration+Retirement.swift": "openat of the generation file",
    "Sources/StowagePreferences/Preferences/PreferencesLog.swift": "append-only log: ftruncate, mmap",
    "Sources/StowageCore/Marks/CacheDirectoryTag.swift": "reads the tag's signature without following links",
    "Sources/StowageCore/Marks/Marks.swift": "reads a mark file",
    # The disk cache's value files: opened O_NOFOLLOW | O_NONBLOCK and checked to be a regular
    # file of the indexed size before a read, an open-and-verify RegularFile does not offer yet.
    "Sources/StowageCache/Disk/DiskCacheFiles.swift": "opens and verifies value files",
    # Secrets and other small stores: checks that the file is a regular file of the owner.
    "Sources/StowageSecrets/SecureFiles.swift": "opens with O_NOFOLLOW and checks owner and mode",
    "Sources/StowageSecrets/KeyFile.swift": "creates the key file exclusively",
    "Sources/StowageHousekeeping/StorageMonitor/TemporaryFiles.swift": "opens a probe file",
    # Not stores: Linux pressure-stall files (a write arms a trigger), the wake-up pipe.
    "Sources/StowageCache/MemoryPressure/MemoryPressureSource+StallFiles.swift": "PSI trigger files (write, poll)",
    "Sources/StowageCache/MemoryPressure/MemoryPressureSource+Linux.swift": "PSI trigger and wake-up pipe",
    "Sources/StowageCLI/Commands/Proxy/ProxyConfigFile.swift": "stat of the config file's mode",
    # Child processes for the tests and the bench: /dev/null for the child's unset streams.
    "Sources/StowageProcessSupport/ChildProcess.swift": "opens /dev/null for a child's standard streams",
    # The bench measures raw-file baselines and builds its fixtures by design.
    "Sources/StowageBench/": "baselines and fixtures",
}


NAMES = "|".join(FORBIDDEN)
# An unqualified call: not a member, not after `func`.
UNQUALIFIED = re.compile(r"(?<![\w.])(" + NAMES + r")\s*\((?!\s*\)|\s*\w+\s*:(?!:))")
QUALIFIED = re.compile(r"\b(?:Swift)?(?:Glibc|Darwin|Musl)\s*\.\s*(" + NAMES + r")\b")
DECLARED = re.compile(r"\bfunc\s+(" + NAMES + r")\s*[(<]")
STRING = re.compile(r'#*"(?:\\.|[^"\\])*"#*')


def code_without_strings(source: str) -> list[tuple[int, str]]:
    """The lines with comments (by check-portability's lexer) and string literals blanked."""
    lines: list[tuple[int, str]] = []
    in_multiline = False
    for number, text, _ in check_portability.code_lines(source):
        if '"""' in text:
            parts = text.split('"""')
            kept = [part for index, part in enumerate(parts) if (index % 2 == 0) != in_multiline]
            in_multiline = in_multiline != (len(parts) % 2 == 0)
            text = " ".join(kept)
        elif in_multiline:
            text = ""
        lines.append((number, STRING.sub('""', text)))
    return lines


def check_source(path: str, source: str) -> list[Finding]:
    lines = code_without_strings(source)
    declared = {match.group(1) for _, text in lines for match in DECLARED.finditer(text)}
    findings: list[Finding] = []
    for number, text in lines:
        names = [match.group(1) for match in QUALIFIED.finditer(text)]
        for match in UNQUALIFIED.finditer(text):
            before = text[: match.start()]
            if re.search(r"\bfunc\s*$", before) or match.group(1) in declared:
                continue
            names.append(match.group(1))
        for name in names:
            findings.append(Finding(path, number, f"{name}(2) outside StowageCore/FileSystem"))
    return findings


def main(arguments: list[str]) -> int:
    check = checklib.AllowListedCheck(
        tool="check-file-syscalls.py",
        check_source=check_source,
        allowed=ALLOWED,
        stale="makes no forbidden call any more",
        summary=lambda count: (
            f"{count} raw file system call(s) outside {BOUNDARY}: use its API "
            "(TemporaryFile, FileDescriptorIO, RegularFile, OpenDirectory, …) or add what is missing there"
        ),
        skipped=lambda path: path.startswith(BOUNDARY) or f"/{BOUNDARY}" in path,
    )
    return checklib.run_allow_listed(check, arguments, check_portability.swift_files)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
