#!/usr/bin/env bash
# Load test of Stowage's response-cache middlewares: for each framework, one server (release)
# with the same route twice, `/cached/catalog` behind the middleware and `/uncached/catalog`
# bare, on loopback, wrk against each in turn.
#
#   hummingbird  StowageHummingbird's ResponseCacheMiddleware, Sources/StowageMiddlewareBench
#   vapor        StowageVapor's ResponseCacheMiddleware,
#                Integrations/StowageVapor/Sources/StowageVaporMiddlewareBench (its own package:
#                the release build resolves and compiles Vapor, 10+ minutes on 2 cores the
#                first time)
#
# The handler builds 100 records and encodes them with JSONEncoder (5,532 bytes of JSON, keys
# sorted), `Cache-Control: public, max-age=3600`: the per-request work of a small JSON API. Both
# servers answer the same bytes. Uncached, every request runs it; cached, the middleware answers
# from the memory tier after the first.
#
# Prints one JSON object per framework on stdout, one a line (req/s and p99 of each route, the
# ratio cached / uncached, whether both routes answered the same bytes and the cached one said
# `Cache-Status: ...; hit`); wrk's output and progress go to stderr. Each server listens on a
# port the kernel picks and is stopped before the next starts, by process id.
#
#   Benchmarks/middleware-load.sh                        # DURATION=10s CONNECTIONS=32 THREADS=2
#   FRAMEWORKS=vapor Benchmarks/middleware-load.sh       # FRAMEWORKS="hummingbird vapor" by default
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
FRAMEWORKS=${FRAMEWORKS:-hummingbird vapor}

log() { echo "middleware-load: $*" >&2; }

for framework in $FRAMEWORKS; do
    case $framework in
    hummingbird | vapor) ;;
    *)
        log "unknown framework '$framework' in FRAMEWORKS: say hummingbird, vapor or both"
        exit 2
        ;;
    esac
done

source Benchmarks/lib.sh
install_missing wrk

server_binary() { # framework -> path of its release server, built
    case $1 in
    hummingbird)
        log "building StowageMiddlewareBench in release"
        swift build -c release --product StowageMiddlewareBench >&2
        echo "$(swift build -c release --show-bin-path)/StowageMiddlewareBench"
        ;;
    vapor)
        log "building StowageVaporMiddlewareBench in release"
        swift build -c release --package-path Integrations/StowageVapor --product StowageVaporMiddlewareBench >&2
        echo "$(swift build -c release --package-path Integrations/StowageVapor --show-bin-path)/StowageVaporMiddlewareBench"
        ;;
    esac
}

WORK=$(mktemp -d /tmp/stowage-middleware-load.XXXXXX)
SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    stop_server
    rm -rf "$WORK"
}
trap cleanup EXIT

run_wrk() { # path -> "req/s p99-ms"
    local output
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$PORT$1")
    echo "$output" >&2
    echo "$output" | awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^Requests\/sec:/ { rps = $2 } $1 == "99%" { p99 = ms($2) } END { print rps, p99 }'
}

# Build every server first, so no compiler runs while wrk measures.
declare -A SERVERS
for framework in $FRAMEWORKS; do
    SERVERS[$framework]=$(server_binary "$framework")
done

for framework in $FRAMEWORKS; do
    "${SERVERS[$framework]}" > "$WORK/$framework.out" 2> "$WORK/$framework.err" &
    SERVER_PID=$!
    PORT=""
    for _ in $(seq 1 300); do
        PORT=$(awk '/^listening / { print $2 }' "$WORK/$framework.out" 2>/dev/null)
        [ -n "$PORT" ] && break
        sleep 0.1
    done
    [ -n "$PORT" ] || { log "the $framework server did not start"; cat "$WORK/$framework.err" >&2; exit 1; }
    log "$framework listening on 127.0.0.1:$PORT"

    # Both routes answer the same bytes; the cached one says it came from the cache.
    same_bytes=true
    uncached_md5=$(curl -s "http://127.0.0.1:$PORT/uncached/catalog" | md5sum)
    [ "$uncached_md5" = "$(curl -s "http://127.0.0.1:$PORT/cached/catalog" | md5sum)" ] || same_bytes=false
    cache_hit=true
    curl -si "http://127.0.0.1:$PORT/cached/catalog" | grep -qi '^cache-status:.*hit' || cache_hit=false
    size=$(curl -s "http://127.0.0.1:$PORT/uncached/catalog" | wc -c)
    echo "$uncached_md5" > "$WORK/$framework.md5"

    log "$framework: wrk against /uncached/catalog"
    read -r uncached_rps uncached_p99 <<< "$(run_wrk /uncached/catalog)"
    log "$framework: wrk against /cached/catalog"
    read -r cached_rps cached_p99 <<< "$(run_wrk /cached/catalog)"
    ratio=$(awk -v c="$cached_rps" -v u="$uncached_rps" 'BEGIN { printf "%.2f", (u > 0 ? c / u : 0) }')
    stop_server

    ok=false
    [ "$same_bytes" = true ] && [ "$cache_hit" = true ] && ok=true
    echo "{\"name\": \"middleware.cached-vs-uncached-json-100-records\", \"framework\": \"$framework\"," \
        "\"body_bytes\": $size, \"duration\": \"$DURATION\", \"connections\": $CONNECTIONS, \"threads\": $THREADS," \
        "\"cached\": {\"requests_per_second\": $cached_rps, \"p99_ms\": $cached_p99}," \
        "\"uncached\": {\"requests_per_second\": $uncached_rps, \"p99_ms\": $uncached_p99}," \
        "\"ratio_cached_over_uncached\": $ratio, \"same_bytes\": $same_bytes, \"cache_hit\": $cache_hit, \"ok\": $ok}"
done

# The frameworks' handlers answer the same bytes, so their rows compare like with like.
if [ "$(cat "$WORK"/*.md5 | sort -u | wc -l)" -gt 1 ]; then
    log "the frameworks' servers answered different bodies: their rows do not compare"
    exit 1
fi
