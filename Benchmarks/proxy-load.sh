#!/usr/bin/env bash
# Load test of `stowage proxy` against nginx with proxy_cache and Varnish, configured the same
# way, on loopback, wrk with 32 connections for 10 s against each, in four cases:
#   cached-1kib           one cached 1 KiB URL
#   cached-1kib-10k-urls  10,000 distinct cached 1 KiB URLs, requested at random (URL_COUNT
#                         changes the count, and the name: cached-1kib-100k-urls for 100000)
#   cached-100kib         one cached 100 KiB URL
#   miss-no-store         one 1 KiB URL the origin marks no-store: every request goes upstream
#
# The cached cases also run against the NIO floor (Sources/StowageHTTPFloor): a minimal SwiftNIO
# server answering the very bytes the proxy served (captured with curl) from memory, through the
# same HTTP/1 codec and event-loop group, doing nothing else; and against the raw floor, the same
# server writing the captured bytes as one buffer without NIO's response encoder (as the proxy
# writes hits it keeps as bytes). "stowage / nio-raw-floor" is the share of what a NIO server can
# do on this machine that the proxy reaches. The many-URL case also runs against the index floor:
# the raw floor reading each URL's whole captured response from an SQLite table shaped as the
# proxy's disk index, one indexed SELECT per request, nothing decoded: the floor of answering hits
# from a disk index that holds the bytes to send.
#
# Prints one JSON array on stdout (the bench runner's shape per case: stowage, baselines, ratios,
# ok, notes, with each server's p99 latency and the proxy's resident memory after the case);
# progress goes to stderr. Installs wrk, nginx and varnish with apt-get when missing. Everything
# it starts (one nginx serving as origin and as the nginx cache, one varnishd, one stowage proxy)
# is stopped on exit, by process id.
#
#   Benchmarks/proxy-load.sh                 # DURATION=10s CONNECTIONS=32 THREADS=2 by default
#   STOWAGE=/tmp/stowage-before Benchmarks/proxy-load.sh   # another build of the proxy (A/B)
#   URL_COUNT=100000 MEMORY_CAPACITY=16MB CASES=cached-1kib-100k-urls Benchmarks/proxy-load.sh
#                                            # issue 46's scale row: 10^5 URLs, most hits from disk
#   WARM_PASSES=2 …                          # every URL asked for twice before the measurement
#   VARNISH_STORAGE=file …                   # Varnish's file storage (1 GB, mmap'd) in place of
#                                            # malloc: issue 46's peer for hits from disk
#   SETTLE=30s …                             # 30 s of the same load against each server before
#                                            # the measured runs: the steady state under it
#   ROUNDS=5 …                               # five measured runs of every server, taken in turn
#                                            # (nginx, varnish, stowage, the floors, then again);
#                                            # each figure is the median of its five, all kept
#
# Each case also reports every server's resident memory after it (nginx: its master and workers;
# varnish: its manager and worker), for the bound "stowage <= 1.5 x nginx + the memory capacity".
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
URL_COUNT=${URL_COUNT:-10000}
MEMORY_CAPACITY=${MEMORY_CAPACITY:-64MB}
# Checked before anything is built or started: a bad value must not cost a release build, nor
# stop the run after some cases (their figures lost), nor leave a server behind.
usage_error() { echo "proxy-load: $*" >&2; exit 2; }
# At most 10^6: every URL is warmed one by one and must stay cached in the 1 GB disk tiers below
# (a bigger count would measure evictions, and past 2^63 bash's arithmetic wraps).
[[ $URL_COUNT =~ ^[1-9][0-9]{0,6}$ ]] && ((URL_COUNT <= 1000000)) \
    || usage_error "URL_COUNT must be a whole number from 1 to 1000000, not '$URL_COUNT'"
