#!/usr/bin/env bash
# Short links in two regions: `us` and `cn` as network namespaces, each with its
# own shardkit node and storage, 80 ms apart (round trip): `tc netem delay 40ms` on each end
# of a veth pair between them, or, where the kernel has no netem, bench/delay-proxy.py in
# the root namespace (each region reaches it over its own link; the script says which).
# wrk runs in the root namespace against `us`, as its users would.
#
# Figures: redirect p50/p99 of local links (the reference) and of remote links already
# cached, alternated rounds; the first read of remote links (each code once), beside the
# first read of local links (a cache miss, from the store); and the share of redirects
# that cross regions when 90% of requests open links homed in `us`.
#
#   bash bench/links-regions.sh                     # R=3 rounds, D=5s each, release build
#   NEW=target/debug/shardkit R=1 D=2s bash bench/links-regions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-3}
D=${D:-5s}
. bench/common.sh
need wrk "apt-get install -y wrk"
need ip "apt-get install -y iproute2"
[ "$(id -u)" = 0 ] || { echo "needs root (ip netns)" >&2; exit 1; }
if [ -z "${NEW:-}" ]; then
  cargo build --release -q -p shardkit --bin shardkit
  NEW="${CARGO_TARGET_DIR:-target}/release/shardkit"
fi
cp "$NEW" "$WORK/shardkit"
net=$((150 + $$ % 50))
# A 10.N.0.0/16 no interface has an address in (the test's namespaces use 100-199 too).
for _ in $(seq 100); do [ -z "$(ip -o -4 addr show to "10.$net.0.0/16")" ] && break; net=$(( (net - 99) % 100 + 100 )); done
US=skb$$us; CN=skb$$cn
bench_cleanup_extra() { ip netns del "$US" 2>/dev/null || true; ip netns del "$CN" 2>/dev/null || true; }
KEY=bench-admin-key-0123456789
PEER=bench-peer-key-0123456789
i=0
for ns in "$US" "$CN"; do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "skb$$t$i" type veth peer name eth0 netns "$ns"
  ip addr add "10.$net.$i.1/24" dev "skb$$t$i"; ip link set "skb$$t$i" up
  ip -n "$ns" addr add "10.$net.$i.2/24" dev eth0; ip -n "$ns" link set eth0 up
  i=$((i + 1))
done
ip link add "skb$$x" type veth peer name p0 netns "$CN"
ip link set "skb$$x" netns "$US"; ip -n "$US" link set "skb$$x" name p1
ip -n "$US" addr add "10.$net.9.1/24" dev p1; ip -n "$US" link set p1 up
ip -n "$CN" addr add "10.$net.9.2/24" dev p0; ip -n "$CN" link set p0 up
if tc -n "$US" qdisc add dev p1 root netem delay 40ms 2>/dev/null && tc -n "$CN" qdisc add dev p0 root netem delay 40ms; then
  echo "between the regions: tc netem delay 40ms on each end (80 ms round trip)"
  TO_CN="http://10.$net.9.2:8080"; TO_US="http://10.$net.9.1:8080"
else
  echo "between the regions: this kernel has no tc netem; bench/delay-proxy.py in the root namespace, 40 ms each way (80 ms round trip)"
  python3 bench/delay-proxy.py "10.$net.0.1" 18601 "10.$net.1.2" 8080 40 & PIDS+=($!)
  python3 bench/delay-proxy.py "10.$net.1.1" 18602 "10.$net.0.2" 8080 40 & PIDS+=($!)
  TO_CN="http://10.$net.0.1:18601"; TO_US="http://10.$net.1.1:18602"
fi
config() { # REGION PEER PEER_URL
  cat <<TOML
http = "0.0.0.0:8080"
resp = "127.0.0.1:6380"
api_key = "$KEY"
[links]
create_per_second = 0
[regions]
this = "$1"
default = "us"
peer_key = "$PEER"
remote_ttl_ms = 600000
[regions.peers]
$2 = "$3"
[regions.hosts]
".cn" = "cn"
[regions.groups]
us = "0-U"
cn = "V-z"
TOML
}
config us cn "$TO_CN" > "$WORK/us.toml"
config cn us "$TO_US" > "$WORK/cn.toml"
for r in us cn; do
  ns=$US; [ $r = cn ] && ns=$CN
  SHARDKIT_LOG=warn ip netns exec "$ns" "$WORK/shardkit" serve --config "$WORK/$r.toml" --data "$WORK/data-$r" 2>"$WORK/$r.log" & PIDS+=($!)
done
US_URL="http://10.$net.0.2:8080"; CN_URL="http://10.$net.1.2:8080"
for url in "$US_URL" "$CN_URL"; do
  for _ in $(seq 200); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.1; done
done
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
with open(f"{w}/us.jsonl", "w") as f:
    for i in range(9000):
        print('{"url":"https://example.com/articles/%d"}' % i, file=f)
