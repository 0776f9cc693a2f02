#!/usr/bin/env python3
"""Tests for check-clocks.py: planted snippets that must fail or pass.

Run: python3 Scripts/test_check_clocks.py   (stdlib unittest; CI runs it before the check)
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

check = checklib.load("check-clocks.py")


def reads(source: str) -> list[tuple[int, str]]:
    return [(finding.line, finding.message.split(" reads")[0]) for finding in check.check_source("x.swift", source)]


class CheckClocksTests(unittest.TestCase):
    def test_real_time_reads_fail(self):
        source = (
            "let cutoff = Date().timeIntervalSince1970 - grace\n"
            "let deadline = ContinuousClock.now + timeout\n"
            "let clock = ContinuousClock()\n"
            "let at = NIODeadline.now() + timeout\n"
            "let today = Date.now\n"
            "let wall = DispatchTime.now()\n"
        )
        self.assertEqual(
            reads(source),
            [
                (1, "Date()"),
                (2, "ContinuousClock.now"),
                (3, "ContinuousClock()"),
                (4, "NIODeadline.now()"),
                (5, "Date.now"),
                (6, "NIODeadline.now()"),
            ],
        )

    def test_sleeps_fail(self):
        source = "try await Task.sleep(for: .milliseconds(2))\nThread.sleep(forTimeInterval: 1)\nusleep(10_000)\n"
        self.assertEqual(reads(source), [(1, "Task.sleep"), (2, "Task.sleep"), (3, "usleep(")])

    def test_implicit_now_fails_and_a_clock_member_passes(self):
        source = (
            "if deadline > .now() {}\n"
            "state = .idle(since: .now())\n"
            "return .now()\n"
            "let t = clock.now()\n"
            "let d = configuration.clock.now().timeIntervalSince1970\n"
            "let e = clock.now\n"
            "let f = options?.clock.now()\n"
        )
        self.assertEqual(reads(source), [(1, ".now"), (2, ".now"), (3, ".now")])

    def test_nio_timers_fail_and_loop_clock_timers_pass(self):
        source = (
            "let t = context.eventLoop.scheduleTask(in: timeout) { close() }\n"
            "let u = loop.assumeIsolated().scheduleTask(deadline: at) { check() }\n"
            "let v = clock.scheduleTask(on: loop, deadline: at) { check() }\n"
        )
        self.assertEqual(reads(source), [(1, "EventLoop.scheduleTask"), (2, "EventLoop.scheduleTask")])

    def test_defaults_of_clock_options_pass(self):
        source = (
            "public var waitClock: any Clock<Duration> = ContinuousClock()\n"
            "init(clock: any Clock<Duration> = ContinuousClock()) {}\n"
            "backoffClock = ContinuousClock()\n"
            "static func summary(of d: URL, now: Date = Date()) {}\n"
            "init(now: @escaping @Sendable () -> Date = { Date() }) {}\n"
            "init(start: ContinuousClock.Instant = .now) {}\n"
        )
        self.assertEqual(reads(source), [])

    def test_a_local_named_clock_is_no_default(self):
        self.assertEqual(reads("let clock = ContinuousClock()\nvar now = Date()\n"), [(1, "ContinuousClock()"), (2, "Date()")])

    def test_comments_and_strings_pass_but_interpolations_count(self):
        source = (
            "// Date() here would be the wall clock\n"
            "/* Task.sleep(for: x) */\n"
            'let message = "waits with Task.sleep, reads Date()"\n'
            'var copy = path + ".damaged-\\(Int(Date().timeIntervalSince1970))"\n'
        )
        self.assertEqual(reads(source), [(4, "Date()")])

    def test_other_names_pass(self):
        source = (
            "let d = Date(timeIntervalSince1970: 0)\n"
            "let u = UpdateDate()\n"
            "try await clock.sleep(for: pause)\n"
            "let snow = x.nowhere\n"
        )
        self.assertEqual(reads(source), [])


class MainTests(unittest.TestCase):
    def run_in(self, files: dict[str, str]):
        return checklib.run_in_tree("check-clocks.py", files)

    def test_excluded_targets_may_read_and_others_may_not(self):
        result = self.run_in(
            {
                "Sources/StowageBench/Timing.swift": "let start = ContinuousClock.now\n",
                "Sources/StowageTesting/Stepped.swift": "let d = Date()\n",
                "Sources/StowageCache/New.swift": "try await Task.sleep(for: .seconds(1))\n",
            }
        )
        self.assertEqual(result.returncode, 1)
        self.assertIn("Sources/StowageCache/New.swift:1: Task.sleep reads real time", result.stdout)
        self.assertNotIn("Timing.swift", result.stdout)
        self.assertNotIn("Stepped.swift", result.stdout)

    def test_a_stale_allow_list_entry_fails(self):
        # Every allow-listed file is absent here, so each entry is stale.
        result = self.run_in({"Sources/StowageCache/Clean.swift": "let now = clock.now()\n"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("CacheClock.swift: allow-listed but reads no real time", result.stdout)

    def test_a_missing_path_is_an_error(self):
        result = checklib.run_in_tree("check-clocks.py", {}, "NoSuchDirectory")
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
