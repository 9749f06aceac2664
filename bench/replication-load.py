#!/usr/bin/env python3
"""The load client, lag sampler and failover prober of bench/replication.sh.

    load:     C connections send pipelines of P `INCR counter:<k>` (k uniform in [0, R)),
              optionally followed by `WAIT 1 0` (--wait, for Redis with a replica), and
              count the increments acknowledged: an integer reply to INCR and, with
              --wait, a WAIT reply >= 1 for its pipeline. Optional --rate caps the offered
              increments/s (pipelines are paced on a shared schedule). Bounded: -n
              increments and --duration seconds, whichever comes first.
              Prints JSON {acked, sent, errors, wait_short, secs, rate}.
    lag:      every --every ms for --duration s, asks the leader `ROLE` (its stream seq)
              and the replica `INFO replication` (its applied seq, lag_records, lag_ms),
              and prints JSON lists of samples (see bench/replication.sh for the measure).
    failover: sends `INCR failover:probe` to each of --ports every 5 ms until one
              answers with an integer; prints the ms from --since (a unix time in ns)
              to that acknowledged reply, and which port. Bounded by --timeout.

Standard library only; every reply here is one line (`:n`, `+OK`, `-ERR ...`), so a
reply is a line.
"""

import argparse
import json
import random
import selectors
import socket
import sys
import time


def connect(port, timeout=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def cmd(*parts):
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        p = p if isinstance(p, bytes) else str(p).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(p), p))
    return b"".join(out)


def load(a):
    rng = random.Random(a.seed)
    keys = [b"counter:%d" % i for i in range(a.r)]
    wait = cmd("WAIT", "1", "0") if a.wait else b""
    # A few hundred prebuilt pipelines per connection, reused round robin, so the
    # client's time goes to the sockets.
    pipes = [b"".join(cmd(b"INCR", rng.choice(keys)) for _ in range(a.P)) + wait
             for _ in range(256)]
    lines_per = a.P + (1 if a.wait else 0)
    sel = selectors.DefaultSelector()
    conns = {}
    for _ in range(a.c):
        s = connect(a.port)
        s.setblocking(False)
        conns[s] = {"buf": b"", "busy": False, "i": rng.randrange(256)}
        sel.register(s, selectors.EVENT_READ)
    acked = sent = errors = wait_short = 0
    interval = a.P / a.rate if a.rate else 0.0  # seconds between pipelines, all conns
    start = time.monotonic()
    next_at = start
    end = start + a.duration

    def send(s, st):
        nonlocal sent
        st["i"] = (st["i"] + 1) % 256
        s.setblocking(True)
        s.sendall(pipes[st["i"]])
        s.setblocking(False)
        st["busy"] = True
        sent += a.P

    while True:
        now = time.monotonic()
        if now >= end or (sent >= a.n and not any(st["busy"] for st in conns.values())):
            break
        # Idle connections send while the budget and the schedule allow.
        for s, st in conns.items():
            if st["busy"] or sent >= a.n:
                continue
            if a.rate:
                if now < next_at:
                    break
                next_at += interval
                if next_at < now - 0.05:  # behind by >50 ms: do not burst to catch up
                    next_at = now
            send(s, st)
        wait_for = max(0.0, min(next_at - now, 0.05)) if a.rate else 0.05
        for key, _ in sel.select(timeout=wait_for):
            s = key.fileobj
            st = conns[s]
            chunk = s.recv(1 << 16)
            if not chunk:
                sys.exit("replication-load: the server closed a connection")
            st["buf"] += chunk
            if st["buf"].count(b"\r\n") < lines_per:
                continue
            lines = st["buf"].split(b"\r\n")
            st["buf"] = b"\r\n".join(lines[lines_per:])
            replies = lines[:lines_per]
            ok = sum(1 for r in replies[: a.P] if r[:1] == b":")
            errors += a.P - ok
            if a.wait:
                w = replies[-1]
                if w[:1] == b":" and int(w[1:]) >= 1:
                    acked += ok
                else:
                    wait_short += 1
            else:
                acked += ok
            st["busy"] = False
    secs = time.monotonic() - start
    print(json.dumps({"acked": acked, "sent": sent, "errors": errors,
                      "wait_short": wait_short, "secs": round(secs, 3),
                      "rate": round(acked / secs, 1)}))


