#!/usr/bin/env bash
# The cold tier's block format, in process: bytes per row on disk per codec
# and block size, and the time to decode one block and to get one id, on realistic rows.
#
#   bash bench/cold-blocks.sh                  # 1,000,000 and 10,000,000 rows
#   bash bench/cold-blocks.sh 2000000          # other row counts
#
# Rows: Instagram-layout ids (41-bit ms, 13-bit random shard, 10-bit sequence) made at
# 2,000 ids per second of simulated time, sorted as a partition would be, two 16-bit
# columns of Pareto-skewed values (shapes 1.0 and 1.5, 1 to 65,534). See
# crates/counters/examples/cold-blocks.rs. Takes about a minute; nothing is written to disk.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run -q --release -p shardkit-counters --example cold-blocks -- "$@"
