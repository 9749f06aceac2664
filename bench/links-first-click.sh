#!/usr/bin/env bash
# What a redirect of a link nobody clicked yet today costs against one the server has
# at hand (why the rate at 100 M links is not the rate at 10,000), on one
# store of N links loaded once, three kinds of round alternated R times:
#   hot    wrk on the first 10,000 codes only: after the first second every request is
#          a redirect-cache hit and a repeat click (what a 10,000-link run measures)
#   held   wrk on all N codes, uniform, the click flusher held off (click_flush_ms
#          600000): redirect-cache misses and store reads, no click rows written
#   flush  the same with the server's defaults (click_flush_ms 100): each click of a
#          new link also makes its rows (clicks, day, analytics owner and day rows)
#   zipf   all N codes with a Zipf(1.0) popularity (links-scale.sh's draw), defaults:
#          what a Zipf run costs on a server of its own (links-scale.sh runs Zipf
#          after uniform on one server, so it inherits the uniform run's counter rows)
# so held - hot is what a miss costs and flush - held what the first click's writes
# cost. Each round starts with the clicks' counters removed (every round alike) and
# the store's files read once (warm: no disk in the figures). wrk -t2 -c50 for D;
# prints req/s, p99 and the server's CPU a request (from /proc).
# Loopback only; each wrk run is bounded by -d.
#
#   STORE=/var/tmp/links-100m bash bench/links-first-click.sh   # keeps the loaded store
#       (data, codes, wrk scripts) in STORE and, the next time, starts from it instead of
#       importing N links again (a 100 M import is ~22 minutes); delete STORE when done
#
#   bash bench/links-first-click.sh                 # N=10000000 R=2 D=10s
#   KINDS="hot zipf" bash bench/links-first-click.sh    # some kinds only (hot always
#                                                       # runs: the others are against it)
#   WARMUP=60s bash bench/links-first-click.sh    # each round first runs its own draw for
#       WARMUP on the same server, unmeasured, then measures D: a server that has been
#       up a while (its redirect cache filled, its links' click rows of the day made)
#       instead of one just started (the default, WARMUP=0: the first D after a start)
#   BASE_BIN=/tmp/base/target/release/shardkit bash bench/links-first-click.sh   # A/B: each kind also on
#       another build (one that reads the same store, e.g. the parent commit's:
#       git worktree add /tmp/base HEAD~1 && cargo build --release
#       --manifest-path /tmp/base/Cargo.toml -p shardkit --bin shardkit), its rounds
#       labelled KIND@base, run right after this build's; the summary adds base -> this
#       and the base's kinds against this build's hot. What counting clicks costs: a
#       base built with bench/patches/redirect-without-counting.patch (the redirect
#       neither counts nor queues analytics; a measurement build, never a server):
#       git worktree add /tmp/nocount HEAD && git -C /tmp/nocount apply
#       "$PWD/bench/patches/redirect-without-counting.patch" && cargo build --release
#       --manifest-path /tmp/nocount/Cargo.toml -p shardkit --bin shardkit
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
R=${R:-2}
D=${D:-10s}
WARMUP=${WARMUP:-0}
KINDS=${KINDS:-hot held flush zipf}
case " $KINDS " in *" hot "*) ;; *) KINDS="hot $KINDS" ;; esac
for kind in $KINDS; do
  case $kind in hot | held | flush | zipf) ;; *) echo "unknown kind $kind (hot, held, flush, zipf)" >&2; exit 1 ;; esac
done
BASE=${BASE_BIN:-}
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "BASE_BIN=$BASE is not an executable" >&2; exit 1; }
. bench/common.sh
need wrk "apt-get install -y wrk"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p shardkit --bin shardkit
cp "$TARGET/release/shardkit" "$WORK/"
builds=this
[ -z "$BASE" ] || { cp "$BASE" "$WORK/shardkit-base"; builds="this base"; }
port=$(free_port)
start() { # start FLUSH_MS [BINARY]
  printf '[links]\ncreate_per_second = 0\nclick_flush_ms = %s\n' "$1" > "$WORK/shardkit.toml"
  SHARDKIT_LOG=warn "${2:-$WORK/shardkit}" serve --config "$WORK/shardkit.toml" --data "$WORK/data" --http 127.0.0.1:$port --resp 127.0.0.1:$((port + 1)) 2>>"$WORK/server.log" &
  server=$!; PIDS+=($server); wait_port $port
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; }
STORE=${STORE:-}
# What the rounds read: the store, the codes and the wrk scripts, in STORE when kept.
KEEP=${STORE:-$WORK}
if [ -n "$STORE" ] && [ -f "$STORE/loaded-$N" ]; then
  echo "$N links from $STORE (loaded by an earlier run)"
  ln -s "$STORE/data" "$WORK/data"
