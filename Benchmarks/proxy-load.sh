#!/usr/bin/env bash
# Load test of `stowage proxy` against nginx with proxy_cache, configured the same way, on
# loopback, wrk with 32 connections for 10 s against each, in three cases:
#   cached-1kib           one cached 1 KiB URL
#   cached-1kib-10k-urls  10,000 distinct cached 1 KiB URLs, requested at random
#   cached-100kib         one cached 100 KiB URL
#
# Prints one JSON array on stdout (the bench runner's shape per case: stowage, baselines, ratios,
# ok, notes); progress goes to stderr. Installs wrk and nginx with apt-get when missing. Everything
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

# The responses, cacheable for an hour: /item (1 KiB), /items/N (the same 1 KiB under 10,000
# URLs), /big (100 KiB).
mkdir -p "$WORK/www" "$WORK/nginx-cache" "$WORK/logs"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/item"
head -c 102400 /dev/urandom > "$WORK/www/big"
URL_COUNT=10000
cat > "$WORK/random-url.lua" <<LUA
math.randomseed(os.time())
request = function() return wrk.format("GET", "/items/" .. math.random(0, $URL_COUNT - 1)) end
LUA

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
        location /items/ { rewrite ^ /item break; add_header Cache-Control "max-age=3600"; default_type application/octet-stream; }
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

# Warm both caches (every URL once) and check that the load test measures hits.
python3 - "$NGINX_PORT" "$STOWAGE_PORT" "$URL_COUNT" <<'PY' >&2
import http.client, sys
for port in sys.argv[1:3]:
    connection = http.client.HTTPConnection("127.0.0.1", int(port))
    for path in ["/item", "/big"] + [f"/items/{n}" for n in range(int(sys.argv[3]))]:
        connection.request("GET", path)
        connection.getresponse().read()
print(f"proxy-load: warmed {int(sys.argv[3]) + 2} URLs on each cache")
PY
status_of() { # port path header
    curl -s -D - -o /dev/null "http://127.0.0.1:$1$2" | tr -d '\r' | awk -F': ' -v h="$3" 'tolower($1)==h{print $2}'
}
ok=true
for path in /item /items/1234 /big; do
    nginx_status=$(status_of "$NGINX_PORT" "$path" x-cache-status)
    stowage_status=$(status_of "$STOWAGE_PORT" "$path" cache-status)
    nginx_sum=$(curl -s "http://127.0.0.1:$NGINX_PORT$path" | md5sum)
    stowage_sum=$(curl -s "http://127.0.0.1:$STOWAGE_PORT$path" | md5sum)
    log "$path: nginx cache status $nginx_status; stowage Cache-Status $stowage_status"
    [ "$nginx_status" = "HIT" ] && [[ "$stowage_status" == *"; hit"* ]] && [ "$nginx_sum" = "$stowage_sum" ] || ok=false
done

run_wrk() { # port path [script]
    local output
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency ${3:+-s "$3"} "http://127.0.0.1:$1$2")
    echo "$output" >&2
    echo "$output" | awk '/^Requests\/sec:/{print $2}'
}
results=()
for case in "cached-1kib /item" "cached-1kib-10k-urls / $WORK/random-url.lua" "cached-100kib /big"; do
    read -r name path script <<< "$case"
    log "$name: wrk against nginx (proxy_cache)"
    nginx_rps=$(run_wrk "$NGINX_PORT" "$path" "$script")
    log "$name: wrk against stowage proxy"
    stowage_rps=$(run_wrk "$STOWAGE_PORT" "$path" "$script")
    results+=("$name $stowage_rps $nginx_rps")
done

python3 - "$ok" "$THREADS" "$CONNECTIONS" "$DURATION" "$(nproc)" "${results[@]}" <<'PY'
import json, sys
ok, threads, connections, duration, cores, *results = sys.argv[1:]
described = {
    "cached-1kib": "one cached 1 KiB URL",
    "cached-1kib-10k-urls": "10,000 distinct cached 1 KiB URLs at random",
    "cached-100kib": "one cached 100 KiB URL",
}
documents = []
for result in results:
    name, stowage, nginx = result.split()
    stowage, nginx = float(stowage), float(nginx)
    documents.append({
        "name": f"proxy-load.{name}",
        "unit": "req/s",
        "stowage": stowage,
        "baselines": {"nginx": nginx},
        "ok": ok == "true",
        "ratios": {"nginx": round(stowage / nginx, 3) if nginx else None},
        "notes": f"wrk -t{threads} -c{connections} -d{duration} on loopback, {described[name]}, "
                 f"{cores} cores shared by wrk, the proxy and its origin; ratio = stowage req/s / nginx req/s "
                 f"(higher is better, target >= 1.0); nginx 'worker_processes auto' with proxy_cache and proxy_cache_lock",
    })
print(json.dumps(documents, indent=2))
PY
