#!/usr/bin/env bash
# The counters' cold tier (issue 19) end to end, in process, toward the issue's
# 1-billion-row benchmark:
#
#   bash bench/cold-tier.sh                 # 10,000,000 rows
#   bash bench/cold-tier.sh 100000000       # 100 M (~4 GB of scratch disk for the log)
#
# A first process fills the oldest 99% of the rows (Instagram-layout ids at 2,000 ids/s
# of simulated time, two 16-bit skewed columns), reads 100,000 of them in RAM (the
# reference), moves every partition to disk, writes the newest 1% and snapshots; a second
# process opens the directory and measures resident memory, bytes on disk per cold row,
# increments to the newest 1%, cold reads (cold and warm block cache) and mget of 100
# cold ids. See crates/counters/examples/cold-tier.rs. Scratch data goes to
# ${TMPDIR:-/tmp} and is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
cargo build -q --release -p shardkit-counters --example cold-tier
bin=target/release/examples/cold-tier
dir=$(mktemp -d "${TMPDIR:-/tmp}/cold-tier.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "rows $rows, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
"$bin" fill "$dir/data" "$rows"
du -sb "$dir/data"/cold-* | awk '{s+=$1} END {printf "cold files on disk: %d bytes\n", s}'
"$bin" measure "$dir/data" "$rows"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
