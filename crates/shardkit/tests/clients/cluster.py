"""redis-py's RedisCluster against a shardkit cluster (tests/cluster_mode.rs).

Counts 300 keys spread over every slot group and hash-tagged rows, prints
"counted N", waits for a line on stdin (the test adds a node and rebalances
meanwhile), then counts them all again with the same client, which must follow
the MOVED replies, and checks every total: "ok ..." on success.
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
print(f"ok {len(KEYS)} keys twice, 20 rows", flush=True)
