"""redis-py's RedisCluster against a shardkit cluster (tests/cluster_mode.rs).

Counts 300 keys spread over every slot group and hash-tagged rows, prints
"counted N", waits for a line on stdin (the test adds a node and rebalances
meanwhile), then counts them all again with the same client, which must follow
the MOVED replies, and checks every total; then walks every primary with
SCAN (the values under the keys listed add up to every count), prints "scanned
...", waits for a line again (the test looks at the new node meanwhile) and
empties the cluster with FLUSHDB: "ok ..." on success.
"""
import sys

from redis.cluster import RedisCluster

port = int(sys.argv[-1])
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)

KEYS = [f"weibo:{i}:likes" for i in range(300)]


def count_round():
    for k in KEYS:
        rc.incr(k)
    for i in range(20):
        rc.hincrby(f"weibo:{{{1000 + i}}}", "comments", 3)
        rc.hincrby(f"weibo:{{{1000 + i}}}", "likes", 1)


count_round()
assert all(rc.get(k) == "1" for k in KEYS), "a key's first count is missing"
print(f"counted {len(KEYS)}", flush=True)
sys.stdin.readline()
count_round()
bad = [k for k in KEYS if rc.get(k) != "2"]
assert not bad, f"after the rebalance: {bad[:5]}"
for i in range(20):
    row = f"weibo:{{{1000 + i}}}"
    assert rc.hget(row, "comments") == "6", row
    # Keys of one row share a slot: a multi-key command is served whole.
    got = rc.execute_command("MGET", f"{row}:comments", f"{row}:likes")
    assert got == ["6", "2"], got
# SCAN through every primary (each lists the keys of its own slots): every value
# counted is under exactly one key listed.
listed = set(rc.scan_iter(match="weibo:*", count=50))
total = 0
for k in listed:
    if rc.type(k) == "hash":
        total += sum(int(v) for v in rc.hvals(k))
    else:
        total += int(rc.get(k))
assert total == len(KEYS) * 2 + 20 * (6 + 2), (total, sorted(listed)[:10])
print(f"scanned {len(listed)} keys holding {total}", flush=True)
sys.stdin.readline()
# FLUSHDB goes to every primary: nothing is left anywhere.
rc.flushdb()
assert rc.dbsize() == 0, rc.dbsize()
assert not list(rc.scan_iter(match="weibo:*")), "a key outlived FLUSHDB"
print(f"ok {len(KEYS)} keys twice, 20 rows, {len(listed)} keys scanned, flushed", flush=True)
