#!/usr/bin/env bash
# NATS JetStream storage per acknowledged increment in the counters' stream
# (`[counters] log = "jetstream"`): bytes of the stream SHARDKIT_COUNTERS_<store> per
# record, and records per message, at the batch sizes one leader's group commit makes
# from a few loads:
#
#  - int-c1-P1:   one connection, no pipeline: one record per message (the worst case);
#  - int-c50-P1:  50 connections, no pipeline;
#  - int-c50-P16: 50 connections, pipelines of 16 (what a pipelined load makes);
#  - str-c1-P1, str-c50-P16: the same two ends with 18-byte string keys (`counter:/p/000` + redis-benchmark's
#    12 zero-padded digits), not integer ids;
#  - snap-int, snap-str: SNAP_N new rows of two 16-bit columns (`HSET pv:<key> c .. r ..`)
#    into a store that snapshots every SNAP_MIB MiB of log, to read the size per row of a
#    snapshot in the object store, for random 63-bit integer ids and 18-byte string keys.
#
# Integer ids (`INCR counter:<id>`, ids uniform in [0, 10^8)) come from
# bench/resp-load.py. The figures are read from the NATS monitoring endpoint
# (/jsz?streams=true: the stream's bytes and messages) after the load, and `du` of the
# stream's directory in the file store. Each case runs a fresh node on its own store
# (no snapshots, so nothing is purged) against one private nats-server.
#
#   bash bench/counters-nats-storage.sh   # N=200000 (N1=20000 for c1-P1), SNAP_N=1000000, SNAP_MIB=16
#   BIN=path/to/shardkit N=500000 bash bench/counters-nats-storage.sh
#
# Loopback only, every load bounded by its count and a timeout, scratch directory removed.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
N1=${N1:-20000}
SNAP_MIB=${SNAP_MIB:-16}
SNAP_N=${SNAP_N:-1000000}
. bench/common.sh
need nats-server "apt-get install -y nats-server"
need redis-cli "apt-get install -y redis-tools"
need redis-benchmark "apt-get install -y redis-tools"
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p shardkit --features nats
  BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
fi

NATS_PORT=$(free_port)
MON_PORT=$(free_port)
nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -m "$MON_PORT" -sd "$WORK/nats" > "$WORK/nats.log" 2>&1 &
PIDS+=($!)
wait_port "$NATS_PORT"
wait_port "$MON_PORT"

# stream STORE: "messages bytes" of the store's stream, from the monitoring endpoint.
stream() {
  python3 - "$MON_PORT" "SHARDKIT_COUNTERS_$1" <<'PY'
import json, sys, urllib.request
doc = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/jsz?streams=true&accounts=true"))
for acc in doc.get("account_details", []):
    for s in acc.get("stream_detail", []):
        if s["name"] == sys.argv[2]:
            print(s["state"]["messages"], s["state"]["bytes"])
            sys.exit(0)
print(0, 0)
PY
}

# du_stream STORE: bytes on disk of the stream's directory in the file store.
du_stream() {
  local d
  d=$(find "$WORK/nats" -type d -name "SHARDKIT_COUNTERS_$1" | head -1)
  if [ -n "$d" ]; then du -sb "$d" | cut -f1; else echo 0; fi
}

# start_node STORE SNAPSHOT_MIB: a leader on its own store; RESP port in $PORT, pid in $NODE.
start_node() {
  local store=$1 mib=$2
  PORT=$(free_port)
  mkdir -p "$WORK/$store"
  cat > "$WORK/$store/shardkit.toml" <<TOML
resp = "127.0.0.1:$PORT"
http = "127.0.0.1:0"
[counters]
log = "jetstream"
store = "$store"
snapshot_log_mib = $mib
snapshot_seconds = 0
[nats]
url = "nats://127.0.0.1:$NATS_PORT"
TOML
  SHARDKIT_LOG=info "$BIN" serve --data "$WORK/$store/data" --config "$WORK/$store/shardkit.toml" > /dev/null 2> "$WORK/$store/log" &
  NODE=$!
  PIDS+=("$NODE")
  wait_port "$PORT"
  for _ in $(seq 200); do [ "$(redis-cli -p "$PORT" ROLE | head -1)" = master ] && break; sleep 0.1; done
  [ "$(redis-cli -p "$PORT" ROLE | head -1)" = master ] || { echo "$store never led" >&2; exit 1; }
}

