#!/usr/bin/env bash
# Two builds of the server side by side in one run, alternated, to show that a change
# meant to leave behaviour alone (a refactoring) costs nothing on the hot paths: the
# server CPU per request (utime + stime from /proc, in clock ticks per million
# requests, as bench/resp-cpu.sh measures it) of
#   - RESP: `redis-benchmark -t incr|get` at -P16 and -P1, 50 connections, with
#     `[counters] fsync = "everysec"` and `"always"`;
#   - the redirect: wrk GET /{code} over LINKS links (a random code a request), D long;
# plus the redirect's requests/s. Every test gets a fresh server and directory; the two
# builds take turns, the first one going first in odd rounds and second in even ones.
#
#   bash bench/build-ab.sh OLD_BIN NEW_BIN            # ROUNDS=3 N=400000 LINKS=100000 D=10s
#
# To make OLD_BIN: `git worktree add /tmp/old <rev>`, then in it
# `cargo build --release -p shardkit` and copy `target/release/shardkit` aside.
# Prints one line per test: each build's ticks per million requests (its rounds
# summed), and the ratio NEW / OLD; the same for redirects/s.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] || { echo "usage: $0 OLD_BIN NEW_BIN" >&2; exit 2; }
N=${N:-400000}
LINKS=${LINKS:-100000}
D=${D:-10s}
ROUNDS=${ROUNDS:-3}
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need wrk "apt-get install -y wrk"
# Copies, so a build into a shared target directory meanwhile cannot swap them.
cp "$1" "$WORK/old"; cp "$2" "$WORK/new"

# start BUILD DIR FSYNC: a fresh server of BUILD in DIR; sets PID, RESP and HTTP.
start() {
  RESP=$(free_port); HTTP=$(free_port)
  printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:%s"\n[counters]\nfsync = "%s"\n[links]\ncreate_per_second = 0\n' \
    "$RESP" "$HTTP" "$3" > "$2/shardkit.toml"
  SHARDKIT_LOG=warn "$WORK/$1" serve --data "$2/data" --config "$2/shardkit.toml" > /dev/null 2> "$2/log" &
  PID=$!
  wait_port "$RESP"; wait_port "$HTTP"
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; }

# The links and codes once: each redirect test imports them into its fresh server.
links_jsonl "$LINKS" "$WORK/links.jsonl"

# resp BUILD FSYNC TEST PIPELINE: one bounded redis-benchmark load; its ticks to results.
resp() {
  local build=$1 fsync=$2 test=$3 p=$4 n=$N dir before after
  [ "$p" = 1 ] && n=$((N / 5))
  dir=$(mktemp -d "$WORK/s.XXXX")
  start "$build" "$dir" "$fsync"
  read -r -a before < <(cpu_ticks "$PID")
  timeout 900 redis-benchmark -h 127.0.0.1 -p "$RESP" -c 50 -n "$n" -q -t "$test" -P "$p" > /dev/null
  read -r -a after < <(cpu_ticks "$PID")
  echo "$build,$test -P$p $fsync,$((after[0] + after[1] - before[0] - before[1])),$n" >> "$WORK/results.csv"
  stop; rm -rf "$dir"
}

# redirect BUILD: the links imported, then wrk for D; ticks and requests/s to results.
redirect() {
  local build=$1 dir before after figures
  dir=$(mktemp -d "$WORK/s.XXXX")
  start "$build" "$dir" everysec
  import_codes "$WORK/$build" "http://127.0.0.1:$HTTP" "$WORK/links.jsonl" "$dir/codes.txt"
  random_codes_lua "$dir/codes.txt" "$dir/codes.lua"
  before=$(cpu_total "$PID")
  figures=$(wrk -t2 -c50 -d"$D" --latency -s "$dir/codes.lua" "http://127.0.0.1:$HTTP" | wrk_figures)
  after=$(cpu_total "$PID")
  read -r rps _ non requests <<< "$figures"
  [ "$non" = 0 ] || { echo "redirect: $non answers were not 3xx ($build)" >&2; exit 1; }
  echo "$build,redirect,$((after - before)),$requests" >> "$WORK/results.csv"
  echo "$build,redirects/s,$rps,1" >> "$WORK/results.csv"
  stop; rm -rf "$dir"
}

: > "$WORK/results.csv"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for fsync in everysec always; do
    for p in 16 1; do
      for test in incr get; do
        for build in $order; do resp "$build" "$fsync" "$test" "$p"; done
      done
    done
  done
  for build in $order; do redirect "$build"; done
  echo "round $round of $ROUNDS done" >&2
done

python3 - "$WORK/results.csv" "$ROUNDS" <<'PY'
import csv, sys
from collections import defaultdict
tot = defaultdict(lambda: [0.0, 0])
order = []
for build, test, value, n in csv.reader(open(sys.argv[1])):
    if test not in order:
        order.append(test)
    t = tot[(build, test)]
    t[0] += float(value); t[1] += int(n)
print(f"{sys.argv[2]} rounds, builds alternated; server CPU ticks per million requests "
      "(USER_HZ=100, user + system, rounds summed); ratio = new / old")
print(f"{'test':<24} {'old':>10} {'new':>10} {'ratio':>7}")
for test in order:
    old, new = tot[("old", test)], tot[("new", test)]
    if test == "redirects/s":
        a, b = old[0] / old[1], new[0] / new[1]
    else:
        a, b = old[0] * 1e6 / old[1], new[0] * 1e6 / new[1]
    print(f"{test:<24} {a:>10.0f} {b:>10.0f} {b / a:>7.3f}")
PY
