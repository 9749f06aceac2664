#!/usr/bin/env bash
# In one run: the counters' log on NATS JetStream against the
# local log and against Redis with a replica.
#
#   bash bench/replication.sh                     # ROUNDS=2 DUR=8 C=50
#   ROUNDS=3 DUR=10 REPS=5 bash bench/replication.sh
#
# 1. Acknowledged INCR/s through one leader, 50 connections, -P16 and -P1, on
#    `INCR counter:<k>`, k uniform in [0, 100000), for DUR seconds (and at most N
#    increments) per test, by bench/replication-load.py:
#      local     shardkit `[counters] log = "local"`, `fsync = "always"`
#      jetstream shardkit `log = "jetstream"`, a private `nats-server -js`, stream
#                replicas 1, one leader (role auto) + one replica node (role replica)
#      redis     redis-server, `appendonly yes`, `appendfsync always`, plus one replica
#                (`--replicaof`, same settings); every pipeline is followed by
#                `WAIT 1 0`, and its increments count only if WAIT answered >= 1
#    and the CPU every server process of the setup spent (utime + stime from
#    /proc/<pid>/stat, summed over shardkit nodes, nats-server, Redis master and
#    replica), per million acknowledged increments. Setups alternate order by round.
# 2. Replica lag at ~100,000 increments/s offered (-P16, paced, 50 connections) on the
#    jetstream setup, sampled every 10 ms by one more client. Each sample: leader `ROLE`
#    (the stream seq it has published), replica `INFO replication` (stream_applied_seq,
#    lag_records, lag_ms), then a probe: `INCR lag:probe` on the leader and, from its
#    reply, `GET lag:probe` on the replica in a tight loop until it shows that value.
#    Reported: (a) probe ms from the leader's reply to the replica serving the value
#    (the main figure); (b) leader seq - replica applied seq, in stream messages (one per
#    group-commit batch); (c) sample time minus the time of the first sample whose
#    leader seq exceeded the replica's applied seq (10 ms resolution: 0 = under one
#    sample interval); (d) the replica's own lag_ms.
# 3. Failover: leader + replica, both role auto, lease_ms 1000 and 3000, REPS times
#    each: 1000 INCRs, SIGKILL the leader, then INCR on both ports every 5 ms until one
#    is acknowledged; the time from the kill to that reply.
#
# Every server has its own free loopback port and scratch directory and is killed at
# exit; every load runs under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-8}
N=${N:-5000000}
C=${C:-50}
REPS=${REPS:-3}
LAG_RATE=${LAG_RATE:-100000}
. bench/common.sh
need redis-server "apt-get install -y redis-server"
need redis-cli "apt-get install -y redis-tools"
need nats-server "apt-get install -y nats-server"
cargo build --release -q -p shardkit --features nats
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
LOAD="python3 bench/replication-load.py"

