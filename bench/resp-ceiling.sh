#!/usr/bin/env bash
# Where the redis-benchmark figures of resp-vs-redis.sh come from on this machine: for
# each server (Redis 7 with appendonly no, shardkit with fsync no) and each test, the
# requests per second, the CPU the client (redis-benchmark) used, and the server's CPU
# time per request, all from the same run. PING_MBULK is the null workload: a server
# that answers it does no work of its own, so its rate is the most this client and this
# kernel can push through one server process on these cores.
#
#   bash bench/resp-ceiling.sh            # N=300000 requests per test, 50 clients
#   N=100000 bash bench/resp-ceiling.sh   # quicker
#
# Columns: server, test, req/s, client CPU (share of one core over the run), server CPU
# (share of one core), server CPU microseconds per request. A client near 1.00 core is
# the limit of the run, whatever the server does. Only loopback is used; every run is
# bounded (-n and a timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-300000}
C=${C:-50}
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need redis-server "apt-get install -y redis-server"
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
cargo build --release -q -p shardkit
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
HZ=$(getconf CLK_TCK)

# One test: label pid port pipeline test-args... -> one line of the table.
measure() {
  local label=$1 pid=$2 port=$3 p=$4; shift 4
  local before after out
  before=$(cpu_total "$pid")
  out=$( { /usr/bin/time -f "TIME %U %S %e" timeout 600 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" -P "$p" --csv -q "$@"; } 2>&1 )
  after=$(cpu_total "$pid")
  echo "$out" | awk -F, -v l="$label" -v p="$p" -v ticks=$((after - before)) -v hz="$HZ" -v n="$N" '
    /^TIME/ { split($0, t, " "); cu = t[2] + t[3]; el = t[4]; next }
    NR > 1 && $1 != "\"test\"" && $2 != "" { gsub(/"/, "", $1); gsub(/"/, "", $2); name = $1; rps = $2 }
    END {
      if (el <= 0) el = 0.001
      printf "| %s | %s -P%s | %.0f | %.2f | %.2f | %.2f |\n", l, name, p, rps, cu / el, ticks / hz / el, ticks / hz / n * 1e6
    }'
}

start_redis() {
  mkdir -p "$WORK/redis"
  redis-server --bind 127.0.0.1 --port 16500 --save "" --appendonly no --dir "$WORK/redis" --daemonize no > "$WORK/redis/log" 2>&1 &
  PIDS+=($!)
  wait_port 16500
}

start_shardkit() {
  local dir="$WORK/sk"
  mkdir -p "$dir"
  printf 'resp = "127.0.0.1:16510"\nhttp = "127.0.0.1:0"\n[counters]\nfsync = "no"\n' > "$dir/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$dir/data" --config "$dir/shardkit.toml" 2>"$dir/log" &
  PIDS+=($!)
  wait_port 16510
}

start_redis
REDIS_PID=${PIDS[-1]}
start_shardkit
SK_PID=${PIDS[-1]}
echo "| server | test | req/s | client CPU (cores) | server CPU (cores) | server µs/request |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for p in 1 16; do
  for t in ping_mbulk incr get; do
    measure "redis appendonly=no" "$REDIS_PID" 16500 "$p" -t "$t"
    measure "shardkit fsync=no" "$SK_PID" 16510 "$p" -t "$t"
  done
done
echo "(N=$N, -c $C, $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg))"
