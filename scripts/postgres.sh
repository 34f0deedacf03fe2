#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: no systemd, no service, a
# temporary directory and a free loopback port.
#
#   scripts/postgres.sh start DIR   initialises DIR, starts a server on
#                                   127.0.0.1 and prints its URL
#                                   (postgresql://amber@127.0.0.1:PORT/amber)
#   scripts/postgres.sh crash DIR   stops it as a power cut would (immediate
#                                   shutdown: no checkpoint, clients cut off)
#                                   and starts it again on the same port
#   scripts/postgres.sh stop DIR    stops it (fast shutdown) and removes DIR
#
# As root the server runs as the `postgres` user Debian's package creates
# (PostgreSQL refuses to run as root); otherwise as the caller. Trust
# authentication on loopback only: the cluster lives as long as a test run.
# scripts/install-deps.sh installs the server (Debian's `postgresql`).
set -euo pipefail
command=${1:?usage: postgres.sh start|crash|stop DIR}
dir=${2:?usage: postgres.sh start|crash|stop DIR}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "postgres.sh: no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 1; }
as_server() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# POSTGRES_LISTEN (default 127.0.0.1) and POSTGRES_TRUST_NET (a network whose
# clients are trusted besides loopback): for the many-hosts test's namespaces.
listen=${POSTGRES_LISTEN:-127.0.0.1}
start_server() {  # port
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-p $1 -k $dir -c listen_addresses=$listen -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
}

case "$command" in
start)
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir"
    # A free port: the kernel picks one for a socket bound to port 0.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_server "$bin/initdb" -D "$dir/data" -A trust -U amber --no-sync -E UTF8 --locale C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    if [ -n "${POSTGRES_TRUST_NET:-}" ]; then echo "host all all $POSTGRES_TRUST_NET trust" >> "$dir/data/pg_hba.conf"; fi
    echo "$port" > "$dir/port"
    start_server "$port"
    as_server "$bin/createdb" -h 127.0.0.1 -p "$port" -U amber amber
    echo "postgresql://amber@${listen%%,*}:$port/amber"
    ;;
crash)
    as_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    start_server "$(cat "$dir/port")"
    ;;
stop)
    if [ -d "$dir/data" ]; then as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: postgres.sh start|crash|stop DIR" >&2
    exit 2
    ;;
esac