sum_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(cpu_total "$p"))); done; echo "$t"; }
stop() { local p; for p in "$@"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
redis_role() { timeout 2 redis-cli -p "$1" ROLE 2>/dev/null | head -1; }
# until `ROLE` on PORT answers WHAT (master|slave), 30 s at most
wait_role() { for _ in $(seq 300); do [ "$(redis_role "$1")" = "$2" ] && return 0; sleep 0.1; done; echo "port $1 never became $2" >&2; return 1; }

# nats: starts a private nats-server -js; sets NATS_PID, NATS_URL.
nats() {
  local port dir; port=$(free_port); dir=$(mktemp -d "$WORK/nats.XXXX")
  nats-server -js -a 127.0.0.1 -p "$port" -sd "$dir" > "$dir/log" 2>&1 &
  NATS_PID=$!; PIDS+=("$NATS_PID"); wait_port "$port"; NATS_URL="nats://127.0.0.1:$port"
}

# shardkit_node LOG ROLE LEASE_MS: one `shardkit serve`; sets NODE_PID, NODE_PORT.
shardkit_node() {
  local dir; dir=$(mktemp -d "$WORK/shardkit.XXXX"); NODE_PORT=$(free_port)
  {
    printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nlog = "%s"\n' "$NODE_PORT" "$1"
    if [ "$1" = local ]; then printf 'fsync = "always"\n'; else
      printf 'store = "bench"\nstream_replicas = 1\nrole = "%s"\nlease_ms = %s\n[nats]\nurl = "%s"\n' "$2" "$3" "$NATS_URL"
    fi
  } > "$dir/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$dir/data" --config "$dir/shardkit.toml" 2> "$dir/log" &
  NODE_PID=$!; PIDS+=("$NODE_PID"); wait_port "$NODE_PORT"
}

# redis_node [MASTER_PORT]: sets NODE_PID, NODE_PORT.
redis_node() {
  local dir; dir=$(mktemp -d "$WORK/redis.XXXX"); NODE_PORT=$(free_port)
  redis-server --bind 127.0.0.1 --port "$NODE_PORT" --save "" --dir "$dir" --daemonize no \
    --appendonly yes --appendfsync always ${1:+--replicaof 127.0.0.1 "$1"} > "$dir/log" 2>&1 &
  NODE_PID=$!; PIDS+=("$NODE_PID"); wait_port "$NODE_PORT"
}

# setup NAME: starts it; sets PORT (the leader's) and SPIDS (every server process).
setup() {
  case $1 in
    local) shardkit_node local - -; PORT=$NODE_PORT; SPIDS="$NODE_PID"; SNAMES="shardkit" ;;
    jetstream)
      nats; shardkit_node jetstream auto 3000; PORT=$NODE_PORT; SPIDS="$NATS_PID $NODE_PID"
      SNAMES="nats-server leader replica"
      wait_role "$PORT" master
      shardkit_node jetstream replica 3000; SPIDS="$SPIDS $NODE_PID"; REPLICA=$NODE_PORT
      wait_role "$REPLICA" slave ;;
    redis)
      redis_node; PORT=$NODE_PORT; SPIDS="$NODE_PID"; SNAMES="master replica"
      redis_node "$PORT"; SPIDS="$SPIDS $NODE_PID"
      for _ in $(seq 300); do
        timeout 2 redis-cli -p "$NODE_PORT" INFO replication | grep -q 'master_link_status:up' && break; sleep 0.1
      done ;;
  esac
}

# measure NAME ROUND P: one load; a line of $WORK/throughput.csv: name, round, P, the
# ticks of all its server processes, each one's ("nats-server=412;leader=301;..."),
# and the load client's JSON.
measure() {
  local t0 t1 out wait="" p split="" n i=0; [ "$1" = redis ] && wait=--wait
  declare -a b4
  for p in $SPIDS; do b4+=("$(cpu_total "$p")"); done
  t0=$(sum_ticks $SPIDS)
  out=$(timeout $((DUR + 60)) $LOAD load --port "$PORT" -c "$C" -P "$3" -n "$N" --duration "$DUR" $wait)
  t1=$(sum_ticks $SPIDS)
  set -- "$@" $SNAMES
  for p in $SPIDS; do split="$split${split:+;}${*:$((4 + i)):1}=$(($(cpu_total "$p") - b4[i]))"; i=$((i + 1)); done
  echo "$1,$2,$3,$((t1 - t0)),$split,$out" | tee -a "$WORK/throughput.csv" >&2
}

: > "$WORK/throughput.csv"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="local jetstream redis"; else order="redis jetstream local"; fi
  for s in $order; do
    setup "$s"
    for p in 16 1; do measure "$s" "$round" "$p"; done
    stop $SPIDS
  done
done

# Replica lag (jetstream only).
: > "$WORK/lag.jsonl"
for round in $(seq "$ROUNDS"); do
  setup jetstream
  timeout $((DUR + 60)) $LOAD load --port "$PORT" -c "$C" -P 16 -n "$N" --duration "$((DUR + 2))" --rate "$LAG_RATE" > "$WORK/lagload.json" &
  loadpid=$!
  sleep 1  # past the connection set-up
  timeout $((DUR + 30)) $LOAD lag --leader "$PORT" --replica "$REPLICA" --every 10 --duration "$DUR" > "$WORK/lag.json"
  wait "$loadpid"
  python3 -c 'import json,sys; print(json.dumps({"load": json.load(open(sys.argv[1])), "samples": json.load(open(sys.argv[2]))}))' \
    "$WORK/lagload.json" "$WORK/lag.json" >> "$WORK/lag.jsonl"
  stop $SPIDS
done

# Failover.
: > "$WORK/failover.csv"
for lease in 1000 3000; do
  for rep in $(seq "$REPS"); do
    nats; shardkit_node jetstream auto "$lease"; a_pid=$NODE_PID; a_port=$NODE_PORT
    wait_role "$a_port" master
    shardkit_node jetstream auto "$lease"; b_pid=$NODE_PID; b_port=$NODE_PORT
    wait_role "$b_port" slave
    timeout 60 $LOAD load --port "$a_port" -c 4 -P 1 -n 1000 --duration 20 > /dev/null
    since=$(date +%s%N); kill -9 "$a_pid"
    out=$(timeout 60 $LOAD failover --ports "$a_port,$b_port" --since "$since" --timeout 50)
    echo "$lease,$rep,$out" | tee -a "$WORK/failover.csv" >&2
    stop "$a_pid" "$b_pid" "$NATS_PID"
  done
