#!/usr/bin/env bash
# Peak memory of `stowage proxy --memory-capacity CAPACITY` under a stream of distinct URLs
# (issue 45's bound): wrk requests DURATION of distinct URLs of ITEM_BYTES (1 KiB) from an nginx
# origin, each twice in a row on its thread (a miss, then a hit), so every response is stored,
# kept in memory and answered from memory, and the memory level keeps evicting. Reports the proxy's resident
# memory when idle (listening, one request served) and its peak (VmHWM from /proc/PID/status),
# the growth between them as a multiple of CAPACITY, and the anonymous and file-backed parts of
# the resident memory at the end (the disk cache's SQLite index is read through mmap, which
# counts as file-backed).
#
# Prints one JSON object on stdout; progress goes to stderr. Installs wrk and nginx with apt-get
# when missing. What it starts (one nginx as origin, one stowage proxy) is stopped on exit, by
# process id. "ok" is issue 45's goal, growth <= 1.25 x CAPACITY; the bound the guide states
# (CachingProxyGuide.md, "Memory") is CAPACITY plus about 1.7 MB: the proxy charges the
# working memory of its requests in flight (128 KiB each, for the most in flight at once in a minute)
# to the capacity, up to half of it, and the memory level evicts to fit in the rest (release
# build, 16MB: 1.02-1.11x from 2 to 64 connections, 1.38x at 128, past the half; CONNECTIONS=N
# to see the others).
#
#   Benchmarks/proxy-rss.sh                  # CAPACITY=16MB DURATION=30s CONNECTIONS=32 THREADS=2
#   STOWAGE=.build/release/stowage Benchmarks/proxy-rss.sh    # a binary already built
#   MALLOC_ARENA_MAX=8 Benchmarks/proxy-rss.sh                # the proxy's environment is passed on
#   ITEM_BYTES=131072 Benchmarks/proxy-rss.sh                 # larger responses: past the guide's bound
set -euo pipefail
cd "$(dirname "$0")/.."

CAPACITY=${CAPACITY:-16MB}
DURATION=${DURATION:-30s}
CONNECTIONS=${CONNECTIONS:-32}
ITEM_BYTES=${ITEM_BYTES:-1024}
THREADS=${THREADS:-2}
ORIGIN_PORT=${ORIGIN_PORT:-18111}
STOWAGE_PORT=${STOWAGE_PORT:-18113}

log() { echo "proxy-rss: $*" >&2; }

source Benchmarks/lib.sh
install_missing wrk nginx:nginx:/usr/sbin/nginx curl
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${STOWAGE:-}" ]; then
    log "building stowage in release"
    swift build -c release --product stowage >&2
    STOWAGE=$(swift build -c release --show-bin-path)/stowage
fi

WORK=$(mktemp -d /tmp/stowage-proxy-rss.XXXXXX)
STOWAGE_PID=""
cleanup() {
    stop_child "$STOWAGE_PID"
    stop_daemon "$WORK/nginx.pid" QUIT
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/logs"
head -c "$ITEM_BYTES" /dev/zero | tr '\0' 'x' > "$WORK/www/item"
# Each wrk thread walks its own URLs, each asked for twice in a row: /u/THREAD/N, N = calls / 2.
cat > "$WORK/distinct-twice.lua" <<'LUA'
local threads = 0
function setup(thread)
    thread:set("id", threads)
    threads = threads + 1
end
local calls = 0
request = function()
    local n = math.floor(calls / 2)
    calls = calls + 1
    return wrk.format("GET", "/u/" .. id .. "/" .. n)
end
LUA

start_origin_nginx "$NGINX" "$WORK" "$ORIGIN_PORT" \
    'location / { rewrite ^ /item break; add_header Cache-Control "max-age=3600"; default_type application/octet-stream; }'
sleep 0.5

"$STOWAGE" proxy --listen "127.0.0.1:$STOWAGE_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --cache-dir "$WORK/stowage-cache" --memory-capacity "$CAPACITY" --disk-capacity 4GB --log-level warning \
    > "$WORK/logs/stowage.out" 2> "$WORK/logs/stowage.err" &
STOWAGE_PID=$!
wait_until_listening "$WORK/logs/stowage.out" || { log "the proxy did not start: $(cat "$WORK/logs/stowage.err")"; exit 1; }
curl -s -o /dev/null "http://127.0.0.1:$STOWAGE_PORT/warm"
curl -s -o /dev/null "http://127.0.0.1:$STOWAGE_PORT/warm"
sleep 1

field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
idle=$(field "$STOWAGE_PID" VmRSS)
idle_anon=$(field "$STOWAGE_PID" RssAnon)
idle_file=$(field "$STOWAGE_PID" RssFile)
log "idle: $idle KiB resident; wrk -t$THREADS -c$CONNECTIONS -d$DURATION, distinct URLs each twice"
output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s "$WORK/distinct-twice.lua" "http://127.0.0.1:$STOWAGE_PORT/")
echo "$output" >&2
peak=$(field "$STOWAGE_PID" VmHWM)
anon=$(field "$STOWAGE_PID" RssAnon)
file=$(field "$STOWAGE_PID" RssFile)
rss=$(field "$STOWAGE_PID" VmRSS)
# Where the resident memory is at the end, largest mappings first (to stderr).
awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6 == "" ? "[anon]" : $6 } /^Rss:/ { rss[name] += $2 }
    END { for (n in rss) printf "%10d KiB  %s\n", rss[n], n }' "/proc/$STOWAGE_PID/smaps" | sort -rn | head -8 >&2
log "open files of the disk cache: $(ls -l "/proc/$STOWAGE_PID/fd" | grep -c "$WORK/stowage-cache") ($(ls -l "/proc/$STOWAGE_PID/fd" | grep "$WORK/stowage-cache" | awk '{print $NF}' | xargs -n1 basename | sort | uniq -c | tr -s ' ' | tr '\n' ','))"
requests=$(echo "$output" | awk '/requests in/ {print $1}')
rps=$(echo "$output" | awk '/^Requests\/sec:/ {print $2}')
status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$STOWAGE_PORT/warm" | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status"{print $2}')
python3 - "$CAPACITY" "$idle" "$peak" "$anon" "$file" "$rss" "$requests" "$rps" "$idle_anon" "$idle_file" <<'PY'
import json, re, sys
capacity, idle, peak, anon, file, rss, requests, rps, idle_anon, idle_file = sys.argv[1:]
number, unit = re.fullmatch(r"(\d+)([KMG]B)", capacity).groups()
capacity_bytes = int(number) * {"KB": 10**3, "MB": 10**6, "GB": 10**9}[unit]
growth = (int(peak) - int(idle)) * 1024
print(json.dumps({
    "capacity": capacity,
    "idle_rss_kib": int(idle), "idle_anon_kib": int(idle_anon), "idle_file_kib": int(idle_file),
    "peak_rss_kib": int(peak),
    "growth_kib": growth // 1024,
    "growth_over_capacity": round(growth / capacity_bytes, 3),
    "bound": 1.25,
    "ok": growth <= 1.25 * capacity_bytes,
    "end_rss_kib": int(rss), "end_anon_kib": int(anon), "end_file_kib": int(file),
    "requests": int(requests), "requests_per_second": float(rps),
}))
PY