with open(f"{w}/cn.jsonl", "w") as f:
    for i in range(1200):
        print('{"url":"https://www.example.cn/articles/%d"}' % i, file=f)
PY
"$WORK/shardkit" links import "$WORK/us.jsonl" --batch 10000 --server "$US_URL" --api-key "$KEY" > "$WORK/us-results.jsonl" 2>/dev/null
"$WORK/shardkit" links import "$WORK/cn.jsonl" --batch 10000 --server "$CN_URL" --api-key "$KEY" > "$WORK/cn-results.jsonl" 2>/dev/null
codes_of "$WORK/us-results.jsonl" "$WORK/us-codes.txt"
codes_of "$WORK/cn-results.jsonl" "$WORK/cn-codes.txt"
head -200 "$WORK/us-codes.txt" > "$WORK/us-first.txt"
head -200 "$WORK/cn-codes.txt" > "$WORK/cn-first.txt"
tail -n +201 "$WORK/cn-codes.txt" > "$WORK/cn-mix.txt"
metric() { curl -s -H "Authorization: Bearer $KEY" "$US_URL/metrics" | awk -v m="$1" 'index($0, m) == 1 {print $2}' | tail -1; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# First reads, each code once, sequential: local (a store read) and remote (a fetch from cn).
echo "first read here, local links (us, in the node's cache since their import):  $(python3 bench/regions-first-reads.py "10.$net.0.2" 8080 "$WORK/us-first.txt")"
f0=$(metric 'shardkit_link_region_fetches_total{region="cn"}'); f0=${f0:-0}
echo "first read, remote links (cn): $(python3 bench/regions-first-reads.py "10.$net.0.2" 8080 "$WORK/cn-first.txt")"
f1=$(metric 'shardkit_link_region_fetches_total{region="cn"}')
echo "  fetches from cn for 200 first reads: $((f1 - ${f0%.*}))"

# Alternated rounds: local links against remote links already cached.
random_codes_lua "$WORK/us-first.txt" "$WORK/local.lua"
random_codes_lua "$WORK/cn-first.txt" "$WORK/cached.lua"
for round in $(seq "$R"); do
  for which in local cached; do
    out=$(wrk -t2 -c20 -d"$D" --latency -s "$WORK/$which.lua" "$US_URL")
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    echo "round $round $which: $rps req/s  p50 $p50  p99 $p99  load $(cut -d' ' -f1 /proc/loadavg)"
    echo "$which $rps $p50 $p99" >> "$WORK/rounds"
  done
done
python3 - "$WORK/rounds" <<'PY'
import statistics, sys
def ms(t):
    for unit, f in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if t.endswith(unit):
            return float(t[: -len(unit)]) * f
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for kind in ("local", "cached"):
    mine = [r for r in rows if r[0] == kind]
    med[kind] = [statistics.median(float(r[1]) for r in mine)] + [statistics.median(ms(r[i]) for r in mine) for i in (2, 3)]
    print(f"median {kind}: {med[kind][0]:.0f} req/s  p50 {med[kind][1]:.3f} ms  p99 {med[kind][2]:.3f} ms")
l, c = med["local"], med["cached"]
print(f"cached/local: req/s {c[0]/l[0]:.3f}  p50 {c[1]/l[1]:.3f}  p99 {c[2]/l[2]:.3f}")
PY
f2=$(metric 'shardkit_link_region_fetches_total{region="cn"}')
echo "  fetches from cn during the rounds: $((${f2%.*} - ${f1%.*}))"

# 90% of requests open links homed in us, 10% links homed in cn never read here before.
cat > "$WORK/mix.lua" <<LUA
local function load(path) local t = {} for l in io.lines(path) do t[#t + 1] = "/" .. l end return t end
local mine, theirs = load("$WORK/us-codes.txt"), load("$WORK/cn-mix.txt")
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  if math.random(10) == 1 then return wrk.format("GET", theirs[math.random(#theirs)]) end
  return wrk.format("GET", mine[math.random(#mine)])
end
LUA
h0=$(metric 'shardkit_link_region_cache_hits_total'); h0=${h0:-0}
out=$(wrk -t2 -c20 -d10s --latency -s "$WORK/mix.lua" "$US_URL")
f3=$(metric 'shardkit_link_region_fetches_total{region="cn"}'); h1=$(metric 'shardkit_link_region_cache_hits_total')
requests=$(echo "$out" | awk '/requests in/ {print $1}')
crossed=$((${f3%.*} - ${f2%.*})); remote=$((crossed + ${h1%.*} - ${h0%.*}))
echo "90/10 mix, 10 s: $requests redirects, $remote of links homed in cn, $crossed crossed to cn (distinct cn codes in the pool: $(wc -l < "$WORK/cn-mix.txt"))"
python3 -c "print(f'  share of redirects that crossed: {$crossed/$requests:.4%}; crossings per remote redirect: {$crossed/$remote:.3f}')"
echo "$out" | awk '$1=="50%" || $1=="99%" {printf "  mix %s %s\n", $1, $2}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
