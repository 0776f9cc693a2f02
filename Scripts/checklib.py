"""What the source checks in this folder share: loading a sibling check by its file name, the
`path:line: message` finding they print, and the walk of an allow-listed check over Swift files.

A check with an allow-list (check-clocks.py, check-file-syscalls.py) reports a finding in any
file not on the list, and an entry that no longer matches anything once the whole `Sources`
tree was walked, so the list only shrinks.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from types import ModuleType
from typing import Callable, Iterable, NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))


def load(file_name: str) -> ModuleType:
    """Imports a script of this folder whose name is not a Python identifier (`check-clocks.py`)."""
    module_name = file_name.removesuffix(".py").replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(HERE, file_name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Finding(NamedTuple):
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def listed(path: str, entries: Iterable[str]) -> str | None:
    """The entry naming `path`: the file itself, or a folder entry ending in `/` that holds it."""
    for entry in entries:
        if path == entry or (entry.endswith("/") and path.startswith(entry)):
            return entry
    return None


class AllowListedCheck(NamedTuple):
    tool: str  # the script's name, for its own error messages
    check_source: Callable[[str, str], list[Finding]]
    allowed: dict[str, str]
    stale: str  # why an unused entry is stale: "reads no real time any more"
    summary: Callable[[int], str]  # the closing line on stderr, given the number of findings
    skipped: Callable[[str], bool] = lambda path: False


def run_allow_listed(check: AllowListedCheck, arguments: list[str], swift_files: Callable) -> int:
    """Runs `check` over the Swift files under `arguments` (default `Sources`); 1 on any finding or
    stale entry, 2 when a root does not exist."""
    roots = arguments or ["Sources"]
    missing = [root for root in roots if not os.path.exists(root)]
    for root in missing:
        print(f"{check.tool}: {root}: no such file or directory", file=sys.stderr)
    if missing:
        return 2
    findings: list[Finding] = []
    used: set[str] = set()
    for path in swift_files(roots):
        normalized = path.replace(os.sep, "/")
        if check.skipped(normalized):
            continue
        with open(path, encoding="utf-8") as file:
            found = check.check_source(normalized, file.read())
        entry = listed(normalized, check.allowed)
        if entry is not None:
            if found:
                used.add(entry)
            continue
        findings.extend(found)
    checked_all = any(os.path.normpath(root) == "Sources" for root in roots)
    stale = [entry for entry in check.allowed if checked_all and entry not in used]
    for finding in findings:
        print(finding)
    for entry in stale:
        print(f"{entry}: allow-listed but {check.stale}; remove it from ALLOWED")
    if findings:
        print(check.summary(len(findings)), file=sys.stderr)
    return 1 if findings or stale else 0


def run_in_tree(script: str, files: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    """For a check's own tests: runs `script` (a file of this folder) in a temporary tree holding
    `files` (relative path → contents), on its `Sources` unless `arguments` say otherwise."""
    directory = tempfile.mkdtemp()
    for path, source in files.items():
        full = os.path.join(directory, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as file:
            file.write(source)
    command = [sys.executable, os.path.join(HERE, script), *(arguments or ("Sources",))]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True)
