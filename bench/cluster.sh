#!/usr/bin/env bash
# What the Redis Cluster mode costs per request, against one
# node with the same log (JetStream), in one run.
#
#   bash bench/cluster.sh                 # ROUNDS=2 N=200000 C=50 P=16 CLUSTER_GROUPS=64
#   ROUNDS=3 N=500000 P=1 bash bench/cluster.sh
#   BIN=/tmp/shardkit-before bash bench/cluster.sh   # a given build (A/B runs)
#
# Setups, each on its own private `nats-server -js` (loopback, file store):
#   lone      one shardkit node, `[counters] log = "jetstream"` (one store, one leader):
#             the single-node reference with the same durability as a cluster group
#   cluster1  one node with `[cluster] enabled`, CLUSTER_GROUPS groups, all placed on it by
#             `shardkit cluster rebalance --replicas 0`
#   cluster3  three such nodes, the groups spread over them (replicas 0), each loaded by
#             its own redis-benchmark as lone3's are, with keys of one slot it serves
#   cluster3c the same three nodes loaded by one `redis-benchmark --cluster`
#   lone3     three lone nodes (stores s1, s2, s3 on the one nats-server), each loaded by
#             its own redis-benchmark with a third of the connections and requests and
#             cluster3's commands: three servers sharing these two cores and the load
#             as cluster3's nodes do, without the cluster. cluster3 against lone3 is
#             what the cluster mode itself costs; against lone, that plus the split.
# Load: redis-benchmark -t incr,get -n N -c C -P P -r 100000; for cluster3c `--cluster`
# (it finds the masters and gives each node's connections keys of one slot of that
# node) with `INCR|GET counter:__rand_int__{tag}` (rows; its own tests' keys would be
# columns here), and those commands for lone3 and cluster3. cluster1's one node owns
# every slot and redis-benchmark refuses --cluster with one node. One client process
# for three servers (cluster3c) is slower than three (lone3), and the servers' CPU per
# request depends on how much each read brings: cluster3 against lone3 keeps the
# client the same. SETUPS="lone cluster3" runs some only (lone is the reference).
# Reported per setup and test: requests/s, and the CPU time (utime + stime from
# /proc/<pid>/stat) of the shardkit processes and of nats-server per request, and the
# ratio of each setup's shardkit CPU per request to `lone`'s (and cluster3's to
# lone3's), and for increments how many went into one JetStream publish (the streams'
# messages, from nats-server's monitoring port). The idle columns: the servers' CPU per
# second with no load (IDLE_S=5 seconds measured before the tests: a cluster group's
# lease renewals and snapshot checks, which do not grow with requests), and the CPU per
# request net of it for the test's length. On 2 cores every setup is capped by the
# load generator near the same rate, so the CPU per request is the figure to read (a
# three-node cluster cannot show scaling here).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
N=${N:-200000}
C=${C:-50}
P=${P:-16}
CLUSTER_GROUPS=${CLUSTER_GROUPS:-64}  # not GROUPS: bash keeps that name for the user's group ids
. bench/common.sh
need redis-benchmark "apt-get install -y redis-tools"
need nats-server "apt-get install -y nats-server"
# BIN=path runs that binary instead of building this checkout's (an A/B of two builds).
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p shardkit --features nats
  BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
fi
TICK_US=$((1000000 / $(getconf CLK_TCK)))

sum_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(cpu_total "$p"))); done; echo "$t"; }
stop() { local p; for p in "$@"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }

# start_nats: a private nats-server -js; sets NATS_PID, NATS_URL, NATS_MON (its
# monitoring port).
start_nats() {
  local port dir; port=$(free_port); NATS_MON=$(free_port); dir=$(mktemp -d "$WORK/nats.XXXX")
  nats-server -js -a 127.0.0.1 -p "$port" -m "$NATS_MON" -sd "$dir" > "$dir/log" 2>&1 &
  NATS_PID=$!; PIDS+=("$NATS_PID"); NATS_URL="nats://127.0.0.1:$port"
  wait_port "$port"; wait_port "$NATS_MON"
}

# stream_messages: messages in all of the nats-server's streams.
stream_messages() {
  curl -s "http://127.0.0.1:$NATS_MON/jsz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"])'
}

# lone_role PORT: until the lone node on PORT leads its store.
lone_role() {
  for _ in $(seq 300); do [ "$(timeout 2 redis-cli -p "$1" ROLE 2>/dev/null | head -1)" = master ] && break; sleep 0.1; done
}

