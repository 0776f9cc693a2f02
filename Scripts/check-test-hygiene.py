#!/usr/bin/env python3
"""Fails on the test-suite habits that made CI a lottery on a loaded 2-core machine.

1. `withKnownIssue` anywhere under Tests: it turns a real failure into a pass that can no longer
   fail. Fix the cause, or let the test fail.
2. Foundation's `Process()` anywhere under Tests or Sources: swift-corelibs-foundation's
   `Process.run()` crashed the whole test process now and then when many threads spawned children
   (a `memcpy` past `d_name` while it lists /proc/self/fd). Use `ChildProcess`
   (Sources/StowageProcessSupport), which spawns with `posix_spawn`.
3. Real sleeps in tests (`Task.sleep`, `Thread.sleep`, `usleep(`): a test that waits on real time
   to order events or let a timeout pass fails when a loaded machine runs late. Tests drive a
   `ManualClock`/`SteppedClock` and await the event instead. The sleeps that remain are in
   ALLOWED below, per file, with the most a file may hold and the reason; the list only shrinks,
   and a file holding fewer than its entry allows is reported too, so the entry is lowered.
4. A time limit under five minutes (`.timeLimit(.minutes(N))`, N < 5): a time limit catches a
   hang, it does not time the code. Beside the whole parallel suite on two cores a test's awaits
   wait for a cooperative thread, and a clock-driven test that takes 0.2 s alone ran past a
   one-minute limit (RequestCollapserClockTests, a fresh-clone CI run). Five minutes is also
   `eventually`'s default timeout.

Usage: check-test-hygiene.py   (from anywhere; reads Tests and Sources of the package)
Prints `file:line: message` per finding and exits 1 if there was any.
"""

from __future__ import annotations

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import checklib  # noqa: E402

check_portability = checklib.load("check-portability.py")

KNOWN_ISSUE = re.compile(r"\bwithKnownIssue\b")
FOUNDATION_PROCESS = re.compile(r"(?<![\w.])(?:Foundation\.)?Process\s*\(\s*\)")
SLEEP = re.compile(r"\bTask\.sleep\b|\bThread\.sleep\b|(?<![\w.])usleep\s*\(")
TIME_LIMIT = re.compile(r"\.timeLimit\(\s*\.minutes\(\s*(\d+)\s*\)\s*\)")
SHORTEST_TIME_LIMIT_MINUTES = 5

# Real sleeps that remain in tests, per file: (the most the file may hold, why).
ALLOWED: dict[str, tuple[int, str]] = {
    # The kernel's, a peer's or a killed process's own timing is the subject.
    "Tests/StowageCacheTests/DiskCacheBudgetProcessTests.swift": (2, "writers pace their writes and kill -9 lands at random moments: the crash's timing is the subject"),
    "Tests/StowageCacheTests/DiskCacheDeferredCrashTests.swift": (1, "kill -9 at a random moment of a deferred commit: the crash's timing is the subject"),
    "Tests/StowageCacheTests/DiskCacheCloseRaceTests.swift": (1, "staggers close() against in-flight writes by 0-8 ms on purpose: the race window is the subject"),
    "Tests/StowageCacheTests/DiskCacheMaintenanceTests.swift": (1, "a writer paced at 2 ms while maintenance runs: interleaving real writes is the subject"),
    "Tests/StowageCacheTests/CacheLevelsTests.swift": (1, "SlowDecoding widens a race window by 1 ms: decoding runs on a cooperative thread, so holding it until the racing write lands starved the pool (tried)"),
    "Tests/StowageCacheTests/MemoizeTests.swift": (1, "memoize times the computation on the real clock (XFetch's delta); the computation must take real time"),
    "Tests/StowageTestWorker/CacheWorkerCommand.swift": (1, "a worker process paces its commits so the parent can kill it between two"),
    "Tests/StowageCoreTests/BlockingWorkTests.swift": (1, "each item blocks its lane 20 ms, as a slow disk does, so lanes are seen to run at once"),
    "Tests/StowageHousekeepingTests/Support/PurgeTestSupport.swift": (1, "a file made again 1 ms later until the kernel's coarse clock gives it a later birth time (birth time cannot be set)"),
    "Tests/StowageProxyTests/SpilledAnswerRecheckTests.swift": (1, "each look-up holds the lane 1 ms, as a row read does, so the rest after a burst is measured against how long the burst took"),
    "Tests/StowageProxyTests/ConnectionDeadlineTests.swift": (1, "a client pausing 1 s, shorter than the send timeout, against the real socket deadline"),
    "Tests/StowageProxyTests/Support/SlowPeer.swift": (1, "SlowPeer.pause, the one place a raw client's or scripted origin's pace lives (slowloris, slow readers, split heads, an origin slow after its interim)"),
    "Tests/StowageHTTPTestSupport/TestOriginServer.swift": (1, "the test origin's optional per-reply delay, for tests of slow origins"),
    "Tests/StowageTestSupport/Eventually.swift": (1, "eventually's own poll: the one place tests wait for a condition"),
}


