#!/usr/bin/env python3
"""Checks the proxy's status page in a real browser (headless Chromium).

Usage: Scripts/check-status-page.py [STOWAGE] [--screenshot FILE]

STOWAGE is the `stowage` binary (default: $STOWAGE, else .build/debug/stowage). Starts a small
origin (Python's http.server) and `stowage proxy --admin-listen` in front of it, both on free
127.0.0.1 ports with a fresh cache; sends a miss, two hits, another miss, a purge and a ban by a
tag that looks like markup; then loads the admin listener's page in `chromium --headless` and
checks that its script filled the figures in from /status.json (the requests, the hit ratio,
the purge target, the markup-like tag shown as text and not parsed), and that a screenshot is a
1200x900 PNG with something drawn on it. Runs without an admin token: a browser cannot be given
Basic credentials in the URL any more, and the Swift tests (StatusPageTests) cover the token.

Exits 0 when every check passes, 1 with a message naming the failed check, 2 when something
needed (the binary, chromium) is missing. Everything it starts is stopped before it exits.
"""

import html.parser
import http.server
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import zlib

HOSTILE_TAG = '<b id="injected">tag</b>'


class Origin(http.server.BaseHTTPRequestHandler):
    """Every path answers `body of PATH`, cacheable for a minute."""

    def do_GET(self):
        body = f"body of {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Cache-Control", "max-age=60")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


class Elements(html.parser.HTMLParser):
    """The text of every element with an id, and the ids seen."""

    def __init__(self):
        super().__init__()
        self.text = {}
        self.open = []

    def handle_starttag(self, tag, attrs):
        element_id = dict(attrs).get("id")
        if element_id is not None:
            self.text.setdefault(element_id, "")
        if tag not in ("meta", "link", "br", "img", "input"):
            self.open.append((tag, element_id))

    def handle_endtag(self, tag):
        while self.open:
            opened, _ = self.open.pop()
            if opened == tag:
                break

    def handle_data(self, data):
        for _, element_id in self.open:
            if element_id is not None:
                self.text[element_id] += data


def fail(message, code=1):
    print(f"check-status-page: FAILED: {message}", file=sys.stderr)
    sys.exit(code)


def request(url, method="GET"):
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as response:
        return response.status, dict(response.headers), response.read()


def wait_for_lines(process, log_path, deadline_seconds=120):
    """The proxy's `listening on` and `admin listening on` addresses from its standard output."""
    main = admin = None
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline and (main is None or admin is None):
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                break
            continue
        if line.startswith("listening on "):
            main = line.split()[-1]
        elif line.startswith("admin listening on "):
            admin = line.split()[-1]
    if main is None or admin is None:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            fail(f"the proxy did not announce its listeners; its log:\n{log.read()}")
    return main, admin


