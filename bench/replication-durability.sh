#!/usr/bin/env bash
# What an acknowledgement that survives a lost machine costs, in one run: acknowledged
# INCR/s through one leader and the CPU of every server process per million, for
#
#   local     shardkit `[counters] log = "local"`, `fsync = "always"` (one host's disk)
#   r1        shardkit `log = "jetstream"`, one Debian nats-server (2.9, no per-write
#             fsync: an ack survives a killed process, not a power cut), stream_replicas 1
#   r3-sync   shardkit `log = "jetstream"`, three current nats-servers on loopback
#             (scripts/nats-servers) with `jetstream { sync_interval: always }`,
#             stream_replicas 3: an ack survives the loss of any one machine
#
#   bash bench/replication-durability.sh            # ROUNDS=2 DUR=8 C=50
#
# The load is bench/replication-load.py's (C connections, pipelines of P `INCR
# counter:<k>`, k uniform in [0, 100000)), -P16 then -P1; setups alternate order by
# round; CPU is utime + stime from /proc/<pid>/stat summed over the setup's servers
# (shardkit and its NATS servers), per million acknowledged increments. All servers
# share this machine's cores with the load client: compare ratios of the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-8}
N=${N:-5000000}
C=${C:-50}
. bench/common.sh
need nats-server "apt-get install -y nats-server"
CURRENT=$(bash scripts/nats-servers)
cargo build --release -q -p shardkit --features nats
BIN=${CARGO_TARGET_DIR:-target}/release/shardkit
LOAD="python3 bench/replication-load.py"

sum_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(cpu_total "$p"))); done; echo "$t"; }
stop() { local p; for p in "$@"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
wait_master() {
  for _ in $(seq 600); do
    [ "$(timeout 2 redis-cli -p "$1" ROLE 2>/dev/null | head -1)" = master ] && return 0; sleep 0.1
  done
  echo "port $1 never led" >&2; return 1
}

# nats_one: Debian's nats-server alone; sets NATS_PIDS, NATS_URL.
nats_one() {
  local port dir; port=$(free_port); dir=$(mktemp -d "$WORK/nats.XXXX")
  nats-server -js -a 127.0.0.1 -p "$port" -sd "$dir" > "$dir/log" 2>&1 &
  NATS_PIDS="$!"; PIDS+=("$!"); wait_port "$port"; NATS_URL="nats://127.0.0.1:$port"
}

# nats_three: three current nats-servers, routed, fsyncing every write; sets NATS_PIDS,
# NATS_URL (the first server's).
nats_three() {
  local i dir routes="" ports=() cports=()
  for i in 0 1 2; do ports+=("$(free_port)"); cports+=("$(free_port)"); done
  for i in 0 1 2; do routes="$routes${routes:+, }\"nats://127.0.0.1:${cports[$i]}\""; done
  NATS_PIDS=""
  for i in 0 1 2; do
    dir=$(mktemp -d "$WORK/nats3.XXXX")
    cat > "$dir/nats.conf" <<EOF
server_name: bench-$i
listen: 127.0.0.1:${ports[$i]}
jetstream { store_dir: "$dir/js", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:${cports[$i]}, routes: [ $routes ] }
EOF
    "$CURRENT" -c "$dir/nats.conf" > "$dir/log" 2>&1 &
    NATS_PIDS="$NATS_PIDS $!"; PIDS+=("$!")
  done
  for i in 0 1 2; do wait_port "${ports[$i]}"; done
  NATS_URL="nats://127.0.0.1:${ports[0]}"
}

# shardkit_node LOG [REPLICAS]: one `shardkit serve`; sets NODE_PID, NODE_PORT.
shardkit_node() {
  local dir; dir=$(mktemp -d "$WORK/shardkit.XXXX"); NODE_PORT=$(free_port)
  {
    printf 'resp = "127.0.0.1:%s"\nhttp = "127.0.0.1:0"\n[counters]\nlog = "%s"\n' "$NODE_PORT" "$1"
    if [ "$1" = local ]; then printf 'fsync = "always"\n'; else
      printf 'store = "bench"\nstream_replicas = %s\nrole = "auto"\nlease_ms = 3000\n[nats]\nurl = "%s"\n' "$2" "$NATS_URL"
    fi
  } > "$dir/shardkit.toml"
  SHARDKIT_LOG=warn "$BIN" serve --data "$dir/data" --config "$dir/shardkit.toml" 2> "$dir/log" &
  NODE_PID=$!; PIDS+=("$NODE_PID"); wait_port "$NODE_PORT"
}

# setup NAME: starts it; sets PORT and SPIDS (every server process).
setup() {
  case $1 in
    local) shardkit_node local; SPIDS="$NODE_PID" ;;
    r1) nats_one; shardkit_node jetstream 1; SPIDS="$NATS_PIDS $NODE_PID" ;;
    r3-sync) nats_three; shardkit_node jetstream 3; SPIDS="$NATS_PIDS $NODE_PID" ;;
  esac
  PORT=$NODE_PORT
  wait_master "$PORT"
}

: > "$WORK/durability.csv"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="local r1 r3-sync"; else order="r3-sync r1 local"; fi
  for s in $order; do
    setup "$s"
    for p in 16 1; do
      t0=$(sum_ticks $SPIDS)
      out=$(timeout $((DUR + 60)) $LOAD load --port "$PORT" -c "$C" -P "$p" -n "$N" --duration "$DUR")
      t1=$(sum_ticks $SPIDS)
      echo "$s,$round,$p,$((t1 - t0)),$out" | tee -a "$WORK/durability.csv" >&2
    done
    stop $SPIDS
  done
done

python3 - "$WORK" "$C" "$DUR" "$(getconf CLK_TCK)" <<'PY'
import csv, json, statistics, sys
work, C, DUR, HZ = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = {}
for name, rnd, p, ticks, *rest in csv.reader(open(f"{work}/durability.csv"), quotechar="'"):
    r = json.loads(",".join(rest))
    cpu_ms_per_m = int(ticks) * 1000 / HZ * 1e6 / max(r["acked"], 1)
    rows.setdefault((name, int(p)), []).append((r["rate"], cpu_ms_per_m, r["errors"]))
print(f"acknowledged INCR/s, {C} connections, {DUR} s per test, median of rounds "
      "(each round in brackets); CPU = server CPU ms per million acknowledged")
print(f"{'setup':<9} {'P':>3} {'INCR/s':>9} {'rounds':<20} {'CPU ms/M':>9} {'rate vs local':>13} {'rate vs r1':>10} {'CPU vs local':>12}")
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in rows.items()}
for p in (16, 1):
    for name in ("local", "r1", "r3-sync"):
        if (name, p) not in med:
            continue
        rate, cpu = med[(name, p)]
        rs = "/".join(f"{x[0]:.0f}" for x in rows[(name, p)])
        errs = sum(x[2] for x in rows[(name, p)])
        print(f"{name:<9} {p:>3} {rate:>9.0f} {rs:<20} {cpu:>9.0f} "
              f"{rate / med[('local', p)][0]:>13.2f} {rate / med[('r1', p)][0]:>10.2f} "
              f"{cpu / med[('local', p)][1]:>12.2f}" + (f"  ({errs} errors)" if errs else ""))
PY