# load KIND N C P: N increments on $PORT, integer ids (int) or padded string keys (str).
load() {
  case "$1" in
    int) timeout 600 python3 bench/resp-load.py --port "$PORT" -n "$2" -c "$3" -P "$4" -r 100000000 ;;
    str) timeout 600 redis-benchmark -p "$PORT" -n "$2" -c "$3" -P "$4" -r 100000000 -q \
           INCR counter:/p/000__rand_int__ | tr '\r' '\n' | tail -1 ;;
  esac
}

echo "case,increments,stream messages,increments per message,stream bytes,bytes per increment,du bytes,du per increment"
# measure STORE KIND N C P
measure() {
  local store=$1 kind=$2 n=$3 c=$4 p=$5 m0 b0 m1 b1
  start_node "$store" 1000000
  read -r m0 b0 < <(stream "$store")
  load "$kind" "$n" "$c" "$p" >&2
  sleep 1
  read -r m1 b1 < <(stream "$store")
  local du
  du=$(du_stream "$store")
  python3 -c "
n, dm, db, du = $n, $m1 - $m0, $b1 - $b0, $du
print(f'$store,{n},{dm},{n / dm:.1f},{db},{db / n:.1f},{du},{du / n:.1f}')"
  kill "$NODE"; wait "$NODE" 2>/dev/null || true
}

measure int-c1-P1 int "$N1" 1 1
measure int-c50-P1 int "$N" 50 1
measure int-c50-P16 int "$N" 50 16
measure str-c1-P1 str "$N1" 1 1
measure str-c50-P16 str "$N" 50 16

echo
echo "case,rows in the snapshot,snapshot bytes,bytes per row"
# rows KIND N: N HSETs of new two-column rows, `HSET pv:<key> c <1-1000> r <1-100>`,
# keys random 63-bit integer ids (int) or 18-byte strings, `/p/` + 15 hex digits (str).
rows() {
  python3 - "$1" "$2" <<'PY'
import random, sys
kind, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
out = sys.stdout.buffer
for _ in range(n):
    k = (b"pv:%d" % rng.getrandbits(63)) if kind == "int" else (b"pv:/p/%015x" % rng.getrandbits(60))
    c, r = b"%d" % rng.randint(1, 1000), b"%d" % rng.randint(1, 100)
    out.write(b"*6\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n$1\r\nc\r\n$%d\r\n%s\r\n$1\r\nr\r\n$%d\r\n%s\r\n"
              % (len(k), k, len(c), c, len(r), r))
PY
}
# snapshot STORE KIND: SNAP_N new rows of two 16-bit columns into a store that snapshots
# every SNAP_MIB MiB of log; the size and lsn X of the newest snapshot stored in the
# object store come from the leader's log. Each HSET writes two records (one a column)
# after the three schema records, so the snapshot holds (X - 1 - 3) / 2 rows.
snapshot() {
  local store=$1 kind=$2 line
  start_node "$store" "$SNAP_MIB"
  redis-cli -p "$PORT" COUNTER.CREATE pv > /dev/null
  redis-cli -p "$PORT" COUNTER.ADDCOL pv c BITS 16 MAX 32 > /dev/null
  redis-cli -p "$PORT" COUNTER.ADDCOL pv r BITS 16 MAX 32 > /dev/null
  rows "$kind" "$SNAP_N" | timeout 600 redis-cli -p "$PORT" --pipe | tail -1 >&2
  sleep 3
  for _ in $(seq 60); do
    line=$(grep "snapshot stored" "$WORK/$store/log" | tail -1 || true)
    [ -n "$line" ] && break
    sleep 0.5
  done
  [ -n "$line" ] || { echo "$store: no snapshot stored" >&2; return 0; }
  python3 - "$store" "$line" <<'PY'
import re, sys
line = re.sub(r"\x1b\[[0-9;]*m", "", sys.argv[2])
lsn = int(re.search(r"snap-(\d+)-seq", line).group(1))
size = int(re.search(r"bytes=(\d+)", line).group(1))
rows = (lsn - 1 - 3) // 2
print(f"{sys.argv[1]},{rows},{size},{size / rows:.2f}")
PY
  kill "$NODE"; wait "$NODE" 2>/dev/null || true
}
snapshot snap-int int
snapshot snap-str str
