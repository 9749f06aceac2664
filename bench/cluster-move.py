"""Writes to a shardkit cluster while one of its groups moves, and says how long each
group's writes paused: bench/cluster-move.sh runs it beside `shardkit cluster add-node`.

Usage: python cluster-move.py HOST:PORT STOP_FILE SECONDS

It sends INCR to keys of both halves of the slot space in turn (slots 0-8191 are group
0 and 8192-16383 group 1 when the cluster has two groups), through redis-py's
RedisCluster, which follows MOVED like any cluster client; it stops when STOP_FILE
exists or after SECONDS. It prints one JSON object: per group, the increments
acknowledged, the slowest one (retries included: the pause a writer sees), the p99 and
the longest time between two acknowledgements in that group.
"""

import json
import os
import sys
import time

from redis.cluster import RedisCluster
from redis.crc import key_slot


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    stop_file, seconds = sys.argv[2], float(sys.argv[3])
    client = RedisCluster(host=host, port=int(port))
    # 100 keys in each half of the slot space.
    keys = {0: [], 1: []}
    i = 0
    while min(len(v) for v in keys.values()) < 100:
        key = f"move:{i}"
        half = 0 if key_slot(key.encode()) < 8192 else 1
        if len(keys[half]) < 100:
            keys[half].append(key)
        i += 1
    lat = {0: [], 1: []}
    last_ack = {0: None, 1: None}
    gap = {0: 0.0, 1: 0.0}
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline and not os.path.exists(stop_file):
        for half in (0, 1):
            key = keys[half][n % 100]
            asked = time.monotonic()
            while True:
                try:
                    client.incr(key)
                    break
                except Exception:  # a node between owners: ask again, as a client would
                    time.sleep(0.005)
                    if time.monotonic() > deadline + 60:
                        raise
            now = time.monotonic()
            lat[half].append(now - asked)
            if last_ack[half] is not None:
                gap[half] = max(gap[half], now - last_ack[half])
            last_ack[half] = now
        n += 1
    out = {}
    for half in (0, 1):
        xs = sorted(lat[half])
        out[f"group{half}"] = {
            "acknowledged": len(xs),
            "slowest_ms": round(xs[-1] * 1000, 2),
            "p99_ms": round(xs[int(len(xs) * 0.99)] * 1000, 3),
            "p50_ms": round(xs[len(xs) // 2] * 1000, 3),
            "longest_gap_ms": round(gap[half] * 1000, 2),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
