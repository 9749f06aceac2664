#!/usr/bin/env bash
# Memory per row: shardkit-counters vs Redis 7, same rows, same run.
#
# Rows: ROWS (default 10,000,000) rows of two 16-bit counters, for Instagram-layout ids
# (2,000 ids per simulated second) and for uniformly random u64 ids.
# shardkit: growth of the process's resident memory (/proc/self/statm) while filling.
# Redis:    INFO memory used_memory before/after `redis-cli --pipe` of one
#           `HSET <id> c <v> r <v>` per row (one hash per id, two fields), then FLUSHALL.
# BIG_ROWS (e.g. 100000000) adds a shardkit-only run at that size (Redis is compared at ROWS).
# Needs Redis at $REDIS_HOST:$REDIS_PORT (default 127.0.0.1:6379) that keeps nothing on disk:
# the script FLUSHALLs it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-10000000}
BIG_ROWS=${BIG_ROWS:-}
VIA=${VIA:-engine}
REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
rc() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@"; }
used() { rc INFO memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }

nice -n 5 cargo build --release -q -p shardkit-counters --example counters-mem
# Honour CARGO_TARGET_DIR: with a shared or per-worktree target dir, target/ may hold a stale binary.
BIN=${CARGO_TARGET_DIR:-target}/release/examples/counters-mem

echo "redis: $(rc INFO server | tr -d '\r' | grep '^redis_version')"
printf '%-10s %12s %14s %14s %8s\n' ids rows shardkit_B/row redis_B/row ratio
for ids in instagram random; do
  sk=$($BIN shardkit --ids "$ids" --rows "$ROWS" --via "$VIA")
  echo "$sk" >&2
  skb=$(echo "$sk" | sed -E 's/.*"rss_bytes_per_row":([0-9.]+).*/\1/')
  rc FLUSHALL >/dev/null
  before=$(used)
  $BIN redis-resp --ids "$ids" --rows "$ROWS" | rc --pipe >/dev/null
  after=$(used)
  keys=$(rc DBSIZE | tr -d '\r')
  rc FLUSHALL >/dev/null
  rb=$(awk -v a="$after" -v b="$before" -v n="$ROWS" 'BEGIN{printf "%.2f", (a-b)/n}')
  echo "{\"system\":\"redis\",\"ids\":\"$ids\",\"rows\":$ROWS,\"keys\":$keys,\"used_memory_growth\":$((after-before)),\"bytes_per_row\":$rb}" >&2
  ratio=$(awk -v s="$skb" -v r="$rb" 'BEGIN{printf "%.1fx", r/s}')
  printf '%-10s %12s %14s %14s %8s\n' "$ids" "$ROWS" "$skb" "$rb" "$ratio"
done
if [ -n "$BIG_ROWS" ]; then
  for ids in instagram random; do
    sk=$($BIN shardkit --ids "$ids" --rows "$BIG_ROWS" --via "$VIA")
    echo "$sk" >&2
    skb=$(echo "$sk" | sed -E 's/.*"rss_bytes_per_row":([0-9.]+).*/\1/')
    printf '%-10s %12s %14s %14s %8s\n' "$ids" "$BIG_ROWS" "$skb" "-" "-"
  done
fi
