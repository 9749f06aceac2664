#!/usr/bin/env bash
# Server CPU per request, shardkit against Redis 7, in the same run at equal durability:
# on 2 cores the load generator caps every server near the same request rate, so the
# figure to compare is the CPU the server process spent (utime + stime from
# /proc/<pid>/stat, before and after each test), in clock ticks per million requests.
#
#   bash bench/resp-cpu.sh                    # N=1000000 per -P16 test, N/5 per -P1 test
#   N=200000 bash bench/resp-cpu.sh           # quicker
#   ROUNDS=3 bash bench/resp-cpu.sh           # each pairing three times, alternated
#
# Pairings: shardkit `[counters] fsync = "everysec"` vs Redis `appendonly yes,
# appendfsync everysec`; `always` vs `always`. Every test gets a fresh pair of servers
# (own port and directory on loopback), so no test pays for rows or snapshots an
# earlier one left, and the two servers of a pair run one after the other.
#
# Tests, each at -P1 and -P16, 50 connections:
# - INCR, GET: `redis-benchmark -t incr|get` (one key);
# - INCR pad: `redis-benchmark INCR counter:__rand_int__ -r 100000000`, whose keys are
#   always 12 zero-padded digits, so shardkit stores string-keyed rows;
# - INCR rand: canonical integer ids (`counter:9949260`), uniform in [0, 10^8), from
#   bench/resp-load.py (redis-benchmark cannot write them).
# Every run is bounded by `timeout`. Prints ticks split into user and system time.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
C=${C:-50}
ROUNDS=${ROUNDS:-1}
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need redis-server "apt-get install -y redis-server"
need python3 "apt-get install -y python3"
cargo build --release -q -p shardkit
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/shardkit}

# load PORT TEST PIPELINE REQUESTS: one bounded load of TEST against 127.0.0.1:PORT.
load() {
  local port=$1 test=$2 p=$3 n=$4
  case $test in
    INCR) timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$n" -q -t incr -P "$p" ;;
    GET) timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$n" -q -t get -P "$p" ;;
    "INCR pad") timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$n" -q -P "$p" \
      -r 100000000 INCR counter:__rand_int__ ;;
    "INCR rand") timeout 900 python3 bench/resp-load.py --port "$port" -n "$n" -c "$C" -P "$p" \
      -r 100000000 --timeout 800 ;;
  esac > /dev/null
}

# start_redis MODE PORT DIR / start_shardkit MODE PORT DIR: a fresh server; sets PID.
start_redis() {
  redis-server --bind 127.0.0.1 --port "$2" --save "" --dir "$3" --daemonize no \
    --appendonly yes --appendfsync "$1" > "$3/log" 2>&1 &
  PID=$!
}
start_shardkit() {
  printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nfsync = "%s"\n' "$2" "$1" > "$3/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$3/data" --config "$3/shardkit.toml" > /dev/null 2> "$3/log" &
  PID=$!
}

# measure SERVER MODE TEST PIPELINE: a fresh server, one load, its ticks appended to
# $WORK/cpu.csv as "server,mode,test,pipeline,utime,stime,requests".
port=16500
measure() {
  local server=$1 mode=$2 test=$3 p=$4 n=$N before after dir
  [ "$p" = 1 ] && n=$((N / 5))
  port=$((port + 1))
  dir="$WORK/$server-$port"; mkdir -p "$dir"
  "start_$server" "$mode" "$port" "$dir"
  wait_port "$port"
  read -r -a before < <(cpu_ticks "$PID")
  load "$port" "$test" "$p" "$n"
  read -r -a after < <(cpu_ticks "$PID")
  echo "$server,$mode,$test,$p,$((after[0] - before[0])),$((after[1] - before[1])),$n" >> "$WORK/cpu.csv"
  kill "$PID"; wait "$PID" 2>/dev/null || true
  rm -rf "$dir"
}

: > "$WORK/cpu.csv"
for round in $(seq "$ROUNDS"); do
  for mode in everysec always; do
    for p in 16 1; do
      for test in INCR GET "INCR pad" "INCR rand"; do
        # Alternate which server goes first from round to round.
        if [ $((round % 2)) = 1 ]; then order="redis shardkit"; else order="shardkit redis"; fi
        for server in $order; do measure "$server" "$mode" "$test" "$p"; done
      done
    done
  done
done

python3 - "$WORK/cpu.csv" "$C" <<'PY'
import csv, sys
from collections import defaultdict
tot = defaultdict(lambda: [0, 0, 0])
for server, mode, test, p, ut, st, n in csv.reader(open(sys.argv[1])):
    t = tot[(server, mode, test, p)]
    t[0] += int(ut); t[1] += int(st); t[2] += int(n)
print(f"-c {sys.argv[2]}, fresh servers per test: server CPU ticks per million requests "
      "(USER_HZ=100), user + system; ratio = shardkit / Redis")
print(f"{'test':<16} {'fsync':<9} {'shardkit':>15} {'redis':>15} {'ratio':>6}")
for mode in ["everysec", "always"]:
    for p in ["16", "1"]:
        for test in ["INCR", "GET", "INCR pad", "INCR rand"]:
            a, b = tot.get(("shardkit", mode, test, p)), tot.get(("redis", mode, test, p))
            if not a or not b or not b[2]:
                continue
            au, as_ = a[0] * 1e6 / a[2], a[1] * 1e6 / a[2]
            bu, bs = b[0] * 1e6 / b[2], b[1] * 1e6 / b[2]
            name = f"{test} -P{p}"
            print(f"{name:<16} {mode:<9} {au:>6.0f} + {as_:>6.0f} {bu:>6.0f} + {bs:>6.0f} "
                  f"{(au + as_) / (bu + bs):>6.2f}")
PY
