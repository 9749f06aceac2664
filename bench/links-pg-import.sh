#!/usr/bin/env bash
# The PostgreSQL link store's bulk import as its shards grow: two fresh
# databases on the machine's PostgreSQL as two servers (`shardkit pg init`, 64 logical
# shards), one `shardkit serve` on them, then CHUNKS imports of 250,000 links each
# (`shardkit links import --batch 10000`, what `links-scale.sh` does in one go); for
# each chunk the links/s and the shardkit server's CPU seconds (from /proc), so a
# slowing import shows where it slows and whose CPU it is. With BASE_BIN, the same
# for that build first (an A/B of two builds in one run; its own fresh databases).
# Ends with one redirect of the last chunk's first code (302 and its target). Loopback
# only; bounded by CHUNKS.
#
#   bash bench/links-pg-import.sh              # CHUNKS=8: 2,000,000 links
#   CHUNKS=2 BASE_BIN=/path/to/older/shardkit bash bench/links-pg-import.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CHUNKS=${CHUNKS:-8}
. bench/common.sh
need psql "apt-get install -y postgresql-client"
bash scripts/services-up
cargo build --release -q -p shardkit --features sql --bin shardkit
TARGET=${CARGO_TARGET_DIR:-target}
cp "$TARGET/release/shardkit" "$WORK/shardkit-new"
PG=${SHARDKIT_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
DB_A="sk_bench_import_a_$$"
DB_B="sk_bench_import_b_$$"
drop_dbs() {
  psql -q "$PG" -c "DROP DATABASE IF EXISTS $DB_A WITH (FORCE)" -c "DROP DATABASE IF EXISTS $DB_B WITH (FORCE)" >/dev/null 2>&1 || true
}
bench_cleanup_extra() { drop_dbs; }

links_jsonl $((CHUNKS * 250000)) "$WORK/links.jsonl"
split -l 250000 -d -a 3 "$WORK/links.jsonl" "$WORK/chunk."
rm "$WORK/links.jsonl"

# run NAME BIN: the import of every chunk through a fresh cluster served by BIN.
run() {
  local name=$1 bin=$2 port server total=0
  drop_dbs
  psql -q "$PG" -c "CREATE DATABASE $DB_A" -c "CREATE DATABASE $DB_B" >/dev/null
  "$bin" pg init --servers "${PG%/*}/$DB_A,${PG%/*}/$DB_B" --logical-shards 64 >/dev/null
  printf '[links]\ncreate_per_second = 0\nstore = "postgres"\nservers = ["%s", "%s"]\n' \
    "${PG%/*}/$DB_A" "${PG%/*}/$DB_B" > "$WORK/shardkit.toml"
  port=$(free_port)
  rm -rf "$WORK/data"
  SHARDKIT_LOG=warn "$bin" serve --config "$WORK/shardkit.toml" --data "$WORK/data" \
    --http 127.0.0.1:$port --resp 127.0.0.1:0 2>/dev/null & PIDS+=($!)
  server=$!
  wait_port "$port"
  for chunk in "$WORK"/chunk.*; do
    local t0 t1 c0 c1 created
    t0=$(date +%s.%N); c0=$(cpu_total "$server")
    "$bin" links import "$chunk" --batch 10000 --server "http://127.0.0.1:$port" > "$WORK/results.jsonl" 2>/dev/null
    t1=$(date +%s.%N); c1=$(cpu_total "$server")
    total=$((total + 250000))
    created=$(grep -c '^{"code"' "$WORK/results.jsonl" || true)
    python3 -c 'import os, sys
name, total, t0, t1, created, c0, c1 = sys.argv[1:]
t = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / os.sysconf("SC_CLK_TCK")
print(f"{name:>5} {int(total):>11,} {250000 / t:>10,.0f} {int(created):>9,} {cpu:>10.1f} {cpu / 250000 * 1e6:>10.1f}")' \
      "$name" "$total" "$t0" "$t1" "$created" "$c0" "$c1"
  done
  local code
  code=$(sed -n '1s/^{"code":"\([^"]*\)".*/\1/p' "$WORK/results.jsonl")
  curl -s -o /dev/null -w "      redirect /$code: %{http_code} %{redirect_url}\n" "http://127.0.0.1:$port/$code"
  kill "$server"; wait "$server" 2>/dev/null || true
}

printf '%5s %11s %10s %9s %10s %10s\n' build "links after" "links/s" created "server s" "µs/link"
if [ -n "${BASE_BIN:-}" ]; then
  cp "$BASE_BIN" "$WORK/shardkit-base"
  run base "$WORK/shardkit-base"
fi
run new "$WORK/shardkit-new"
