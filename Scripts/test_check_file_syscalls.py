#!/usr/bin/env python3
"""Tests for check-file-syscalls.py: planted snippets that must fail or pass.

Run: python3 Scripts/test_check_file_syscalls.py   (stdlib unittest; CI runs it before the check)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

check = checklib.load("check-file-syscalls.py")


def names(source: str) -> list[tuple[int, str]]:
    return [(finding.line, finding.message.split("(")[0]) for finding in check.check_source("x.swift", source)]


class CheckFileSyscallsTests(unittest.TestCase):
    def test_raw_calls_fail(self):
        source = (
            "let fd = open(path, O_RDONLY)\n"
            "guard rename(a, b) == 0 else { throw e }\n"
            "var s = stat()\nif lstat(path, &s) == 0 {}\n"
            "_ = fsync(fd)\n"
        )
        self.assertEqual(names(source), [(1, "open"), (2, "rename"), (4, "lstat"), (5, "fsync")])

    def test_module_qualified_calls_and_references_fail(self):
        source = "let n = Glibc.read(fd, p, c)\nprivate let readBytes = Darwin.read\n"
        self.assertEqual(names(source), [(1, "read"), (2, "read")])

    def test_members_labels_and_the_stat_initializer_pass(self):
        source = (
            "try file.write(bytes)\n"
            "let n = try FileDescriptorIO.read(into: buffer, from: fd, action: a, path: p)\n"
            "var status = stat()\n"
            "try cache.open(entry, forKey: key)\n"
        )
        self.assertEqual(names(source), [])

    def test_comments_and_strings_pass(self):
        source = (
            "// open(path, O_RDONLY) here would follow links\n"
            "/* rename(a, b) */\n"
            'let message = "cannot rename(2) \\(path)"\n'
            'let text = """\n  unlink(x) is what it does\n  """\n'
        )
        self.assertEqual(names(source), [])

    def test_a_file_with_its_own_function_of_the_name_counts_only_qualified_calls(self):
        source = (
            "static func write(_ value: Int, into buffer: inout Buffer) {}\n"
            "write(entry.key, into: &buffer)\nwrite(value)\n"
            "_ = Glibc.write(fd, p, 1)\n"
        )
        self.assertEqual(names(source), [(4, "write")])

    def test_declarations_pass(self):
        self.assertEqual(names("func open(path: String) throws -> Log {}\n"), [])


class MainTests(unittest.TestCase):
    def run_in(self, files: dict[str, str]):
        return checklib.run_in_tree("check-file-syscalls.py", files)

    def test_the_boundary_may_call_and_others_may_not(self):
        result = self.run_in(
            {
                "Sources/StowageCore/FileSystem/TemporaryFile.swift": "let fd = open(p, O_RDONLY)\n",
                "Sources/StowageCache/New.swift": "unlink(p)\n",
            }
        )
        self.assertEqual(result.returncode, 1)
        self.assertIn("Sources/StowageCache/New.swift:1: unlink(2) outside StowageCore/FileSystem", result.stdout)
        self.assertNotIn("TemporaryFile.swift", result.stdout)

    def test_a_stale_allow_list_entry_fails(self):
        # Every allow-listed file is absent here, so each entry is stale.
        result = self.run_in({"Sources/StowageCache/Clean.swift": "FileNames.remove(p)\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("DiskCacheFiles.swift: allow-listed but makes no forbidden call", result.stdout)

    def test_a_missing_path_is_an_error(self):
        result = checklib.run_in_tree("check-file-syscalls.py", {}, "NoSuchDirectory")
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
