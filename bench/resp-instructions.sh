#!/usr/bin/env bash
# Instructions per request, shardkit against Redis, from callgrind: a figure that does
# not move with the machine's load the way CPU ticks do.
#
# Each server runs under `valgrind --tool=callgrind` (every thread counted) twice per
# workload, for 20,000 and for 120,000 requests (redis-benchmark -c 50 -P 16); the
# difference divided by 100,000 is the instructions one request costs, start-up and
# shutdown removed. Workloads: `-t incr` (one key), `INCR counter:__rand_int__ -r
# 100000000` and `-t get`, each under fsync everysec and always (Redis: appendonly yes with the same
# appendfsync). Kernel time (socket I/O, fsync) is not counted; see resp-cpu.sh.
# Loopback only; every run is bounded by -n. Takes about 8 minutes.
#
#   bash bench/resp-instructions.sh
#   BIN=/path/to/other/shardkit bash bench/resp-instructions.sh   # another build
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
need valgrind "apt-get install -y valgrind"
need redis-benchmark "apt-get install -y redis-tools"
need redis-server "apt-get install -y redis-server"
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p shardkit --bin shardkit
  BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
fi
cp "$BIN" "$WORK/shardkit"
PORT=18298

# load TEST N: the workload against $PORT.
load() {
  case $1 in
    incr) redis-benchmark -p $PORT -c 50 -n "$2" -P 16 -t incr -q >/dev/null ;;
    get) redis-benchmark -p $PORT -c 50 -n "$2" -P 16 -t get -q >/dev/null ;;
    rand) redis-benchmark -p $PORT -c 50 -n "$2" -P 16 -r 100000000 -q INCR counter:__rand_int__ >/dev/null ;;
  esac
}

# instructions SERVER FSYNC TEST N: total instructions of one server run.
instructions() {
  local dir="$WORK/run$RANDOM" pid
  mkdir -p "$dir"
  if [ "$1" = shardkit ]; then
    printf '[counters]\nfsync = "%s"\n' "$2" > "$dir/c.toml"
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$WORK/shardkit" serve \
      --config "$dir/c.toml" --data "$dir/data" --http 127.0.0.1:$((PORT + 1)) --resp 127.0.0.1:$PORT >/dev/null 2>&1 &
  else
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" redis-server --port $PORT \
      --bind 127.0.0.1 --dir "$dir" --save "" --appendonly yes --appendfsync "$2" >/dev/null 2>&1 &
  fi
  pid=$!
  PIDS+=("$pid")
  wait_port $PORT
  load "$3" "$4"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  awk '/^(summary|totals):/ {print $2; exit}' "$dir"/cg.out*
  rm -rf "$dir"
}

printf '%-6s %-9s %10s %10s %7s\n' test fsync shardkit redis ratio
for test in incr rand get; do
  for fsync in everysec always; do
    per() { echo $(( ($(instructions "$1" "$fsync" "$test" 120000) - $(instructions "$1" "$fsync" "$test" 20000)) / 100000 )); }
    s=$(per shardkit)
    r=$(per redis)
    printf '%-6s %-9s %10s %10s %7.2f\n' "$test" "$fsync" "$s" "$r" "$(echo "$s / $r" | bc -l)"
  done
done
