#!/usr/bin/env bash
# Load test of `stowage proxy` against nginx with proxy_cache, configured the same way, on
# loopback: a cached 1 KiB response, wrk with 32 connections for 10 s against each.
#
# Prints one JSON document on stdout (the bench runner's shape: stowage, baselines, ratios, ok,
# notes); progress goes to stderr. Installs wrk and nginx with apt-get when missing. Everything
# it starts (one nginx serving as origin and as the nginx cache, one stowage proxy) is stopped on
# exit, by process id.
#
#   Benchmarks/proxy-load.sh                 # DURATION=10s CONNECTIONS=32 THREADS=2 by default
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
ORIGIN_PORT=${ORIGIN_PORT:-18101}
NGINX_PORT=${NGINX_PORT:-18102}
STOWAGE_PORT=${STOWAGE_PORT:-18103}

log() { echo "proxy-load: $*" >&2; }

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q "${missing[@]}" >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

log "building stowage in release"
swift build -c release --product stowage >&2
STOWAGE=$(swift build -c release --show-bin-path)/stowage

WORK=$(mktemp -d /tmp/stowage-proxy-load.XXXXXX)
NGINX_PID=""
STOWAGE_PID=""
cleanup() {
    [ -n "$STOWAGE_PID" ] && kill -TERM "$STOWAGE_PID" 2>/dev/null && wait "$STOWAGE_PID" 2>/dev/null || true
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT

# The 1 KiB response, cacheable for an hour.
mkdir -p "$WORK/www" "$WORK/nginx-cache" "$WORK/logs"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/item"

USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"
# Same shape for both caches: as many workers/event-loop threads as cores, keep-alive to the
# client and to the upstream, honour the origin's Cache-Control, one upstream fetch per miss
# (proxy_cache_lock, as stowage collapses), 64 MB of keys/metadata zone and 1 GB on disk.
cat > "$WORK/nginx.conf" <<CONF
$USER_LINE
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    proxy_cache_path $WORK/nginx-cache levels=1:2 keys_zone=bench:64m max_size=1g inactive=1h use_temp_path=off;
    upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $WORK/www;
        location / { add_header Cache-Control "max-age=3600"; default_type application/octet-stream; }
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache bench;
            proxy_cache_lock on;
            add_header X-Cache-Status \$upstream_cache_status;
        }
    }
}
CONF
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK" >&2
sleep 0.5

"$STOWAGE" proxy --listen "127.0.0.1:$STOWAGE_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --cache-dir "$WORK/stowage-cache" --memory-capacity 64MB --disk-capacity 1GB --log-level warning \
    > "$WORK/logs/stowage.out" 2> "$WORK/logs/stowage.err" &
STOWAGE_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/logs/stowage.out" 2>/dev/null && break; sleep 0.1; done

# Warm both caches and check that the load test measures hits.
for port in "$NGINX_PORT" "$STOWAGE_PORT"; do curl -s -o /dev/null "http://127.0.0.1:$port/item"; done
nginx_status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$NGINX_PORT/item" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}')
stowage_status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$STOWAGE_PORT/item" | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status"{print $2}')
stowage_bytes=$(curl -s "http://127.0.0.1:$STOWAGE_PORT/item" | wc -c)
log "nginx cache status: $nginx_status; stowage Cache-Status: $stowage_status; body $stowage_bytes bytes"

run_wrk() {
    local output
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$1/item")
    echo "$output" >&2
    echo "$output" | awk '/^Requests\/sec:/{print $2}'
}
log "wrk against nginx (proxy_cache)"
nginx_rps=$(run_wrk "$NGINX_PORT")
log "wrk against stowage proxy"
stowage_rps=$(run_wrk "$STOWAGE_PORT")

ok=false
[ "$nginx_status" = "HIT" ] && [[ "$stowage_status" == *"; hit"* ]] && [ "$stowage_bytes" = 1024 ] && ok=true
python3 - "$stowage_rps" "$nginx_rps" "$ok" "$THREADS" "$CONNECTIONS" "$DURATION" "$(nproc)" <<'PY'
import json, sys
stowage, nginx, ok, threads, connections, duration, cores = sys.argv[1:]
stowage, nginx = float(stowage), float(nginx)
print(json.dumps({
    "name": "proxy-load.cached-1kib",
    "unit": "req/s",
    "stowage": stowage,
    "baselines": {"nginx": nginx},
    "ok": ok == "true",
    "ratios": {"nginx": round(stowage / nginx, 3) if nginx else None},
    "notes": f"wrk -t{threads} -c{connections} -d{duration} on loopback, cached 1 KiB response, "
             f"{cores} cores shared by wrk, the proxy and its origin; ratio = stowage req/s / nginx req/s "
             f"(higher is better, target >= 0.5); nginx 'worker_processes auto' with proxy_cache and proxy_cache_lock",
}, indent=2))
PY
