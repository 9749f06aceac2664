#!/usr/bin/env bash
# String-keyed counter rows, shardkit against Redis 7, same rows, same run: bytes per row
# of process memory through the server, and the engine's own count.
#
#   bash bench/counters-string-keys.sh              # ROWS=10000000
#   ROWS=1000000 bash bench/counters-string-keys.sh # quicker
#
# Rows: ROWS rows of two 16-bit columns (`c` values 1-1000, `r` 1-100) under 18-byte
# string keys (`/p/` + 15 hex digits), sent as `HSET pv:<key> c <v> r <v>` by
# `redis-cli --pipe` to each server in turn (the same bytes: `counters-mem redis-resp
# --ids string --prefix pv:`, deterministic). shardkit stores row `<key>` of counter
# `pv` (made first with `COUNTER.CREATE pv`, `COUNTER.ADDCOL pv c|r BITS 16 MAX 32`, so
# the rows have exactly those two columns); Redis one hash per key (a listpack).
# Each server is fresh (own port and directory on loopback, started here and killed at
# the end): shardkit with `[counters] fsync = "everysec"` and its default snapshots (every
# 64 MiB of log, so several run during the fill), Redis with `--save "" --appendonly no`.
# Figure: growth of the process's resident set (VmRSS of /proc/PID/status) from before
# the fill to after it, over ROWS; Redis's `used_memory` growth beside it, and shardkit's
# engine count (`INFO memory` `counter_bytes_per_row`: index and arena chunks).
# Then `counters-mem shardkit --ids string --via engine`: the engine alone in a process
# (log on, fsync no, no snapshots), its RSS growth and its own count.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-10000000}
. bench/common.sh
need redis-server "apt-get install -y redis-server"
need redis-cli "apt-get install -y redis-tools"
nice -n 5 cargo build --release -q -p shardkit
nice -n 5 cargo build --release -q -p shardkit-counters --example counters-mem
T=${CARGO_TARGET_DIR:-target}
BIN=$T/release/shardkit
MEM=$T/release/examples/counters-mem

rss_kb() { awk '$1=="VmRSS:"{print $2}' "/proc/$1/status"; }
rows_in() { timeout 1800 "$MEM" redis-resp --ids string --rows "$ROWS" --prefix pv:; }

# shardkit
sk_port=$(free_port)
mkdir -p "$WORK/sk"
printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nfsync = "everysec"\n' "$sk_port" > "$WORK/sk/shardkit.toml"
SHARDKIT_LOG=warn "$BIN" serve --data "$WORK/sk/data" --config "$WORK/sk/shardkit.toml" > /dev/null 2> "$WORK/sk/log" &
SK=$!; PIDS+=("$SK")
wait_port "$sk_port"
sk() { redis-cli -p "$sk_port" "$@"; }
sk COUNTER.CREATE pv > /dev/null
sk COUNTER.ADDCOL pv c BITS 16 MAX 32 > /dev/null
sk COUNTER.ADDCOL pv r BITS 16 MAX 32 > /dev/null
sleep 1
sk_before=$(rss_kb "$SK")
t0=$(date +%s.%N)
rows_in | timeout 1800 redis-cli -p "$sk_port" --pipe > "$WORK/sk/pipe.out"
t1=$(date +%s.%N)
sk_after=$(rss_kb "$SK")
sk_info=$(sk INFO memory | tr -d '\r')
sk_rows=$(echo "$sk_info" | awk -F: '$1=="counter_rows"{print $2}')
sk_engine=$(echo "$sk_info" | awk -F: '$1=="counter_bytes_per_row"{print $2}')
tail -1 "$WORK/sk/pipe.out" >&2
kill "$SK"; wait "$SK" 2>/dev/null || true

# Redis 7, fresh
r_port=$(free_port)
mkdir -p "$WORK/redis"
redis-server --bind 127.0.0.1 --port "$r_port" --save "" --appendonly no --dir "$WORK/redis" \
  --daemonize no > "$WORK/redis/log" 2>&1 &
R=$!; PIDS+=("$R")
wait_port "$r_port"
rc() { redis-cli -p "$r_port" "$@"; }
used() { rc INFO memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }
echo "redis: $(rc INFO server | tr -d '\r' | grep '^redis_version')" >&2
sleep 1
r_before=$(rss_kb "$R"); r_used_before=$(used)
t2=$(date +%s.%N)
rows_in | timeout 1800 redis-cli -p "$r_port" --pipe > "$WORK/redis/pipe.out"
t3=$(date +%s.%N)
r_after=$(rss_kb "$R"); r_used_after=$(used)
r_keys=$(rc DBSIZE | tr -d '\r')
tail -1 "$WORK/redis/pipe.out" >&2
kill "$R"; wait "$R" 2>/dev/null || true

# The engine alone, in process.
eng=$("$MEM" shardkit --ids string --rows "$ROWS" --via engine)
echo "$eng" >&2
eng_rss=$(echo "$eng" | sed -E 's/.*"rss_bytes_per_row":([0-9.]+).*/\1/')
eng_own=$(echo "$eng" | sed -E 's/.*"engine_bytes_per_row":([0-9.]+).*/\1/')

awk -v rows="$ROWS" -v skb="$sk_before" -v ska="$sk_after" -v ske="$sk_engine" -v skr="$sk_rows" \
    -v rb="$r_before" -v ra="$r_after" -v rub="$r_used_before" -v rua="$r_used_after" -v rk="$r_keys" \
    -v skt="$(echo "$t1 - $t0" | bc)" -v rt="$(echo "$t3 - $t2" | bc)" -v er="$eng_rss" -v eo="$eng_own" 'BEGIN {
  sk = (ska - skb) * 1024 / rows; r = (ra - rb) * 1024 / rows; ru = (rua - rub) / rows
  printf "rows %d (shardkit stored %d, redis keys %d); fill %.1f s shardkit, %.1f s redis\n", rows, skr, rk, skt, rt
  printf "%-44s %10s\n", "figure", "B/row"
  printf "%-44s %10.2f\n", "shardkit server RSS growth", sk
  printf "%-44s %10.2f\n", "redis server RSS growth", r
  printf "%-44s %10.2f\n", "redis used_memory growth", ru
  printf "%-44s %10.2f\n", "shardkit engine count (INFO, server)", ske
  printf "%-44s %10.2f\n", "shardkit engine alone: RSS growth", er
  printf "%-44s %10.2f\n", "shardkit engine alone: own count", eo
  printf "ratio shardkit / redis, RSS: %.2fx (target <= 0.5x); vs redis used_memory: %.2fx\n", sk / r, sk / ru
}'
