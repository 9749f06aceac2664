#!/usr/bin/env bash
# Side-by-side figures for shardkit-ring, all from one run on one machine:
#   1. criterion lookup times: ours vs `hashring` (ring, 160 vnodes) and `jumphash`
#      (ours: jump = Lamping-Veach, jump-back = JumpBack hashing), at 100 and 1000 nodes,
#      printed with ours/theirs ratios;
#   2. the quality table (peak-to-average, moved fractions, mean lookup ns, ratios) from
#      the `quality` bench;
#   3. `shardkit ring stats --json` for ring, jump, jump-back and shards at 100 and 1000
#      nodes.
# Needs jq. Usage: bench/ring-stats.sh [KEYS]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
keys="${1:-1000000}"
log=target/ring-bench.log
mkdir -p target

RING_BENCH_KEYS="$keys" nice -n 5 cargo bench -p shardkit-ring --bench lookup --bench quality >"$log" 2>&1 ||
  { tail -20 "$log"; exit 1; }

mean() { jq '.mean.point_estimate' "target/criterion/lookup_$1/$2/new/estimates.json"; }
echo "## criterion lookup, mean ns per lookup (integer keys; shards_str: string keys)"
echo "| nodes | ours ring | hashring | ratio | ours jump | jumphash | ratio | ours jump-back | ratio | ours shards | shards (str keys) |"
echo "|------:|----------:|---------:|------:|----------:|---------:|------:|---------------:|------:|------------:|------------------:|"
for n in 100 1000; do
  r=$(mean "$n" ours_ring); h=$(mean "$n" hashring)
  j=$(mean "$n" ours_jump); jh=$(mean "$n" jumphash); jb=$(mean "$n" ours_jump_back)
  s=$(mean "$n" ours_shards); ss=$(mean "$n" ours_shards_str)
  awk -v n="$n" -v r="$r" -v h="$h" -v j="$j" -v jh="$jh" -v jb="$jb" -v s="$s" -v ss="$ss" 'BEGIN {
    printf "| %5d | %9.1f | %8.1f | %4.2fx | %9.1f | %8.1f | %4.2fx | %14.1f | %4.2fx | %11.2f | %17.1f |\n",
      n, r, h, r / h, j, jh, j / jh, jb, jb / jh, s, ss }'
done
echo
echo "## placement quality (bench: quality)"
grep -E '^(\||keys )' "$log"
echo
echo "## shardkit ring stats --json (release build, keys $keys)"
nice -n 5 cargo build -q --release -p shardkit
for n in 100 1000; do
  for a in ring jump jump-back shards; do
    printf 'nodes=%-5s %-9s ' "$n" "$a"
    target/release/shardkit ring stats --nodes "$n" --vnodes 160 --keys "$keys" --algorithm "$a" --json
  done
done
