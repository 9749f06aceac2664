#!/usr/bin/env bash
# Creating short links one per request, under load, beside the bulk path in the same run:
#   1. bulk creation through the API (`shardkit links import`, batches of 10,000, each
#      batch one fsynced transaction) of N links (default 200,000): links/s;
#   2. wrk with C connections (default 50) sending `POST /api/links`, one new URL per
#      request, for D (default 10s): creates/s and latency. Concurrent creates share one
#      durable commit (the link writer's group commit); /metrics tells how many commits
#      the run took, so the writes per commit are printed too.
# The server is the release build on its defaults (fsync on every commit) with the
# per-client creation limit off. Loopback only; wrk is bounded by -d.
#
#   bash bench/links-create.sh              # N=200000 C=50 D=10s
#   STORE=redb-json bash bench/links-create.sh   # the previous store format, to compare
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
C=${C:-50}
D=${D:-10s}
STORE=${STORE:-redb}
. bench/common.sh
need wrk "apt-get install -y wrk"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --bin shardkit
# A copy, so a concurrent build into a shared target directory cannot swap it.
cp "$TARGET/release/shardkit" "$WORK/"

printf '[links]\ncreate_per_second = 0\nstore = "%s"\n' "$STORE" > "$WORK/shardkit.toml"
SHARDKIT_LOG=warn "$WORK/shardkit" serve --config "$WORK/shardkit.toml" --data "$WORK/data" --http 127.0.0.1:18096 --resp 127.0.0.1:18097 2>/dev/null & PIDS+=($!)
SERVER=$!
wait_port 18096

links_jsonl "$N" "$WORK/links.jsonl"
start=$(date +%s.%N)
"$WORK/shardkit" links import "$WORK/links.jsonl" --batch 10000 --server http://127.0.0.1:18096 > /dev/null 2>&1
end=$(date +%s.%N)

cat > "$WORK/create.lua" <<'LUA'
-- One new URL per request: the thread's number and a counter keep them distinct.
-- (thread_id is a global: thread:set writes the thread's globals.)
local counter = 0
local next_thread = 0
setup = function(thread) thread:set("thread_id", next_thread); next_thread = next_thread + 1 end
request = function()
  counter = counter + 1
  local body = string.format('{"url":"https://example.org/t%d/n%d"}', thread_id, counter)
  return wrk.format("POST", "/api/links", { ["Content-Type"] = "application/json" }, body)
end
LUA
metric() { curl -s http://127.0.0.1:18096/metrics | awk -v m="$1" '$1 == m {print $2}'; }
commits_before=$(metric shardkit_link_commits_total)
writes_before=$(metric shardkit_link_writes_total)
cpu_before=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
out=$(wrk -t2 -c"$C" -d"$D" --latency -s "$WORK/create.lua" http://127.0.0.1:18096)
cpu_after=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
commits=$(( $(metric shardkit_link_commits_total) - commits_before ))
writes=$(( $(metric shardkit_link_writes_total) - writes_before ))
python3 - "$N" "$start" "$end" "$out" "$commits" "$writes" "$C" "$(( cpu_after - cpu_before ))" "$(getconf CLK_TCK)" <<'PY'
import re, sys
n, start, end, out, commits, writes, conns, ticks, hz = sys.argv[1:]
n, secs, commits, writes = int(n), float(end) - float(start), int(commits), int(writes)
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
total = int(re.search(r"(\d+) requests in", out).group(1))
lat = {p: re.search(rf"\b{p}%\s+([\d.]+\w+)", out).group(1) for p in ("50", "99")}
non = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
errors = int(non.group(1)) if non else 0
cpu_us = int(ticks) / int(hz) * 1e6 / max(total, 1)
print(f"bulk create through the API (fsynced batches of 10,000): {n} links in {secs:.1f} s = {n / secs:,.0f} links/s")
print(f"one link per POST /api/links, {conns} connections:      {rps:,.0f} creates/s  p50 {lat['50']}  p99 {lat['99']}  non-2xx {errors}")
print(f"  ratio to the bulk rate: {rps / (n / secs):.2f}")
print(f"  durable commits: {commits} for {writes} writes = {writes / max(commits, 1):.1f} writes per commit")
print(f"  server CPU per create: {cpu_us:.0f} us")
PY
