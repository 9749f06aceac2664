#!/usr/bin/env bash
# In-process speed of shardkit-counters (criterion, one thread):
#  - incr/table_random_existing_N: random increments of existing rows in a table of
#    N random-id rows (COUNTERS_BENCH_ROWS, default here 100,000,000: needs ~2 GB RAM),
#    one `Table::incr` call per increment, and `..._incr_many_1000`: batches of 1,000;
#  - engine/incr_logged_fsync_no_1M: the same through Engine (log appended, fsync no);
#  - engine/mget_100_of_1M, mget_rows_100_of_1M: one call reading 100 random ids.
# Redis side by side: redis-benchmark HINCRBY and a 100-key pipeline of HGET, for scale
# (Redis goes through the network stack; shardkit here does not).
set -euo pipefail
cd "$(dirname "$0")/.."
export COUNTERS_BENCH_ROWS=${COUNTERS_BENCH_ROWS:-100000000}
nice -n 5 cargo bench -p shardkit-counters --bench counters -- --warm-up-time 1 --measurement-time 5 2>&1 \
  | grep -E '^(incr|engine)/|time:|thrpt:'
if redis-cli -p "${REDIS_PORT:-6379}" PING >/dev/null 2>&1; then
  echo "redis-benchmark (1 client, no pipeline / pipeline 100):"
  redis-benchmark -p "${REDIS_PORT:-6379}" -q -c 1 -n 200000 -r 1000000 HINCRBY __rand_int__ c 1
  redis-benchmark -p "${REDIS_PORT:-6379}" -q -c 1 -P 100 -n 2000000 -r 1000000 HGET __rand_int__ c
  redis-cli -p "${REDIS_PORT:-6379}" FLUSHALL >/dev/null
fi
