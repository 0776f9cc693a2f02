#!/usr/bin/env python3
"""Black-box check of "an invalidation is final" on a running `stowage proxy` (issue 45).

An origin serves one page whose body is its current version, after a random pause of up to
30 ms taken *after* it read the version: a fetch in flight carries the version it began with.
Every 10 ms the checker moves the origin to the next version and then purges the page through
the proxy's admin listener (`POST /purge?url=`). Client threads request the page without pause,
and `wrk` adds load on the same URL. A response to a request sent after purge k returned must
carry version k or later: an older one is the pre-purge fetch stored or served after the
purge, which the promise forbids.

Usage: Benchmarks/purge-order-check.py [--stowage PATH] [--seconds N] [--clients N] [--control]
                                      [--startup-seconds N]
`--control` moves the version without purging: every request then sees a stale page, which shows
the check can fail. Prints one JSON object (requests checked, purges, stale responses with examples) and exits 1
on any stale response, 2 when the setup fails or the check proved nothing: a client or the purger
stopped on an error (a dropped connection, a timeout), or no request was checked after a purge. Installs wrk with apt-get when missing (the
check still runs without it, with a note). Starts the origin (in this process), the proxy and
wrk, and stops them on exit.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import random
import select
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Origin:
    """The page's current version, read by the origin's handler and moved by the purger."""

    def __init__(self) -> None:
        self.version = 0
        self.lock = threading.Lock()
        self.fetches = 0

    def serve(self) -> tuple[socketserver.TCPServer, int]:
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                with origin.lock:
                    version = origin.version
                    origin.fetches += 1
                # Held after the version was read: the fetch in flight outlives a purge.
                time.sleep(random.uniform(0, 0.03))
                body = f"v{version}".encode()
                self.send_response(200)
                self.send_header("Cache-Control", "max-age=600")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, server.server_address[1]


def start_proxy(
    stowage: str, origin_port: int, scratch: str, startup_seconds: float, started: list[subprocess.Popen]
) -> tuple[subprocess.Popen, int, int]:
    """Starts the proxy with an admin listener (put in `started` at once, so that the caller
    stops it whatever happens next); returns it with its two ports."""
    admin_port = free_port()
    proxy = subprocess.Popen(
        [
            stowage, "proxy", "--root", scratch,
            "--upstream", f"http://127.0.0.1:{origin_port}",
            "--listen", "127.0.0.1:0",
            "--admin-listen", f"127.0.0.1:{admin_port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    started.append(proxy)
    # Bounded: a proxy that hangs before saying where it listens must not hang the check (and CI).
    ready, _, _ = select.select([proxy.stdout], [], [], startup_seconds)
    line = proxy.stdout.readline() if ready else ""
    if "listening on" not in line:
        raise SetupFailed(f"the proxy did not start within {startup_seconds:g} s: {line!r}")
    port = int(line.strip().rsplit(":", 1)[1])
    return proxy, port, admin_port


class SetupFailed(Exception):
    """The proxy or its admin listener did not come up: exit 2."""


def free_port() -> int:
    with socketserver.TCPServer(("127.0.0.1", 0), None) as probe:
        return probe.server_address[1]


def wait_for_admin(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/status.json")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.05)
    raise SetupFailed("the admin listener did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stowage", default=os.path.join(ROOT, ".build/release/stowage"))
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--purge-every", type=float, default=0.010)
    parser.add_argument("--control", action="store_true", help="move the version without purging (must find stale pages)")
    parser.add_argument("--startup-seconds", type=float, default=120,
                        help="longest wait for the proxy to say where it listens")
    arguments = parser.parse_args()
    if not os.access(arguments.stowage, os.X_OK):
        print(f"purge-order-check: no stowage binary at {arguments.stowage}; build it "
              "(swift build -c release --product stowage) or pass --stowage", file=sys.stderr)
        return 2

    origin = Origin()
    origin_server, origin_port = origin.serve()
    scratch = tempfile.mkdtemp(prefix="purge-order-")
    started: list[subprocess.Popen] = []
    wrk = None
    notes = []
    # Set on the way out whatever ends the run (an error, Ctrl-C): the threads then stop.
    stop = threading.Event()
    # A thread that stopped on an error: the check then proved nothing, and says so (exit 2)
    # rather than pass on the requests made before it stopped.
    failures: list[str] = []

    def guarded(body):
        def run() -> None:
            try:
                body()
            except Exception as error:  # noqa: BLE001 (any error ends the thread's part of the check)
                failures.append(f"{threading.current_thread().name}: {type(error).__name__}: {error}")
                stop.set()
        return run

    try:
        try:
            proxy, port, admin_port = start_proxy(
                arguments.stowage, origin_port, scratch, arguments.startup_seconds, started
            )
            wait_for_admin(admin_port)
        except SetupFailed as failure:
            print(f"purge-order-check: {failure}", file=sys.stderr)
            return 2
        page = f"http://127.0.0.1:{origin_port}/page"
        if shutil.which("wrk") is None:
            subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        if shutil.which("wrk"):
            wrk = subprocess.Popen(
                ["wrk", "-t1", "-c16", f"-d{int(arguments.seconds) + 5}s", f"http://127.0.0.1:{port}/page"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        else:
            notes.append("wrk is not installed: only the checking clients load the proxy")

        # purges[k] = (monotonic time purge k returned, the version it made current)
        purges: list[tuple[float, int]] = []
        purges_lock = threading.Lock()

        def purger() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=30)
            while not stop.is_set():
                with origin.lock:
                    origin.version += 1
                    version = origin.version
                if not arguments.control:
                    connection.request("POST", f"/purge?url={page}", body=b"")
                    response = connection.getresponse()
                    response.read()
                    if response.status not in (200, 404):
                        notes.append(f"a purge answered {response.status}")
                with purges_lock:
                    purges.append((time.monotonic(), version))
                time.sleep(arguments.purge_every)

        checked = [0]
        stale: list[dict] = []
        results_lock = threading.Lock()

        def client() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while not stop.is_set():
                with purges_lock:
                    floor = purges[-1][1] if purges else 0
                sent = time.monotonic()
                connection.request("GET", "/page")
                response = connection.getresponse()
                body = response.read().decode(errors="replace")
                if response.status != 200 or not body.startswith("v"):
                    notes.append(f"an answer that is no version: {response.status} {body[:40]!r}")
                    continue
                version = int(body[1:])
                with results_lock:
                    checked[0] += 1
                    if version < floor:
                        stale.append({
                            "served": version,
                            "last purge before the request": floor,
                            "cache-status": response.getheader("Cache-Status"),
                            "at": round(sent, 3),
                        })

        threads = [threading.Thread(target=guarded(purger), name="purger", daemon=True)] + [
            threading.Thread(target=guarded(client), name=f"client {index}", daemon=True)
            for index in range(arguments.clients)
        ]
        for thread in threads:
            thread.start()
        stop.wait(arguments.seconds)
        stop.set()
        for thread in threads:
            thread.join()
        summary = {
            "control (no purges)": arguments.control,
            "seconds": arguments.seconds,
            "requests checked": checked[0],
            "purges": len(purges),
            "origin fetches": origin.fetches,
            "stale": len(stale),
            "stale examples": stale[:5],
            "failures": failures,
            "notes": sorted(set(notes)),
        }
        print(json.dumps(summary, indent=2))
        if stale:
            return 1
        if failures or checked[0] == 0 or not purges:
            print("purge-order-check: the check proved nothing (a thread failed, or nothing was checked)",
                  file=sys.stderr)
            return 2
        return 0
    finally:
        stop.set()
        if wrk is not None:
            wrk.kill()
            wrk.wait()
        for proxy in started:
            proxy.terminate()
            try:
                proxy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()
        origin_server.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