def chromium(arguments, scratch):
    """Runs chromium headless with its own profile; kills its whole process group on timeout."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        fail("chromium is not installed (apt-get install chromium)", code=2)
    profile = tempfile.mkdtemp(prefix="profile-", dir=scratch)
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
        f"--user-data-dir={profile}", "--virtual-time-budget=5000",
    ] + arguments
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        output, errors = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        fail(f"chromium did not finish within 180 s: {' '.join(command)}")
    finally:
        # Helpers (zygote, renderer) left behind by a browser that exited.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if process.returncode != 0:
        fail(f"chromium exited {process.returncode}: {errors[-2000:]}")
    return output


def png_size(path):
    """(width, height) of a PNG, after checking its signature and that its image data inflates."""
    with open(path, "rb") as file:
        data = file.read()
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        fail(f"{path} is not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = b"", 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks += data[offset + 8 : offset + 8 + length]
        offset += 12 + length
    pixels = zlib.decompress(chunks)
    return width, height, len(data), len(set(pixels[i : i + 3] for i in range(1, min(len(pixels), 4_000_000), 97)))


def main():
    arguments = sys.argv[1:]
    keep_screenshot = None
    if "--screenshot" in arguments:
        index = arguments.index("--screenshot")
        keep_screenshot = arguments[index + 1]
        del arguments[index : index + 2]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stowage = arguments[0] if arguments else os.environ.get("STOWAGE", os.path.join(here, ".build/debug/stowage"))
    if not os.access(stowage, os.X_OK):
        fail(f"no stowage binary at {stowage} (build it with `swift build --product stowage`, or give its path)", code=2)

    scratch = tempfile.mkdtemp(prefix="stowage-status-page-")
    origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    origin_url = f"http://127.0.0.1:{origin.server_address[1]}"
    environment = {k: v for k, v in os.environ.items() if k != "STOWAGE_ADMIN_TOKEN"}
    log_path = os.path.join(scratch, "proxy.log")
    proxy = None
    try:
        with open(log_path, "w") as log:
            proxy = subprocess.Popen(
                [
                    stowage, "proxy", "--listen", "127.0.0.1:0", "--upstream", origin_url,
                    "--cache-dir", os.path.join(scratch, "cache"), "--admin-listen", "127.0.0.1:0",
                ],
                stdout=subprocess.PIPE, stderr=log, text=True, env=environment,
            )
        main_address, admin_address = wait_for_lines(proxy, log_path)
        base, admin = f"http://{main_address}", f"http://{admin_address}"

        # Given: a miss, two hits, another miss, a purge and a ban.
        for path in ["/page", "/page", "/page", "/other"]:
            status, _, body = request(base + path)
            if status != 200 or body != f"body of {path}\n".encode():
                fail(f"GET {path} through the proxy answered {status} {body!r}")
        purged = origin_url + "/page"
        request(admin + "/purge?url=" + urllib.parse.quote(purged, safe=""), method="POST")
        request(admin + "/ban?tag=" + urllib.parse.quote(HOSTILE_TAG, safe=""), method="POST")

        # When: the browser renders the page.
        dom = chromium(["--dump-dom", admin + "/"], scratch)
        parser = Elements()
        parser.feed(dom)
        text = {key: " ".join(value.split()) for key, value in parser.text.items()}

        # Then: the script filled the figures in.
        def expect(condition, message):
            if not condition:
                fail(f"{message}; the rendered DOM:\n{dom}")

        expect(text.get("state", "").startswith("updated"), f"the page says {text.get('state')!r}, not 'updated …'")
        total = text.get("requests-total", "").replace(",", "")
        expect(total.isdigit() and int(total) >= 4, f"requests total {total!r} is not at least 4")
        expect(text.get("hit-ratio") == "50.0 %", f"hit ratio {text.get('hit-ratio')!r} is not 50.0 % (2 of 4)")
        expect(text.get("hit-counts") == "2 / 4", f"hit counts {text.get('hit-counts')!r} are not 2 / 4")
        expect(text.get("upstream") == origin_url, f"upstream {text.get('upstream')!r} is not {origin_url}")
        expect(" of " in text.get("memory-size", ""), f"memory size {text.get('memory-size')!r} has no capacity")
        expect(" of " in text.get("disk-size", ""), f"disk size {text.get('disk-size')!r} has no capacity")
        expect("ms" in text.get("latency-percentiles", ""), "no upstream latency shown")
        expect(text.get("shared-state") == "not configured", "the shared tier is not shown as not configured")
        rows = text.get("invalidations", "")
        expect(purged in rows, f"the purge target {purged} is not in the recent list: {rows!r}")
        expect(HOSTILE_TAG in rows, "the markup-like ban tag is not shown as text in the recent list")
        expect("injected" not in parser.text, "the ban tag became an element: the page parsed data as HTML")

        # And: a screenshot of the page has something on it.
        screenshot = os.path.join(scratch, "status.png")
        chromium([f"--screenshot={screenshot}", "--window-size=1200,900", "--hide-scrollbars", admin + "/"], scratch)
        if not os.path.exists(screenshot):
            fail("chromium wrote no screenshot")
        width, height, size, colours = png_size(screenshot)
        if (width, height) != (1200, 900):
            fail(f"the screenshot is {width}x{height}, not 1200x900")
        if size < 20_000 or colours < 20:
            fail(f"the screenshot looks blank ({size} bytes, {colours} colours sampled)")
        if keep_screenshot:
            shutil.copyfile(screenshot, keep_screenshot)
        print(
            f"check-status-page: ok: {total} requests, hit ratio {text['hit-ratio']}, purge and ban shown as text; "
            f"screenshot {width}x{height}, {size} bytes, {colours} colours sampled"
        )
    finally:
        if proxy is not None and proxy.poll() is None:
            proxy.terminate()
            try:
                proxy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait()
        origin.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
