#!/usr/bin/env bash
# Watches `stowage proxy` for stalls over the minutes after a warm-up, as proxy-load.sh's rounds
# cannot (they give each server 10 s a minute): an nginx origin, the proxy with MEMORY_CAPACITY
# (64MB) and URL_COUNT (10^5) distinct 1 KiB URLs asked for twice, then a wrk run of 10 s over
# random URLs every 30 s, SLICES (36) times. Each line gives the run's req/s and p99 and where the
# proxy's threads waited in the kernel meanwhile (Benchmarks/thread-waits.py: the event loops are
# NIO-SGLTN-*, the spilled answers' look-up lane a dispatch thread, "-qos.overcommit"); the
# spilled answers come due for their timed look-ups ten to fifteen minutes after the warm-up.
# Root only (thread stacks). Installs wrk and nginx with apt-get when missing; stops what it
# started on exit. The full sample of each run is kept in WORK (printed at the start).
#
#   Benchmarks/proxy-stalls.sh                           # the release build, built if missing
#   STOWAGE=/tmp/stowage-before SLICES=10 Benchmarks/proxy-stalls.sh
#   COLD=1 SLICES=4 Benchmarks/proxy-stalls.sh           # the page cache dropped before each run,
#                                                        # as after an idle spell that lost it
set -euo pipefail
cd "$(dirname "$0")/.."

URL_COUNT=${URL_COUNT:-100000}
MEMORY_CAPACITY=${MEMORY_CAPACITY:-64MB}
SLICES=${SLICES:-36}
COLD=${COLD:-0}
[[ $COLD =~ ^[01]$ ]] || { echo "proxy-stalls: COLD must be 0 or 1, not '$COLD'" >&2; exit 2; }
[[ $URL_COUNT =~ ^[1-9][0-9]{0,6}$ ]] || { echo "proxy-stalls: URL_COUNT must be a whole number from 1 to 9999999, not '$URL_COUNT'" >&2; exit 2; }
[[ $SLICES =~ ^[1-9][0-9]{0,3}$ ]] || { echo "proxy-stalls: SLICES must be a whole number from 1 to 9999, not '$SLICES'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "proxy-stalls: run as root (the kernel shows thread stacks only to root)" >&2; exit 2; }

log() { echo "proxy-stalls: $*" >&2; }
source Benchmarks/lib.sh
install_missing wrk nginx:nginx:/usr/sbin/nginx
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "${STOWAGE:-}" ]; then
    swift build -c release --product stowage >&2
    STOWAGE=$(swift build -c release --show-bin-path)/stowage
fi

WORK=$(mktemp -d /tmp/stowage-proxy-stalls.XXXXXX)
STOWAGE_PID=""
cleanup() {
    stop_child "$STOWAGE_PID"
    stop_daemon "$WORK/nginx.pid" QUIT
}
trap cleanup EXIT
log "samples kept in $WORK"
read -r ORIGIN_PORT PROXY_PORT < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in sockets])')

mkdir -p "$WORK/www" "$WORK/logs"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/item"
cat > "$WORK/random-url.lua" <<LUA
math.randomseed(os.time())
request = function() return wrk.format("GET", "/items/" .. math.random(0, $URL_COUNT - 1)) end
LUA
start_origin_nginx "$NGINX" "$WORK" "$ORIGIN_PORT" \
    'location /items/ { rewrite ^ /item break; add_header Cache-Control "max-age=3600"; default_type application/octet-stream; }'

"$STOWAGE" proxy --listen "127.0.0.1:$PROXY_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --cache-dir "$WORK/cache" --memory-capacity "$MEMORY_CAPACITY" --disk-capacity 1GB --log-level warning \
    > "$WORK/logs/stowage.out" 2> "$WORK/logs/stowage.err" &
STOWAGE_PID=$!
wait_until_listening "$WORK/logs/stowage.out" || { log "the proxy did not start: $(cat "$WORK/logs/stowage.err")"; exit 1; }

python3 - "$PROXY_PORT" "$URL_COUNT" <<'PY'
import http.client, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(2):
    for n in range(int(sys.argv[2])):
        connection.request("GET", f"/items/{n}")
        connection.getresponse().read()
PY
log "warmed $URL_COUNT URLs twice at $(date -u +%T) UTC"

started=$SECONDS
for slice in $(seq 1 "$SLICES"); do
    if [ "$COLD" = 1 ]; then sync; echo 1 > /proc/sys/vm/drop_caches; fi
    python3 Benchmarks/thread-waits.py "$STOWAGE_PID" 10 > "$WORK/waits.$slice" &
    sampler=$!
    output=$(wrk -t2 -c32 -d10s --latency -s "$WORK/random-url.lua" "http://127.0.0.1:$PROXY_PORT")
    wait "$sampler"
    rps=$(awk '/Requests\/sec/ {print $2}' <<< "$output")
    p99=$(awk '$1 == "99%" {print $2}' <<< "$output")
    echo "slice $slice +$((SECONDS - started))s $(date -u +%T) req/s=$rps p99=$p99 $(head -1 "$WORK/waits.$slice")"
    grep -E "NIO-.*(filemap_read|wait_writeback)" "$WORK/waits.$slice" | head -3 | sed 's/^/    /' || true
    sleep 20
done
