#!/usr/bin/env python3
"""Tests for check-readme.py: planted READMEs and trees that must fail or pass.

Run: python3 Scripts/test_check_readme.py   (stdlib unittest; CI runs it before the check)
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-readme.py")
spec = importlib.util.spec_from_file_location("check_readme", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

MANIFEST = "// swift-tools-version: 6.2\nimport PackageDescription\n"

CI = """#!/usr/bin/env bash
missing=()
command -v du >/dev/null || missing+=(coreutils)
# A comment naming missing+=(not-installed) is not an install.
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)
command -v chromium >/dev/null || missing+=(chromium)
"""

README = """# Sample

On a fresh machine with the Swift 6.2 toolchain:

`.ci/run` installs what is missing with apt (`coreutils libsqlite3-dev chromium`), then runs the tests.

Where things are, folder by folder (`Sources/`):

```
Core/        Files/ (walks, removal) Marks/
             Core.swift
Cache/       Memory/ Disk/ (with Disk/Index/)
```
"""

TREE = [
    "Core/Files",
    "Core/Marks",
    "Core/Core.docc",
    "Cache/Memory",
    "Cache/Disk/Index",
    "CShims/include",
    "Umbrella",
]


class PackageFixture:
    """A package directory with README, Package.swift, .ci/run and a Sources tree."""

    def __init__(self, readme=README, manifest=MANIFEST, ci=CI, tree=TREE):
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        os.makedirs(os.path.join(root, ".ci"))
        for path, text in (("README.md", readme), ("Package.swift", manifest), (".ci/run", ci)):
            with open(os.path.join(root, path), "w", encoding="utf-8") as file:
                file.write(text)
        for folder in tree:
            os.makedirs(os.path.join(root, "Sources", folder), exist_ok=True)
        with open(os.path.join(root, "Sources", "Core", "Core.swift"), "w", encoding="utf-8") as file:
            file.write("")
        self.root = root

    def findings(self):
        return [str(finding) for finding in check.check(self.root)]

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.directory.cleanup()


class CheckReadmeTests(unittest.TestCase):
    def test_a_true_readme_passes(self):
        with PackageFixture() as package:
            self.assertEqual(package.findings(), [])

    def test_an_older_toolchain_than_the_manifest_needs_fails(self):
        with PackageFixture(readme=README.replace("Swift 6.2 toolchain", "Swift 6 toolchain")) as package:
            self.assertEqual(
                package.findings(),
                ["README.md:3: says the Swift 6 toolchain, but Package.swift needs 6.2 (swift-tools-version: 6.2)"],
            )

    def test_a_readme_naming_no_toolchain_fails(self):
        with PackageFixture(readme=README.replace("with the Swift 6.2 toolchain", "")) as package:
            self.assertIn("names no toolchain", " ".join(package.findings()))

    def test_the_apt_list_must_match_the_ci_script_both_ways(self):
        readme = README.replace("coreutils libsqlite3-dev chromium", "coreutils libsqlite3-dev redis-server")
        with PackageFixture(readme=readme) as package:
            self.assertEqual(
                package.findings(),
                [
                    "README.md:5: the apt list omits chromium, which .ci/run installs",
                    "README.md:5: the apt list names redis-server, which .ci/run does not install",
                ],
            )

    def test_a_commented_install_in_the_ci_script_does_not_count(self):
        self.assertEqual(check.ci_packages(CI), {"coreutils", "libsqlite3-dev", "chromium"})

    def test_a_folder_missing_from_the_map_fails(self):
        with PackageFixture(tree=TREE + ["Cache/Purgeable"]) as package:
            self.assertEqual(package.findings(), ["README.md:12: the folder map omits Cache/Purgeable/ under Cache/"])

    def test_a_nested_folder_missing_from_the_map_fails(self):
        with PackageFixture(tree=TREE + ["Core/Files/Walk"]) as package:
            self.assertEqual(package.findings(), ["README.md:10: the folder map omits Core/Files/Walk/ under Core/"])

    def test_a_module_missing_from_the_map_fails(self):
        with PackageFixture(tree=TREE + ["CLI/Commands"]) as package:
            self.assertEqual(package.findings(), ["README.md:10: the folder map omits CLI/ (Commands/)"])

    def test_a_mapped_folder_or_file_that_does_not_exist_fails(self):
        readme = README.replace("Marks/", "Marks/ Sizes/").replace("Core.swift", "Core+Old.swift")
        with PackageFixture(readme=readme) as package:
            self.assertEqual(
                package.findings(),
                [
                    "README.md:10: the folder map names Core/Sizes/, which does not exist",
                    "README.md:11: the folder map names Core/Core+Old.swift, which does not exist",
                ],
            )

    def test_a_mapped_module_that_does_not_exist_fails(self):
        readme = README.replace("Cache/       Memory/", "Caches/      Memory/")
        with PackageFixture(readme=readme) as package:
            self.assertIn("README.md:12: the folder map names Caches/, which is not a module in Sources/", package.findings())

    def test_the_script_exits_1_with_findings_and_0_without(self):
        with PackageFixture() as package:
            passing = subprocess.run([sys.executable, SCRIPT, package.root], capture_output=True, text=True)
        self.assertEqual(passing.returncode, 0, passing.stdout + passing.stderr)
        with PackageFixture(tree=TREE + ["Cache/Purgeable"]) as package:
            failing = subprocess.run([sys.executable, SCRIPT, package.root], capture_output=True, text=True)
        self.assertEqual(failing.returncode, 1)
        self.assertIn("Cache/Purgeable/", failing.stdout)


if __name__ == "__main__":
    unittest.main()
