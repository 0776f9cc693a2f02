#!/usr/bin/env python3
"""Tests for Benchmarks/purge-order-check.py: planted proxies that must fail, pass or be refused.

Run: python3 Scripts/test_purge_order_check.py   (stdlib unittest; CI runs it before the check)

Each planted "stowage" is a small Python program that takes the proxy's arguments: one that keeps
the first answer forever and ignores purges (stale: exit 1), one that forwards every request
(never stale: exit 0), one whose listener refuses every connection (nothing checked: exit 2, not
a pass), and one that never says where it listens (exit 2 within --startup-seconds, not a hang).
"""

import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(os.path.dirname(HERE), "Benchmarks", "purge-order-check.py")

PROXY = textwrap.dedent('''\
    #!/usr/bin/env python3
    # A planted `stowage proxy`: MODE is "keeps", "forwards", "refuses" or "silent".
    import http.server, os, socket, sys, threading, time, urllib.request
    MODE = "{mode}"
    arguments = sys.argv[1:]
    upstream = arguments[arguments.index("--upstream") + 1]
    admin_port = int(arguments[arguments.index("--admin-listen") + 1].rsplit(":", 1)[1])
    with open(os.environ["PLANTED_PID_FILE"], "w") as pid_file:
        pid_file.write(str(os.getpid()))
    if MODE == "silent":
        while True:
            time.sleep(1)
    kept = {{}}
    lock = threading.Lock()

    class Proxy(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            with lock:
                body = kept.get(self.path) if MODE == "keeps" else None
            if body is None:
                body = urllib.request.urlopen(upstream + self.path).read()
                with lock:
                    kept.setdefault(self.path, body)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *arguments):
            pass

    class Admin(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        do_GET = do_POST = answer
        def log_message(self, *arguments):
            pass

    admin = http.server.ThreadingHTTPServer(("127.0.0.1", admin_port), Admin)
    threading.Thread(target=admin.serve_forever, daemon=True).start()
    if MODE == "refuses":
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        print(f"listening on 127.0.0.1:{{port}}", flush=True)
        while True:
            time.sleep(1)
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    print(f"listening on 127.0.0.1:{{proxy.server_address[1]}}", flush=True)
    proxy.serve_forever()
    ''')


class PurgeOrderCheckTests(unittest.TestCase):
    def run_check(self, mode, *extra, timeout=120):
        with tempfile.TemporaryDirectory() as scratch:
            planted = os.path.join(scratch, "stowage")
            with open(planted, "w") as file:
                file.write(PROXY.format(mode=mode))
            os.chmod(planted, os.stat(planted).st_mode | stat.S_IXUSR)
            pid_file = os.path.join(scratch, "pid")
            result = subprocess.run(
                [sys.executable, CHECK, "--stowage", planted, "--seconds", "2", "--clients", "2", *extra],
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "PLANTED_PID_FILE": pid_file},
            )
            # The check stops what it started, whatever its outcome.
            with open(pid_file) as file:
                pid = int(file.read())
            try:
                with open(f"/proc/{pid}/stat") as file:
                    alive = file.read().split()[2] != "Z"
            except FileNotFoundError:
                alive = False
            if alive:
                os.kill(pid, 9)
            self.assertFalse(alive, f"the planted proxy {pid} outlived the check")
            return result

    def test_a_proxy_that_ignores_purges_is_caught(self):
        result = self.run_check("keeps")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)

    def test_a_proxy_that_forwards_every_request_passes(self):
        result = self.run_check("forwards")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_nothing_checked_is_no_pass(self):
        result = self.run_check("refuses")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("proved nothing", result.stderr)

    def test_a_proxy_that_never_starts_is_refused_in_time(self):
        result = self.run_check("silent", "--startup-seconds", "2", timeout=60)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("did not start", result.stderr)


if __name__ == "__main__":
    unittest.main()
