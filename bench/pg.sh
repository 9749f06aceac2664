#!/usr/bin/env bash
# PostgreSQL shards and ticket servers, side by side in one run on the machine's PostgreSQL and MariaDB
# (fresh databases, dropped after): next_id() inserts/s on one shard and across 64
# shards vs a plain bigserial key (and Instagram's published function), and MariaDB
# ticket numbers/s with segments vs one REPLACE per number. Prints markdown tables.
# Usage: bench/pg.sh [SECONDS] [CONNECTIONS]   (defaults 5 and 4)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services-up
nice -n 5 cargo run --release -q -p shardkit-pg --example pg-bench -- "${1:-5}" "${2:-4}"
