# Shared by the load scripts in this folder (proxy-load.sh, proxy-rss.sh, middleware-load.sh):
# installing the tools they drive, and stopping what they started. Source it after `cd` to the
# package root and after defining `log`.

# Installs with apt-get the packages of the tools not found. Each argument is
# TOOL[:PACKAGE[:PATH]]: the tool is there when `command -v TOOL` finds it or PATH is executable
# (nginx and varnishd live in /usr/sbin, outside a non-root PATH); PACKAGE defaults to TOOL.
install_missing() {
    local spec tool package path missing=()
    for spec in "$@"; do
        IFS=: read -r tool package path <<< "$spec"
        command -v "$tool" >/dev/null && continue
        [ -n "$path" ] && [ -x "$path" ] && continue
        missing+=("${package:-$tool}")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q "${missing[@]}" >&2
}

# Stops the child process PID (if set) with SIGTERM and waits for it.
stop_child() {
    [ -n "${1:-}" ] && kill -TERM "$1" 2>/dev/null && wait "$1" 2>/dev/null || true
}

# Sends SIGNAL to the process whose id is in PIDFILE (a daemon such as nginx or varnishd), if the
# file exists.
stop_daemon() { # PIDFILE SIGNAL
    [ -f "$1" ] && kill "-$2" "$(cat "$1")" 2>/dev/null || true
}

# Starts nginx as a plain origin for the load scripts: one worker on 127.0.0.1:PORT serving the
# files in WORK/www through LOCATION (an nginx `location` block), no access log, keep-alive for
# as long as the run lasts; its pid file is WORK/nginx.pid (stop it with stop_daemon … QUIT).
start_origin_nginx() { # NGINX WORK PORT LOCATION
    local user_line=""
    [ "$(id -u)" = 0 ] && user_line="user root;"
    cat > "$2/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid $2/nginx.pid;
error_log $2/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$3;
        root $2/www;
        $4
    }
}
CONF
    "$1" -c "$2/nginx.conf" -p "$2" >&2
}

# Waits up to 10 s for a server started with its standard output in LOG to print "listening on";
# fails (status 1) when it did not.
wait_until_listening() { # LOG
    for _ in $(seq 1 100); do grep -q "listening on" "$1" 2>/dev/null && return 0; sleep 0.1; done
    grep -q "listening on" "$1" 2>/dev/null
}
