#!/usr/bin/env python3
"""Where a process's threads wait in the kernel, and their CPU, over a span of time.

Samples /proc/PID/task/*/stack every 20 ms for SECONDS (root only: the kernel hides stacks from
others) and prints one summary line, then the most frequent waits, one per line:

    samples=N dirty_max=PAGES writeback_max=PAGES cpu=THREAD:TICKS,...
    COUNT THREAD     frame > frame > frame > frame [sys NR fd FD FILE]

Idle waits (epoll, futex) are left out. A wait inside a file read or a writeback names the
system call and the file it was made on, from /proc/PID/task/TID/syscall. dirty_max and
writeback_max are the most pages /proc/vmstat counted dirty and under writeback in the span;
CPU is in clock ticks (100 a second) per thread name.

Usage: thread-waits.py PID SECONDS
"""

from __future__ import annotations

import collections
import os
import sys
import time

IDLE = ("ep_poll", "do_epoll_wait", "futex_wait_queue", "futex_wait", "sigsuspend.isra.0")
FILE_WAITS = ("filemap_read", "wait_writeback", "fdatawait", "wbt_wait")


def read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def ticks(pid: str, task: str) -> int:
    stat = read(f"/proc/{pid}/task/{task}/stat")
    if stat is None:
        return 0
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def name(pid: str, task: str) -> str:
    return (read(f"/proc/{pid}/task/{task}/comm") or "?").strip()[:14]


def file_of_wait(pid: str, task: str) -> str:
    syscall = (read(f"/proc/{pid}/task/{task}/syscall") or "").split()
    try:
        descriptor = int(syscall[1], 16)
        target = os.readlink(f"/proc/{pid}/fd/{descriptor}").rsplit("/", 1)[-1]
        return f" [sys {syscall[0]} fd {descriptor} {target}]"
    except (IndexError, ValueError, OSError):
        return " [the call had ended]"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    pid, seconds = sys.argv[1], float(sys.argv[2])
    if not os.path.isdir(f"/proc/{pid}"):
        print(f"thread-waits: no process {pid}", file=sys.stderr)
        return 2
    tasks = os.listdir(f"/proc/{pid}/task")
    before = {task: ticks(pid, task) for task in tasks}
    waits: collections.Counter[tuple[str, str]] = collections.Counter()
    samples = dirty_max = writeback_max = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and os.path.isdir(f"/proc/{pid}"):
        for task in os.listdir(f"/proc/{pid}/task"):
            stack = read(f"/proc/{pid}/task/{task}/stack") or ""
            frames = [line.split(" ", 1)[1].split("+")[0] for line in stack.splitlines() if " " in line]
            if not frames or any(frame in IDLE for frame in frames[:3]):
                continue
            where = " > ".join(frames[:4])
            if any(wait in where for wait in FILE_WAITS):
                where += file_of_wait(pid, task)
            waits[(name(pid, task), where)] += 1
        vmstat = dict(line.split() for line in (read("/proc/vmstat") or "").splitlines() if " " in line)
        dirty_max = max(dirty_max, int(vmstat.get("nr_dirty", 0)))
        writeback_max = max(writeback_max, int(vmstat.get("nr_writeback", 0)))
        samples += 1
        time.sleep(0.02)
    cpu: collections.Counter[str] = collections.Counter()
    for task in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}") else []:
        cpu[name(pid, task)] += ticks(pid, task) - before.get(task, 0)
    threads = ",".join(f"{thread}:{count}" for thread, count in cpu.most_common(6))
    print(f"samples={samples} dirty_max={dirty_max} writeback_max={writeback_max} cpu={threads}")
    for (thread, where), count in waits.most_common(15):
        print(f"{count:5d} {thread:14s} {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
