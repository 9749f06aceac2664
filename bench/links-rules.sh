#!/usr/bin/env bash
# What redirect rules cost the redirect: one server, N links without rules and N links
# with five rules each (device, language, country, query, network), wrk on GET /{code}
# at a random code of one set, then the other, alternated for R rounds in one run.
# The requests meet none of the five rules, so every redirect of the second set reads
# every fact a rule can ask for (the User-Agent through the analytics' cache, the
# Accept-Language, a GeoIP lookup that finds a country, the query, the address) before
# it falls back to the link's URL: the most rules can cost. Reports requests/s, p99 and
# the server's CPU per redirect from /proc, and the ratio ruled/plain.
#
#   bash bench/links-rules.sh                     # N=10000 links a set, R=3 rounds, D=5s each
#   NEW=target/debug/shardkit bash bench/links-rules.sh   # skip the release build
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-3}
N=${N:-10000}
D=${D:-5s}
. bench/common.sh
need wrk "apt-get install -y wrk"
if [ -z "${NEW:-}" ]; then
  cargo build --release -q -p shardkit --bin shardkit
  NEW="${CARGO_TARGET_DIR:-target}/release/shardkit"
fi
# wrk connects from 127.0.0.1, which the database places in the US (so the lookup
# finds a record, as it would for a real visitor); the rule asks for CN.
python3 bench/country-db.py "$WORK/countries.mmdb" 127.0.0.1=US
printf '[links]\ncreate_per_second = 0\ngeoip_db = "%s"\n' "$WORK/countries.mmdb" > "$WORK/shardkit.toml"
RULES='[{"device":"ios","url":"https://example.com/ios"},{"language":"de","url":"https://example.com/de"},{"country":"CN","url":"https://example.com/cn"},{"query":{"utm_source":"news"},"url":"https://example.com/news"},{"cidr":"10.0.0.0/8","url":"https://example.com/office"}]'
links_jsonl "$N" "$WORK/plain.jsonl"
LC_ALL=C awk -v n="$N" -v rules="$RULES" 'BEGIN { for (i = 0; i < n; i++) printf "{\"url\":\"https://example.com/ruled/%d\",\"rules\":%s}\n", i, rules }' > "$WORK/ruled.jsonl"
UA='Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36'
port=18500
SHARDKIT_LOG=warn "$NEW" serve --config "$WORK/shardkit.toml" --data "$WORK/data" \
  --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & pid=$!; PIDS+=($pid)
wait_port $port
for set in plain ruled; do
  import_codes "$NEW" "http://127.0.0.1:$port" "$WORK/$set.jsonl" "$WORK/$set.codes"
  # Every request carries a query (one the query rule does not want), for both sets.
  { codes_lua "$WORK/$set.codes"; echo 'request = function() return wrk.format("GET", path(math.random(n) - 1) .. "?utm_source=mail") end'; } > "$WORK/$set.lua"
done
# Each code once before the rounds, so both sets are served from the cache.
for set in plain ruled; do
  wrk -t2 -c50 -d2s -s "$WORK/$set.lua" http://127.0.0.1:$port > /dev/null
done
# One lookup answers as the rounds will: the ruled link falls back to its URL.
first=$(head -n1 "$WORK/ruled.codes")
location=$(curl -s -o /dev/null -w '%{redirect_url}' -A "$UA" -H 'Accept-Language: en-US,en;q=0.9' "http://127.0.0.1:$port/$first?utm_source=mail" || true)
case "$location" in https://example.com/ruled/*) ;; *) echo "a ruled link sent the bench's request to '$location'" >&2; exit 1 ;; esac
for round in $(seq "$R"); do
  for set in plain ruled; do
    before=$(awk '{print $14 + $15}' /proc/$pid/stat)
    out=$(wrk -t2 -c50 -d"$D" --latency -H "User-Agent: $UA" -H 'Accept-Language: en-US,en;q=0.9' \
      -s "$WORK/$set.lua" "http://127.0.0.1:$port")
    after=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    cpu_us=$(awk -v t="$((after - before))" -v n="$reqs" 'BEGIN {printf "%.2f", t * 10000 / n}')
    echo "round $round $set: $rps req/s  p99 $p99  server CPU $cpu_us µs a redirect"
    echo "$set $rps $cpu_us" >> "$WORK/rates"
  done
done
awk '{s[$1] += $2; c[$1] += $3; n[$1]++} END {
  printf "mean: plain %.0f req/s, ruled %.0f req/s, ruled/plain %.3f\n", s["plain"]/n["plain"], s["ruled"]/n["ruled"], (s["ruled"]/n["ruled"])/(s["plain"]/n["plain"])
  printf "server CPU a redirect: plain %.2f µs, ruled %.2f µs, ruled/plain %.3f (target: at most 1.2)\n", c["plain"]/n["plain"], c["ruled"]/n["ruled"], (c["ruled"]/n["ruled"])/(c["plain"]/n["plain"])
}' "$WORK/rates"
