#!/usr/bin/env python3
"""A pipelined RESP load with canonical integer ids, for bench/resp-cpu.sh.

redis-benchmark's `__rand_int__` is always 12 zero-padded digits (`counter:000009949260`),
which shardkit stores as a string-keyed row; a real counter service is keyed by canonical
integer ids (`counter:9949260`). This sends `INCR counter:<id>` (or GET) with ids drawn
uniformly from [0, R), in pipelines of P commands over C connections, N commands in all,
and checks every reply (an error reply or a short read stops it with a message).

    python3 bench/resp-load.py --port 6379 -n 500000 -c 50 -P 16 -r 100000000 [--cmd GET]

The batches are built before the clock starts, so the client spends its time on the
sockets only. Bounded: N commands, and --timeout seconds at most.
"""

import argparse
import random
import selectors
import socket
import sys
import time


def build_batches(n, c, p, r, cmd, seed):
    """For each connection, the pipelined batches (bytes) it sends, P commands each."""
    rng = random.Random(seed)
    name = cmd.encode()
    per_conn = [[] for _ in range(c)]
    sent = 0
    conn = 0
    while sent < n:
        k = min(p, n - sent)
        parts = []
        for _ in range(k):
            key = b"counter:%d" % rng.randrange(r)
            parts.append(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name, len(key), key))
        per_conn[conn].append((b"".join(parts), k))
        sent += k
        conn = (conn + 1) % c
    return per_conn


def run(args):
    batches = build_batches(args.n, args.c, args.pipeline, args.r, args.cmd, args.seed)
    sel = selectors.DefaultSelector()
    state = {}
    for i in range(args.c):
        s = socket.create_connection(("127.0.0.1", args.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        state[s] = {"queue": batches[i], "next": 0, "want": 0, "buf": b""}
        sel.register(s, selectors.EVENT_READ)
    start = time.monotonic()
    done = 0

    def send_next(s, st):
        if st["next"] < len(st["queue"]):
            data, k = st["queue"][st["next"]]
            st["next"] += 1
            st["want"] = k
            s.setblocking(True)
            s.sendall(data)
            s.setblocking(False)
            return True
        return False

    open_conns = 0
    for s, st in state.items():
        if send_next(s, st):
            open_conns += 1
    while open_conns:
        if time.monotonic() - start > args.timeout:
            sys.exit(f"resp-load: timed out after {args.timeout} s with {done} of {args.n} replies")
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            st = state[s]
            chunk = s.recv(1 << 16)
            if not chunk:
                sys.exit("resp-load: the server closed a connection")
            buf = st["buf"] + chunk
            # Integer (INCR) and bulk (GET) replies: count complete replies.
            got = 0
            pos = 0
            while True:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    break
                kind = buf[pos:pos + 1]
                if kind == b"-":
                    sys.exit("resp-load: error reply: " + buf[pos:end].decode(errors="replace"))
                if kind == b"$":
                    size = int(buf[pos + 1:end])
                    if size >= 0:
                        if len(buf) < end + 2 + size + 2:
                            break
                        end = end + 2 + size
                pos = end + 2
                got += 1
            st["buf"] = buf[pos:]
            st["want"] -= got
            done += got
            if st["want"] <= 0:
                if not send_next(s, st):
                    sel.unregister(s)
                    s.close()
                    open_conns -= 1
    elapsed = time.monotonic() - start
    print(f"{args.cmd} canonical ids: {done} replies in {elapsed:.2f} s, {done / elapsed:.0f}/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("-n", type=int, default=500_000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-P", dest="pipeline", type=int, default=16)
    ap.add_argument("-r", type=int, default=100_000_000)
    ap.add_argument("--cmd", default="INCR", choices=["INCR", "GET"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    run(ap.parse_args())


if __name__ == "__main__":
    main()
