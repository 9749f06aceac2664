#!/usr/bin/env bash
# The counters' cold tier end to end, in process, shardkit alone:
#
#   bash bench/cold-tier.sh                                    # 10,000,000 rows
#   bash bench/cold-tier.sh 100000000                          # 100 M (~4 GB of scratch disk for the log)
#   MAX_MEMORY_MIB=2048 bash bench/cold-tier.sh 1000000000     # the issue's billion rows under a 2 GiB cap
#
# What runs and what it prints: bench/cold-tier-vs-rocksdb.sh (this is it with PEER=none;
# PEER=rocksdb adds the RocksDB peer on the same rows).
set -euo pipefail
PEER=${PEER:-none} exec bash "$(dirname "$0")/cold-tier-vs-rocksdb.sh" "$@"
