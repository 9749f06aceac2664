#!/usr/bin/env bash
# wrk against shardkit's POST /api/ids (count=1 and count=1000) and against a bare
# axum/hyper server answering a constant (examples/bare_http.rs), in the same run.
# Loopback only; each wrk run is bounded by -d.
#
#   bash bench/http-ids.sh             # 10 s per run, 2 threads, 50 connections
set -euo pipefail
cd "$(dirname "$0")/.."
D=${D:-10s}
. bench/common.sh
need wrk "apt-get install -y wrk"
cargo build --release -q -p shardkit --bin shardkit --example bare_http
T=${CARGO_TARGET_DIR:-target}/release
printf 'wrk.method = "POST"\n' > "$WORK/post.lua"

"$T/examples/bare_http" 127.0.0.1:18090 & PIDS+=($!)
SHARDKIT_LOG=warn "$T/shardkit" serve --data "$WORK/data" --http 127.0.0.1:18091 --resp 127.0.0.1:18092 2>/dev/null & PIDS+=($!)
wait_port 18090; wait_port 18091

rps() { wrk -t2 -c50 -d"$D" -s "$WORK/post.lua" "$1" | awk '/Requests\/sec/ {print $2}'; }
bare=$(rps "http://127.0.0.1:18090/api/ids")
one=$(rps "http://127.0.0.1:18091/api/ids?count=1")
batch=$(rps "http://127.0.0.1:18091/api/ids?count=1000")
python3 - "$bare" "$one" "$batch" <<'PY'
import sys
bare, one, batch = map(float, sys.argv[1:])
print(f"{'run':<40} {'requests/s':>12} {'ids/s':>14} {'ratio':>7}")
print(f"{'bare axum/hyper constant':<40} {bare:>12.0f} {'':>14} {1.0:>7.2f}")
print(f"{'shardkit POST /api/ids?count=1':<40} {one:>12.0f} {one:>14.0f} {one / bare:>7.2f}")
print(f"{'shardkit POST /api/ids?count=1000':<40} {batch:>12.0f} {batch * 1000:>14.0f} {batch / bare:>7.2f}")
PY
