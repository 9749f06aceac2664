#!/usr/bin/env bash
# The time from a cluster node's SIGKILL to its groups
# serving writes again, and that nothing it acknowledged is lost.
#
#   bash bench/cluster-failover.sh        # ROUNDS=3 LEASE_MS=3000 (the default) CLUSTER_GROUPS=64
#   LEASE_MS=1000 bash bench/cluster-failover.sh
#   BIN=/tmp/shardkit-before bash bench/cluster-failover.sh   # a given build
#   LOAD=0 bash bench/cluster-failover.sh  # no load on the survivors
#
# Each round: a private nats-server; three nodes; `shardkit cluster rebalance --replicas 1`
# (every group has a replica on another node); bench/cluster-failover.py increments a key
# in each slot range of the third node WRITES times through it, SIGKILLs it, and asks the
# two others until every key is served again. The bound: the dead node's record lapses
# (3 s after its last heartbeat), the first live replica names itself owner in the map
# (checked about every second) and takes each lease once it lapsed (`lease_ms`), catches up
# and fences. Reported per round: the victim's keys, seconds to the first and the last key
# served again, and the keys whose first value after the kill was not the last
# acknowledged one plus one. With LOAD=1 (the default) each survivor is kept busy from
# before the kill until its end by a redis-benchmark of its own (20 connections, pipelines
# of 16 INCRs of rows of a slot it serves; at most 60 s), so the take-over happens on
# loaded nodes (the two cores are shared by the load, the nodes and NATS).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
LEASE_MS=${LEASE_MS:-3000}
CLUSTER_GROUPS=${CLUSTER_GROUPS:-64}
WRITES=${WRITES:-20}
LOAD=${LOAD:-1}
. bench/common.sh
need redis-cli "apt-get install -y redis-tools"
need nats-server "apt-get install -y nats-server"
PY=$HOME/.cache/shardkit/clients/venv/bin/python
[ -x "$PY" ] || bash scripts/client-deps
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p shardkit --features nats
  BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
fi

echo "| round | lease_ms | groups | load | victim's keys | first served again s | all served again s | lost or doubled |"
echo "|---:|---:|---:|---|---:|---:|---:|---|"
for round in $(seq "$ROUNDS"); do
  nats_port=$(free_port); mkdir -p "$WORK/$round/nats"
  nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$WORK/$round/nats" > "$WORK/$round/nats/log" 2>&1 &
  nats_pid=$!; PIDS+=("$nats_pid")
  NATS_URL="nats://127.0.0.1:$nats_port"
  wait_port "$nats_port"
  pids=(); ports=()
  for i in 1 2 3; do
    dir=$WORK/$round/n$i; resp=$(free_port); http=$(free_port); mkdir -p "$dir"
    printf '[cluster]\nenabled = true\nname = "failover"\ngroups = %s\n[counters]\nlease_ms = %s\n[nats]\nurl = "%s"\n' \
      "$CLUSTER_GROUPS" "$LEASE_MS" "$NATS_URL" > "$dir/config.toml"
    "$BIN" serve --data "$dir/data" --resp "127.0.0.1:$resp" --http "127.0.0.1:$http" \
      --config "$dir/config.toml" > "$dir/log" 2>&1 &
    pids+=("$!"); PIDS+=("$!"); ports+=("$resp")
    wait_port "$resp"
  done
  sleep 1
  "$BIN" cluster rebalance --nats "$NATS_URL" --cluster failover --groups "$CLUSTER_GROUPS" --replicas 1 > /dev/null
  for p in "${ports[@]}"; do
    for _ in $(seq 600); do
      timeout 2 redis-cli -p "$p" CLUSTER INFO 2>/dev/null | grep -q cluster_state:ok && break
      sleep 0.1
    done
  done
  # Replicas caught up and every group led before the kill.
  sleep 3
  loads=()
  if [ "$LOAD" = 1 ]; then
    for i in 0 1; do
      tag=$(tag_served_by "${ports[$i]}")
      timeout 60 redis-benchmark -h 127.0.0.1 -p "${ports[$i]}" -n 100000000 -c 20 -P 16 \
        -r 100000 -q INCR "counter:__rand_int__{$tag}" > /dev/null 2>&1 &
      loads+=("$!")
    done
    sleep 1
  fi
  result=$("$PY" bench/cluster-failover.py "${pids[2]}" "${ports[2]}" "${ports[0]}" "${ports[1]}" --writes "$WRITES")
  { for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" || true; done; } 2>/dev/null
  "$PY" - "$round" "$LEASE_MS" "$CLUSTER_GROUPS" "$LOAD" "$result" <<'PY'
import json, sys
round_, lease, groups, load, raw = sys.argv[1:]
r = json.loads(raw)
lost = ", ".join(r["lost_or_doubled"]) or "none"
load = "2 x redis-benchmark" if load == "1" else "none"
print(f"| {round_} | {lease} | {groups} | {load} | {r['keys']} | {r['first_served_s']} | {r['all_served_s']} | {lost} |")
PY
  # (The victim was SIGKILLed: the shell's "Killed" notice is not news.)
  { for p in "${pids[@]}" "$nats_pid"; do kill "$p" 2>/dev/null || true; wait "$p" || true; done; } 2>/dev/null
done
