#!/usr/bin/env bash
# A/B of the engine's increments to rows held in RAM (`Engine::incr_run`, runs of 1,024
# random rows of ROWS Instagram-layout ids, log on, fsync no): several `cold-tier`
# binaries (e.g. the commit before a change and after it) alternated in one run, so they
# share the machine's conditions. The figure is what "increments to the newest 1%" of
# `cold-tier measure` meets at a hundred times ROWS, without its fill.
#
# Usage: ROWS=10000000 ROUNDS=3 bash bench/cold-tier-hot-ab.sh OLD_BIN NEW_BIN [MORE_BINS...]
# To make a binary: check out the commit, `cargo build --release -p shardkit-counters
# --example cold-tier`, and copy `$CARGO_TARGET_DIR/release/examples/cold-tier` aside.
set -euo pipefail
ROWS=${ROWS:-10000000}
ROUNDS=${ROUNDS:-3}
[ $# -ge 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN [MORE_BINS...]" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for b in "$@"; do
    rm -rf "$dir/run"
    echo "$(basename "$b") round $r: $("$b" hot "$dir/run" "$ROWS" | tail -1)"
  done
done
