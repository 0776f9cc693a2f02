#!/usr/bin/env python3
"""Tests for check-target-imports.py: planted manifests and imports that must fail or pass.

Run: python3 Scripts/test_check_target_imports.py   (stdlib unittest; CI runs it before the check)
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-target-imports.py")
spec = importlib.util.spec_from_file_location("check_target_imports", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

MANIFEST = """
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Sample",
    targets: [
        // A comment naming .target(name: "Ignored") is not a target.
        .target(
            name: "Core",
            dependencies: ["CShims", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        .target(name: "CShims"),
        .target(
            name: "Cache",
            dependencies: [
                "Core",
                .target(name: "CShims"),
                .product(name: "Logging", package: "swift-log", condition: .when(platforms: [.linux])),
            ]
        ),
        .target(name: "Support", dependencies: [.byName(name: "Cache")], path: "Tests/Support"),
        .testTarget(name: "CacheTests", dependencies: ["Cache", "Support"]),
    ]
)
"""


def modules(source: str) -> list[str]:
    return [module for _, module in check.imports(source)]


class ParseTargetsTests(unittest.TestCase):
    def test_names_paths_and_dependencies(self):
        targets = {target.name: target for target in check.parse_targets(MANIFEST)}
        self.assertEqual(sorted(targets), ["CShims", "Cache", "CacheTests", "Core", "Support"])
        self.assertEqual(targets["Core"].dependencies, {"CShims", "NIOCore"})
        self.assertEqual(targets["Cache"].dependencies, {"Core", "CShims", "Logging"})
        self.assertEqual(targets["Support"].dependencies, {"Cache"})
        self.assertEqual(targets["Support"].path, "Tests/Support")
        self.assertEqual(targets["CacheTests"].path, os.path.join("Tests", "CacheTests"))
        self.assertEqual(targets["Core"].path, os.path.join("Sources", "Core"))
        self.assertEqual(targets["CShims"].dependencies, frozenset())


class ImportsTests(unittest.TestCase):
    def test_attributes_access_and_kinds(self):
        source = (
            "import Foundation\n"
            "@testable import Cache\n"
            "@_exported import Core\n"
            "@preconcurrency import NIOCore\n"
            "package import Logging\n"
            "import struct HTTPTypes.HTTPFields\n"
            "import os.log\n"
        )
        self.assertEqual(modules(source), ["Foundation", "Cache", "Core", "NIOCore", "Logging", "HTTPTypes", "os"])

    def test_comments_and_multiline_strings_are_not_imports(self):
        source = (
            "/// ```swift\n/// import Hidden\n/// ```\n"
            "/* import AlsoHidden */\n"
            'let script = """\nimport sys\n"""\n'
            "import Visible\n"
        )
        self.assertEqual(modules(source), ["Visible"])


class CheckTargetTests(unittest.TestCase):
    def target(self, name: str) -> "check.Target":
        return {target.name: target for target in check.parse_targets(MANIFEST)}[name]

    def test_transitive_import_fails(self):
        findings = check.check_target(self.target("CacheTests"), {"t.swift": "import Cache\nimport Core\n"})
        lines = [(finding.line, finding.message.split(",")[0]) for finding in findings]
        self.assertEqual(lines, [(2, "CacheTests imports Core")])

    def test_declared_own_and_system_modules_pass(self):
        source = "import Foundation\nimport Glibc\nimport Synchronization\nimport Testing\nimport Core\nimport Cache\n"
        self.assertEqual(check.check_target(self.target("Cache"), {"c.swift": source}), [])


class MainTests(unittest.TestCase):
    def run_in(self, files: dict[str, str]) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as root:
            for path, text in {"Package.swift": MANIFEST, **files}.items():
                full = os.path.join(root, path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w", encoding="utf-8") as file:
                    file.write(text)
            return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)

    def test_finding_exits_1_and_names_the_file(self):
        result = self.run_in({"Tests/Support/S.swift": "import Cache\nimport Core\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("Tests/Support/S.swift:2: Support imports Core, not among its dependencies", result.stdout)

    def test_clean_package_exits_0(self):
        result = self.run_in({"Sources/Cache/C.swift": "import Core\n", "Tests/CacheTests/T.swift": "import Support\n"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_missing_manifest_exits_2(self):
        with tempfile.TemporaryDirectory() as root:
            result = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
