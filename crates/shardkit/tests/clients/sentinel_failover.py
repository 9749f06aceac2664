"""redis-py's Sentinel against shardkit nodes (every node is a sentinel of its store).

    sentinel_failover.py SENTINELS STORE COUNT
      SENTINELS: host:port,host:port,...   STORE: the store (master) name

First asks for the master and the replicas over RESP2 and RESP3 ("discovered PROTO
MASTER REPLICAS"). Then increments through `Sentinel.master_for(STORE)` (redis-py's
defaults) COUNT times, each with its own txid; an increment that fails (the master
died, a replica refused it, no master yet) is sent again with the same txid, so it is
counted once. Prints "master HOST:PORT" before and after, "acked N" every 50, and last
"ok COUNT RETRIES".
"""

import sys
import time

from redis.exceptions import ConnectionError, ResponseError, TimeoutError
from redis.sentinel import Sentinel

SENTINELS = [
    (host, int(port)) for host, port in (a.rsplit(":", 1) for a in sys.argv[1].split(","))
]
STORE = sys.argv[2]
COUNT = int(sys.argv[3])
TIMEOUTS = {"socket_timeout": 2, "socket_connect_timeout": 1}


def addr(pair):
    return f"{pair[0]}:{pair[1]}"


for proto in (2, 3):
    s = Sentinel(SENTINELS, sentinel_kwargs=dict(TIMEOUTS, protocol=proto), **TIMEOUTS)
    master = s.discover_master(STORE)
    replicas = sorted(addr(r) for r in s.discover_slaves(STORE))
    print(f"discovered {proto} {addr(master)} {','.join(replicas)}", flush=True)

sentinel = Sentinel(SENTINELS, **TIMEOUTS)
print(f"master {addr(sentinel.discover_master(STORE))}", flush=True)
client = sentinel.master_for(STORE, **TIMEOUTS)
retries = 0
for n in range(COUNT):
    txid = f"py-{n}"
    deadline = time.monotonic() + 60
    while True:
        try:
            client.execute_command("COUNTER.INCRBY", "py:1", "hits", 1, txid)
            break
        except (ConnectionError, TimeoutError, ResponseError) as e:
            # ReadOnlyError and MasterNotFoundError are among these.
            retries += 1
            if time.monotonic() > deadline:
                raise
            print(f"retry {txid}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            time.sleep(0.05)
    if (n + 1) % 50 == 0:
        print(f"acked {n + 1}", flush=True)
print(f"master {addr(sentinel.discover_master(STORE))}", flush=True)
print(f"ok {COUNT} {retries}", flush=True)
