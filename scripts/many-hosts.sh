#!/usr/bin/env bash
# The many-hosts test: a PostgreSQL server in one network namespace and two
# "hosts" in two others, each joined to the server by a veth pair on a
# private /30 that no other network can reach (no end is in the machine's
# own namespace). On each host, PROCESSES writer processes (Tests/Hosts/client.py)
# add one to a shared counter INCREMENTS times with an entry of their own
# key each, settling conflicts by refreshing, while a live query over every
# entry follows the others' saves. Passes when no increment is lost, every
# entry is there once, and every live query ends equal to a fresh fetch.
# With tc netem, each link gets 1 ms of delay each way. If the kernel refuses
# namespaces, the same processes run against a server on loopback, and say so.
#
#   scripts/many-hosts.sh [PROCESSES] [INCREMENTS]     (as root; python3 with amber installed)
set -euo pipefail
cd "$(dirname "$0")/.."
processes=${1:-2}
increments=${2:-30}
tag=$$
dir=$(mktemp -d /tmp/amber-hosts.XXXXXX)
chmod 755 "$dir"  # the server runs as postgres when started by root
namespaces=()
cleanup() {
    bash scripts/postgres.sh stop "$dir/server" >/dev/null 2>&1 || true
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
run_in() { if [ "$1" = "-" ]; then shift; "$@"; else local ns=$1; shift; ip netns exec "$ns" "$@"; fi; }

server_ns="amber-srv-$tag"
if [ "$(id -u)" -eq 0 ] && ip netns add "$server_ns" 2>/dev/null; then
    namespaces+=("$server_ns")
    mode=namespaces
    hosts=()
    for host in 1 2; do
        ns="amber-h$host-$tag"
        ip netns add "$ns"
        namespaces+=("$ns")
        ip link add "s$host-$tag" type veth peer name "h$host-$tag"
        ip link set "s$host-$tag" netns "$server_ns"
        ip link set "h$host-$tag" netns "$ns"
        run_in "$server_ns" ip addr add "10.213.$host.1/30" dev "s$host-$tag"
        run_in "$ns" ip addr add "10.213.$host.2/30" dev "h$host-$tag"
        for side in "$server_ns s$host-$tag" "$ns h$host-$tag"; do
            set -- $side
            run_in "$1" ip link set "$2" up
            run_in "$1" ip link set lo up
            # 1 ms each way, where tc netem is there: a server on another machine, not on loopback.
            run_in "$1" tc qdisc add dev "$2" root netem delay 1ms 2>/dev/null || netem=absent
        done
        hosts+=("$ns 10.213.$host.1")
    done
    delay="1 ms of delay each way (tc netem)"
    [ -z "${netem:-}" ] || delay="no added delay (tc netem is not available here)"
    echo "many-hosts: server in namespace $server_ns, hosts in ${hosts[0]%% *} and ${hosts[1]%% *}, joined by veth pairs; $delay"
    port=$(run_in "$server_ns" env POSTGRES_LISTEN="127.0.0.1,10.213.1.1,10.213.2.1" POSTGRES_TRUST_NET=10.213.0.0/16 \
        bash scripts/postgres.sh start "$dir/server" | sed -E 's/.*:([0-9]+)\/amber/\1/')
else
    mode=loopback
    echo "many-hosts: the kernel refused network namespaces here; the same processes run against a server on loopback"
    port=$(bash scripts/postgres.sh start "$dir/server" | sed -E 's/.*:([0-9]+)\/amber/\1/')
    hosts=("- 127.0.0.1" "- 127.0.0.1")
fi

url() { echo "postgresql://amber@$1:$port/amber?schema=hosts"; }
first=(${hosts[0]})
run_in "${first[0]}" python3 Tests/Hosts/client.py "$(url "${first[1]}")" setup >/dev/null
total=$((2 * processes * increments))
pids=()
for index in 0 1; do
    host=(${hosts[$index]})
    for process in $(seq 1 "$processes"); do
        run_in "${host[0]}" python3 Tests/Hosts/client.py "$(url "${host[1]}")" "h$((index + 1))p$process" "$increments" "$total" \
            > "$dir/h$((index + 1))p$process.json" &
        pids+=($!)
    done
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || { echo "many-hosts: a writer failed"; cat "$dir"/*.json; exit 1; }
check=$(run_in "${first[0]}" python3 Tests/Hosts/client.py "$(url "${first[1]}")" check "$total")
python3 - "$check" "$mode" "$dir"/h*.json <<'PY'
import json, sys
check, mode, writers = json.loads(sys.argv[1]), sys.argv[2], [json.load(open(path)) for path in sys.argv[3:]]
conflicts = sum(writer["conflicts"] for writer in writers)
assert check["value"] == check["expected"], f"increments lost: counter {check['value']}, expected {check['expected']}"
assert check["entries"] == check["distinct"] == check["expected"], f"entries: {check}"
assert all(writer["live_equal"] for writer in writers), f"a live query ended unlike a fresh fetch: {writers}"
print(f"many-hosts ({mode}): {len(writers)} writers on 2 hosts, {check['value']} increments, none lost; "
      f"{conflicts} conflicts settled by refreshing; every live query equal to a fresh fetch")
PY
