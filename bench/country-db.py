#!/usr/bin/env python3
"""Writes a small MaxMind DB (IPv4, 24-bit records, GeoLite2-Country's record shape
{"country": {"iso_code": "US"}}) mapping single addresses to countries, for benchmarks
that need the server's GeoIP lookups to find a country (a real database is not
downloaded). Usage: country-db.py OUT ADDRESS=CODE [ADDRESS=CODE ...]
Format: https://maxmind.github.io/MaxMind-DB/"""
import ipaddress
import struct
import sys


def control(kind, size):
    assert size < 29
    return bytes([(kind << 5) | size]) if kind <= 7 else bytes([size, kind - 7])


def uint(kind, value):
    raw = value.to_bytes(8, "big").lstrip(b"\0")
    return control(kind, len(raw)) + raw


def text(s):
    return control(2, len(s)) + s.encode()


def mapping(pairs):
    out = control(7, len(pairs))
    for key, value in pairs:
        out += text(key) + value
    return out


def main():
    out_path, pairs = sys.argv[1], [a.split("=") for a in sys.argv[2:]]
    data, offsets = b"", {}
    for _, code in pairs:
        if code not in offsets:
            offsets[code] = len(data)
            data += mapping([("country", mapping([("iso_code", text(code))]))])
    nodes = [[None, None]]
    for addr, code in pairs:
        bits, node = int(ipaddress.IPv4Address(addr)), 0
        for level in range(32):
            bit = (bits >> (31 - level)) & 1
            if level == 31:
                nodes[node][bit] = ("data", offsets[code])
                break
            if not (isinstance(nodes[node][bit], tuple) and nodes[node][bit][0] == "node"):
                nodes.append([None, None])
                nodes[node][bit] = ("node", len(nodes) - 1)
            node = nodes[node][bit][1]
    count = len(nodes)

    def value(record):
        if record is None:
            return count
        kind, n = record
        return n if kind == "node" else count + 16 + n

    tree = b"".join(struct.pack(">I", value(r))[1:] for pair in nodes for r in pair)
    meta = mapping([
        ("node_count", uint(6, count)),
        ("record_size", uint(5, 24)),
        ("ip_version", uint(5, 4)),
        ("database_type", text("shardkit-bench-country")),
        ("languages", control(11, 1) + text("en")),
        ("binary_format_major_version", uint(5, 2)),
        ("binary_format_minor_version", uint(5, 0)),
        ("build_epoch", uint(9, 1_700_000_000)),
        ("description", mapping([("en", text("countries of bench addresses"))])),
    ])
    with open(out_path, "wb") as f:
        f.write(tree + b"\0" * 16 + data + b"\xAB\xCD\xEFMaxMind.com" + meta)


main()
