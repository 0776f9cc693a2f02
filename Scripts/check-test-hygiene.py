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

Usage: check-test-hygiene.py   (from anywhere; reads Tests and Sources of the package)
Prints `file:line: message` per finding and exits 1 if there was any.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("check_portability", os.path.join(HERE, "check-portability.py"))
check_portability = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_portability)

KNOWN_ISSUE = re.compile(r"\bwithKnownIssue\b")
FOUNDATION_PROCESS = re.compile(r"(?<![\w.])(?:Foundation\.)?Process\s*\(\s*\)")
SLEEP = re.compile(r"\bTask\.sleep\b|\bThread\.sleep\b|(?<![\w.])usleep\s*\(")

# Real sleeps that remain in tests, per file: (the most the file may hold, why).
ALLOWED: dict[str, tuple[int, str]] = {
    # The kernel's, a peer's or a killed process's own timing is the subject.
    "Tests/StowageCacheTests/DiskCacheBudgetProcessTests.swift": (2, "writers pace their writes and kill -9 lands at random moments: the crash's timing is the subject"),
    "Tests/StowageCacheTests/DiskCacheDeferredCrashTests.swift": (2, "kill -9 at a random moment of a deferred commit; one poll for the commit to start (to convert to eventually)"),
    "Tests/StowageCacheTests/DiskCacheCloseRaceTests.swift": (1, "staggers close() against in-flight writes by 0-8 ms on purpose: the race window is the subject"),
    "Tests/StowageCacheTests/DiskCacheMaintenanceTests.swift": (1, "a writer paced at 2 ms while maintenance runs: interleaving real writes is the subject"),
    "Tests/StowageCacheTests/DiskCacheTests.swift": (1, "a reader holds a value file 10 ms while a writer replaces it: the overlap is the subject"),
    "Tests/StowageCacheTests/CacheLevelsTests.swift": (1, "SlowDecoding widens a race window by 1 ms; a hook that holds decoding until the racing write lands would replace it"),
    "Tests/StowageCacheTests/MemoizeTests.swift": (1, "memoize times the computation on the real clock (XFetch's delta); the computation must take real time"),
    "Tests/StowageStoresTests/WipeCrashTests.swift": (2, "kill -9 lands inside a wipe's deletions: the crash's timing is the subject"),
    "Tests/StowageTestWorker/CacheWorkerCommand.swift": (1, "a worker process paces its commits so the parent can kill it between two"),
    "Tests/StowageTestWorker/SharedTierWorkerCommand.swift": (2, "a worker process's loader takes real time so loaders on two nodes overlap; one poll of its own memory"),
    "Tests/StowageCoreTests/BlockingWorkTests.swift": (1, "each item blocks its lane 20 ms, as a slow disk does, so lanes are seen to run at once"),
    "Tests/StowageHousekeepingTests/PurgeableDirectoriesTests.swift": (3, "files made a few ms apart so their birth times differ (birth time cannot be set)"),
    "Tests/StowageProxyTests/ConnectionDeadlineTests.swift": (1, "a client pausing 1 s, shorter than the send timeout, against the real socket deadline"),
    "Tests/StowageProxyTests/EventLoopHitAttackTests.swift": (3, "slow-reading and slow-writing raw clients against the proxy's event loop: their pace is the subject"),
    "Tests/StowageProxyTests/EncodedHitAttackTests.swift": (3, "a slow-reading client (its pace is the subject) and two 50 ms pauses between purges and fills"),
    "Tests/StowageProxyTests/HostileClientTests.swift": (1, "a client that sends one byte every 100 ms (slowloris): its pace is the subject"),
    "Tests/StowageProxyTests/InterimForwardingTests.swift": (1, "an origin that answers after a delay, so interim responses come first"),
    "Tests/StowageProxyTests/Support/RawSocket.swift": (1, "a raw client's optional pause between writes, for tests of slow clients"),
    "Tests/StowageProxyTests/Support/ScriptedUpstream.swift": (1, "a scripted origin's optional delay, for tests of slow origins"),
    "Tests/StowageHTTPTestSupport/TestOriginServer.swift": (1, "the test origin's optional per-reply delay, for tests of slow origins"),
    "Tests/StowageHummingbirdTests/ResponseCacheHostileRequestTests.swift": (1, "a handler held 50 ms so requests collapse behind it (to convert to a held gate)"),
    "Tests/StowageHTTPCacheTests/HTTPCacheStorageTests.swift": (1, "an origin held 0.2 s so requests collapse behind it (to convert to a held gate)"),
    "Tests/StowageHTTPCacheTests/SharedLevelEngineTests.swift": (1, "a shared-level write held 200 ms in a hook (to convert to a held gate)"),
    "Tests/StowageHTTPCacheTests/HTTPBodyWritingTests.swift": (2, "HTTPBody exposes no 'writer suspended' event; two negatives checked after 50 ms"),
    "Tests/StowageHTTPCacheTests/RequestCollapserClockTests.swift": (2, "a 20 ms negative check after a stepped advance, and a 45 s cut-off that turns a hang into a failure"),
    "Tests/StowageHousekeepingTests/StorageMonitorTests.swift": (1, "a 100 ms negative check after a stepped advance (no further check ran)"),
    "Tests/StowageHousekeepingTests/CacheCleanerTests.swift": (1, "a poll for a consumer's cancellation (to convert to eventually)"),
    "Tests/StowageCookiesTests/CookieHardeningTests.swift": (1, "a 20 s cut-off that unblocks a FIFO open, turning a hang into a failure"),
    "Tests/StowageCLITests/ProxyProcess.swift": (1, "a watchdog that kills a proxy process that outlives its deadline"),
    "Tests/StowageCLITests/ProxyCommandTests.swift": (1, "300 ms for redis-cli to take the only client slot; the holder reports no 'connected' event"),
    "Tests/StowageProxyTests/OperatorControlsTests.swift": (1, "a poll for the background refresh (to convert to eventually)"),
    "Tests/StowageSharedTierTests/SharedTierTests.swift": (1, "a local loader that overlaps with worker processes' loaders, which take real time"),
    "Tests/StowageRedisTestSupport/RedisClusterProcesses.swift": (1, "a poll while redis-cli builds the cluster (a separate process with no event)"),
    "Tests/StowageRedisTests/RedisClusterTests.swift": (3, "load kept running 300 ms across a reshard, and one poll (to convert to eventually)"),
    "Tests/StowageRedisTests/RedisClientTests.swift": (4, "a key's real TTL in Redis (400 ms), a settle before a negative, and two polls (to convert)"),
    "Tests/StowageRedisTests/RedisMultiplexingTests.swift": (4, "polls of the server's client list and callers reaching a hung handshake (to convert)"),
    "Tests/StowageRedisTests/RedisTaskExecutorTests.swift": (4, "holders on a connection and polls of the executor's callers (to convert)"),
    "Tests/StowageRedisTests/RedisTaskExecutorAttackTests.swift": (4, "polls for callers to start, a settle before cancelling, and outcome(within:)'s cut-off"),
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
                # Rule 1 and 3 are about tests; Sources may name withKnownIssue in documentation.
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
