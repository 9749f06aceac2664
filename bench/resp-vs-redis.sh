#!/usr/bin/env bash
# redis-benchmark against shardkit and against Redis 7 on this machine, one after the
# other in the same run, at matching durability levels; prints a table with ratios.
#
#   bash bench/resp-vs-redis.sh            # N=500000 requests per test, 50 clients
#   N=100000 bash bench/resp-vs-redis.sh   # quicker
#
# Pairings (same durability): shardkit fsync=no vs Redis appendonly no;
# shardkit fsync=everysec vs Redis appendonly yes + appendfsync everysec; shardkit
# fsync=always (group commit) vs Redis appendonly yes + appendfsync always (the same
# guarantee: no acknowledged write lost), and also against the everysec Redis, a
# stricter guarantee than that reference gives. Only loopback is used; every run is
# bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500000}
C=${C:-50}
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need redis-server "apt-get install -y redis-server"
cargo build --release -q -p shardkit
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit


# One benchmark run: label port -> lines "label,test,rps" in $WORK/results.csv
run_suite() {
  local label=$1 port=$2
  for p in 1 16; do
    timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -t incr,get -c "$C" -n "$N" -P "$p" --csv -q 2>/dev/null \
      | tr -d '"' | awk -F, -v l="$label" -v p="$p" 'NR>1 && $1!="test" {print l "," $1 " -P" p "," $2}' >> "$WORK/results.csv"
  done
  timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" -r 100000000 --csv -q INCR counter:__rand_int__ 2>/dev/null \
    | tr -d '"' | awk -F, -v l="$label" 'NR>1 && $1!="test" {print l ",INCR rand -P1," $2}' >> "$WORK/results.csv"
}

# The ticket-server anchor: one id or ticket per request, against Redis INCR on one key.
run_anchor() {
  local label=$1 port=$2 test=$3; shift 3
  timeout 900 redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" --csv -q "$@" 2>/dev/null \
    | tr -d '"' | awk -F, -v l="$label" -v t="$test" 'NR>1 && $1!="test" {print l "," t "," $2}' >> "$WORK/results.csv"
}

start_shardkit() {
  local fsync=$1 port=$2 dir="$WORK/sk-$1"
  mkdir -p "$dir"
  printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nfsync = "%s"\n' "$port" "$fsync" > "$dir/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$dir/data" --config "$dir/shardkit.toml" 2>"$dir/log" &
  PIDS+=($!)
  wait_port "$port"
}

start_redis() {
  local name=$1 port=$2; shift 2
  mkdir -p "$WORK/$name"
  redis-server --bind 127.0.0.1 --port "$port" --save "" --dir "$WORK/$name" --daemonize no "$@" > "$WORK/$name/log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
}

: > "$WORK/results.csv"
start_redis redis-no 16400 --appendonly no
run_suite "redis appendonly=no" 16400
run_anchor "redis appendonly=no" 16400 "id/ticket -P1" INCR tickets
start_redis redis-aof 16401 --appendonly yes --appendfsync everysec
run_suite "redis appendonly=everysec" 16401
start_redis redis-aof-always 16402 --appendonly yes --appendfsync always
run_suite "redis appendonly=always" 16402
for mode in no everysec always; do
  port=$((16410 + ${#mode}))
  start_shardkit "$mode" "$port"
  run_suite "shardkit fsync=$mode" "$port"
  if [ "$mode" = always ]; then
    run_anchor "shardkit ID.NEXT" "$port" "id/ticket -P1" ID.NEXT
    run_anchor "shardkit TICKET.NEXT" "$port" "id/ticket -P1" TICKET.NEXT photos
  fi
done

python3 - "$WORK/results.csv" "$N" "$C" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
rps = {(r[0], r[1]): float(r[2]) for r in rows if len(r) == 3}
tests = sorted({t for _, t in rps}, key=lambda t: (t.split()[0], t))
pairs = [("shardkit ID.NEXT", "redis appendonly=no"),
         ("shardkit TICKET.NEXT", "redis appendonly=no"),
         ("shardkit fsync=no", "redis appendonly=no"),
         ("shardkit fsync=everysec", "redis appendonly=everysec"),
         ("shardkit fsync=always", "redis appendonly=always"),
         ("shardkit fsync=always", "redis appendonly=everysec")]
print(f"redis-benchmark -c {sys.argv[3]} -n {sys.argv[2]}: requests per second, ratio = shardkit / Redis")
print(f"{'test':<16} {'pairing':<52} {'shardkit':>11} {'redis':>11} {'ratio':>6}")
for t in tests:
    for ours, theirs in pairs:
        a, b = rps.get((ours, t)), rps.get((theirs, t))
        if a and b:
            print(f"{t:<16} {ours + ' vs ' + theirs.split()[1]:<52} {a:>11.0f} {b:>11.0f} {a / b:>6.2f}")
PY