def findings_in(path: str, source: str, check_sleeps: bool) -> tuple[list[str], int]:
    """The findings of rules 1 and 2 in `source`, and how many real sleeps it holds."""
    findings: list[str] = []
    sleeps = 0
    for number, line, _ in check_portability.code_lines(source):
        if KNOWN_ISSUE.search(line):
            findings.append(f"{path}:{number}: withKnownIssue hides a real failure; fix the cause or let the test fail")
        if FOUNDATION_PROCESS.search(line):
            findings.append(
                f"{path}:{number}: Foundation's Process() crashes under many spawning threads; use ChildProcess"
            )
        if check_sleeps:
            sleeps += len(SLEEP.findall(line))
            for minutes in TIME_LIMIT.findall(line):
                if int(minutes) < SHORTEST_TIME_LIMIT_MINUTES:
                    findings.append(
                        f"{path}:{number}: a {minutes}-minute time limit; a time limit catches a hang, "
                        f"so it is at least {SHORTEST_TIME_LIMIT_MINUTES} minutes (a loaded suite "
                        "delays every await)"
                    )
    return findings, sleeps


def check_tree(root: str, allowed: dict[str, tuple[int, str]]) -> list[str]:
    findings: list[str] = []
    seen: set[str] = set()
    for top in ("Tests", "Sources"):
        for path in sorted(check_portability.swift_files([os.path.join(root, top)])):
            relative = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
            in_tests = top == "Tests"
            found, sleeps = findings_in(relative, source, check_sleeps=in_tests)
            if not in_tests:
                # Rules 1, 3 and 4 are about tests; Sources may name withKnownIssue in documentation.
                found = [f for f in found if "Process()" in f]
            findings += found
            if not in_tests:
                continue
            limit, _ = allowed.get(relative, (0, ""))
            if relative in allowed:
                seen.add(relative)
            if sleeps > limit:
                findings.append(
                    f"{relative}: {sleeps} real sleep(s), {limit} allowed; wait on the event and drive time with "
                    "ManualClock/SteppedClock, or (where the kernel's own timing is the subject) add the file to "
                    "ALLOWED in Scripts/check-test-hygiene.py with the reason"
                )
            elif sleeps < limit:
                findings.append(f"{relative}: {sleeps} real sleep(s) but ALLOWED says {limit}; lower its entry")
    for relative in sorted(set(allowed) - seen):
        findings.append(f"{relative}: in ALLOWED but not found; remove its entry")
    return findings


def main(arguments: list[str]) -> int:
    if arguments:
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    findings = check_tree(ROOT, ALLOWED)
    for finding in findings:
        print(finding)
    total = sum(limit for limit, _ in ALLOWED.values())
    print(f"check-test-hygiene: {len(findings)} finding(s); {total} real sleep(s) allowed in {len(ALLOWED)} test file(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