# start_node CONFIG_TEXT: a shardkit node with that config; sets NODE_PID, NODE_PORT.
start_node() {
  local dir resp http; dir=$(mktemp -d "$WORK/node.XXXX"); resp=$(free_port); http=$(free_port)
  printf '%s\n' "$1" > "$dir/config.toml"
  "$BIN" serve --data "$dir/data" --resp "127.0.0.1:$resp" --http "127.0.0.1:$http" \
    --config "$dir/config.toml" > "$dir/log" 2>&1 &
  NODE_PID=$!; PIDS+=("$NODE_PID"); NODE_PORT=$resp
  wait_port "$resp"
}

# until_ok PORT...: until every node says cluster_state:ok (60 s at most).
until_ok() {
  local p ok
  for _ in $(seq 600); do
    ok=1
    for p in "$@"; do
      timeout 2 redis-cli -p "$p" CLUSTER INFO 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
    done
    [ "$ok" = 1 ] && return 0
    sleep 0.1
  done
  echo "the cluster never served" >&2; return 1
}

# setup NAME: starts NAME's servers; sets SERVER_PIDS, PORT (PORTS for lone3),
# CLUSTER_FLAG.
setup() {
  start_nats
  SERVER_PIDS=(); CLUSTER_FLAG=""; PORTS=()
  case "$1" in
    lone)
      start_node "[counters]
log = \"jetstream\"
lease_ms = 1000
[nats]
url = \"$NATS_URL\""
      SERVER_PIDS=("$NODE_PID"); PORT=$NODE_PORT
      lone_role "$PORT"
      ;;
    lone3)
      local s
      for s in s1 s2 s3; do
        start_node "[counters]
log = \"jetstream\"
store = \"$s\"
lease_ms = 1000
[nats]
url = \"$NATS_URL\""
        SERVER_PIDS+=("$NODE_PID"); PORTS+=("$NODE_PORT")
      done
      for s in "${PORTS[@]}"; do lone_role "$s"; done
      ;;
    cluster1|cluster3|cluster3c)
      local n=${1#cluster} ports=() i
      n=${n%c}
      for i in $(seq "$n"); do
        start_node "[cluster]
enabled = true
name = \"bench\"
groups = $CLUSTER_GROUPS
[counters]
lease_ms = 1000
[nats]
url = \"$NATS_URL\""
        SERVER_PIDS+=("$NODE_PID"); ports+=("$NODE_PORT")
      done
      sleep 1
      "$BIN" cluster rebalance --nats "$NATS_URL" --cluster bench --groups "$CLUSTER_GROUPS" --replicas 0 > /dev/null
      until_ok "${ports[@]}"
      # redis-benchmark refuses --cluster against one node ("Invalid cluster: 1
      # node(s)"); that node owns every slot, so plain mode sends it every key.
      PORT=${ports[0]}; CLUSTER_FLAG=""
      case "$1" in
        cluster3c) CLUSTER_FLAG="--cluster" ;;
        cluster3)
          # Each node's client gets keys of one slot that node serves, as --cluster
          # does, so the load is lone3's: a client per node.
          PORTS=("${ports[@]}"); TAGS=()
          for i in 0 1 2; do TAGS+=("$(tag_served_by "${ports[$i]}")"); done
          ;;
      esac
      ;;
  esac
}

# rps_of: the requests/s figure of redis-benchmark -q output on stdin.
rps_of() {
  tr '\r' '\n' | grep -i "requests per second" | tail -1 | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'
}

