#!/usr/bin/env bash
# What click analytics cost the redirect: wrk on GET /{code} (N links, default 10,000; a random code
# per request, a desktop browser's User-Agent and a Referer on every request) against
# this build and a reference build without analytics (BASE, e.g. a commit before analytics),
# alternated rounds in one run: requests/s, p99, server CPU, and the ratio. Afterwards
# it checks that this build's stats counted the clicks (none dropped).
#
#   BASE=/path/to/old/shardkit bash bench/links-analytics.sh     # R=2 rounds, D=5s each
#   NEW=target/debug/shardkit BASE=… bash bench/links-analytics.sh   # skip the release build
#   N=1000000 D=10s BASE=… bash bench/links-analytics.sh   # many links: most clicks a link's first of the day
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-2}
N=${N:-10000}
D=${D:-5s}
. bench/common.sh
need wrk "apt-get install -y wrk"
[ -n "${BASE:-}" ] || { echo "set BASE to a shardkit binary without analytics" >&2; exit 1; }
if [ -z "${NEW:-}" ]; then
  cargo build --release -q -p shardkit --bin shardkit
  NEW="${CARGO_TARGET_DIR:-target}/release/shardkit"
fi
cp "$BASE" "$WORK/base"; cp "$NEW" "$WORK/new"
links_jsonl "$N" "$WORK/links.jsonl"
printf '[links]\ncreate_per_second = 0\n' > "$WORK/shardkit.toml"
UA='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'
port=18400
for round in $(seq "$R"); do
  for which in base new; do
    port=$((port + 2))
    SHARDKIT_LOG=warn "$WORK/$which" serve --config "$WORK/shardkit.toml" --data "$WORK/data-$which-$round" \
      --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & pid=$!; PIDS+=($pid)
    wait_port $port
    "$WORK/$which" links import "$WORK/links.jsonl" --batch 10000 --server http://127.0.0.1:$port > "$WORK/results.jsonl" 2>/dev/null
    codes_of "$WORK/results.jsonl" "$WORK/codes.txt"
    random_codes_lua "$WORK/codes.txt" "$WORK/codes.lua"
    before=$(awk '{print $14 + $15}' /proc/$pid/stat)
    out=$(wrk -t2 -c50 -d"$D" --latency -H "User-Agent: $UA" -H "Referer: https://news.example.com/a" -s "$WORK/codes.lua" http://127.0.0.1:$port)
    after=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    cpu_us=$(awk -v t="$((after - before))" -v n="$reqs" 'BEGIN {printf "%.1f", t * 10000 / n}')
    echo "round $round $which: $rps req/s  p99 $p99  server CPU $(( (after - before) * 10 )) ms, $cpu_us µs a redirect"
    echo "$which $rps $cpu_us" >> "$WORK/rates"
    if [ "$which" = new ]; then
      sleep 0.5
      dropped=$(curl -s http://127.0.0.1:$port/metrics | awk '/^shardkit_link_analytics_dropped_total/ {print $2}')
      counted=$(curl -s "http://127.0.0.1:$port/api/stats/top?by=referrer&limit=1")
      echo "  analytics dropped: ${dropped:-0}; top referrer: $counted"
    fi
    kill $pid; wait $pid 2>/dev/null || true
  done
done
awk '{s[$1] += $2; c[$1] += $3; n[$1]++} END {
  printf "mean: base %.0f req/s, new %.0f req/s, new/base %.3f\n", s["base"]/n["base"], s["new"]/n["new"], (s["new"]/n["new"])/(s["base"]/n["base"])
  printf "server CPU a redirect: base %.1f µs, new %.1f µs, new/base %.3f\n", c["base"]/n["base"], c["new"]/n["new"], (c["new"]/n["new"])/(c["base"]/n["base"])
}' "$WORK/rates"