else
  if [ -n "$STORE" ]; then
    [ ! -e "$STORE" ] || [ -z "$(ls -A "$STORE")" ] || { echo "STORE=$STORE is not empty and holds no store of $N links" >&2; exit 1; }
    mkdir -p "$STORE/data" && ln -s "$STORE/data" "$WORK/data"
  fi
  start 100
  links_jsonl "$N" "$WORK/links.jsonl"
  start_s=$(date +%s.%N)
  import_codes "$WORK/shardkit" http://127.0.0.1:$port "$WORK/links.jsonl" "$KEEP/codes.txt"
  end_s=$(date +%s.%N)
  stop
  head -n 10000 "$KEEP/codes.txt" > "$KEEP/hot.txt"
  random_codes_lua "$KEEP/codes.txt" "$KEEP/all.lua"
  random_codes_lua "$KEEP/hot.txt" "$KEEP/hot.lua"
  zipf_codes_lua "$KEEP/codes.txt" "$KEEP/zipf.lua"
  uncache "$WORK/links.jsonl" "$KEEP/codes.txt" "$KEEP/codes.txt.packed"
  rm -f "$WORK/links.jsonl"
  echo "$N links loaded at $(python3 -c "print(round($N / ($end_s - $start_s)))") links/s"
  [ -z "$STORE" ] || touch "$STORE/loaded-$N"
fi
printf 'round\tkind\treq_s\tp99\tcpu_us\n' > "$WORK/results.tsv"
for round in $(seq "$R"); do
  for kind in $KINDS; do
    for build in $builds; do
      rm -rf "$WORK/data/counters"
      bin="$WORK/shardkit" label=$kind
      [ "$build" = this ] || { bin="$WORK/shardkit-base"; label="$kind@base"; }
      case $kind in held) start 600000 "$bin" ;; *) start 100 "$bin" ;; esac
      warm "$WORK/data/links.segments" "$WORK/data/links.redb"
      case $kind in hot) lua="$KEEP/hot.lua" ;; zipf) lua="$KEEP/zipf.lua" ;; *) lua="$KEEP/all.lua" ;; esac
      [ "$WARMUP" = 0 ] || wrk -t2 -c50 -d"$WARMUP" -s "$lua" http://127.0.0.1:$port > /dev/null
      t0=$(cpu_total "$server")
      read -r rps p99 bad n < <(wrk -t2 -c50 -d"$D" --latency -s "$lua" http://127.0.0.1:$port | wrk_figures)
      t1=$(cpu_total "$server")
      stop
      [ "$bad" = 0 ] || { echo "$kind: $bad answers were not redirects" >&2; exit 1; }
      printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$label" "$rps" "$p99" "$(cpu_us "$t0" "$t1" "$n")" >> "$WORK/results.tsv"
    done
  done
done
python3 - "$WORK/results.tsv" "$N" "$WARMUP" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
n = int(sys.argv[2])
print(f"{'round':>5} {'kind':<11} {'req/s':>8} {'p99':>8} {'CPU µs/req':>10}")
for r in rows:
    print(f"{r['round']:>5} {r['kind']:<11} {int(r['req_s']):>8,} {r['p99']:>8} {r['cpu_us']:>10}")
kinds = list(dict.fromkeys(r["kind"] for r in rows))
med = {k: (statistics.median(int(r["req_s"]) for r in rows if r["kind"] == k),
           statistics.median(float(r["cpu_us"]) for r in rows if r["kind"] == k))
       for k in kinds}
warm = sys.argv[3]
if warm != "0":
    print(f"each round measured after {warm} of its own draw on the same server")
print(f"medians over {n:,} links: " + ", ".join(f"{k} {v[0]:,.0f} req/s {v[1]:.1f} µs" for k, v in med.items()))
if "held" in med:
    print(f"a miss (held - hot): {med['held'][1] - med['hot'][1]:+.1f} µs a request")
if "held" in med and "flush" in med:
    print(f"the first click's writes (flush - held): {med['flush'][1] - med['held'][1]:+.1f} µs")
for suffix, name in (("", "this build"), ("@base", "base")):
    hot = med.get("hot" + suffix)
    others = [(k, v) for k, v in med.items() if k.endswith(suffix) and k != "hot" + suffix
              and (suffix or "@" not in k)]
    if hot and others:
        print(f"against hot ({name}): " + ", ".join(
            f"{k} {v[0] / hot[0]:.2f}x by rate, {hot[1] / v[1]:.2f}x by CPU a request" for k, v in others))
if "hot" in med and any(k.endswith("@base") for k in med):
    print("base against this build's hot: " + ", ".join(
        f"{k} {v[0] / med['hot'][0]:.2f}x by rate, {med['hot'][1] / v[1]:.2f}x by CPU a request"
        for k, v in med.items() if k.endswith("@base")))
pairs = [(k, med[k], med[k + "@base"]) for k in med if "@" not in k and k + "@base" in med]
if pairs:
    print("base -> this build: " + ", ".join(
        f"{k} {b[1]:.1f} -> {t[1]:.1f} µs ({t[1] - b[1]:+.1f}), {t[0] / b[0]:.2f}x the rate" for k, t, b in pairs))
PY