# How many times every URL is asked for before the measurement: 1 (the default) leaves each
# server's work on a URL's first hit in the measured run (the proxy reads it from the disk index
# and spills its answer then); 2 measures the state a long-running cache is in.
WARM_PASSES=${WARM_PASSES:-1}
[[ $WARM_PASSES =~ ^[1-9]$ ]] || usage_error "WARM_PASSES must be a whole number from 1 to 9, not '$WARM_PASSES'"
# A run of the same load against each server, one after the other, before the measured runs, not
# counted ("0s", the default: none). Each server gets the same, so the measurement is of the state a
# long-running server is in under this load, not of the work its first seconds of it still do
# (the proxy spills answers read from disk and lets answers kept in full go while memory evicts).
SETTLE=${SETTLE:-0s}
[[ $SETTLE =~ ^[0-9]{1,4}s$ ]] || usage_error "SETTLE must be a number of seconds such as 0s or 30s, not '$SETTLE'"
# Written as wrk takes it and as the report compares it: "00s" is "0s" (wrk refuses -d0s), "030s" "30s".
SETTLE=$((10#${SETTLE%s}))s
# How many measured runs each server gets, in turn with the others (1, the default: one each).
# On two cores shared with wrk one 10 s run swings by a fifth (the scheduler, not the servers: the
# same server twice in a row differs as much), so the report's figures are the medians over the
# rounds, and every round's figures are kept beside them.
ROUNDS=${ROUNDS:-1}
[[ $ROUNDS =~ ^[1-9]$ ]] || usage_error "ROUNDS must be a whole number from 1 to 9, not '$ROUNDS'"
# Varnish's storage: malloc (its objects in its own memory, 256 MB) or file (a 1 GB file it maps,
# its objects in the page cache as the other two's files are).
VARNISH_STORAGE=${VARNISH_STORAGE:-malloc}
[[ $VARNISH_STORAGE == malloc || $VARNISH_STORAGE == file ]] \
    || usage_error "VARNISH_STORAGE must be malloc or file, not '$VARNISH_STORAGE'"
# ByteCount(parsing:)'s forms (Sources/StowageCore/Sizes/ByteCount+Parsing.swift): a number and an
# optional unit, any letter case.
[[ ${MEMORY_CAPACITY,,} =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)\ ?(b|byte|bytes|[kmgtp]b?|[kmgtp]ib)?$ ]] \
    || usage_error "MEMORY_CAPACITY must be a size such as 64MB, 16MiB or 1.5GB, not '$MEMORY_CAPACITY'"
if ((URL_COUNT % 1000 == 0)); then MANY_URLS="cached-1kib-$((URL_COUNT / 1000))k-urls"; else MANY_URLS="cached-1kib-$URL_COUNT-urls"; fi
KNOWN_CASES="cached-1kib $MANY_URLS cached-100kib miss-no-store"
CASES=${CASES:-$KNOWN_CASES}
read -r -a CASE_LIST <<< "$CASES"
((${#CASE_LIST[@]})) || usage_error "CASES names no case (known: $KNOWN_CASES)"
for name in "${CASE_LIST[@]}"; do
    [[ " $KNOWN_CASES " == *" $name "* ]] \
        || usage_error "unknown case '$name' in CASES (known: $KNOWN_CASES; URL_COUNT=$URL_COUNT names the second)"
done
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
ORIGIN_PORT=${ORIGIN_PORT:-18101}
NGINX_PORT=${NGINX_PORT:-18102}
STOWAGE_PORT=${STOWAGE_PORT:-18103}
VARNISH_PORT=${VARNISH_PORT:-18104}
FLOOR_PORT=${FLOOR_PORT:-18105}
RAW_FLOOR_PORT=${RAW_FLOOR_PORT:-18106}
INDEX_FLOOR_PORT=${INDEX_FLOOR_PORT:-18107}

log() { echo "proxy-load: $*" >&2; }

source Benchmarks/lib.sh
install_missing wrk nginx:nginx:/usr/sbin/nginx curl varnishd:varnish:/usr/sbin/varnishd
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
VARNISHD=$(command -v varnishd || echo /usr/sbin/varnishd)

log "building stowage in release"
if [ -z "${STOWAGE:-}" ]; then
    swift build -c release --product stowage >&2
    STOWAGE=$(swift build -c release --show-bin-path)/stowage
fi
swift build -c release --product StowageHTTPFloor >&2
FLOOR=$(swift build -c release --show-bin-path)/StowageHTTPFloor

WORK=$(mktemp -d /tmp/stowage-proxy-load.XXXXXX)
NGINX_PID=""
STOWAGE_PID=""
FLOOR_PID=""
RAW_FLOOR_PID=""
INDEX_FLOOR_PID=""
cleanup() {
    stop_child "$INDEX_FLOOR_PID"
    stop_child "$RAW_FLOOR_PID"
    stop_child "$STOWAGE_PID"
    stop_child "$FLOOR_PID"
    stop_daemon "$WORK/nginx.pid" QUIT
    stop_daemon "$WORK/varnish.pid" TERM
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT

# The responses, cacheable for an hour: /item (1 KiB), /items/N (the same 1 KiB under URL_COUNT
# URLs), /big (100 KiB); and /nostore (1 KiB, no-store: the miss path).
mkdir -p "$WORK/www" "$WORK/nginx-cache" "$WORK/logs"
head -c 1024 /dev/zero | tr '\0' 'x' > "$WORK/www/item"
head -c 102400 /dev/urandom > "$WORK/www/big"
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
        location /nostore { rewrite ^ /item break; add_header Cache-Control "no-store"; default_type application/octet-stream; }
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

# Varnish with its built-in VCL (it honours Cache-Control and passes no-store) and as many
# threads as it wants; its objects in 256 MB of its own memory (malloc), or in a 1 GB file it
# maps (file: what it keeps is in the page cache, as nginx's and stowage's files are).
if [ "$VARNISH_STORAGE" = file ]; then VARNISH_STEVEDORE="file,$WORK/varnish-storage.bin,1G"; else VARNISH_STEVEDORE="malloc,256m"; fi
"$VARNISHD" -a "127.0.0.1:$VARNISH_PORT" -b "127.0.0.1:$ORIGIN_PORT" -s "$VARNISH_STEVEDORE" \
    -n "$WORK/varnish" -P "$WORK/varnish.pid" >&2

"$STOWAGE" proxy --listen "127.0.0.1:$STOWAGE_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --cache-dir "$WORK/stowage-cache" --memory-capacity "$MEMORY_CAPACITY" --disk-capacity 1GB --log-level warning \
    > "$WORK/logs/stowage.out" 2> "$WORK/logs/stowage.err" &
STOWAGE_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/logs/stowage.out" 2>/dev/null && break; sleep 0.1; done
if ! grep -q "listening on" "$WORK/logs/stowage.out" 2>/dev/null; then
    log "stowage proxy did not start: $(cat "$WORK/logs/stowage.err")"
    exit 1
fi

# Warm both caches (every URL once) and check that the load test measures hits.
python3 - "$NGINX_PORT" "$STOWAGE_PORT" "$VARNISH_PORT" "$URL_COUNT" "$WARM_PASSES" <<'PY' >&2
import http.client, sys
for port in sys.argv[1:4]:
    connection = http.client.HTTPConnection("127.0.0.1", int(port))
    for _ in range(int(sys.argv[5])):
        for path in ["/item", "/big"] + [f"/items/{n}" for n in range(int(sys.argv[4]))]:
            connection.request("GET", path)
            connection.getresponse().read()
print(f"proxy-load: warmed {int(sys.argv[4]) + 2} URLs on each cache, {sys.argv[5]} time(s)")
PY
status_of() { # port path header
    curl -s -D - -o /dev/null "http://127.0.0.1:$1$2" | tr -d '\r' | awk -F': ' -v h="$3" 'tolower($1)==h{print $2}'
}
ok=true
for path in /item "/items/$((URL_COUNT / 2))" /big; do
    nginx_status=$(status_of "$NGINX_PORT" "$path" x-cache-status)
    stowage_status=$(status_of "$STOWAGE_PORT" "$path" cache-status)
    varnish_age=$(status_of "$VARNISH_PORT" "$path" age)
    nginx_sum=$(curl -s "http://127.0.0.1:$NGINX_PORT$path" | md5sum)
    stowage_sum=$(curl -s "http://127.0.0.1:$STOWAGE_PORT$path" | md5sum)
    varnish_sum=$(curl -s "http://127.0.0.1:$VARNISH_PORT$path" | md5sum)
    log "$path: nginx cache status $nginx_status; stowage Cache-Status $stowage_status; varnish Age $varnish_age"
    [ "$nginx_status" = "HIT" ] && [[ "$stowage_status" == *"; hit"* ]] && [ "${varnish_age:-0}" != 0 ] \
        && [ "$nginx_sum" = "$stowage_sum" ] && [ "$varnish_sum" = "$stowage_sum" ] || ok=false
done

# The NIO floor answers with the proxy's own responses, byte for byte.
curl -s --raw -i "http://127.0.0.1:$STOWAGE_PORT/item" > "$WORK/floor-item.http"
curl -s --raw -i "http://127.0.0.1:$STOWAGE_PORT/items/1" > "$WORK/floor-items.http"
curl -s --raw -i "http://127.0.0.1:$STOWAGE_PORT/big" > "$WORK/floor-big.http"
"$FLOOR" --listen "127.0.0.1:$FLOOR_PORT" --route "/item=$WORK/floor-item.http" \
    --route "/big=$WORK/floor-big.http" --prefix "/items/=$WORK/floor-items.http" \
    > "$WORK/logs/floor.out" 2> "$WORK/logs/floor.err" &
FLOOR_PID=$!
# The same responses written as captured, one buffer each, without NIO's response encoder: the
# floor of answering from memory at all (the proxy writes hits it keeps as bytes that way).
"$FLOOR" --raw --listen "127.0.0.1:$RAW_FLOOR_PORT" --route "/item=$WORK/floor-item.http" \
    --route "/big=$WORK/floor-big.http" --prefix "/items/=$WORK/floor-items.http" \
    > "$WORK/logs/raw-floor.out" 2> "$WORK/logs/raw-floor.err" &
RAW_FLOOR_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/logs/floor.out" 2>/dev/null && break; sleep 0.1; done
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/logs/raw-floor.out" 2>/dev/null && break; sleep 0.1; done
# The floor of answering the many URLs from a disk index: the same captured bytes, one row per URL
# in an SQLite table shaped as the proxy's index, one indexed SELECT per request, written as the
# raw floor writes (IndexedResponses in Sources/StowageHTTPFloor).
if [[ " ${CASE_LIST[*]} " == *" $MANY_URLS "* ]]; then
    log "filling the index floor's table with $URL_COUNT responses"
    "$FLOOR" --listen "127.0.0.1:$INDEX_FLOOR_PORT" --index-prefix "/items/=$WORK/floor-items.http" \
        --index-count "$URL_COUNT" --index-file "$WORK/floor-index.sqlite" \
        > "$WORK/logs/index-floor.out" 2> "$WORK/logs/index-floor.err" &
    INDEX_FLOOR_PID=$!
    for _ in $(seq 1 600); do grep -q "listening on" "$WORK/logs/index-floor.out" 2>/dev/null && break; sleep 0.1; done
    [ "$(curl -s "http://127.0.0.1:$INDEX_FLOOR_PORT/items/$((URL_COUNT - 1))" | md5sum)" \
        = "$(curl -s "http://127.0.0.1:$STOWAGE_PORT/items/$((URL_COUNT - 1))" | md5sum)" ] || ok=false
fi
stowage_big_sum=$(curl -s "http://127.0.0.1:$STOWAGE_PORT/big" | md5sum)
[ "$(curl -s "http://127.0.0.1:$FLOOR_PORT/big" | md5sum)" = "$stowage_big_sum" ] || ok=false
[ "$(curl -s "http://127.0.0.1:$RAW_FLOOR_PORT/big" | md5sum)" = "$stowage_big_sum" ] || ok=false

# CPU time (user and system, in clock ticks) of a server: its process and its children's.
tree_ticks() {
    local total=0 pid
    for pid in "$1" $(pgrep -P "$1"); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
CLOCK_TICKS=$(getconf CLK_TCK)
settle() { # port path script (called only when SETTLE is not 0s)
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$SETTLE" ${3:+-s "$3"} "http://127.0.0.1:$1$2" > /dev/null
}
run_wrk() { # port path script server-pid -> "req/s p99-ms cpu-µs-per-request"
    local output before after
    before=$(tree_ticks "$4")
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency ${3:+-s "$3"} "http://127.0.0.1:$1$2")
    after=$(tree_ticks "$4")
    echo "$output" >&2
    echo "$output" | awk -v ticks=$((after - before)) -v hz="$CLOCK_TICKS" '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        /^Requests\/sec:/ { rps = $2 } $1 == "99%" { p99 = ms($2) } / requests in / { requests = $1 }
        END { printf "%s %s %.1f\n", rps, p99, requests ? ticks * 1e6 / hz / requests : 0 }'
}
# The median of the numbers on stdin (the mean of the middle two for an even count).
median() {
    sort -g | awk '{ value[NR] = $1 } END { if (NR % 2) print value[(NR + 1) / 2]; else print (value[NR / 2] + value[NR / 2 + 1]) / 2 }'
}
# label column (2: req/s, 3: p99 ms, 4: CPU µs per request) -> that figure's median over the rounds
# in "$WORK/rounds" (0 for a server the case did not run).
figure() {
    awk -v label="$1" -v column="$2" '$1 == label { print $column }' "$WORK/rounds" | median | grep . || echo 0
}
rss_kib() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }
# A server's resident memory: its process and its children's (nginx's workers, varnish's worker).
tree_rss_kib() {
    local total=0 pid
    for pid in "$1" $(pgrep -P "$1"); do total=$((total + $(rss_kib "$pid" || echo 0))); done
    echo "$total"
}
results=()
for name in "${CASE_LIST[@]}"; do
    case $name in
        cached-1kib) path=/item script="" ;;
        "$MANY_URLS") path=/ script=$WORK/random-url.lua ;;
        cached-100kib) path=/big script="" ;;
        miss-no-store) path=/nostore script="" ;;
    esac
    # The servers this case measures: name, port, process id.
    servers=("nginx $NGINX_PORT $(cat "$WORK/nginx.pid")" "varnish $VARNISH_PORT $(cat "$WORK/varnish.pid")"
        "stowage $STOWAGE_PORT $STOWAGE_PID")
    if [ "$name" != miss-no-store ]; then
        servers+=("floor $FLOOR_PORT $FLOOR_PID" "raw $RAW_FLOOR_PORT $RAW_FLOOR_PID")
    fi
    [ "$name" = "$MANY_URLS" ] && servers+=("index $INDEX_FLOOR_PORT $INDEX_FLOOR_PID")
    if [ "$SETTLE" != 0s ]; then
        for server in "${servers[@]}"; do
            read -r label port _ <<< "$server"
            log "$name: $SETTLE of load against $label, not counted"
            settle "$port" "$path" "$script"
        done
    fi
    # Every round runs each server once, in the same order; "$WORK/rounds" gets one line per run.
    : > "$WORK/rounds"
    for round in $(seq 1 "$ROUNDS"); do
        for server in "${servers[@]}"; do
            read -r label port pid <<< "$server"
            log "$name: round $round of $ROUNDS, wrk against $label"
            echo "$label $(run_wrk "$port" "$path" "$script" "$pid")" >> "$WORK/rounds"
        done
    done
    read -r nginx_rps nginx_p99 nginx_cpu <<< "$(figure nginx 2) $(figure nginx 3) $(figure nginx 4)"
    read -r varnish_rps varnish_p99 varnish_cpu <<< "$(figure varnish 2) $(figure varnish 3) $(figure varnish 4)"
    read -r stowage_rps stowage_p99 stowage_cpu <<< "$(figure stowage 2) $(figure stowage 3) $(figure stowage 4)"
    read -r floor_rps floor_p99 <<< "$(figure floor 2) $(figure floor 3)"
    read -r raw_rps raw_p99 <<< "$(figure raw 2) $(figure raw 3)"
    read -r index_rps index_p99 index_cpu <<< "$(figure index 2) $(figure index 3) $(figure index 4)"
    # Every run's figures, for the report: label:req/s:p99:cpu,…
    every_round=$(awk '{ printf "%s%s:%s:%s:%s", (NR > 1 ? "," : ""), $1, $2, $3, $4 }' "$WORK/rounds")
    nginx_rss=$(tree_rss_kib "$(cat "$WORK/nginx.pid")")
    varnish_rss=$(tree_rss_kib "$(cat "$WORK/varnish.pid")")
    results+=("$name $stowage_rps $nginx_rps $varnish_rps $stowage_p99 $nginx_p99 $varnish_p99 $(rss_kib "$STOWAGE_PID") $floor_rps $floor_p99 $raw_rps $raw_p99 $nginx_rss $varnish_rss $index_rps $index_p99 $stowage_cpu $nginx_cpu $varnish_cpu $index_cpu $every_round")
done

python3 - "$ok" "$THREADS" "$CONNECTIONS" "$DURATION" "$(nproc)" "$URL_COUNT" "$MEMORY_CAPACITY" "$WARM_PASSES" "$VARNISH_STORAGE" "$SETTLE" "$ROUNDS" "${results[@]}" <<'PY'
import json, sys
ok, threads, connections, duration, cores, url_count, memory_capacity, warm_passes, varnish_storage, settle, rounds, *results = sys.argv[1:]
url_count = int(url_count)
many_urls = f"cached-1kib-{url_count // 1000}k-urls" if url_count % 1000 == 0 else f"cached-1kib-{url_count}-urls"
described = {
    "cached-1kib": "one cached 1 KiB URL",
    many_urls: f"{url_count:,} distinct cached 1 KiB URLs at random",
    "cached-100kib": "one cached 100 KiB URL",
    "miss-no-store": "one 1 KiB no-store URL: every request goes to the origin",
}
documents = []
for result in results:
    name, *figures = result.split()
    stowage, nginx, varnish, stowage_p99, nginx_p99, varnish_p99 = map(float, figures[:6])
    rss = int(figures[6])
    floor, floor_p99 = float(figures[7]), float(figures[8])
    raw_floor, raw_floor_p99 = float(figures[9]), float(figures[10])
    nginx_rss, varnish_rss = int(figures[11]), int(figures[12])
    index_floor, index_floor_p99 = float(figures[13]), float(figures[14])
    cpu = {"stowage": float(figures[15]), "nginx": float(figures[16]), "varnish": float(figures[17])}
    labels = {"floor": "nio-floor", "raw": "nio-raw-floor", "index": "nio-index-floor"}
    every_round = {}
    for run in figures[19].split(","):
        label, rps, p99_ms, cpu_us = run.split(":")
        every_round.setdefault(labels.get(label, label), []).append(
            {"req_per_s": float(rps), "p99_ms": float(p99_ms), "cpu_us_per_request": float(cpu_us)})
    if index_floor:
        cpu["nio-index-floor"] = float(figures[18])
    baselines = {"nginx": nginx, "varnish": varnish}
    ratios = {
        "nginx": round(stowage / nginx, 3) if nginx else None,
        "varnish": round(stowage / varnish, 3) if varnish else None,
    }
    p99 = {"stowage": stowage_p99, "nginx": nginx_p99, "varnish": varnish_p99}
    if floor:
        baselines["nio-floor"] = floor
        ratios["nio-floor"] = round(stowage / floor, 3)
        p99["nio-floor"] = floor_p99
    if raw_floor:
        baselines["nio-raw-floor"] = raw_floor
        ratios["nio-raw-floor"] = round(stowage / raw_floor, 3)
        p99["nio-raw-floor"] = raw_floor_p99
    if index_floor:
        baselines["nio-index-floor"] = index_floor
        ratios["nio-index-floor"] = round(stowage / index_floor, 3)
        p99["nio-index-floor"] = index_floor_p99
    documents.append({
        "name": f"proxy-load.{name}",
        "unit": "req/s",
        "stowage": stowage,
        "baselines": baselines,
        "ok": ok == "true",
        "ratios": ratios,
        "floor_vs_nginx": round(floor / nginx, 3) if floor and nginx else None,
        "raw_floor_vs_nginx": round(raw_floor / nginx, 3) if raw_floor and nginx else None,
        "index_floor_vs_nginx": round(index_floor / nginx, 3) if index_floor and nginx else None,
        "p99_ms": p99,
        "p99_ratio_nginx": round(stowage_p99 / nginx_p99, 3) if nginx_p99 else None,
        "cpu_us_per_request": cpu,
        "stowage_rss_mib": round(rss / 1024, 1),
        "rss_mib": {"stowage": round(rss / 1024, 1), "nginx": round(nginx_rss / 1024, 1),
                    "varnish": round(varnish_rss / 1024, 1)},
        "warm_passes": int(warm_passes),
        "varnish_storage": varnish_storage,
        "settle_seconds": int(settle[:-1]),
        "rounds": int(rounds),
        "every_round": every_round,
        "notes": f"wrk -t{threads} -c{connections} -d{duration} --latency on loopback, {described[name]}, "
                 f"every URL asked for {warm_passes} time(s) before, "
                 + (f"then {settle} of the same load against each server in turn before the measured runs, not counted, "
                    if settle != "0s" else "")
                 + (f"{rounds} rounds of one run per server in turn, each figure the median over the rounds "
                    f"(every_round: each run's), " if rounds != "1" else "")
                 + f"{cores} cores shared by wrk, the proxy and its origin; ratio = stowage req/s / baseline req/s "
                 f"(higher is better, target >= 1.0); p99 ratio = stowage p99 / nginx p99 (target <= 1.2); "
                 f"nginx 'worker_processes auto' with proxy_cache and proxy_cache_lock; varnishd 7 with its "
                 f"built-in VCL and -s {'malloc,256m' if varnish_storage == 'malloc' else 'file (1 GB, mmap)'}; stowage --memory-capacity {memory_capacity}, resident memory after the case "
                 f"(nginx: master and workers; varnish: manager and worker); cpu_us_per_request = each server's "
                 f"user and system CPU time (its processes') during its wrk run over the requests wrk completed; "
                 f"nio-floor = the proxy's captured responses answered from memory by a bare SwiftNIO HTTP/1 server; "
                 f"nio-raw-floor = the same, written as the captured bytes without NIO's response encoder"
                 + (f"; nio-index-floor = the raw floor reading each URL's whole captured response from an SQLite "
                    f"table shaped as the proxy's index, one indexed SELECT per request" if index_floor else ""),
    })
print(json.dumps(documents, indent=2))
PY
