#!/usr/bin/env bash
# A/B speed of random `+1`s on a `Table`: several `counters-mem` binaries (e.g. the
# commit before a change and after it) alternated in one run, so they share the
# machine's conditions. On a shared or busy machine only such same-run ratios mean
# anything; figures from another day or another run do not compare.
#
# Usage: ROWS=100000000 ROUNDS=2 [ARGS="--rounds 10 --probe"] bash bench/counters-speed-ab.sh OLD_BIN NEW_BIN [MORE_BINS...]
# Each run fills ROWS random-id rows, then times 20 M `Table::incr` calls and 20 M
# increments through `incr_many` (batches of 1,000); one JSON line per run, prefixed
# with the binary's name and the round. To make OLD_BIN: check out the old commit,
# `cargo build --release -p shardkit-counters --example counters-mem`, and copy
# `$CARGO_TARGET_DIR/release/examples/counters-mem` aside. ARGS go to every run (a binary
# older than an option ignores it): `--rounds 10 --probe` times the batches in 10 slices,
# each followed by a slice of the machine's own random-access rate (see counters-mem).
set -euo pipefail
ROWS=${ROWS:-100000000}
ROUNDS=${ROUNDS:-2}
[ $# -ge 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN [MORE_BINS...]" >&2; exit 2; }
for r in $(seq 1 "$ROUNDS"); do
  for b in "$@"; do
    # shellcheck disable=SC2086 # ARGS is a list of options
    echo "$(basename "$b") round $r $("$b" speed --rows "$ROWS" ${ARGS:-} 2>/dev/null)"
  done
done
