#!/usr/bin/env bash
# String-keyed counter rows in the cold tier, in process, shardkit alone:
# RAM and disk per row once cold, cold and warm reads, writes that bring rows back.
#
#   bash bench/cold-names.sh               # 10,000,000 rows
#   bash bench/cold-names.sh 1000000       # quicker
#   DROP_CACHES=1 bash bench/cold-names.sh # root: cold reads from the disk
#
# What runs and what it prints: crates/counters/examples/cold-names.rs. Scratch space:
# about 1 GB of log per 10 M rows, in a temporary directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
nice -n 5 cargo build -q --release -p shardkit-counters --example cold-names
T=${CARGO_TARGET_DIR:-target}
dir=$(mktemp -d "${TMPDIR:-/tmp}/cold-names.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$T/release/examples/cold-names" "$dir/data" "${1:-10000000}"
