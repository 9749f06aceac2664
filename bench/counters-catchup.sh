#!/usr/bin/env bash
# Catch-up time of a new node on the JetStream log (`[counters] log = "jetstream"`): from
# the process start to the moment its applied stream sequence (ROLE's offset) equals the
# leader's, for a store of ROWS rows, two ways in the same run:
#
#  - snapshot: the leader snapshots every SNAP_MIB MiB of log and stores the snapshots in
#    the object store (the stream is purged below the oldest kept one), so the new node
#    fetches the newest snapshot and applies the stream's tail;
#  - replay: the same rows in a second store whose leader never snapshots, so the new
#    node replays the whole stream (the reference: what every start did before).
#
#   bash bench/counters-catchup.sh                  # ROWS=1000000, ROUNDS=1
#   ROWS=10000000 SNAP_MIB=64 bash bench/counters-catchup.sh
#   ROUNDS=5 bash bench/counters-catchup.sh         # every row incremented 5 times
#
# ROUNDS: how often every row is incremented (the stream holds ROWS x ROUNDS records,
# a snapshot ROWS rows). KEEP_LOGS=DIR keeps the nodes' logs.
#
# One nats-server (-js, file store in the scratch directory) on a free loopback port;
# rows are loaded with one INCRBY each through redis-cli --pipe; every run is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-1}
SNAP_MIB=${SNAP_MIB:-16}
. bench/common.sh
need nats-server "apt-get install -y nats-server"
need redis-cli "apt-get install -y redis-tools"
cargo build --release -q -p shardkit --features nats
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit


NATS_PORT=$(free_port)
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -sd "$WORK/nats" > "$WORK/nats.log" 2>&1 &
PIDS+=($!)
wait_port "$NATS_PORT"

# start_node NAME STORE SNAPSHOT_MIB ROLE: a shardkit node; its RESP port in $PORT.
start_node() {
  local name=$1 store=$2 mib=$3 role=$4
  PORT=$(free_port)
  mkdir -p "$WORK/$name"
  cat > "$WORK/$name/shardkit.toml" <<TOML
resp = "127.0.0.1:$PORT"
http = "127.0.0.1:0"
[counters]
log = "jetstream"
store = "$store"
role = "$role"
snapshot_log_mib = $mib
snapshot_seconds = 0
[nats]
url = "nats://127.0.0.1:$NATS_PORT"
TOML
  SHARDKIT_LOG=info "$BIN" serve --data "$WORK/$name/data" --config "$WORK/$name/shardkit.toml" > /dev/null 2> "$WORK/$name/log" &
  PIDS+=($!)
  wait_port "$PORT"
}

# offset PORT: ROLE's offset (master: 2nd line, replica: 5th), or 0.
offset() {
  local out
  out=$(redis-cli -p "$1" ROLE 2>/dev/null || true)
  case "$(sed -n 1p <<< "$out")" in
    master) sed -n 2p <<< "$out" ;;
    slave) sed -n 5p <<< "$out" ;;
    *) echo 0 ;;
  esac
}

# load PORT: ROWS rows, ROUNDS INCRBYs each, pipelined (one redis-cli --pipe per
# million commands: one pipe of 10 million stalled once, see bench/notes/runs.md).
load() {
  local from round
  for ((round = 0; round < ROUNDS; round++)); do
  for ((from = 0; from < ROWS; from += 1000000)); do
    python3 - "$from" "$(( from + 1000000 < ROWS ? from + 1000000 : ROWS ))" <<'PY' | timeout 600 redis-cli -p "$1" --pipe > /dev/null
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1]), int(sys.argv[2])):
    k = b"weibo:%d" % i
    v = b"%d" % (i % 7 + 1)
    out.write(b"*3\r\n$6\r\nINCRBY\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
  done
  done
}

# catch_up LEADER_PORT NAME STORE: seconds from a new empty node's start to its
# offset reaching the leader's, in $SECS.
catch_up() {
  local leader=$1 name=$2 store=$3 target t0 t1
  target=$(offset "$leader")
  t0=$(date +%s.%N)
  start_node "$name" "$store" 1000000 replica
  for _ in $(seq 6000); do
    [ "$(offset "$PORT")" = "$target" ] && break
    sleep 0.05
  done
  t1=$(date +%s.%N)
  [ "$(offset "$PORT")" = "$target" ] || { echo "$name never caught up (target $target)" >&2; exit 1; }
  SECS=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
}

start_node lead-snap snap "$SNAP_MIB" auto; SNAP_LEADER=$PORT
start_node lead-replay replay 1000000 auto; REPLAY_LEADER=$PORT
for p in "$SNAP_LEADER" "$REPLAY_LEADER"; do
  for _ in $(seq 200); do [ "$(redis-cli -p "$p" ROLE | head -1)" = master ] && break; sleep 0.1; done
done
t0=$(date +%s.%N); load "$SNAP_LEADER"; t1=$(date +%s.%N)
echo "loaded $ROWS rows x $ROUNDS rounds into store snap in $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
t0=$(date +%s.%N); load "$REPLAY_LEADER"; t1=$(date +%s.%N)
echo "loaded $ROWS rows x $ROUNDS rounds into store replay in $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
# Let the last snapshot be stored (the leader ships its newest one each second).
stored=-1
for _ in $(seq 120); do
  now=$(grep -c "snapshot stored" "$WORK/lead-snap/log" || true)
  [ "$now" = "$stored" ] && break
  stored=$now
  sleep 3
done
last=$(grep "snapshot stored" "$WORK/lead-snap/log" | tail -1 | grep -o 'snapshot=[^ ]*\|bytes=[0-9]*\|stream_first_seq=[0-9]*' | tr '\n' ' ' || true)
echo "snapshots stored: $stored; newest: $last"

catch_up "$SNAP_LEADER" new-snap snap; snap_s=$SECS
restored=$(grep -o 'counters restored from the object store.*' "$WORK/new-snap/log" | head -1 || true)
catch_up "$REPLAY_LEADER" new-replay replay; replay_s=$SECS
echo
echo "rows,rounds,stream last seq (snap / replay),catch-up snapshot+tail s,catch-up full replay s,ratio"
echo "$ROWS,$ROUNDS,$(offset "$SNAP_LEADER") / $(offset "$REPLAY_LEADER"),$snap_s,$replay_s,$(python3 -c "print(f'{$snap_s / $replay_s:.2f}x')")"
echo "new node (snapshot): ${restored:-did not restore from a snapshot}"
# KEEP_LOGS=DIR: copy every node's log there before the scratch directory goes.
if [ -n "${KEEP_LOGS:-}" ]; then
  mkdir -p "$KEEP_LOGS"
  for d in "$WORK"/*/; do cp "$d/log" "$KEEP_LOGS/$(basename "$d").log" 2>/dev/null || true; done
fi