declare -A CPU RPS NATS PER_PUB NET IDLE
IDLE_S=${IDLE_S:-5}
SETUPS=${SETUPS:-"lone lone3 cluster1 cluster3 cluster3c"}
for round in $(seq "$ROUNDS"); do
  order=$SETUPS
  [ $((round % 2)) = 0 ] && order=$(echo "$SETUPS" | tr ' ' '\n' | tac | tr '\n' ' ')
  for name in $order; do
    setup "$name"
    # What the servers burn with no load (a cluster group renews its lease every third
    # of lease_ms, checks for a snapshot to ship every second...): IDLE_S seconds,
    # after two to settle. The net columns take it off each test's CPU for its length.
    sleep 2
    i0=$(sum_ticks "${SERVER_PIDS[@]}"); sleep "$IDLE_S"; i1=$(sum_ticks "${SERVER_PIDS[@]}")
    idle_ticks_per_s=$(python3 -c "print(($i1-$i0)/$IDLE_S)")
    IDLE[$round $name]=$(python3 -c "print(f'{$idle_ticks_per_s*$TICK_US/1000:.0f}')")
    for t in incr get; do
      s0=$(sum_ticks "${SERVER_PIDS[@]}"); n0=$(cpu_total "$NATS_PID"); m0=$(stream_messages)
      began=$(date +%s.%N)
      # --cluster's own tests write `counter:{tag}:<n>`, which this server reads as
      # column <n> of row {tag}: 100,000 columns made one by one, each a schema change.
      # So the cluster setups send rows of their own, `counter:<n>{tag}` (the node's tag:
      # every key of a connection in one slot, as redis-benchmark does for Redis), and
      # lone3 the same commands.
      test_args=(-t "$t")
      if [ -n "$CLUSTER_FLAG" ] || [ "${#PORTS[@]}" -gt 0 ]; then test_args=("${t^^}" 'counter:__rand_int__{tag}'); fi
      if [ "${#PORTS[@]}" -gt 0 ]; then
        # Three clients at once, a third of the connections and requests each (cluster3:
        # each with its node's tag in place of {tag}).
        start=$(date +%s.%N); parts=()
        for i in 0 1 2; do
          node_args=("${test_args[@]}")
          [ "$name" = cluster3 ] && node_args=("${t^^}" "counter:__rand_int__{${TAGS[$i]}}")
          timeout 300 redis-benchmark -h 127.0.0.1 -p "${PORTS[$i]}" -n $((N / 3)) \
            -c $(((C + 2 - i) / 3)) -P "$P" -r 100000 -q "${node_args[@]}" > "$WORK/lone3.$i" 2>/dev/null &
          parts+=($!)
        done
        wait "${parts[@]}"
        rps=$(python3 -c "import time; print(f'{$((N / 3 * 3)) / (time.time() - $start):.2f}')")
        for i in 0 1 2; do [ -n "$(rps_of < "$WORK/lone3.$i")" ] || rps=""; done
      else
        rps=$(timeout 300 redis-benchmark $CLUSTER_FLAG -h 127.0.0.1 -p "$PORT" -n "$N" \
          -c "$C" -P "$P" -r 100000 -q "${test_args[@]}" 2>/dev/null | rps_of)
      fi
      s1=$(sum_ticks "${SERVER_PIDS[@]}"); n1=$(cpu_total "$NATS_PID"); m1=$(stream_messages)
      ended=$(date +%s.%N)
      key="$round $name $t"
      RPS[$key]=${rps:-failed}
      CPU[$key]=$(python3 -c "print(f'{($s1-$s0)*$TICK_US/$N:.2f}')")
      NET[$key]=$(python3 -c "print(f'{max(0, ($s1-$s0) - $idle_ticks_per_s*($ended-$began))*$TICK_US/$N:.2f}')")
      NATS[$key]=$(python3 -c "print(f'{($n1-$n0)*$TICK_US/$N:.2f}')")
      PER_PUB[$key]=$(python3 -c "m=$m1-$m0; print(f'{$N/m:.1f}' if m > 0 else '-')")
    done
    stop "${SERVER_PIDS[@]}" "$NATS_PID"
  done
done
# ratio_of A B: A/B as "1.23x", or "-" when either is missing.
ratio_of() {
  python3 -c "import sys; a, b = sys.argv[1:]; print(f'{float(a) / max(0.01, float(b)):.2f}x')" "$1" "$2" 2>/dev/null || echo "-"
}
printf '| round | setup | test | requests/s | shardkit CPU us/req | nats-server CPU us/req | requests a publish | shardkit CPU vs lone | vs lone3 | idle shardkit CPU ms/s | net of idle us/req | net vs lone | net vs lone3 |\n'
printf '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for round in $(seq "$ROUNDS"); do
  for name in $SETUPS; do
    for t in incr get; do
      key="$round $name $t"
      ratio=$(ratio_of "${CPU[$key]:-}" "${CPU[$round lone $t]:-}")
      net=$(ratio_of "${NET[$key]:-}" "${NET[$round lone $t]:-}")
      vs3=""; net3=""
      if [ "$name" = cluster3 ] || [ "$name" = cluster3c ]; then
        vs3=$(ratio_of "${CPU[$key]:-}" "${CPU[$round lone3 $t]:-}")
        net3=$(ratio_of "${NET[$key]:-}" "${NET[$round lone3 $t]:-}")
      fi
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$name" "$t" "${RPS[$key]}" \
        "${CPU[$key]:-}" "${NATS[$key]:-}" "${PER_PUB[$key]:-}" "$ratio" "$vs3" "${IDLE[$round $name]:-}" \
        "${NET[$key]:-}" "$net" "$net3"
    done
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
