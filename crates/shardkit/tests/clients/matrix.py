"""The client-matrix scenario with redis-py, as a user would write it (defaults: RESP3).

    matrix.py PORT KEY MODE      MODE: sync2 | sync3 | async3

Runs the shared scenario, prints RESTART and waits for a line on stdin while the test
restarts the server, then checks that the same client object carries on. Exits 1 with
the failed check on stderr.
"""

import asyncio
import sys
import threading
import time

import redis
import redis.asyncio as aioredis

PORT, KEY, MODE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PROTO = 2 if MODE == "sync2" else 3


def check(cond, what):
    if not cond:
        print(f"FAILED [{MODE}]: {what}", file=sys.stderr)
        sys.exit(1)


def expect_error(fn, needle, what, kind=redis.exceptions.RedisError):
    try:
        fn()
    except kind as e:
        check(needle in str(e), f"{what}: error {e!r} should mention {needle!r}")
        return
    check(False, f"{what}: no error")


def wait_for_restart():
    print("RESTART", flush=True)
    sys.stdin.readline()


def scenario(r, tag):
    """The shared scenario on a sync client `r` (decode_responses=True)."""
    check(r.incr(f"{tag}:1") == 1, "INCR")
    check(r.incrby(f"{tag}:1", 5) == 6, "INCRBY")
    check(r.get(f"{tag}:1") == "6", "GET")
    check(r.mget(f"{tag}:1", f"{tag}:2") == ["6", "0"], f"MGET {r.mget(f'{tag}:1', f'{tag}:2')}")
    check(r.hincrby(f"h{tag}:1", "likes", 3) == 3, "HINCRBY")
    check(r.hget(f"h{tag}:1", "likes") == "3", "HGET")
    check(r.hmget(f"h{tag}:1", ["likes", "nope"]) == ["3", None], "HMGET")
    check(r.hgetall(f"h{tag}:1") == {"likes": "3"}, f"HGETALL {r.hgetall(f'h{tag}:1')}")
    expect_error(lambda: r.decrby(f"{tag}:1", 100), "below zero", "DECRBY below zero")
    check(r.get(f"{tag}:1") == "6", "the refused DECRBY kept the value")
    once = [r.execute_command("COUNTER.INCRBY", f"h{tag}:1", "likes", 2, "tx-1") for _ in range(2)]
    check(once == [5, 5], f"COUNTER.INCRBY with a txid counted once: {once}")
    ids = r.execute_command("ID.NEXT", 5, 2)
    check(len(ids) == 2 and int(ids[0]) < int(ids[1]) and int(ids[0]) > 2**53, f"ID.NEXT {ids}")
    one = r.execute_command("ID.NEXT", 5)
    check(int(one) > int(ids[1]), "ID.NEXT after, same shard")
    t1, t2 = r.execute_command("TICKET.NEXT", f"t{tag}"), r.execute_command("TICKET.NEXT", f"t{tag}")
    check((int(t1), int(t2)) == (1, 2), f"TICKET.NEXT {t1} {t2}")
    for i in range(50):
        r.incr(f"s{tag}:{i}")
    keys = set(r.scan_iter(match=f"s{tag}:*", count=10))
    check(keys == {f"s{tag}:{i}" for i in range(50)}, f"SCAN found {len(keys)} of 50")
    info = r.info()
    check("redis_version" in info and "connected_clients" in info, "INFO")
    check(r.info("persistence")["aof_enabled"] == 1, "INFO persistence")
    pipe = r.pipeline(transaction=False)
    for _ in range(1000):
        pipe.incr(f"p{tag}:1")
    replies = pipe.execute()
    check(replies == list(range(1, 1001)), "a pipeline of 1000 INCR answers 1..1000 in order")

    def worker():
        for _ in range(50):
            r.incr(f"th{tag}:1")

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(r.get(f"th{tag}:1") == "1000", "20 threads on one pool: 1000 increments")


def after_restart(call, what):
    """The first command after the restart: the client reconnects by itself (its retry
    policy); allow it a few seconds for the server to be back."""
    deadline = time.time() + 20
    while True:
        try:
            return call()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            check(time.time() < deadline, f"{what}: no reconnect within 20 s")
            time.sleep(0.25)


def run_sync():
    tag = MODE
    bare = redis.Redis(port=PORT, protocol=PROTO, decode_responses=True)
    # redis-py turns `-NOAUTH` into AuthenticationError ("Authentication required").
    expect_error(lambda: bare.incr(f"{tag}:0"), "", "a command without the key",
                 redis.exceptions.AuthenticationError)
    r = redis.Redis(port=PORT, password=KEY, protocol=PROTO, decode_responses=True, max_connections=20)
    scenario(r, tag)
    check(r.incr(f"r{tag}:1") == 1, "INCR before the restart")
    wait_for_restart()
    check(after_restart(lambda: r.incr(f"r{tag}:1"), "INCR after the restart") == 2,
          "the value survived the restart")


async def run_async():
    tag = MODE
    r = aioredis.Redis(port=PORT, password=KEY, protocol=PROTO, decode_responses=True)
    check(await r.incr(f"{tag}:1") == 1, "async INCR")
    check(await r.incrby(f"{tag}:1", 5) == 6, "async INCRBY")
    check(await r.get(f"{tag}:1") == "6", "async GET")
    check(await r.hincrby(f"h{tag}:1", "likes", 3) == 3, "async HINCRBY")
    check(await r.hgetall(f"h{tag}:1") == {"likes": "3"}, "async HGETALL")
    try:
        await r.decrby(f"{tag}:1", 100)
        check(False, "async DECRBY below zero was accepted")
    except redis.exceptions.ResponseError as e:
        check("below zero" in str(e), f"async DECRBY: {e}")
    ids = await r.execute_command("ID.NEXT", 5, 2)
    check(int(ids[0]) < int(ids[1]), "async ID.NEXT")
    async with r.pipeline(transaction=False) as pipe:
        for _ in range(1000):
            pipe.incr(f"p{tag}:1")
        replies = await pipe.execute()
    check(replies == list(range(1, 1001)), "async pipeline of 1000")
    results = await asyncio.gather(*[r.incr(f"g{tag}:1") for _ in range(10)])
    check(sorted(results) == list(range(1, 11)), "10 concurrent INCR on one client")
    keys = {k async for k in r.scan_iter(match=f"p{tag}:*")}
    check(keys == {f"p{tag}:1"}, f"async SCAN {keys}")
    check("redis_version" in await r.info(), "async INFO")
    check(await r.incr(f"r{tag}:1") == 1, "async INCR before the restart")
    await asyncio.get_running_loop().run_in_executor(None, wait_for_restart)
    deadline = time.time() + 20
    while True:
        try:
            value = await r.incr(f"r{tag}:1")
            break
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            check(time.time() < deadline, "async: no reconnect within 20 s")
            await asyncio.sleep(0.25)
    check(value == 2, "async: the value survived the restart")
    await r.aclose()


if MODE == "async3":
    asyncio.run(run_async())
else:
    run_sync()
print(f"ok {MODE} redis-py {redis.__version__}")
