#!/usr/bin/env python3
"""Fails when library code reads the time or waits on real time without the component's clock.

Every production site that waits, times out or reads the date takes its component's clock (a
`CacheClock`, an `any Clock<Duration>` option, or `LoopClock` for event-loop deadlines), so a
test drives it with `ManualClock`/`SteppedClock` instead of sleeping (issue 43, "time is a
parameter"). A bare `Date()` or `ContinuousClock.now` is a second, untestable clock; this check
keeps new ones out.

Usage: check-clocks.py [PATH ...]   (default: Sources, relative to the package root)
Prints `file:line: WHAT reads real time; take the component's clock` for each hit and exits 1 if
there was any; exits 2 when a PATH does not exist. An allow-listed file that no longer has a hit
is reported too (exit 1), so the list cannot go stale.

What counts: `Date()`, `ContinuousClock()`, `SuspendingClock()`, `ContinuousClock.now`,
`SuspendingClock.now`, `Date.now`, `NIODeadline.now()`, `DispatchTime.now()`, an implicit-member
`.now()` or `.now` (`deadline > .now()`, `since: .now()`), `Task.sleep`, `Thread.sleep`,
`usleep(` and NIO's own timers (`scheduleTask(in:` or `scheduleTask(deadline:`; LoopClock's
`scheduleTask(on:` runs on the component's clock). A member of a value (`clock.now()`, `configuration.clock.now`) is the component's
clock and passes. So does a default — the real clock a public clock option starts with, which
a caller (a test) replaces:

- a default argument or property default with a type annotation
  (`clock: any Clock<Duration> = ContinuousClock()`, `now: Date = Date()`,
  `now: @Sendable () -> Date = { Date() }`, `start: ContinuousClock.Instant = .now`);
- an initializer setting a clock option to its default (`backoffClock = ContinuousClock()`:
  a name ending in `Clock`).

Comments and string literals are ignored. Not checked: the benches (StowageBench,
StowageMiddlewareBench, StowageHTTPFloor measure real time by design), the testing product
(StowageTesting, the clocks tests move) and StowageProcessSupport (starts and waits for child
processes for the tests).
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

# Targets not checked, with the reason.
EXCLUDED: dict[str, str] = {
    "Sources/StowageBench/": "the bench measures real time by design",
    "Sources/StowageMiddlewareBench/": "the bench measures real time by design",
    "Sources/StowageHTTPFloor/": "a baseline server for the bench",
    "Sources/StowageTesting/": "the clocks tests move (ManualClock, SteppedClock, TickingClock)",
    "Sources/StowageProcessSupport/": "starts child processes for the tests and waits for them",
}

# Files that read real time on purpose, with the reason; the list only shrinks.
ALLOWED: dict[str, str] = {
    # The clock abstractions themselves: where the real clock is read when no other is given.
    "Sources/StowageCore/Time/CacheClock.swift": "CacheClock.system is the wall clock",
    "Sources/StowageCore/Time/ElapsedClock.swift": "ElapsedClock.continuous wraps ContinuousClock; its blocking sleep on it is the real one",
    "Sources/StowageLoopClock/LoopClock.swift": "LoopClock.system is NIO's clock and timers",
    # AsyncHTTPClient takes its deadline as an NIODeadline on NIO's clock; with another
    # timeoutClock the transport runs a timer on that clock beside the request instead.
    "Sources/StowageHTTPClient/UpstreamTransport.swift": "AsyncHTTPClient's own deadline, on real time",
    # Durations measured for metrics and logs, not deadlines: how long a request or a
    # memoized computation took is real time, whatever clock decides expiry.
    "Sources/StowageProxy/Serving/ProxyHandler.swift": "request duration for the metrics",
    "Sources/StowageCache/Hybrid/HybridCache+Memoize.swift": "computation time for the cost metric",
    # Pacing CPU use: a burst of look-ups takes real time on a real core, and the rest after it
    # gives that core back to the event loops; no test moves it (SpilledAnswerRecheckTests
    # measures it).
    "Sources/StowageHTTPCache/Flow/SpilledAnswerRechecks.swift": "paces its own CPU use on real time",
    # The cutoff is compared with file modification times, which the kernel sets on the wall
    # clock: a test's ManualClock (2027) would make a file another process is writing look old.
    "Sources/StowageCache/Disk/DiskCache+Recovery.swift": "compared with kernel-set modification times",
}


# (pattern, what it reads).
READS = [
    (re.compile(r"(?<![\w.])Date\s*\(\s*\)"), "Date()"),
    (re.compile(r"(?<![\w.])(?:Continuous|Suspending)Clock\s*\(\s*\)"), "ContinuousClock()"),
    (re.compile(r"(?<![\w.])(?:Continuous|Suspending)Clock\s*\.\s*now\b"), "ContinuousClock.now"),
    (re.compile(r"(?<![\w.])Date\s*\.\s*now\b"), "Date.now"),
    (re.compile(r"(?<![\w.])(?:NIODeadline|DispatchTime|DispatchWallTime)\s*\.\s*now\s*\("), "NIODeadline.now()"),
    (re.compile(r"(?<![\w.])(?:Task|Thread)\s*\.\s*sleep\b"), "Task.sleep"),
    (re.compile(r"(?<![\w.])usleep\s*\("), "usleep("),
    # NIO's own timers (`scheduleTask(in:` / `deadline:`); LoopClock's take `on:` first.
    (re.compile(r"\bscheduleTask\s*\(\s*(?:in|deadline)\s*:"), "EventLoop.scheduleTask"),
]
# `.now`: an implicit member (`deadline > .now()`, `since: .now()`) when no value comes before
# the dot; after one (`clock.now()`, `configuration.clock.now`) it is the component's clock.
NOW = re.compile(r"\.now\b")
# A default: `name: Type = ` (a parameter or a property), `someClock = ` (an initializer
# setting a clock option), optionally opening a closure (`= { Date() }`).
DEFAULT = re.compile(r"(?:\b\w+\s*:\s*[^=;]+?|\b\w+Clock)\s*=\s*\{?\s*$")
STRING = re.compile(r'#*"(?:\\.|[^"\\])*"#*')


def interpolations(literal: str) -> str:
    """The code inside a string literal's interpolations (`\\(Int(Date().timeIntervalSince1970))`)."""
    found: list[str] = []
    index = literal.find("\\(")
    while index >= 0:
        depth, end = 1, index + 2
        while end < len(literal) and depth:
            depth += {"(": 1, ")": -1}.get(literal[end], 0)
            end += 1
        found.append(literal[index + 2 : end - 1])
        index = literal.find("\\(", end)
    return " ".join(found)


