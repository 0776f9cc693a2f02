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
