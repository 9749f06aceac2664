#!/usr/bin/env bash
# Short links under load, side by side with the reference in the same run:
#   1. bulk creation through the API (`shardkit links import`, batches of 10,000, each
#      batch one fsynced transaction) of N links (default 1,000,000): links/s;
#   2. wrk on GET /{code} spread over all N codes (a Lua script picks one at random per
#      request; redirects are not followed) against a bare axum/hyper server answering
#      a constant 302 (examples/bare_http.rs): requests/s, ratio and p99 latency.
# Loopback only; each wrk run is bounded by -d.
#
#   bash bench/links-redirect.sh            # N=1000000 D=10s, 2 threads, 50 connections
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
D=${D:-10s}
. bench/common.sh
need wrk "apt-get install -y wrk"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --bin shardkit --example bare_http
# Copies, so a concurrent build into a shared target directory cannot swap them.
cp "$TARGET/release/shardkit" "$TARGET/release/examples/bare_http" "$WORK/"

printf '[links]\ncreate_per_second = 0\ncache_entries = 2000000\n' > "$WORK/shardkit.toml"
"$WORK/bare_http" 127.0.0.1:18093 & PIDS+=($!)
SHARDKIT_LOG=warn "$WORK/shardkit" serve --config "$WORK/shardkit.toml" --data "$WORK/data" --http 127.0.0.1:18094 --resp 127.0.0.1:18095 2>/dev/null & PIDS+=($!)
wait_port 18093; wait_port 18094

links_jsonl "$N" "$WORK/links.jsonl"
start=$(date +%s.%N)
"$WORK/shardkit" links import "$WORK/links.jsonl" --batch 10000 --server http://127.0.0.1:18094 > "$WORK/results.jsonl" 2>/dev/null
end=$(date +%s.%N)
codes_of "$WORK/results.jsonl" "$WORK/codes.txt"
random_codes_lua "$WORK/codes.txt" "$WORK/codes.lua"
run() { wrk -t2 -c50 -d"$D" --latency -s "$WORK/codes.lua" "$1"; }
bare=$(run "http://127.0.0.1:18093")
links=$(run "http://127.0.0.1:18094")
redirects=$(curl -s http://127.0.0.1:18094/metrics | awk '/^shardkit_link_redirects_total/ {print $2}')
python3 - "$N" "$start" "$end" "$bare" "$links" "$redirects" <<'PY'
import re, sys
n, start, end, bare, links, redirects = sys.argv[1:]
n, secs = int(n), float(end) - float(start)
def figures(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+\w+)", out).group(1)
    non = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, p99, int(non.group(1)) if non else 0
b, l = figures(bare), figures(links)
print(f"bulk create through the API (fsynced batches of 10,000): {n} links in {secs:.1f} s = {n / secs:,.0f} links/s")
print(f"{'GET /{code} over %d links' % n:<44} {'requests/s':>12} {'p99':>10} {'ratio':>7} {'errors':>7}")
print(f"{'bare axum/hyper constant 302':<44} {b[0]:>12.0f} {b[1]:>10} {1.0:>7.2f} {b[2]:>7}")
print(f"{'shardkit redirect (cache, clicks counted)':<44} {l[0]:>12.0f} {l[1]:>10} {l[0] / b[0]:>7.2f} {l[2]:>7}")
print(f"redirects counted by shardkit (/metrics shardkit_link_redirects_total): {redirects}")
PY
