#!/usr/bin/env python3
"""Tests for check-portability.py: planted snippets that must fail or pass.

Run: python3 Scripts/test_check_portability.py   (stdlib unittest; CI runs it before the check)
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-portability.py")
spec = importlib.util.spec_from_file_location("check_portability", SCRIPT)
check_portability = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_portability)


def names(source: str) -> list[tuple[int, str]]:
    return [
        (finding.line, finding.message.removesuffix(check_portability.OUTSIDE))
        for finding in check_portability.check_source("x.swift", source)
    ]


MTIM = "st_*tim (Darwin: st_*timespec)"


class CheckPortabilityTests(unittest.TestCase):
    def test_st_mtim_outside_if_fails(self):
        self.assertEqual(names("let t = status.st_mtim.tv_sec\n"), [(1, MTIM)])

    def test_inside_canimport_glibc_passes(self):
        self.assertEqual(names("#if canImport(Glibc)\nlet t = status.st_mtim.tv_sec\n#endif\n"), [])

    def test_else_of_canimport_darwin_passes(self):
        source = "#if canImport(Darwin)\nlet t = s.st_mtimespec\n#else\nlet t = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [])

    def test_elseif_and_os_conditions_pass(self):
        source = (
            "#if canImport(Darwin)\nimport Darwin\n#elseif canImport(Glibc)\nGlibc.open(p, 0)\n#endif\n"
            "#if os(Linux)\nlet p = \"/proc/self/fd\"\n#endif\n"
        )
        self.assertEqual(names(source), [])

    def test_after_endif_is_unguarded_again(self):
        source = "#if canImport(Glibc)\nimport Glibc\n#endif\nGlibc.kill(pid, SIGKILL)\n"
        self.assertEqual(names(source), [(4, "Glibc.")])

    def test_non_platform_if_does_not_guard(self):
        source = "#if DEBUG\nlet t = s.st_atim\n#else\nlet t = s.st_ctim\n#endif\n"
        self.assertEqual(names(source), [(2, MTIM), (4, MTIM)])

    def test_branch_before_the_first_platform_condition_is_unguarded(self):
        # Without DEBUG, Darwin compiles the #else: only the os(Linux) branch is guarded.
        source = "#if DEBUG\nlet t = s.st_atim\n#elseif os(Linux)\nlet t = s.st_atim\n#else\nlet u = s.st_atim\n#endif\n"
        self.assertEqual(names(source), [(2, MTIM), (6, MTIM)])

    def test_negated_linux_condition_does_not_guard(self):
        source = "#if !os(Linux)\nlet t = s.st_mtim\n#else\nlet u = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [(2, MTIM)])

    def test_linux_condition_or_true_does_not_guard(self):
        source = "#if os(Linux) || true\nlet t = s.st_mtim\n#endif\n#if canImport(Glibc) && DEBUG\nlet u = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [(2, MTIM)])

    def test_else_of_a_linux_condition_is_darwins_and_checked(self):
        source = "#if os(Linux)\nlet t = s.st_mtim\n#else\nlet u = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [(4, MTIM)])

    def test_one_apple_platform_does_not_guard_the_others(self):
        source = "#if os(macOS)\nlet t = 1\n#else\nlet u = s.st_mtim\n#endif\n#if !(os(Linux) || os(Android))\nepoll_wait(a, b, c, d)\n#endif\n"
        self.assertEqual(names(source), [(4, MTIM), (7, "epoll")])

    def test_regex_literal_opens_no_comment(self):
        source = "let r = #/a/*b/#\nlet t = s.st_mtim\nlet q = ##/\"/##\nlet u = s.st_mtim\n"
        self.assertEqual(names(source), [(2, MTIM), (4, MTIM)])

    def test_multi_line_regex_literal_is_text(self):
        source = "let r = #/\n  a/* # \"\n  /#\nlet t = s.st_mtim\n"
        self.assertEqual(names(source), [(4, MTIM)])

    def test_module_and_member_split_over_lines(self):
        source = "let fd = Glibc\n    .open(p, 0)\nlet g = Musl  // a comment\n\n    .close(fd)\nlet h = Glibc .kill(1, 9)\n"
        self.assertEqual(names(source), [(1, "Glibc."), (3, "Musl."), (6, "Glibc.")])

    def test_swift_glibc_module(self):
        source = "import SwiftGlibc\nlet x = SwiftGlibc.open(p, 0)\n"
        self.assertEqual(names(source), [(1, "import Glibc"), (2, "Glibc.")])

    def test_nested_non_platform_if_inside_platform_if_passes(self):
        source = "#if os(Linux)\n#if DEBUG\nepoll_wait(a, b, c, d)\n#endif\nlet t = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [])

    def test_nested_platform_if_inside_non_platform_if_guards_only_itself(self):
        source = "#if DEBUG\n#if canImport(Glibc)\nlet a = s.st_mtim\n#endif\nlet b = s.st_mtim\n#endif\n"
        self.assertEqual(names(source), [(5, MTIM)])

    def test_comments_are_ignored(self):
        source = (
            "// st_mtim on Linux, st_mtimespec on Darwin\n"
            "/// Uses `statx` where the kernel has it.\n"
            "/* epoll\n   /* nested */ inotify */\n"
            "let x = 1  // SOCK_CLOEXEC\n"
        )
        self.assertEqual(names(source), [])

    def test_directive_inside_a_comment_or_string_does_not_count(self):
        source = '/*\n#if os(Linux)\n*/\nlet s = """\n#if canImport(Glibc)\n"""\nlet t = st.st_mtim\n'
        self.assertEqual(names(source), [(7, MTIM)])

    def test_string_literals_are_checked(self):
        source = 'let a = "/proc/self/fd/\\(fd)"\nlet b = #"/sys/fs/cgroup"#\nlet c = """\n  /proc/x\n  "/sys"\n  """\n'
        self.assertEqual(names(source), [(1, '"/proc'), (2, '"/sys'), (5, '"/sys')])

    def test_comment_markers_inside_strings_are_text(self):
        source = 'let url = "http://example.com"; let t = s.st_mtim\n'
        self.assertEqual(names(source), [(1, MTIM)])

    def test_interpolation_with_quotes_does_not_lose_track(self):
        source = 'let a = "x\\(d["k"] ?? "")y" // st_mtim\nlet t = s.st_mtim\n'
        self.assertEqual(names(source), [(2, MTIM)])

    def test_look_alike_names_pass(self):
        source = 'let a = s.st_mtimespec\nlet b = statvfs()\nlet c = "/system"\nlet d = mySysinfoValue\n'
        self.assertEqual(names(source), [])

    def test_socket_spellings(self):
        source = "let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)\n"
        found = [name for _, name in names(source)]
        self.assertIn("SOCK_CLOEXEC", found)
        self.assertIn("SOCK_*.rawValue (Darwin: a plain Int32)", found)

    def test_command_line_fails_on_a_planted_st_mtim_and_passes_when_guarded(self):
        with tempfile.TemporaryDirectory() as directory:
            planted = os.path.join(directory, "Planted.swift")
            with open(planted, "w", encoding="utf-8") as file:
                file.write("import Foundation\n\nfunc age(_ s: stat) -> Int { s.st_mtim.tv_sec }\n")
            result = subprocess.run([sys.executable, SCRIPT, directory], capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertEqual(result.stdout, f"{planted}:3: {MTIM} outside a platform #if\n")
            with open(planted, "w", encoding="utf-8") as file:
                file.write(
                    "#if canImport(Darwin)\nfunc age(_ s: stat) -> Int { s.st_mtimespec.tv_sec }\n"
                    "#elseif canImport(Glibc)\nfunc age(_ s: stat) -> Int { s.st_mtim.tv_sec }\n#endif\n"
                )
            result = subprocess.run([sys.executable, SCRIPT, directory], capture_output=True, text=True)
            self.assertEqual((result.returncode, result.stdout), (0, ""))

    def test_command_line_fails_on_a_missing_path(self):
        with tempfile.TemporaryDirectory() as directory:
            missing = os.path.join(directory, "Sourcse")
            result = subprocess.run([sys.executable, SCRIPT, directory, missing], capture_output=True, text=True)
            self.assertEqual((result.returncode, result.stdout), (2, ""))
            self.assertIn(missing, result.stderr)


if __name__ == "__main__":
    unittest.main()
