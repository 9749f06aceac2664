#!/usr/bin/env bash
# Redirects as links grow, the embedded store (`redb`: segment files and a
# dense offset index) against the previous ones in the same run, same binary
# (`[links] store = "redb-compact"`: records in redb; `"redb-json"`: JSON records; both
# kept for this comparison):
#   for each size N in SIZES and each store (a cell): load N links through the bulk
#   endpoint (`shardkit links import`, batches of 10,000, each one fsynced commit) into
#   the cell's own data directory; once every cell is loaded, R rounds, each over every
#   cell in turn (so the VM's drift over the hour touches every cell alike), of:
#   wrk -t2 -c50 for D on GET /{code} with codes picked uniformly, then
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
# Before each run the store's files (links.segments/, links.redb) are read once, as a
# server that has served a while holds them: the redirects' CPU apart from the VM's
# disk. These VMs page out files idle for a minute (DAMON, bench/notes/runs.md), and in the
# rounds each store waits while the others run: unwarmed, the 10 M and 100 M stores of a
# ladder were read from the disk (0.9-1.0 disk reads a redirect, 569 and 780 req/s).
#   WARM=0 bash bench/links-scale.sh 10000 100000000
#     # no reading before wrk: the page cache as this host left it
#   KEEP=1 bash bench/links-scale.sh 10000 100000000
#     # the loaded cells kept in a directory under /var/tmp (printed), for:
#   FROM=/var/tmp/links-scale.XXXXXX bash bench/links-scale.sh
#     # the rounds again on cells a run kept (embedded stores; this build, or a
#     # BASE_BIN for `redb-base` cells), without loading them again (100 M: ~20 min)
# Disk: apparent (file sizes, `du -sb`) and allocated (`du -sB1`; redb's file has an
# unallocated tail) bytes of links.redb + links.segments/, per link beyond the URL's bytes.
# (wrk's scripts keep the codes in one fixed-width string per Lua state: 0.8 GB at 100 M,
# wrk 4.2 GB resident with its three states, measured; a table of codes was ~6 GB a state)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${*:-10000 1000000}
D=${D:-10s}
R=${R:-3}
WARM=${WARM:-1}
FROM=${FROM:-}
KEEP=${KEEP:-0}
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
# CELLS: where the cells (data, config, codes, wrk scripts, load figures) live.
if [ -n "$FROM" ]; then
  CELLS=$FROM
  [ -f "$CELLS/loads.tsv" ] || { echo "FROM=$FROM holds no cells (no loads.tsv)" >&2; exit 1; }
  if grep -q -- '-redb-base	' "$CELLS/loads.tsv" && [ -z "${BASE_BIN:-}" ]; then
    echo "FROM=$FROM has redb-base cells: give their build as BASE_BIN" >&2; exit 1
  fi
elif [ "$KEEP" = 1 ]; then
  case " $STORES " in *" postgres "*) echo "KEEP=1 keeps embedded stores only (not postgres)" >&2; exit 1 ;; esac
  CELLS=$(mktemp -d /var/tmp/links-scale.XXXXXX)
  echo "cells kept in $CELLS (measure them again: FROM=$CELLS bash bench/links-scale.sh)" >&2
else
  CELLS=$WORK
fi


