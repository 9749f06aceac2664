#!/usr/bin/env bash
# Cluster mode's failover under a cut, on both NATS versions: runs the cluster
# partition test (crates/shardkit/tests/cluster_partitions.rs: three hosts in network
# namespaces, a three-server NATS cluster, 8 slot groups at R3, lease 2 s, the first
# node's host cut off for 15 s) RUNS times per version and summarises its report lines.
#
#   sudo bash bench/cluster-partitions.sh          # RUNS=3
#
# Per version: the failover as a client on another host sees it (from the cut to the
# first write acknowledged by another node, one probe per row of the cut node; the
# median over its rows, per run), how long after the heal every group had two equal
# copies again (the cut node following the groups taken from it), and failed runs
# (the test's checks: nothing lost, no phantom, every group's copies equal). Beside
# the failover, NATS's own part: how long after the cut another server was seen
# leading each stream the cut server led (lease buckets, log streams, the cluster's
# node-record and map buckets), the longest per run.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SHARDKIT_TEST_NATS_CURRENT
SHARDKIT_TEST_NATS_CURRENT=$(bash scripts/nats-servers)
cargo nextest run -p shardkit --all-features --test cluster_partitions --no-run --cargo-quiet
for run in $(seq "$RUNS"); do
  for version in debian current; do
    filter=$([ "$version" = debian ] && echo 'test(lose_nothing)' || echo 'test(current)')
    if timeout 600 cargo nextest run -p shardkit --all-features --test cluster_partitions \
      -E "$filter" --no-capture > "$WORK/$version-$run.log" 2>&1; then
      echo "$version run $run: passed" >&2
    else
      echo "$version run $run: FAILED" >&2
      grep -E "panicked|not settled|group " "$WORK/$version-$run.log" | head -20 >&2 || true
    fi
  done
done

python3 - "$WORK" <<'PY'
import glob, os, re, statistics, sys
work = sys.argv[1]
failover, healed, failed, runs, elected = {}, {}, {}, {}, {}
for path in sorted(glob.glob(f"{work}/*.log")):
    version = os.path.basename(path).split("-")[0]
    text = open(path).read()
    runs[version] = runs.get(version, 0) + 1
    failed.setdefault(version, 0)
    if "test result: FAILED" in text or "FAIL [" in text:
        failed[version] += 1
    m = re.search(r"failover of the cut node's \d+ rows .*?median ([\d.inf]+) s, max ([\d.inf]+) s", text)
    if m:
        failover.setdefault(version, []).append((float(m.group(1)), float(m.group(2))))
    longest = [float(x) for x in re.findall(r"NATS elected another leader for .*? max ([\d.]+) s after the cut", text)]
    if longest:
        elected.setdefault(version, []).append(max(longest))
    m = re.search(r"settled ([\d.]+) s after the heal", text)
    if m:
        healed.setdefault(version, []).append(float(m.group(1)))
names = {"debian": "nats-server 2.9 (Debian)", "current": "nats-server 2.15, sync_interval always"}
for version in ["debian", "current"]:
    f = failover.get(version, [])
    h = healed.get(version, [])
    print(f"{names[version]}: {runs.get(version, 0)} runs, {failed.get(version, 0)} failed")
    if f:
        medians = [x for x, _ in f]
        print(f"  failover (cut -> first write acked by another node), per-run medians: "
              f"{', '.join(f'{x:.1f}' for x in medians)} s; median {statistics.median(medians):.1f} s, "
              f"max {max(y for _, y in f):.1f} s")
    e = elected.get(version, [])
    if e:
        print(f"  NATS's elections of the cut server's streams and buckets, longest per run: "
              f"{', '.join(f'{x:.1f}' for x in e)} s")
    if h:
        print(f"  every group on two equal copies after the heal: median {statistics.median(h):.1f} s, max {max(h):.1f} s")
PY
