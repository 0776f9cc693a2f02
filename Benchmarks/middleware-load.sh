#!/usr/bin/env bash
# Load test of StowageHummingbird's ResponseCacheMiddleware: one Hummingbird server
# (Sources/StowageMiddlewareBench, release) with the same route twice, `/cached/catalog` behind
# the middleware and `/uncached/catalog` bare, on loopback, wrk against each in turn.
#
# The handler builds 100 records and encodes them with JSONEncoder (5,532 bytes of JSON),
# `Cache-Control: public, max-age=3600`: the per-request work of a small JSON API. Uncached,
# every request runs it; cached, the middleware answers from the memory tier after the first.
#
# Prints one JSON object on stdout (req/s and p99 of each route, the ratio cached / uncached);
# wrk's output and progress go to stderr. The server listens on a port the kernel picks and is
# stopped on exit, by process id.
#
#   Benchmarks/middleware-load.sh            # DURATION=10s CONNECTIONS=32 THREADS=2 by default
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}

log() { echo "middleware-load: $*" >&2; }

if ! command -v wrk >/dev/null; then
    log "installing wrk"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q wrk >&2
fi

log "building StowageMiddlewareBench in release"
swift build -c release --product StowageMiddlewareBench >&2
SERVER=$(swift build -c release --show-bin-path)/StowageMiddlewareBench

WORK=$(mktemp -d /tmp/stowage-middleware-load.XXXXXX)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

"$SERVER" > "$WORK/server.out" 2> "$WORK/server.err" &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 300); do
    PORT=$(awk '/^listening / { print $2 }' "$WORK/server.out" 2>/dev/null)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || { log "the server did not start"; cat "$WORK/server.err" >&2; exit 1; }
log "listening on 127.0.0.1:$PORT"

# Both routes answer the same bytes; the cached one says it came from the cache.
ok=true
[ "$(curl -s "http://127.0.0.1:$PORT/uncached/catalog" | md5sum)" = \
    "$(curl -s "http://127.0.0.1:$PORT/cached/catalog" | md5sum)" ] || ok=false
curl -si "http://127.0.0.1:$PORT/cached/catalog" | grep -qi '^cache-status:.*hit' || ok=false
size=$(curl -s "http://127.0.0.1:$PORT/uncached/catalog" | wc -c)

run_wrk() { # path -> "req/s p99-ms"
    local output
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$PORT$1")
    echo "$output" >&2
    echo "$output" | awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^Requests\/sec:/ { rps = $2 } $1 == "99%" { p99 = ms($2) } END { print rps, p99 }'
}

log "wrk against /uncached/catalog"
read -r uncached_rps uncached_p99 <<< "$(run_wrk /uncached/catalog)"
log "wrk against /cached/catalog"
read -r cached_rps cached_p99 <<< "$(run_wrk /cached/catalog)"
ratio=$(awk -v c="$cached_rps" -v u="$uncached_rps" 'BEGIN { printf "%.2f", (u > 0 ? c / u : 0) }')

cat <<JSON
{"name": "middleware.cached-vs-uncached-json-100-records", "body_bytes": $size, "duration": "$DURATION",
 "connections": $CONNECTIONS, "threads": $THREADS,
 "cached": {"requests_per_second": $cached_rps, "p99_ms": $cached_p99},
 "uncached": {"requests_per_second": $uncached_rps, "p99_ms": $uncached_p99},
 "ratio_cached_over_uncached": $ratio, "ok": $ok}
JSON
