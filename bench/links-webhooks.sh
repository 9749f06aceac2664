#!/usr/bin/env bash
# Whether webhooks slow redirects: wrk on GET /{code} (N links, random codes) against
# three servers of this build, alternated for R rounds in one run: one without
# webhooks, one whose receiver is down (a closed port: every POST fails and is sent
# again with backoff, the queue fills and drops), one whose receiver is slow (answers
# each POST after 2 s). Every click is a `link.clicked` event for the two with a
# receiver. Reports requests/s, p99, server CPU per redirect from /proc, the events
# dropped, and each ratio to the server without webhooks.
#
#   bash bench/links-webhooks.sh               # N=10000, R=2 rounds, D=5s each
#   NEW=target/debug/shardkit bash bench/links-webhooks.sh   # skip the release build
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-2}
N=${N:-10000}
D=${D:-5s}
. bench/common.sh
need wrk "apt-get install -y wrk"
if [ -z "${NEW:-}" ]; then
  cargo build --release -q -p shardkit --bin shardkit
  NEW="${CARGO_TARGET_DIR:-target}/release/shardkit"
fi
# The slow receiver: answers every POST 200 after 2 s.
python3 - 18690 <<'PY' & PIDS+=($!)
import http.server, sys, time
class Slow(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(2)
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
PY
wait_port 18690
links_jsonl "$N" "$WORK/links.jsonl"
hook() { printf '\n[[links.webhooks]]\nurl = "%s"\nsecret = "bench-secret-0123456789"\nevents = ["link.clicked"]\n' "$1"; }
printf '[links]\ncreate_per_second = 0\n' > "$WORK/none.toml"
{ cat "$WORK/none.toml"; hook "http://127.0.0.1:18699/down"; } > "$WORK/down.toml"
{ cat "$WORK/none.toml"; hook "http://127.0.0.1:18690/slow"; } > "$WORK/slow.toml"
UA='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'
declare -A PORT PID
port=18600
for which in none down slow; do
  port=$((port + 2)); PORT[$which]=$port
  SHARDKIT_LOG=warn "$NEW" serve --config "$WORK/$which.toml" --data "$WORK/data-$which" \
    --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & PID[$which]=$!; PIDS+=($!)
  wait_port $port
  import_codes "$NEW" "http://127.0.0.1:$port" "$WORK/links.jsonl" "$WORK/$which.codes"
  random_codes_lua "$WORK/$which.codes" "$WORK/$which.lua"
  wrk -t2 -c50 -d2s -s "$WORK/$which.lua" "http://127.0.0.1:$port" > /dev/null
done
for round in $(seq "$R"); do
  for which in none down slow; do
    pid=${PID[$which]}
    before=$(awk '{print $14 + $15}' /proc/$pid/stat)
    out=$(wrk -t2 -c50 -d"$D" --latency -H "User-Agent: $UA" -s "$WORK/$which.lua" "http://127.0.0.1:${PORT[$which]}")
    after=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    cpu_us=$(awk -v t="$((after - before))" -v n="$reqs" 'BEGIN {printf "%.2f", t * 10000 / n}')
    dropped=$(curl -s "http://127.0.0.1:${PORT[$which]}/metrics" | awk '/^shardkit_link_webhook_events_dropped_total/ {print $2}')
    echo "round $round $which: $rps req/s  p99 $p99  server CPU $cpu_us µs a redirect  events dropped so far: ${dropped:-none}"
    echo "$which $rps $cpu_us" >> "$WORK/rates"
  done
done
awk '{s[$1] += $2; c[$1] += $3; n[$1]++} END {
  for (w in s) { r[w] = s[w] / n[w]; u[w] = c[w] / n[w] }
  printf "mean req/s: none %.0f, receiver down %.0f (%.3fx), receiver slow %.0f (%.3fx)\n", r["none"], r["down"], r["down"] / r["none"], r["slow"], r["slow"] / r["none"]
  printf "server CPU a redirect: none %.2f µs, down %.2f µs (%.3fx), slow %.2f µs (%.3fx)\n", u["none"], u["down"], u["down"] / u["none"], u["slow"], u["slow"] / u["none"]
}' "$WORK/rates"
