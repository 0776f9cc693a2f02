#!/usr/bin/env python3
"""Draws the scale bench's curves: cost per operation against the number of entries, one line per
system, log axes, one PNG per operation under Benchmarks/plots/.

Usage: python3 Benchmarks/plot.py [RESULTS.json] [OUTPUT_DIR]
       (defaults: Benchmarks/scale.json, Benchmarks/plots)
       python3 Benchmarks/plot.py Benchmarks/scale-files.json    # the memory cache and file trees

RESULTS.json is what `stowage-bench --filter scale --json` prints: a JSON array of results named
`scale.<family>.<operation>-<size>` (family disk-cache, memory-cache, files or http-cache; size as 1e3, 1e4,
...), each with Stowage's figure, its baselines' figures and its unit; each family's plots are
`scale-<family>-<operation>.png`. Needs matplotlib (`pip install matplotlib`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = re.compile(r"^scale\.(?P<family>disk-cache|memory-cache|files|http-cache)\.(?P<operation>[a-z-]+?)-(?P<size>1e\d+|\d+)$")
# Each family's title prefix and x axis.
FAMILIES = {
    "disk-cache": ("DiskCache", "entries in the cache"),
    "memory-cache": ("MemoryCache", "entries in the cache"),
    "files": ("files", "files in the tree"),
    "http-cache": ("HTTPCache", "responses in the cache"),
}
TITLES = {
    "open": "open a filled cache",
    "set": "set a new 1 KiB key",
    "get": "get a 1 KiB value (scattered keys)",
    "remove": "remove a key",
    "usage": "entry count and bytes",
    "trim-half": "remove the least recently used half",
    "set-at-limit": "set at the size limit vs below it",
    "bytes-per-entry": "bytes per entry (malloc heap in use)",
    "disk-usage": "DiskUsage vs du -s -B1",
    "clean": "the cleaner emptying the tree vs rm -rf",
    "purge": "the 7-day purge sweep vs find -mtime +7 -delete",
    ("memory-cache", "set"): "set a new Int key",
    ("memory-cache", "get"): "get an Int value (scattered keys)",
    ("http-cache", "store"): "store a fresh 1 KiB response",
    ("http-cache", "hit"): "answer a stored URL from disk (scattered)",
}
# The same system keeps its colour and marker in every plot.
STYLES = {
    "stowage": ("tab:blue", "o", "-"),
    "stowage-below-limit": ("tab:blue", "o", "--"),
    "python-diskcache": ("tab:orange", "s", "-"),
    "python-diskcache-below-limit": ("tab:orange", "s", "--"),
    "sqlite-c": ("tab:green", "^", "-"),
    # The peers of the memory cache and the file-tree rows.
    "dictionary+mutex": ("tab:red", "s", "-"),
    "du": ("tab:red", "s", "-"),
    "rm -rf": ("tab:red", "s", "-"),
    "find -mtime -delete": ("tab:red", "s", "-"),
    "disk-cache-2-entries": ("tab:green", "^", "-"),
}


def size_of(label: str) -> int:
    if label.startswith("1e"):
        return 10 ** int(label[2:])
    return int(label)


def load(path: str) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{operation: {system: [(size, figure)]}} and each operation's unit."""
    with open(path, encoding="utf-8") as file:
        results = json.load(file)
    curves: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    for result in results:
        match = NAME.match(result.get("name", ""))
        if not match:
            continue
        operation, size = (match["family"], match["operation"]), size_of(match["size"])
        units[operation] = result["unit"]
        curves[operation]["stowage"].append((size, result["stowage"]))
        for system, figure in result.get("baselines", {}).items():
            curves[operation][system].append((size, figure))
    return curves, units


def plot(curves, units, output: str) -> list[str]:
    os.makedirs(output, exist_ok=True)
    written = []
    for (family, operation), systems in sorted(curves.items()):
        figure, axes = plt.subplots(figsize=(6.4, 4.2), dpi=110)
        for system in sorted(systems, key=lambda name: (name not in STYLES, name)):
            points = sorted(systems[system])
            colour, marker, line = STYLES.get(system, (None, "x", ":"))
            label = system
            if operation == "set-at-limit" and not system.endswith("below-limit"):
                label = f"{system} at the limit"
            axes.plot(
                [size for size, _ in points],
                [value for _, value in points],
                marker=marker,
                linestyle=line,
                color=colour,
                label=label,
            )
        axes.set_xscale("log")
        axes.set_yscale("log")
        prefix, x_label = FAMILIES[family]
        axes.set_xlabel(x_label)
        unit = units[(family, operation)]
        axes.set_ylabel({"s": "seconds", "B": "bytes"}.get(unit, unit.replace("us", "µs")))
        axes.set_title(f"{prefix}: {TITLES.get((family, operation), TITLES.get(operation, operation))}")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
        figure.tight_layout()
        path = os.path.join(output, f"scale-{family}-{operation}.png")
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    return written


def main(arguments: list[str]) -> int:
    results = arguments[0] if arguments else os.path.join(HERE, "scale.json")
    output = arguments[1] if len(arguments) > 1 else os.path.join(HERE, "plots")
    curves, units = load(results)
    if not curves:
        print(f"plot.py: no scale results in {results}", file=sys.stderr)
        return 1
    for path in plot(curves, units, output):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
