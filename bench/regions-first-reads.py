#!/usr/bin/env python3
"""Times GET /CODE once per code, in order, on one kept-alive connection: the first read
of each remote link (bench/links-regions.sh). Prints p50 and p99 in ms and the statuses.

    python3 bench/regions-first-reads.py HOST PORT CODES_FILE
"""
import http.client
import sys
import time

host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
codes = [line.strip() for line in open(path) if line.strip()]
conn = http.client.HTTPConnection(host, port, timeout=10)
times, statuses = [], {}
for code in codes:
    start = time.perf_counter()
    conn.request("GET", "/" + code)
    response = conn.getresponse()
    response.read()
    times.append((time.perf_counter() - start) * 1000)
    statuses[response.status] = statuses.get(response.status, 0) + 1
times.sort()
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
print(f"p50 {p(0.50):.2f} ms  p99 {p(0.99):.2f} ms  n {len(times)}  statuses {statuses}")
