#!/usr/bin/env bash
# Redirects as links grow (issue 25), the embedded store (`redb`: segment files and a
# dense offset index) against the previous ones in the same run, same binary
# (`[links] store = "redb-compact"`: records in redb; `"redb-json"`: JSON records; both
# kept for this comparison):
#   for each size N in SIZES and each store: load N links through the bulk endpoint
#   (`shardkit links import`, batches of 10,000, each one fsynced commit), then R
#   rounds of: wrk -t2 -c50 for D on GET /{code} with codes picked uniformly, then
#   with a Zipf(1.0) popularity (rank r with probability ~1/r, ranks scattered over the
#   links), each run on a server started for it with no click counters (every run
#   from the same state: a Zipf run does not inherit the uniform run's click rows,
#   and neither does the 10,000-link baseline's); the server's CPU a request over
#   each run (from /proc: on 2 cores wrk takes what the server leaves, so the rates
#   alone understate a costlier request); the medians of the R runs (this VM's single
#   runs move ±8% or more), the largest resident memory after a run, and the bytes of
#   links.redb (+ links.segments/) per link beyond the URL's own bytes. Server on its
#   defaults (100,000-entry redirect cache, 256 MiB store cache) but with the creation
#   limit off.
# Loopback only; each wrk run is bounded by -d.
#
#   bash bench/links-scale.sh                       # SIZES "10000 1000000", D=10s, R=3
#   STORES="redb redb-compact redb-json" bash bench/links-scale.sh 10000   # any stores
#   bash bench/links-scale.sh 10000 1000000 10000000 100000000   # the issue's sizes
#   BASE_BIN=/path/to/older/shardkit STORES="redb redb-base" bash bench/links-scale.sh 10000 1000000
#     # store `redb-base`: the embedded store of another build (an A/B of two builds)
#   STORES="redb postgres" bash bench/links-scale.sh 10000000
#     # store `postgres`: two fresh databases on the machine's PostgreSQL as two servers
#     # (`shardkit pg init`, 64 logical shards; build feature `sql`); its disk is what
#     # the two databases grew by (pg_database_size after a CHECKPOINT: tables, indexes,
#     # TOAST; the WAL not counted); its RSS and CPU a request are the shardkit
#     # server's alone (PostgreSQL's backends are not in them)
# The script's own files (the links, the codes) are dropped from the page cache
# (`uncache`) before the redirects are measured: on a VM whose page cache holds a few GB
# they would push the store's pages out. The import's output is not kept (the codes are
# taken from it as it comes, `import_codes`).
#   WARM=1 bash bench/links-scale.sh 10000 100000000
#     # the store's files (links.segments/, links.redb) read once before wrk, as a
#     # server that has served a while holds them: the redirects' CPU apart from the
#     # VM's disk (the default measures from whatever the load left in the page cache)
# Disk: apparent (file sizes, `du -sb`) and allocated (`du -sB1`; redb's file has an
# unallocated tail) bytes of links.redb + links.segments/, per link beyond the URL's bytes.
# (wrk's scripts keep the codes in one fixed-width string per Lua state: 0.8 GB at 100 M,
# wrk 4.2 GB resident with its three states, measured; a table of codes was ~6 GB a state)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${*:-10000 1000000}
D=${D:-10s}
R=${R:-3}
WARM=${WARM:-0}
STORES=${STORES:-redb redb-compact}
REF=${REF:-$( [ -n "${BASE_BIN:-}" ] && echo redb-base || echo redb-compact)}   # the store the ratios are against
. bench/common.sh
need wrk "apt-get install -y wrk"
need curl "apt-get install -y curl"
TARGET=${CARGO_TARGET_DIR:-target}
PG=${SHARDKIT_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
case " $STORES " in
  *" postgres "*)
    need psql "apt-get install -y postgresql-client"
    bash scripts/services-up
    cargo build --release -q -p shardkit --features sql --bin shardkit ;;
  *) cargo build --release -q -p shardkit --bin shardkit ;;
esac
cp "$TARGET/release/shardkit" "$WORK/"
if [ -n "${BASE_BIN:-}" ]; then cp "$BASE_BIN" "$WORK/shardkit-base"; fi

