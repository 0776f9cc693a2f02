#!/usr/bin/env bash
# Runs the public HTTP cache test suite (http-tests/cache-tests) against `stowage proxy`.
#
# Usage: Scripts/run-cache-tests.sh CACHE_TESTS_DIR [RESULTS.json] [TEST_ID]
#
# CACHE_TESTS_DIR is a checkout of https://github.com/http-tests/cache-tests. Only node (>= 18,
# for its built-in fetch) is needed: the suite's npm dependencies serve its web export, except
# undici 7, which the interim-* tests import (without it they report an error). Debian 12 has
# undici 5 only (`apt-get install node-undici`): when the checkout has no node_modules/undici and
# /usr/share/nodejs/undici exists, Scripts/cache-tests-undici (undici 7's `Agent.compose` and
# handler API over undici 5) is linked in, and NODE_PATH points at /usr/share/nodejs for undici
# 5's own dependencies.
#
# Starts the suite's origin server and a proxy with a fresh cache in front of it on free ports,
# runs every test (or TEST_ID alone, with the suite's request/response dump), writes the results
# JSON, prints one line per result other than pass/yes, and exits 1 when a required test fails.
# Expects `swift build --product stowage` to have been run (uses .build/debug/stowage unless
# STOWAGE is set).
set -euo pipefail

suite=$(cd "${1:?usage: $0 CACHE_TESTS_DIR [RESULTS.json] [TEST_ID]}" && pwd)
results=${2:-$(mktemp -t cache-tests.XXXXXX.json)}
test_id=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
stowage=${STOWAGE:-$here/.build/debug/stowage}
scratch=$(mktemp -d -t stowage-cache-tests.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
origin_port=$(free_port)
(cd "$suite" && exec env npm_config_protocol=http npm_config_port="$origin_port" \
    npm_config_pidfile="$scratch/origin.pid" node test-engine/server/server.mjs) >"$scratch/origin.log" 2>&1 &
pids+=($!)
"$stowage" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$origin_port" \
    --cache-dir "$scratch/cache" >"$scratch/proxy.out" 2>"$scratch/proxy.log" &
pids+=($!)
for _ in $(seq 100); do
    grep -q '^listening on' "$scratch/proxy.out" 2>/dev/null && grep -q Listening "$scratch/origin.log" && break
    sleep 0.1
done
proxy=$(sed -n 's/^listening on //p' "$scratch/proxy.out")
[ -n "$proxy" ] || { cat "$scratch/proxy.log" >&2; exit 2; }

cd "$suite"
if [ ! -e node_modules/undici ] && [ -d /usr/share/nodejs/undici ]; then
    mkdir -p node_modules
    ln -s "$here/Scripts/cache-tests-undici" node_modules/undici
fi
[ -d /usr/share/nodejs ] && export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
if [ -n "$test_id" ]; then
    npm_config_base="http://$proxy" npm_config_id="$test_id" node --no-warnings test-engine/cli.mjs
    exit 0
fi
npm_config_base="http://$proxy" npm_config_id='' npm_package_config_id='' \
    node --no-warnings test-engine/cli.mjs >"$results"
echo "results: $results" >&2
node --input-type=module - "$suite" "$results" <<'EOF'
import fs from 'fs'
const [suite, file] = process.argv.slice(2)
const tests = (await import(`${suite}/tests/index.mjs`)).default
const { determineTestResult } = await import(`${suite}/test-engine/lib/results.mjs`)
const results = JSON.parse(fs.readFileSync(file))
const counts = {}
let requiredFailures = 0
for (const group of tests) {
  for (const test of group.tests) {
    if (!(test.id in results)) continue
    const [, , symbol] = determineTestResult(tests, test.id, results)
    counts[symbol] = (counts[symbol] || 0) + 1
    if (symbol === '⛔️') requiredFailures++
    if (!['✅', 'Y'].includes(symbol)) {
      const detail = results[test.id] === true ? '' : results[test.id].join(': ')
      console.log(`${symbol} ${test.kind || 'required'} ${test.id}: ${detail}`)
    }
  }
}
console.log(JSON.stringify(counts))
process.exit(requiredFailures > 0 ? 1 : 0)
EOF
