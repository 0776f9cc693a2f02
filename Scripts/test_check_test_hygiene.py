#!/usr/bin/env python3
"""Tests for check-test-hygiene.py: planted trees that must fail or pass.

Run: python3 Scripts/test_check_test_hygiene.py   (stdlib unittest; CI runs it before the check)
"""

import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("check_test_hygiene", os.path.join(HERE, "check-test-hygiene.py"))
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def tree(files: dict[str, str]) -> str:
    root = tempfile.mkdtemp()
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(text)
    os.makedirs(os.path.join(root, "Sources"), exist_ok=True)
    os.makedirs(os.path.join(root, "Tests"), exist_ok=True)
    return root


class CheckTestHygieneTests(unittest.TestCase):
    def test_known_issue_fails(self):
        root = tree({"Tests/A/ATests.swift": "withKnownIssue(isIntermittent: true) { #expect(x) }\n"})
        findings = check.check_tree(root, {})
        self.assertEqual(len(findings), 1)
        self.assertIn("withKnownIssue", findings[0])

    def test_known_issue_in_a_comment_passes(self):
        root = tree({"Tests/A/ATests.swift": "// no withKnownIssue here\n/* nor withKnownIssue here */\n"})
        self.assertEqual(check.check_tree(root, {}), [])

    def test_foundation_process_fails_in_tests_and_sources(self):
        root = tree(
            {
                "Tests/A/ATests.swift": "let p = Process()\n",
                "Sources/B/B.swift": "let q = Foundation.Process()\n",
            }
        )
        findings = check.check_tree(root, {})
        self.assertEqual(len(findings), 2)
        self.assertTrue(all("ChildProcess" in finding for finding in findings))

    def test_child_process_passes(self):
        root = tree({"Tests/A/ATests.swift": "let p = ChildProcess()\nlet q = StowageChildProcess()\n"})
        self.assertEqual(check.check_tree(root, {}), [])

    def test_short_time_limit_fails(self):
        root = tree(
            {
                "Tests/A/ATests.swift": "@Suite(.timeLimit(.minutes(3)))\nstruct S {\n"
                "    @Test(\"t\", .timeLimit( .minutes(1) )) func t() {}\n}\n",
            }
        )
        findings = check.check_tree(root, {})
        self.assertEqual(len(findings), 2)
        self.assertTrue(all("time limit catches a hang" in finding for finding in findings))
        self.assertIn("ATests.swift:1:", findings[0])
        self.assertIn("ATests.swift:3:", findings[1])

    def test_time_limit_of_five_minutes_or_more_passes(self):
        root = tree(
            {
                "Tests/A/ATests.swift": "@Suite(.timeLimit(.minutes(5)))\nstruct S {\n"
                "    @Test(.timeLimit(.minutes(10))) func t() {}\n    // .timeLimit(.minutes(1)) in a comment\n}\n",
            }
        )
        self.assertEqual(check.check_tree(root, {}), [])

    def test_sleep_outside_the_allow_list_fails(self):
        root = tree({"Tests/A/ATests.swift": "try await Task.sleep(for: .seconds(2))\nusleep(5_000)\n"})
        findings = check.check_tree(root, {})
        self.assertEqual(len(findings), 1)
        self.assertIn("2 real sleep(s), 0 allowed", findings[0])

    def test_clock_sleeps_are_not_real_sleeps(self):
        root = tree({"Tests/A/ATests.swift": "try await clock.sleep(for: .seconds(2))\nclock.advance(by: .seconds(1))\n"})
        self.assertEqual(check.check_tree(root, {}), [])

    def test_allowed_sleeps_pass_and_the_entry_cannot_go_stale(self):
        files = {"Tests/A/ATests.swift": "usleep(1_000)  // the kernel's timing\n"}
        self.assertEqual(check.check_tree(tree(files), {"Tests/A/ATests.swift": (1, "why")}), [])
        too_generous = check.check_tree(tree(files), {"Tests/A/ATests.swift": (2, "why")})
        self.assertEqual(len(too_generous), 1)
        self.assertIn("lower its entry", too_generous[0])
        gone = check.check_tree(tree(files), {"Tests/A/ATests.swift": (1, "why"), "Tests/A/Gone.swift": (1, "why")})
        self.assertEqual(len(gone), 1)
        self.assertIn("remove its entry", gone[0])

    def test_sleeps_in_sources_are_not_this_checks_concern(self):
        root = tree({"Sources/B/B.swift": "try await Task.sleep(for: .seconds(1))\n"})
        self.assertEqual(check.check_tree(root, {}), [])


if __name__ == "__main__":
    unittest.main()
