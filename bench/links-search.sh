#!/usr/bin/env bash
# The dashboard's search (`GET /api/links?q=&sort=&order=`) over N links (default
# 1,000,000), side by side with the reference in the same run: the same links as rows
# of a PostgreSQL table queried as Shlink's link list does (`LIKE '%text%'` on URL, code
# and alias, `ORDER BY` date or visits, `LIMIT 20`, and a `count(*)` for the total).
# Per query kind: shardkit's wall time and server CPU (from /proc), PostgreSQL's wall
# time (psql, the server's own timing), and the ratio of the wall times. Loopback only.
#
#   bash bench/links-search.sh              # N=1000000, R=3 repetitions a query
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
R=${R:-3}
PG=${SHARDKIT_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
. bench/common.sh
need psql "apt-get install -y postgresql-client"
need curl "apt-get install -y curl"
bash scripts/services-up
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --bin shardkit
cp "$TARGET/release/shardkit" "$WORK/"
TABLE="sk_bench_search_$$"
bench_cleanup_extra() { psql -q "$PG" -c "DROP TABLE IF EXISTS $TABLE" >/dev/null 2>&1 || true; }

port=18600
printf '[links]\ncreate_per_second = 0\n' > "$WORK/shardkit.toml"
SHARDKIT_LOG=warn "$WORK/shardkit" serve --config "$WORK/shardkit.toml" --data "$WORK/data" \
  --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & pid=$!; PIDS+=($pid)
wait_port $port
links_jsonl "$N" "$WORK/links.jsonl"
import_codes "$WORK/shardkit" "http://127.0.0.1:$port" "$WORK/links.jsonl" "$WORK/links.codes"
# Clicks on 1,000 links (1 to 5 each), so sorting by clicks has something to sort.
head -n 1000 "$WORK/links.codes" | awk '{ for (i = 0; i <= NR % 5; i++) print "url = http://127.0.0.1:'"$port"'/" $1 }' > "$WORK/clicks.curl"
curl -s -o /dev/null -K "$WORK/clicks.curl"
sleep 1

# The reference: the same links, codes and clicks as rows (id order = creation order).
psql -q "$PG" -c "CREATE TABLE $TABLE (id bigserial PRIMARY KEY, code text NOT NULL, alias text, url text NOT NULL, created_at timestamptz NOT NULL, visits bigint NOT NULL DEFAULT 0)" >/dev/null
paste -d' ' "$WORK/links.codes" <(LC_ALL=C awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "https://example.com/articles/%d?ref=bench\n", i }') \
  | LC_ALL=C awk -v n="$N" '{ v = NR <= 1000 ? 1 + NR % 5 : 0; printf "%s\t\\N\t%s\t2026-01-01 00:00:00+00\t%d\n", $1, $2, v }' \
  | psql -q "$PG" -c "\\copy $TABLE (code, alias, url, created_at, visits) FROM STDIN" >/dev/null
psql -q "$PG" -c "UPDATE $TABLE SET created_at = created_at + id * interval '1 millisecond'" -c "CREATE INDEX ON $TABLE (created_at)" -c "CREATE INDEX ON $TABLE (visits)" -c "VACUUM ANALYZE $TABLE" >/dev/null

# query NAME API_QUERY SQL_WHERE SQL_ORDER
run() {
  local name="$1" api="$2" where="$3" order="$4"
  local total=0 cpu=0 pg=0
  for _ in $(seq "$R"); do
    local before after took
    before=$(awk '{print $14 + $15}' /proc/$pid/stat)
    took=$(curl -s -o "$WORK/answer.json" -w '%{time_total}' "http://127.0.0.1:$port/api/links?$api&limit=20")
    after=$(awk '{print $14 + $15}' /proc/$pid/stat)
    grep -q '"total"' "$WORK/answer.json" || { echo "$name: no search answer: $(head -c 300 "$WORK/answer.json")" >&2; exit 1; }
    total=$(awk -v a="$total" -v b="$took" 'BEGIN {print a + b * 1000}')
    cpu=$(awk -v a="$cpu" -v t="$((after - before))" 'BEGIN {print a + t * 10}')
    local ms
    ms=$(psql -qAt "$PG" -c '\timing on' -c "SELECT count(*) FROM $TABLE WHERE $where" \
      -c "SELECT id, code, url FROM $TABLE WHERE $where ORDER BY $order LIMIT 20" \
      | awk '/^Time:/ {s += $2} END {print s}')
    pg=$(awk -v a="$pg" -v b="$ms" 'BEGIN {print a + b}')
  done
  awk -v n="$name" -v t="$total" -v c="$cpu" -v p="$pg" -v r="$R" 'BEGIN {
    printf "%-32s shardkit %8.1f ms (server CPU %8.1f ms)  PostgreSQL %8.1f ms  ratio %.2fx\n", n, t / r, c / r, p / r, t / p }'
}
echo "N=$N links, R=$R each, mean per search:"
run "newest 20" "sort=created&order=desc" "true" "created_at DESC, id DESC"
run "text in URL, newest 20" "q=articles/4242" "url ILIKE '%articles/4242%' OR code ILIKE '%articles/4242%' OR alias ILIKE '%articles/4242%'" "created_at DESC, id DESC"
run "most clicks 20" "sort=clicks&order=desc" "true" "visits DESC, id DESC"
