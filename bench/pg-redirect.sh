#!/usr/bin/env bash
# Redirects per second with the PostgreSQL link store behind the redirect
# cache, against the embedded (redb) store, in the same run. Two fresh databases on the
# machine's PostgreSQL stand in for two servers (`shardkit pg init`, 64 logical shards);
# two shardkit servers (embedded, postgres) get the same N links through the bulk API;
# each is restarted (empty cache), warmed by WARM of requests for the codes in order, then
# wrk asks it for random codes: first with a cache that can hold every link, then with a
# cache of N/10 entries so most redirects read the store. Loopback only; each wrk run
# is bounded by -d. Prints a markdown table with the ratios postgres / embedded.
#
#   bash bench/pg-redirect.sh           # N=200000 D=10s WARM=30s, 2 threads, 50 connections
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
D=${D:-10s}
WARM=${WARM:-30s}
PG=${SHARDKIT_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
. bench/common.sh
need wrk "apt-get install -y wrk"
need psql "apt-get install -y postgresql-client"
bash scripts/services-up
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --features sql --bin shardkit
cp "$TARGET/release/shardkit" "$WORK/"
DB_A="sk_bench_redirect_a_$$"
DB_B="sk_bench_redirect_b_$$"
BASE=${PG%/*}
bench_cleanup_extra() {
  psql -q "$PG" -c "DROP DATABASE IF EXISTS $DB_A WITH (FORCE)" -c "DROP DATABASE IF EXISTS $DB_B WITH (FORCE)" >/dev/null 2>&1 || true
}

psql -q "$PG" -c "CREATE DATABASE $DB_A" -c "CREATE DATABASE $DB_B" >/dev/null
SERVERS="$BASE/$DB_A,$BASE/$DB_B"
"$WORK/shardkit" pg init --servers "$SERVERS" --logical-shards 64 >/dev/null

links_jsonl "$N" "$WORK/links.jsonl"

# serve NAME PORT CACHE [store flags...]: a server with its own data directory.
serve() {
  local name=$1 port=$2 cache=$3; shift 3
  printf '[links]\ncreate_per_second = 0\ncache_entries = %s\n' "$cache" > "$WORK/$name.toml"
  SHARDKIT_LOG=warn "$WORK/shardkit" serve --config "$WORK/$name.toml" --data "$WORK/data-$name" \
    --http "127.0.0.1:$port" --resp "127.0.0.1:$((port + 1))" "$@" 2>>"$WORK/$name.log" &
  PIDS+=($!)
  wait_port "$port"
}
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; PIDS=(); }

# 1. Create the links once in each store (the embedded server keeps its data directory).
serve embedded 18100 16
serve postgres 18110 16 --store postgres --servers "$SERVERS"
for name in embedded postgres; do
  port=$([ "$name" = embedded ] && echo 18100 || echo 18110)
  start=$(date +%s.%N)
  "$WORK/shardkit" links import "$WORK/links.jsonl" --batch 10000 --server "http://127.0.0.1:$port" > "$WORK/$name.results" 2>/dev/null
  end=$(date +%s.%N)
  python3 -c "import sys; print(f'bulk create, $name store: $N links in {float(sys.argv[2]) - float(sys.argv[1]):.1f} s = {$N / (float(sys.argv[2]) - float(sys.argv[1])):,.0f} links/s')" "$start" "$end"
  codes_of "$WORK/$name.results" "$WORK/$name.codes"
  random_codes_lua "$WORK/$name.codes" "$WORK/$name.lua"
  # Warm-up: every code in order, once per pass (one thread, so one counter).
  cat > "$WORK/$name-warm.lua" <<LUA
local codes = {}
for line in io.lines("$WORK/$name.codes") do codes[#codes + 1] = "/" .. line end
local i = 0
request = function() i = i % #codes + 1; return wrk.format("GET", codes[i]) end
LUA
done
stop_all

# 2. Redirects: both stores with a cache of every link, then of N/10 links.
run() {
  wrk -t1 -c50 -d"$WARM" -s "$WORK/$1-warm.lua" "http://127.0.0.1:$2" > /dev/null
  wrk -t2 -c50 -d"$D" --latency -s "$WORK/$1.lua" "http://127.0.0.1:$2"
}
caches="$N $((N / 10))"
for cache in $caches; do
  serve embedded 18100 "$cache"
  run embedded 18100 > "$WORK/wrk-$cache-embedded.txt"
  stop_all
  serve postgres 18110 "$cache" --store postgres --servers "$SERVERS"
  run postgres 18110 > "$WORK/wrk-$cache-postgres.txt"
  stop_all
done
python3 - "$N" "$WORK" $caches <<'PY'
import re, sys
n, work, caches = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def figures(path):
    out = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+[a-z]+)", out).group(1)
    non = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, p99, int(non.group(1)) if non else 0
print(f"\nGET /{{code}}, random over {n:,} links, wrk -t2 -c50, after a warm-up over the codes in order\n")
print("| cache entries | embedded req/s | p99 | postgres req/s | p99 | postgres / embedded | errors (e/p) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for cache in caches:
    e, p = figures(f"{work}/wrk-{cache}-embedded.txt"), figures(f"{work}/wrk-{cache}-postgres.txt")
    print(f"| {int(cache):,} | {e[0]:,.0f} | {e[1]} | {p[0]:,.0f} | {p[1]} | {p[0] / e[0]:.2f} | {e[2]}/{p[2]} |")
PY