def code_lines(source: str) -> list[tuple[int, str]]:
    """The lines with comments and string literals blanked, interpolations (`\\(Date())`) kept."""
    lines: list[tuple[int, str]] = []
    in_multiline = False
    for number, text, _ in check_portability.code_lines(source):
        if '"""' in text:
            parts = text.split('"""')
            kept = [part for index, part in enumerate(parts) if (index % 2 == 0) != in_multiline]
            in_multiline = in_multiline != (len(parts) % 2 == 0)
            text = " ".join(kept)
        elif in_multiline:
            text = interpolations(text)
        text = STRING.sub(lambda match: '"' + interpolations(match.group(0)) + '"', text)
        lines.append((number, text))
    return lines


def check_source(path: str, source: str) -> list[Finding]:
    findings: list[Finding] = []
    for number, text in code_lines(source):
        hits: list[tuple[int, str]] = []
        for pattern, what in READS:
            hits.extend((match.start(), what) for match in pattern.finditer(text))
        for match in NOW.finditer(text):
            if not re.search(r"[\w)\]?!]$", text[: match.start()]):
                hits.append((match.start(), ".now"))
        for start, what in sorted(hits):
            if DEFAULT.search(text[:start]):
                continue
            findings.append(Finding(path, number, f"{what} reads real time; take the component's clock"))
    return findings


def main(arguments: list[str]) -> int:
    check = checklib.AllowListedCheck(
        tool="check-clocks.py",
        check_source=check_source,
        allowed=ALLOWED,
        stale="reads no real time any more",
        summary=lambda count: (
            f"{count} read(s) of real time: take the component's clock (CacheClock, an "
            "`any Clock<Duration>` option, LoopClock for event-loop deadlines)"
        ),
        skipped=lambda path: checklib.listed(path, EXCLUDED) is not None,
    )
    return checklib.run_allow_listed(check, arguments, check_portability.swift_files)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
