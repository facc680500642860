#!/usr/bin/env python3
"""Check that an app sent every feed destination out of the right port.

Reads the TX captures of port 0 and port 1 (--out0, --out1) of one pass of
the feed (the routing benchmark's feed replayed once, not forever), and the
route table (l3fwd rule file: "R<PREFIX> <port>" lines). For every captured
IPv4 frame it computes the longest-prefix match of its destination and counts
frames sent out of the matching port (ok) and out of another one (wrong).
--dst-list files (the feed's destinations) give the frames to expect: each
destination never seen on any port counts as missing.

Prints one line: `p0=N p1=N ok=N wrong=N missing=N ttl=<TTLs seen>`
(TTL 63 = decremented once from the feed's 64). Exit 0 when wrong and missing
are 0, 1 otherwise.
"""
import argparse
import ipaddress
import struct
import sys


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    endian = "<" if struct.unpack("<I", data[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "IIII", data[off:off + 16])[2]
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", required=True, help="l3fwd IPv4 rule file")
    ap.add_argument("--out0", required=True)
    ap.add_argument("--out1", required=True)
    ap.add_argument("--dst-list", action="append", default=[])
    a = ap.parse_args()

    by_len = {}
    with open(a.rules) as f:
        for line in f:
            if not line.startswith("R"):
                continue
            pfx, port = line[1:].split()
            net = ipaddress.IPv4Network(pfx)
            by_len.setdefault(net.prefixlen, {})[int(net.network_address)] = int(port)
    table = sorted(by_len.items(), reverse=True)

    def lpm(ip):
        for plen, d in table:
            port = d.get(ip & ((0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF))
            if port is not None:
                return port
        return None

    counts = [0, 0]
    ok = wrong = 0
    seen = set()
    ttls = {}
    for port, path in ((0, a.out0), (1, a.out1)):
        for pkt in frames(path):
            if len(pkt) < 34 or pkt[12:14] != b"\x08\x00":
                continue
            counts[port] += 1
            dst = struct.unpack("!I", pkt[30:34])[0]
            seen.add(dst)
            ttls[pkt[22]] = ttls.get(pkt[22], 0) + 1
            if lpm(dst) == port:
                ok += 1
            else:
                wrong += 1
    missing = 0
    for path in a.dst_list:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and int(ipaddress.IPv4Address(line)) not in seen:
                    missing += 1
    print(f"p0={counts[0]} p1={counts[1]} ok={ok} wrong={wrong} missing={missing} "
          f"ttl={','.join(f'{t}:{n}' for t, n in sorted(ttls.items()))}")
    sys.exit(0 if wrong == 0 and missing == 0 and ok > 0 else 1)


if __name__ == "__main__":
    main()
