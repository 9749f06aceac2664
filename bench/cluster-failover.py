"""Kills a shardkit cluster node and says how long its groups took to serve writes
again, and whether anything acknowledged before the kill was lost: bench/cluster-failover.sh
runs it against three nodes.

Usage: python cluster-failover.py VICTIM_PID VICTIM_PORT SURVIVOR_PORT... --writes N

It finds, from the victim's `CLUSTER SLOTS`, one key in each slot range the victim
serves (a range is one group or several adjacent ones), increments each N times through
the victim and keeps the acknowledged values, SIGKILLs the victim, then asks the
survivors (INCR, each in turn, every 10 ms) until every key is served again. It prints
one JSON object: the keys, the seconds from the kill to the first and to the last key
served again, and the keys whose first value after the kill is not the last acknowledged
one plus one (lost or double-counted increments: none expected).
"""

import json
import os
import signal
import sys
import time

import redis
from redis.crc import key_slot


def victim_ranges(port):
    """The slot ranges the node on `port` serves, from its own CLUSTER SLOTS."""
    node = redis.Redis(host="127.0.0.1", port=port)
    ranges = []
    for entry in node.execute_command("CLUSTER SLOTS"):
        start, end, master = entry[0], entry[1], entry[2]
        if int(master[1]) == port:
            ranges.append((int(start), int(end)))
    return ranges


def key_in(lo, hi):
    """A row key whose slot is in lo..=hi."""
    for i in range(1_000_000):
        key = f"failover:{i}"
        if lo <= key_slot(key.encode()) <= hi:
            return key
    raise RuntimeError(f"no key found for slots {lo}-{hi}")


def main():
    args = sys.argv[1:]
    writes = int(args[args.index("--writes") + 1])
    args = args[: args.index("--writes")]
    victim_pid, victim_port = int(args[0]), int(args[1])
    survivors = [int(p) for p in args[2:]]
    keys = [key_in(lo, hi) for lo, hi in victim_ranges(victim_port)]
    victim = redis.Redis(host="127.0.0.1", port=victim_port)
    acked = {}
    for key in keys:
        for _ in range(writes):
            acked[key] = victim.incr(key)
    os.kill(victim_pid, signal.SIGKILL)
    killed = time.monotonic()
    clients = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=2) for p in survivors]
    served, first_value = {}, {}
    deadline = killed + 120
    while len(served) < len(keys) and time.monotonic() < deadline:
        for key in keys:
            if key in served:
                continue
            for client in clients:
                try:
                    value = client.incr(key)
                except Exception:  # MOVED to the dead node, CLUSTERDOWN, TRYAGAIN...
                    continue
                served[key] = time.monotonic() - killed
                first_value[key] = value
                break
        time.sleep(0.01)
    wrong = [k for k in served if first_value[k] != acked[k] + 1]
    print(
        json.dumps(
            {
                "keys": len(keys),
                "served_again": len(served),
                "first_served_s": round(min(served.values()), 3) if served else None,
                "all_served_s": round(max(served.values()), 3) if len(served) == len(keys) else None,
                "lost_or_doubled": wrong,
            }
        )
    )


if __name__ == "__main__":
    main()
