#!/usr/bin/env bash
# A group holding about ROWS rows moves to a new node while a
# client keeps writing to it.
#
#   bash bench/cluster-move.sh             # ROWS=1000000
#
# A private nats-server; node A with `[cluster] groups = 2` owns both groups
# (`rebalance --replicas 0`); 2 x ROWS distinct keys are incremented through
# `redis-cli --pipe`, so each group holds about ROWS rows. Node B starts, a writer
# (bench/cluster-move.py: redis-py RedisCluster, INCR on keys of both groups in turn)
# runs, and `shardkit cluster add-node B --replicas 0` moves one group to B: B follows
# the group (newest snapshot, then the stream), then A hands the lease over.
# Reported: the rows B ends with (DBSIZE: the moved group), add-node's whole time and
# the part spent waiting for B to follow, and per group the slowest increment
# (retries included: the pause a writer sees), its p99 and p50, and the longest time
# between two acknowledgements. The group that stays is the control.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
. bench/common.sh
need redis-cli "apt-get install -y redis-tools"
need nats-server "apt-get install -y nats-server"
PY=$HOME/.cache/shardkit/clients/venv/bin/python
[ -x "$PY" ] || bash scripts/client-deps
cargo build --release -q -p shardkit --features nats
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit

nats_port=$(free_port)
mkdir -p "$WORK/nats"
nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$WORK/nats" > "$WORK/nats/log" 2>&1 &
PIDS+=("$!")
NATS_URL="nats://127.0.0.1:$nats_port"
wait_port "$nats_port"

# node NAME: starts a cluster node; sets PORT_<NAME>.
node() {
  local dir=$WORK/$1 resp http
  resp=$(free_port); http=$(free_port); mkdir -p "$dir"
  printf '[cluster]\nenabled = true\nname = "move"\ngroups = 2\n[counters]\nlease_ms = 1000\n[nats]\nurl = "%s"\n' \
    "$NATS_URL" > "$dir/config.toml"
  "$BIN" serve --data "$dir/data" --resp "127.0.0.1:$resp" --http "127.0.0.1:$http" \
    --config "$dir/config.toml" > "$dir/log" 2>&1 &
  PIDS+=("$!")
  wait_port "$resp"
  printf -v "PORT_$1" '%s' "$resp"
}
cli() { "$BIN" cluster "$@" --nats "$NATS_URL" --cluster move --groups 2 --replicas 0; }

node A
sleep 1
cli rebalance > /dev/null
for _ in $(seq 600); do
  timeout 2 redis-cli -p "$PORT_A" CLUSTER INFO 2>/dev/null | grep -q cluster_state:ok && break
  sleep 0.1
done

fill_start=$(date +%s.%N)
python3 - "$ROWS" <<'PY' | redis-cli -p "$PORT_A" --pipe > "$WORK/fill.log"
import sys
out = sys.stdout.buffer
for i in range(2 * int(sys.argv[1])):
    k = b"row:%d" % i
    out.write(b"*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n" % (len(k), k))
PY
fill_end=$(date +%s.%N)
grep -q "errors: 0" "$WORK/fill.log" || { cat "$WORK/fill.log" >&2; exit 1; }
rows_a=$(redis-cli -p "$PORT_A" DBSIZE)

node B
"$PY" bench/cluster-move.py "127.0.0.1:$PORT_A" "$WORK/stop" 600 > "$WORK/writer.json" &
writer=$!
sleep 3
move_start=$(date +%s.%N)
cli add-node "127.0.0.1:$PORT_B" --follow-wait-ms 300000 > "$WORK/add.json"
move_end=$(date +%s.%N)
sleep 3
touch "$WORK/stop"
wait "$writer"
rows_b=$(redis-cli -p "$PORT_B" DBSIZE)

python3 - "$WORK/add.json" "$WORK/writer.json" "$ROWS" "$rows_a" "$rows_b" \
  "$fill_start" "$fill_end" "$move_start" "$move_end" <<'PY'
import json, sys
add = json.load(open(sys.argv[1]))
writer = json.load(open(sys.argv[2]))
rows, rows_a, rows_b = (int(x) for x in sys.argv[3:6])
fill_s = float(sys.argv[7]) - float(sys.argv[6])
move_s = float(sys.argv[9]) - float(sys.argv[8])
prepared = add.get("prepared") or {}
print(f"filled {rows_a:,} rows on A in {fill_s:.1f} s ({2 * rows / fill_s:,.0f} increments/s)")
moved = [m["group"] for m in add.get("moves", [])]
print(f"moved groups: {moved}; B holds {rows_b:,} rows after the move")
print(f"add-node: {move_s:.2f} s in all; B following its group took {prepared.get('ms')} ms "
      f"(followers_ready: {prepared.get('followers_ready')})")
print("| group | increments | slowest ms | p99 ms | p50 ms | longest gap ms |")
print("|---|---:|---:|---:|---:|---:|")
for g, v in writer.items():
    print(f"| {g} | {v['acknowledged']} | {v['slowest_ms']} | {v['p99_ms']} | {v['p50_ms']} | {v['longest_gap_ms']} |")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