# Every (size, store) cell has its own data directory, config and codes, so the stores
# are all loaded first and the rounds then go over every cell in turn: round 1 of each
# cell, then round 2 of each, … A VM whose speed drifts over the hour (±20% here within
# an hour) moves every cell alike, and a ratio of two cells compares runs minutes apart,
# not the 10,000-link runs of the first minutes with the 100 M runs of the last.
port=18110
cells=()
PG_DBS=()
bench_cleanup_extra() {
  local db
  for db in "${PG_DBS[@]}"; do psql -q "$PG" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; done
}
# pg_fresh N: makes and initialises the two bench databases of size N; prints their URLs.
pg_fresh() {
  local a="sk_bench_scale_$1_a_$$" b="sk_bench_scale_$1_b_$$"
  PGOPTIONS="-c client_min_messages=warning" psql -q "$PG" -c "DROP DATABASE IF EXISTS $a WITH (FORCE)" -c "DROP DATABASE IF EXISTS $b WITH (FORCE)" -c "CREATE DATABASE $a" -c "CREATE DATABASE $b" >/dev/null
  "$WORK/shardkit" pg init --servers "${PG%/*}/$a,${PG%/*}/$b" --logical-shards 64 >/dev/null
  echo "${PG%/*}/$a,${PG%/*}/$b"
}
# pg_bytes N: the size of the two bench databases of size N.
pg_bytes() { psql -At "$PG" -c "SELECT sum(pg_database_size(datname)) FROM pg_database WHERE datname IN ('sk_bench_scale_$1_a_$$', 'sk_bench_scale_$1_b_$$')"; }
rss_mib() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
# start_server CELL: the cell's binary on its config and data directory, on $port.
start_server() {
  local bin="$WORK/shardkit"
  [ "${1#*-}" = redb-base ] && bin="$WORK/shardkit-base"
  SHARDKIT_LOG=warn "$bin" serve --config "$CELLS/$1.toml" --data "$CELLS/data-$1" --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>/dev/null & PIDS+=($!)
  server=$!
  wait_port $port
}
stop_server() { kill "$server"; wait "$server" 2>/dev/null || true; }

# Load every cell (unless FROM names cells loaded before).
if [ -n "$FROM" ]; then
  mapfile -t cells < <(tail -n +2 "$CELLS/loads.tsv" | cut -f1)
  SIZES=""
else
  printf 'cell\tload_per_s\turl_bytes\tpg_empty\n' > "$CELLS/loads.tsv"
fi
for n in $SIZES; do
  links_jsonl "$n" "$WORK/links.jsonl"
  # Each line is {"url":"..."} and a newline, no escapes (links_jsonl): 11 bytes around the URL.
  url_bytes=$(( $(stat -c %s "$WORK/links.jsonl") - 11 * n ))
  for store in $STORES; do
    cell="$n-$store"
    cells+=("$cell")
    port=$((port + 2))
    kind=$store
    [ "$store" = redb-base ] && kind=redb
    printf '[links]\ncreate_per_second = 0\nstore = "%s"\n' "$kind" > "$CELLS/$cell.toml"
    pg_empty=0
    if [ "$store" = postgres ]; then
      PG_DBS+=("sk_bench_scale_${n}_a_$$" "sk_bench_scale_${n}_b_$$")
      servers=$(pg_fresh "$n")
      pg_empty=$(pg_bytes "$n")
      printf 'servers = ["%s", "%s"]\n' "${servers%,*}" "${servers#*,}" >> "$CELLS/$cell.toml"
    fi
    start_server "$cell"
    start=$(date +%s.%N)
    import_codes "$WORK/shardkit" http://127.0.0.1:$port "$WORK/links.jsonl" "$CELLS/codes-$cell.txt"
    end=$(date +%s.%N)
    stop_server
    load=$(python3 -c "print(round($n / ($end - $start)))")
    echo "$cell: loaded at $load/s" >&2
    printf '%s\t%s\t%s\t%s\n' "$cell" "$load" "$url_bytes" "$pg_empty" >> "$CELLS/loads.tsv"
    random_codes_lua "$CELLS/codes-$cell.txt" "$CELLS/uniform-$cell.lua"
    zipf_codes_lua "$CELLS/codes-$cell.txt" "$CELLS/zipf-$cell.lua"
    rm -f "$CELLS/codes-$cell.txt"
    uncache "$CELLS/codes-$cell.txt.packed"
  done
  rm -f "$WORK/links.jsonl"
done