def request(s, payload, bulk=False):
    """Sends one command; returns its reply: one line, or with bulk a bulk string
    (`$len\r\n...\r\n`, or `$-1\r\n` for none)."""
    s.sendall(payload)
    buf = b""
    while True:
        buf += s.recv(65536)
        if b"\r\n" not in buf:
            continue
        head = buf.index(b"\r\n")
        if not bulk or buf[:1] != b"$":
            return buf
        n = int(buf[1:head])
        if n < 0 or len(buf) >= head + 2 + n + 2:
            return buf


def lag(a):
    leader, replica = connect(a.leader, 5), connect(a.replica, 5)
    role = cmd("ROLE")
    info = cmd("INFO", "replication")
    incr, get = cmd("INCR", "lag:probe"), cmd("GET", "lag:probe")
    samples = []
    end = time.monotonic() + a.duration
    nxt = time.monotonic()
    while time.monotonic() < end:
        t = time.monotonic()
        # ROLE on the leader: *3 $6 master :<seq> *0
        r = request(leader, role).split(b"\r\n")
        lseq = int(r[3][1:])
        body = request(replica, info, bulk=True).decode()
        f = dict(line.split(":", 1) for line in body.split("\r\n") if ":" in line)
        # Probe: one INCR of lag:probe on the leader, then GET it from the replica in a
        # tight loop (5 s at most) until it shows that value: ms from the leader's ack
        # to the replica serving the increment.
        v = int(request(leader, incr)[1:])
        acked = time.monotonic()
        seen = None
        while time.monotonic() - acked < 5:
            r = request(replica, get, bulk=True)
            if r[:3] != b"$-1" and int(r.split(b"\r\n")[1]) >= v:
                seen = time.monotonic()
                break
        visible_ms = round((seen - acked) * 1000, 2) if seen else None
        samples.append([round(t, 4), lseq, int(f["stream_applied_seq"]),
                        int(f["lag_records"]), int(f["lag_ms"]), visible_ms])
        nxt += a.every / 1000
        time.sleep(max(0.0, nxt - time.monotonic()))
    print(json.dumps(samples))


def failover(a):
    ports = [int(p) for p in a.ports.split(",")]
    deadline = time.monotonic() + a.timeout
    conns = {}
    while time.monotonic() < deadline:
        for p in ports:
            try:
                if p not in conns:
                    conns[p] = connect(p, 0.5)
                s = conns[p]
                s.sendall(cmd("INCR", "failover:probe"))
                r = s.recv(4096)
                if r[:1] == b":":
                    ms = (time.time_ns() - a.since) / 1e6
                    print(json.dumps({"ms": round(ms, 1), "port": p}))
                    return
                if not r:
                    raise OSError("closed")
            except OSError:
                conns.pop(p, None)
        time.sleep(0.005)
    sys.exit("replication-load: no write acknowledged before the timeout")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("load")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("-c", type=int, default=50)
    p.add_argument("-P", type=int, default=16)
    p.add_argument("-r", type=int, default=100_000)
    p.add_argument("--wait", action="store_true")
    p.add_argument("--rate", type=float, default=0.0)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=17)
    p = sub.add_parser("lag")
    p.add_argument("--leader", type=int, required=True)
    p.add_argument("--replica", type=int, required=True)
    p.add_argument("--every", type=float, default=10.0)
    p.add_argument("--duration", type=float, default=10.0)
    p = sub.add_parser("failover")
    p.add_argument("--ports", required=True)
    p.add_argument("--since", type=int, required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    {"load": load, "lag": lag, "failover": failover}[a.what](a)


if __name__ == "__main__":
    main()
