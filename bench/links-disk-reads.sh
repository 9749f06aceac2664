#!/usr/bin/env bash
# Redirects that must read the disk: N links loaded once, then for each
# round and each build, the page cache dropped (and the clicks' counters removed, so
# every round starts alike) and wrk -t2 -c50 for D on random codes; with DROPPER=1 the
# page cache is dropped again every 0.2 s during the run, which keeps a 10 M-link store
# as far from memory as 100 M links are (9.4 GB of segments, most of a uniform draw on
# the disk). Prints req/s, p99, server CPU per request (from /proc) and its threads.
# Needs root (/proc/sys/vm/drop_caches). Loopback only; each wrk run is bounded by -d.
#
#   BASE_BIN=/path/to/older/shardkit DROPPER=1 bash bench/links-disk-reads.sh   # N=10000000 D=10s ROUNDS="1 2"
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
D=${D:-10s}
ROUNDS=${ROUNDS:-1 2}
: "${BASE_BIN:?set BASE_BIN to another build of shardkit}"
. bench/common.sh
need wrk "apt-get install -y wrk"
[ -w /proc/sys/vm/drop_caches ] || { echo "needs root: /proc/sys/vm/drop_caches" >&2; exit 1; }
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --bin shardkit
cp "$TARGET/release/shardkit" "$WORK/shardkit-new"
cp "$BASE_BIN" "$WORK/shardkit-base"
port=$(free_port)
printf '[links]\ncreate_per_second = 0\n' > "$WORK/shardkit.toml"
start() {
  SHARDKIT_LOG=warn "$1" serve --config "$WORK/shardkit.toml" --data "$WORK/data" --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>>"$WORK/server.log" &
  server=$!; PIDS+=($server); wait_port $port
}
start "$WORK/shardkit-new"
links_jsonl "$N" "$WORK/links.jsonl"
"$WORK/shardkit-new" links import "$WORK/links.jsonl" --batch 10000 --server http://127.0.0.1:$port > "$WORK/results.jsonl" 2>/dev/null
codes_of "$WORK/results.jsonl" "$WORK/codes.txt"
random_codes_lua "$WORK/codes.txt" "$WORK/uniform.lua"
kill $server; wait $server 2>/dev/null || true
for round in $ROUNDS; do
  for build in base new; do
    rm -rf "$WORK/data/counters"
    sync; echo 3 > /proc/sys/vm/drop_caches
    start "$WORK/shardkit-$build"
    c0=$(cpu_total $server)
    if [ -n "${DROPPER:-}" ]; then
      ( end=$((SECONDS + ${D%s})); while [ $SECONDS -lt $end ]; do echo 1 > /proc/sys/vm/drop_caches; sleep 0.2; done ) & dropper=$!
    fi
    out=$(wrk -t2 -c50 -d"$D" --latency -s "$WORK/uniform.lua" http://127.0.0.1:$port)
    if [ -n "${DROPPER:-}" ]; then wait $dropper; fi
    c1=$(cpu_total $server)
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    printf 'round %s %-4s %10s req/s  p99 %8s  %6s us CPU/req  %3s threads\n' "$round" "$build" "$rps" "$p99" \
      "$(python3 -c "print(round(($c1 - $c0) * 10000 / $reqs, 1))")" "$(ls /proc/$server/task | wc -l)"
    kill $server; wait $server 2>/dev/null || true
  done
done