done

python3 - "$WORK" "$C" "$DUR" "$LAG_RATE" <<'PY'
import csv, json, statistics, sys
work, C, DUR, LAG_RATE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = {}
split = {}
for name, rnd, p, ticks, parts, *rest in csv.reader(open(f"{work}/throughput.csv"), quotechar="'"):
    r = json.loads(",".join(rest))
    rows.setdefault((name, int(p)), []).append((r["rate"], int(ticks) * 1e6 / max(r["acked"], 1), r))
    for part in parts.split(";"):
        proc, t = part.split("=")
        split.setdefault((name, int(p)), {}).setdefault(proc, []).append(int(t) * 1e6 / max(r["acked"], 1))
print(f"1. acknowledged INCR/s, {C} connections, {DUR} s per test, median of rounds "
      "(each round's figure in brackets); CPU = server ticks (USER_HZ=100) per million acked")
print(f"{'setup':<10} {'P':>3} {'INCR/s':>9} {'rounds':<22} {'CPU/M':>7} {'vs local':>8} {'vs redis':>8}")
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in rows.items()}
for p in (16, 1):
    for name in ("local", "jetstream", "redis"):
        if (name, p) not in med:
            continue
        rate, cpu = med[(name, p)]
        rs = "/".join(f"{x[0]:.0f}" for x in rows[(name, p)])
        errs = sum(x[2]["errors"] + x[2]["wait_short"] for x in rows[(name, p)])
        vl = rate / med[("local", p)][0] if ("local", p) in med else float("nan")
        vr = rate / med[("redis", p)][0] if ("redis", p) in med else float("nan")
        print(f"{name:<10} {p:>3} {rate:>9.0f} {rs:<22} {cpu:>7.0f} {vl:>8.2f} {vr:>8.2f}"
              + (f"  ({errs} errors/short WAITs)" if errs else ""))
print("   CPU per million acked, by process (median of rounds):")
for (name, p), procs in sorted(split.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
    print(f"     {name:<10} -P{p:<3} " + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in procs.items()))

print(f"\n2. replica lag, jetstream, {LAG_RATE}/s offered at -P16, sampled every 10 ms")
for line in open(f"{work}/lag.jsonl"):
    d = json.loads(line)
    s = d["samples"]
    lags = []
    for i, (t, lseq, rseq, lrec, lms, _) in enumerate(s):
        # first sample whose leader seq exceeded what the replica has applied now
        first = next((tt for tt, ls, *_ in s[: i + 1] if ls > rseq), None)
        lags.append(0.0 if first is None else (t - first) * 1000)
    recs = [max(0, ls - rs) for _, ls, rs, *_ in s]
    q = lambda xs, f: sorted(xs)[min(len(xs) - 1, int(f * len(xs)))]
    srv = [x[4] for x in s]
    vis = [x[5] if x[5] is not None else 5000.0 for x in s]
    print(f"  achieved {d['load']['rate']:.0f}/s acked; {len(s)} samples; "
          f"lag ms p50 {q(lags, .5):.0f} p99 {q(lags, .99):.0f} max {max(lags):.0f}; "
          f"leader seq - replica seq p50 {q(recs, .5)} p99 {q(recs, .99)}; "
          f"replica's own lag_ms p50 {q(srv, .5)} p99 {q(srv, .99)} max {max(srv)}")
    print(f"    probe, leader ack to value served by the replica: ms p50 {q(vis, .5):.2f} "
          f"p90 {q(vis, .9):.2f} p99 {q(vis, .99):.2f} max {max(vis):.2f}")

print("\n3. failover, SIGKILL of the leader to the first acknowledged INCR on the new one")
fo = {}
for lease, rep, *rest in csv.reader(open(f"{work}/failover.csv"), quotechar="'"):
    fo.setdefault(int(lease), []).append(json.loads(",".join(rest))["ms"])
for lease, ms in sorted(fo.items()):
    print(f"  lease_ms {lease}: median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms "
          f"({', '.join(f'{m:.0f}' for m in ms)}); median / lease {statistics.median(ms) / lease:.2f}")
PY