# R rounds, each over every cell.
printf 'cell\tdraw\trps\tp99\terrors\tcpu_us\trss_mib\tdisk_reads\n' > "$WORK/runs.tsv"
for round in $(seq "$R"); do
  for cell in "${cells[@]}"; do
    for draw in uniform zipf; do
      # Every run from the same state: the links, no click counters.
      rm -rf "$CELLS/data-$cell/counters"
      start_server "$cell"
      if [ "$WARM" = 1 ] && [ "${cell#*-}" != postgres ]; then warm "$CELLS/data-$cell/links.segments" "$CELLS/data-$cell/links.redb"; fi
      t0=$(cpu_total "$server")
      read -r rps p99 bad reqs < <(wrk -t2 -c50 -d"$D" --latency -s "$CELLS/$draw-$cell.lua" http://127.0.0.1:$port | wrk_figures)
      t1=$(cpu_total "$server")
      # Look-ups the page cache could not answer (read on a blocking thread): the
      # share of a run that waited for the disk.
      disk=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^shardkit_link_disk_reads_total/ {print $2}')
      disk_share=$(python3 -c "print(round(${disk:-0} / max($reqs, 1), 4))")
      us=$(cpu_us "$t0" "$t1" "$reqs")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cell" "$draw" "$rps" "$p99" "$bad" "$us" "$(rss_mib "$server")" "$disk_share" >> "$WORK/runs.tsv"
      echo "$cell round $round $draw $(date +%H:%M:%S): $rps req/s, p99 $p99, server $us µs a request, disk reads $disk_share a request" >&2
      stop_server
    done
  done
done

# Per cell: the medians over the rounds, the largest RSS, every run's errors, the disk.
printf 'links\tstore\tload_per_s\tuniform_rps\tuniform_p99\tuniform_errors\tzipf_rps\tzipf_p99\tzipf_errors\tuniform_cpu_us\tzipf_cpu_us\trss_mib\tdisk_bytes\tbytes_per_link_beyond_url\talloc_per_link_beyond_url\n' > "$WORK/results.tsv"
for cell in "${cells[@]}"; do
  if [ "${cell#*-}" = postgres ]; then
    psql -q "$PG" -c CHECKPOINT >/dev/null
    disk=$(pg_bytes "${cell%%-*}")
    alloc=$disk
  else
    disk=$( (du -sb "$CELLS/data-$cell/links.redb" "$CELLS/data-$cell/links.segments" 2>/dev/null || true) | awk '{s += $1} END {print s}')
    alloc=$( (du -sB1 "$CELLS/data-$cell/links.redb" "$CELLS/data-$cell/links.segments" 2>/dev/null || true) | awk '{s += $1} END {print s}')
  fi
  python3 - "$WORK/runs.tsv" "$CELLS/loads.tsv" "$cell" "$disk" "$alloc" >> "$WORK/results.tsv" <<'PY'
import csv, re, statistics, sys
runs_file, loads_file, cell, disk, alloc = sys.argv[1:]
runs = [r for r in csv.DictReader(open(runs_file), delimiter="\t") if r["cell"] == cell]
load = next(r for r in csv.DictReader(open(loads_file), delimiter="\t") if r["cell"] == cell)
n, store = cell.split("-", 1)
n = int(n)
# PostgreSQL's disk: what the two databases grew by (the empty ones' size taken off).
disk, alloc = int(disk) - int(load["pg_empty"]), int(alloc) - int(load["pg_empty"])
url = int(load["url_bytes"])
def ms(text):  # wrk's p99: 950.00us, 4.89ms, 1.02s
    value, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
def median(draw, field, f=float):
    return statistics.median(f(r[field]) for r in runs if r["draw"] == draw)
out = [n, store, load["load_per_s"]]
for draw in ("uniform", "zipf"):
    out += [round(median(draw, "rps")), f"{median(draw, 'p99', ms):.2f}ms",
            sum(int(r["errors"]) for r in runs if r["draw"] == draw)]
out += [round(median(d, "cpu_us"), 1) for d in ("uniform", "zipf")]
out += [max(int(r["rss_mib"]) for r in runs), disk, round((disk - url) / n, 1), round((alloc - url) / n, 1)]
print("\t".join(map(str, out)))
PY
done
python3 - "$WORK/results.tsv" "$REF" "$WARM" <<'PY'
import csv, sys
ref = sys.argv[2]
print("store files read before each run (WARM=1)" if sys.argv[3] == "1" else "page cache as the host left it (WARM=0)")
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
