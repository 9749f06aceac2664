#!/usr/bin/env bash
# Server CPU per request, shardkit against Redis 7, in the same run at equal durability:
# on 2 cores redis-benchmark caps every server near the same request rate, so the figure
# to compare is the CPU the server process spent (utime + stime from /proc/<pid>/stat,
# before and after each test), in clock ticks per million requests.
#
#   bash bench/resp-cpu.sh              # N=500000 requests per test, 50 clients
#   N=200000 bash bench/resp-cpu.sh     # quicker
#
# Pairings: shardkit `[counters] fsync = "everysec"` vs Redis `appendonly yes,
# appendfsync everysec`; `always` vs `always`. Tests: INCR and GET at -P1 and -P16
# (`-t incr,get`, one key) and INCR on random keys (`INCR counter:__rand_int__ -r
# 100000000`; redis-benchmark writes 12 zero-padded digits, so these are string-keyed
# rows, not compact ids) at -P1 and -P16. Each server gets its own port and
# directory on loopback; every run is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500000}
C=${C:-50}
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need redis-server "apt-get install -y redis-server"
cargo build --release -q -p shardkit
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit

# cpu_ticks PID: utime + stime of the process (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# measure LABEL PID PORT TEST ARGS...: one redis-benchmark run, its CPU ticks appended
# to $WORK/cpu.csv as "label,test,ticks,requests".
measure() {
  local label=$1 pid=$2 port=$3 test=$4; shift 4
  local before after
  before=$(cpu_ticks "$pid")
  timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" -q "$@" > /dev/null
  after=$(cpu_ticks "$pid")
  echo "$label,$test,$((after - before)),$N" >> "$WORK/cpu.csv"
}

suite() {
  local label=$1 pid=$2 port=$3
  for p in 1 16; do
    measure "$label" "$pid" "$port" "INCR -P$p" -t incr -P "$p"
    measure "$label" "$pid" "$port" "GET -P$p" -t get -P "$p"
    measure "$label" "$pid" "$port" "INCR rand -P$p" -P "$p" -r 100000000 INCR counter:__rand_int__
  done
}

: > "$WORK/cpu.csv"
for mode in everysec always; do
  dir="$WORK/redis-$mode"; mkdir -p "$dir"
  port=$((16500 + ${#mode}))
  redis-server --bind 127.0.0.1 --port "$port" --save "" --dir "$dir" --daemonize no \
    --appendonly yes --appendfsync "$mode" > "$dir/log" 2>&1 &
  pid=$!; PIDS+=("$pid"); wait_port "$port"
  suite "redis $mode" "$pid" "$port"
  kill "$pid"; wait "$pid" 2>/dev/null || true

  dir="$WORK/shardkit-$mode"; mkdir -p "$dir"
  port=$((16510 + ${#mode}))
  printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nfsync = "%s"\n' "$port" "$mode" > "$dir/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$dir/data" --config "$dir/shardkit.toml" 2> "$dir/log" &
  pid=$!; PIDS+=("$pid"); wait_port "$port"
  suite "shardkit $mode" "$pid" "$port"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done

python3 - "$WORK/cpu.csv" "$N" "$C" <<'PY'
import csv, sys
per_m = {}
for label, test, ticks, n in csv.reader(open(sys.argv[1])):
    per_m[(label, test)] = int(ticks) * 1_000_000 / int(n)
tests = ["INCR -P1", "GET -P1", "INCR rand -P1", "INCR -P16", "GET -P16", "INCR rand -P16"]
print(f"redis-benchmark -c {sys.argv[3]} -n {sys.argv[2]}: server CPU ticks per million requests (USER_HZ=100), ratio = shardkit / Redis")
print(f"{'test':<16} {'durability':<10} {'shardkit':>9} {'redis':>9} {'ratio':>6}")
for mode in ["everysec", "always"]:
    for t in tests:
        a, b = per_m.get((f"shardkit {mode}", t)), per_m.get((f"redis {mode}", t))
        if a is not None and b:
            print(f"{t:<16} {mode:<10} {a:>9.0f} {b:>9.0f} {a / b:>6.2f}")
PY
