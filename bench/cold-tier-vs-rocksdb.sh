#!/usr/bin/env bash
# The counters' cold tier against its peer, RocksDB, on the same rows, one
# after the other in one run:
#
#   bash bench/cold-tier-vs-rocksdb.sh                     # 10,000,000 rows
#   bash bench/cold-tier-vs-rocksdb.sh 100000000           # 100 M
#   MAX_MEMORY_MIB=2048 bash bench/cold-tier-vs-rocksdb.sh 1000000000   # the issue's run
#
# shardkit: `examples/cold-tier.rs` fills the rows (all in RAM then evicted, or, with
# MAX_MEMORY_MIB, under that cap with the engine's own eviction thread) and a second
# process measures. RocksDB: the same rows (`cold-tier rows`) into `bench/rocksdb-peer`
# (8-byte big-endian id -> two u16, zstd, default block cache, then a full compaction),
# and a second process measures. Needs Debian's librocksdb-dev (and libclang-dev for
# the bindings): `apt-get install -y librocksdb-dev libclang-dev`; PEER=none skips it.
# DROP_CACHES=1 (root) empties the OS page cache before each side's cold reads, so they
# come from the disk and not from the pages the fill just wrote.
# Scratch data goes to ${TMPDIR:-/tmp} and is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
cap=${MAX_MEMORY_MIB:-}
peer=${PEER:-rocksdb}
cargo build -q --release -p shardkit-counters --example cold-tier
bin=target/release/examples/cold-tier
if [ "$peer" = rocksdb ]; then
  if [ ! -e /usr/lib/x86_64-linux-gnu/librocksdb.so ]; then
    echo "librocksdb-dev is not installed: apt-get install -y librocksdb-dev libclang-dev (or PEER=none)" >&2
    exit 2
  fi
  ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build -q --release \
    --manifest-path bench/rocksdb-peer/Cargo.toml --target-dir target/rocksdb-peer
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/cold-vs-rocksdb.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "rows $rows, max_memory ${cap:-none} MiB, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "== shardkit"
"$bin" fill "$dir/shardkit" "$rows" $cap
du -sb "$dir/shardkit"/cold-* | awk '{s+=$1} END {printf "cold files on disk: %d bytes\n", s}'
du -sb "$dir/shardkit" | awk -v r="$rows" '{printf "whole directory: %d bytes, %.2f B/row\n", $1, $1/r}'
"$bin" measure "$dir/shardkit" "$rows" $cap
rm -rf "$dir/shardkit"
if [ "$peer" = rocksdb ]; then
  echo "== rocksdb $(dpkg-query -W -f='${Version}' librocksdb-dev 2>/dev/null), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin" rows "$rows" | target/rocksdb-peer/release/rocksdb-peer load "$dir/rocksdb" "$rows"
  du -sb "$dir/rocksdb" | awk -v r="$rows" '{printf "whole directory: %d bytes, %.2f B/row\n", $1, $1/r}'
  if [ "${DROP_CACHES:-}" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; echo "page cache emptied"; fi
  target/rocksdb-peer/release/rocksdb-peer measure "$dir/rocksdb" "$rows"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