# pg_fresh: drops and makes the two bench databases, initialised; prints their URLs.
DB_A="sk_bench_scale_a_$$"
DB_B="sk_bench_scale_b_$$"
bench_cleanup_extra() {
  case " $STORES " in *" postgres "*)
    psql -q "$PG" -c "DROP DATABASE IF EXISTS $DB_A WITH (FORCE)" -c "DROP DATABASE IF EXISTS $DB_B WITH (FORCE)" >/dev/null 2>&1 || true ;;
  esac
}
pg_fresh() {
  bench_cleanup_extra
  psql -q "$PG" -c "CREATE DATABASE $DB_A" -c "CREATE DATABASE $DB_B" >/dev/null
  "$WORK/shardkit" pg init --servers "${PG%/*}/$DB_A,${PG%/*}/$DB_B" --logical-shards 64 >/dev/null
  echo "${PG%/*}/$DB_A,${PG%/*}/$DB_B"
}
pg_bytes() { psql -At "$PG" -c "SELECT sum(pg_database_size(datname)) FROM pg_database WHERE datname IN ('$DB_A', '$DB_B')"; }
rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

port=18110
printf 'links\tstore\tload_per_s\tuniform_rps\tuniform_p99\tuniform_errors\tzipf_rps\tzipf_p99\tzipf_errors\tuniform_cpu_us\tzipf_cpu_us\trss_mib\tdisk_bytes\tbytes_per_link_beyond_url\talloc_per_link_beyond_url\n' > "$WORK/results.tsv"
for n in $SIZES; do
  links_jsonl "$n" "$WORK/links.jsonl"
  # Each line is {"url":"..."} and a newline, no escapes (links_jsonl): 11 bytes around the URL.
  url_bytes=$(( $(stat -c %s "$WORK/links.jsonl") - 11 * n ))
  for store in $STORES; do
    port=$((port + 2))
    rm -rf "$WORK/data"
    bin="$WORK/shardkit"
    kind=$store
    if [ "$store" = redb-base ]; then bin="$WORK/shardkit-base"; kind=redb; fi
    printf '[links]\ncreate_per_second = 0\nstore = "%s"\n' "$kind" > "$WORK/shardkit.toml"
    pg_empty=0
    if [ "$store" = postgres ]; then
      servers=$(pg_fresh)
      pg_empty=$(pg_bytes)
      printf 'servers = ["%s", "%s"]\n' "${servers%,*}" "${servers#*,}" >> "$WORK/shardkit.toml"
    fi
    start_server() {
      SHARDKIT_LOG=warn "$bin" serve --config "$WORK/shardkit.toml" --data "$WORK/data" --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & PIDS+=($!)
      server=$!
      wait_port $port
    }
    stop_server() { kill "$server"; wait "$server" 2>/dev/null || true; }
    start_server
    start=$(date +%s.%N)
    import_codes "$WORK/shardkit" http://127.0.0.1:$port "$WORK/links.jsonl" "$WORK/codes.txt"
    end=$(date +%s.%N)
    stop_server
    random_codes_lua "$WORK/codes.txt" "$WORK/uniform.lua"
    zipf_codes_lua "$WORK/codes.txt" "$WORK/zipf.lua"
    uncache "$WORK/links.jsonl" "$WORK/codes.txt" "$WORK/codes.txt.packed"
    printf 'draw\trps\tp99\terrors\tcpu_us\trss_mib\tdisk_reads\n' > "$WORK/runs.tsv"
    for round in $(seq "$R"); do
      for draw in uniform zipf; do
        # Every run from the same state: the links, no click counters.
        rm -rf "$WORK/data/counters"
        start_server
        if [ "$WARM" = 1 ] && [ "$store" != postgres ]; then warm "$WORK/data/links.segments" "$WORK/data/links.redb"; fi
        t0=$(cpu_total "$server")
        read -r rps p99 bad reqs < <(wrk -t2 -c50 -d"$D" --latency -s "$WORK/$draw.lua" http://127.0.0.1:$port | wrk_figures)
        t1=$(cpu_total "$server")
        # Look-ups the page cache could not answer (read on a blocking thread): the
        # share of a run that waited for the disk.
        disk=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^shardkit_link_disk_reads_total/ {print $2}')
        disk_share=$(python3 -c "print(round(${disk:-0} / max($reqs, 1), 4))")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$draw" "$rps" "$p99" "$bad" "$(cpu_us "$t0" "$t1" "$reqs")" "$(rss_mib "$server")" "$disk_share" >> "$WORK/runs.tsv"
        echo "$n $store round $round $draw: $rps req/s, p99 $p99, server $(cpu_us "$t0" "$t1" "$reqs") µs a request, disk reads $disk_share a request" >&2
        stop_server
      done
    done
    # Medians over the rounds; the largest RSS; every run's errors.
    read -r u_rps u_p99 u_err u_cpu z_rps z_p99 z_err z_cpu rss < <(python3 - "$WORK/runs.tsv" <<'PY'
import csv, re, statistics, sys
runs = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def ms(text):  # wrk's p99: 950.00us, 4.89ms, 1.02s
    value, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
out = []
for draw in ("uniform", "zipf"):
    mine = [r for r in runs if r["draw"] == draw]
    out += [round(statistics.median(float(r["rps"]) for r in mine)),
            f"{statistics.median(ms(r['p99']) for r in mine):.2f}ms",
            sum(int(r["errors"]) for r in mine),
            round(statistics.median(float(r["cpu_us"]) for r in mine), 1)]
out.append(max(int(r["rss_mib"]) for r in runs))
print(*out)
PY
)
    if [ "$store" = postgres ]; then
      psql -q "$PG" -c CHECKPOINT >/dev/null
      disk=$(( $(pg_bytes) - pg_empty ))
      alloc=$disk
    else
      disk=$( (du -sb "$WORK/data/links.redb" "$WORK/data/links.segments" 2>/dev/null || true) | awk '{s += $1} END {print s}')
      alloc=$( (du -sB1 "$WORK/data/links.redb" "$WORK/data/links.segments" 2>/dev/null || true) | awk '{s += $1} END {print s}')
    fi
    python3 - "$n" "$store" "$start" "$end" "$u_rps" "$u_p99" "$u_err" "$z_rps" "$z_p99" "$z_err" "$u_cpu" "$z_cpu" "$rss" "$disk" "$url_bytes" "$alloc" >> "$WORK/results.tsv" <<'PY'
import sys
n, store, start, end, ur, up, ue, zr, zp, ze, uc, zc, rss, disk, url, alloc = sys.argv[1:]
n = int(n)
print("\t".join(map(str, [n, store, round(n / (float(end) - float(start))), ur, up, ue, zr, zp, ze, uc, zc, rss, disk, round((int(disk) - int(url)) / n, 1), round((int(alloc) - int(url)) / n, 1)])))
PY
  done
done
python3 - "$WORK/results.tsv" "$REF" "$WARM" <<'PY'
import csv, sys
ref = sys.argv[2]
print("store files read before wrk (WARM=1)" if sys.argv[3] == "1" else "page cache as the load left it (WARM=0)")
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print(f"{'links':>11} {'store':<10} {'load/s':>8} {'uniform/s':>10} {'p99':>8} {'zipf/s':>8} {'p99':>8} {'µs/req u':>8} {'z':>5} {'RSS MiB':>8} {'disk B/link-url':>16} {'allocated':>10} {'err':>4}")
for r in rows:
    print(f"{int(r['links']):>11,} {r['store']:<10} {int(r['load_per_s']):>8,} {int(r['uniform_rps']):>10,} {r['uniform_p99']:>8} {int(r['zipf_rps']):>8,} {r['zipf_p99']:>8} {r['uniform_cpu_us']:>8} {r['zipf_cpu_us']:>5} {r['rss_mib']:>8} {r['bytes_per_link_beyond_url']:>16} {r['alloc_per_link_beyond_url']:>10} {int(r['uniform_errors']) + int(r['zipf_errors']):>4}")
by = {(r["links"], r["store"]): r for r in rows}
base = rows[0]["links"] if rows else None
for r in rows:
    if r["store"] != "redb":
        continue
    old = by.get((r["links"], ref))
    if old:
        print(f"{int(r['links']):>11,} new/{ref}: load {int(r['load_per_s']) / int(old['load_per_s']):.2f}  uniform {int(r['uniform_rps']) / int(old['uniform_rps']):.2f}  zipf {int(r['zipf_rps']) / int(old['zipf_rps']):.2f}  disk {int(r['disk_bytes']) / int(old['disk_bytes']):.2f}")
    first = by.get((base, "redb"))
    if first and r["links"] != base:
        print(f"{int(r['links']):>11,} vs {int(base):,} links (new store): uniform {int(r['uniform_rps']) / int(first['uniform_rps']):.2f}  zipf {int(r['zipf_rps']) / int(first['zipf_rps']):.2f}")
PY
