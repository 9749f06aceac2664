#!/usr/bin/env bash
# Failover under a cut and the outage on heal, on both NATS versions: runs the
# partition test (crates/shardkit/tests/replication_partitions.rs: three hosts in
# network namespaces, a three-server NATS cluster, R3, lease 3 s; rounds a leader cut,
# a follower cut, the leader isolated from the other hosts) RUNS times per version
# and summarises its report lines.
#
#   sudo bash bench/partitions.sh          # RUNS=3
#
# Per round kind and version: the longest stretch with no acknowledged write by any
# writer that overlaps the fault (the failover, fault at 0) and the one after the heal
# (the outage the heal causes), median and max over the runs; the failover's parts:
# how long the other nodes could not read the lease (NATS electing the lease
# bucket's stream leader) and how long the new leader took from finding the lease
# free to taking writes (mostly the counters stream electing a leader when its leader
# was on the cut host); restarts in place and exits by code.
# Every run must also pass the test's checks (nothing lost, no phantom, all nodes
# and digests equal): a failed run is reported and counted.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export SHARDKIT_TEST_NATS_CURRENT
SHARDKIT_TEST_NATS_CURRENT=$(bash scripts/nats-servers)
cargo nextest run -p shardkit --all-features --test replication_partitions --no-run --cargo-quiet
for run in $(seq "$RUNS"); do
  for version in debian current; do
    filter=$([ "$version" = debian ] && echo 'test(debian)' || echo 'test(current)')
    if timeout 600 cargo nextest run -p shardkit --all-features --test replication_partitions \
      -E "$filter" --no-capture > "$WORK/$version-$run.log" 2>&1; then
      echo "$version run $run: passed" >&2
    else
      echo "$version run $run: FAILED (its log: kept below)" >&2
      grep -E "failure|DIVERGENCE|LOST|PHANTOM" "$WORK/$version-$run.log" | head -20 >&2 || true
    fi
  done
done

python3 - "$WORK" <<'PY'
import glob, os, re, statistics, sys
work = sys.argv[1]
during, after, exits, failed, election, takeovers, restarts = {}, {}, {}, {}, {}, {}, {}
for path in sorted(glob.glob(f"{work}/*.log")):
    version = os.path.basename(path).split("-")[0]
    text = open(path).read()
    failed.setdefault(version, 0)
    if "test result: FAILED" in text or "FAIL [" in text:
        failed[version] += 1
    for m in re.finditer(r"^(round \w) \(([^)]*)\): time without a writable leader.*?during the fault ([\d.]+) s.*?after the heal ([\d.]+) s", text, re.M):
        key = (version, f"{m.group(1)} ({m.group(2)})")
        during.setdefault(key, []).append(float(m.group(3)))
        after.setdefault(key, []).append(float(m.group(4)))
    for m in re.finditer(r"^(round \w) \(([^)]*)\): failover parts on the other nodes: lease unreadable[^:]*: (.*?); takeover[^:]*: (.*)$", text, re.M):
        key = (version, f"{m.group(1)} ({m.group(2)})")
        unreadable = [float(x) for x in re.findall(r"h\d+ ([\d.]+) s", m.group(3))]
        takeover = [float(x) for x in re.findall(r"h\d+ ([\d.]+) s", m.group(4))]
        election.setdefault(key, []).append(max(unreadable, default=0.0))
        takeovers.setdefault(key, []).append(max(takeover, default=0.0))
    for m in re.finditer(r"^(round \w) \(([^)]*)\): restarts in place.*?: (.*)$", text, re.M):
        key = (version, f"{m.group(1)} ({m.group(2)})")
        restarts[key] = restarts.get(key, 0) + sum(int(n) for n in re.findall(r"h\d+ (\d+)", m.group(3)))
    for m in re.finditer(r"^(round \w) \(([^)]*)\): node restarts.*?: (.*)$", text, re.M):
        key = (version, f"{m.group(1)} ({m.group(2)})")
        for code in re.findall(r"exit (\d+)", m.group(3)):
            exits.setdefault(key, {}).setdefault(code, 0)
            exits[key][code] += 1
print("no acknowledged write, s: median / max over the runs (fault at 0, heal at 15 s; lease 3 s)")
print(f"{'version':<8} {'round':<55} {'runs':>4} {'during fault':>14} {'after heal':>12} {'lease unread':>13} {'takeover':>13}  restarts in place, exits")
for key in sorted(during):
    d, a, e, t = during[key], after[key], election.get(key, [0.0]), takeovers.get(key, [0.0])
    ex = ", ".join(f"{n}x{c}" for c, n in sorted(exits.get(key, {}).items())) or "none"
    print(f"{key[0]:<8} {key[1]:<55} {len(d):>4} {statistics.median(d):>6.1f} / {max(d):>5.1f} "
          f"{statistics.median(a):>5.1f} / {max(a):>4.1f} {statistics.median(e):>5.1f} / {max(e):>5.1f} "
          f"{statistics.median(t):>5.1f} / {max(t):>5.1f}  "
          f"{restarts.get(key, 0)}, {ex}")
for version, n in sorted(failed.items()):
    print(f"{version}: {n} failed run(s)")
PY
