#!/usr/bin/env python3
"""Write a pcap of synthetic IPv4/UDP frames for the benchmark feed.

Fallback for `dataplane gen` (same flags where they overlap), standard library
only. Frame i belongs to flow i % flows; flow f goes to destination prefix
f % len(prefixes), host 1 + (f // len(prefixes)) % hosts, and has its own
source address and UDP source port, so every frame of a flow is identical.
With --dst-list FILE (one IPv4 address a line), flow f instead goes to line
f % lines of FILE (the routing scenarios: destinations spread over routes).
--size is the length of each pcap record (no FCS in the capture).
"""
import argparse
import ipaddress
import struct
import sys


def mac(text):
    parts = text.split(":")
    if len(parts) != 6:
        raise argparse.ArgumentTypeError(f"bad MAC {text!r}")
    return bytes(int(p, 16) for p in parts)


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(dst_mac, src_mac, src_ip, dst_ip, sport, dport, size, ident):
    ip_len = size - 14
    udp_len = ip_len - 20
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, ident & 0xFFFF, 0,
                      64, 17, 0, src_ip.packed, dst_ip.packed)
    hdr = hdr[:10] + struct.pack("!H", csum16(hdr)) + hdr[12:]
    # UDP checksum 0 = "not computed", legal for IPv4.
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0)
    payload = bytes(udp_len - 8)
    return dst_mac + src_mac + b"\x08\x00" + hdr + udp + payload


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--flows", type=int, default=256)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--dst-prefix", action="append", default=[],
                    help="IPv4 prefix, repeatable (default 198.18.0.0/24)")
    ap.add_argument("--dst-list", help="file of destination addresses, one a line "
                    "(replaces --dst-prefix)")
    ap.add_argument("--src-prefix", default="10.0.0.0/16")
    ap.add_argument("--dst-mac", type=mac, default=mac("02:70:63:61:70:00"))
    ap.add_argument("--src-mac", type=mac, default=mac("02:00:00:00:00:01"))
    ap.add_argument("--dport", type=int, default=5000)
    a = ap.parse_args()

    if a.size < 60 or a.size > 9000:
        sys.exit("mkfeed: --size must be 60..9000")
    if a.count < 1 or a.flows < 1:
        sys.exit("mkfeed: --count and --flows must be >= 1")
    prefixes = [ipaddress.ip_network(p) for p in (a.dst_prefix or ["198.18.0.0/24"])]
    dsts = []
    if a.dst_list:
        with open(a.dst_list) as f:
            dsts = [ipaddress.IPv4Address(line.strip()) for line in f
                    if line.strip() and not line.startswith("#")]
        if not dsts:
            sys.exit(f"mkfeed: no addresses in {a.dst_list}")
    src_net = ipaddress.ip_network(a.src_prefix)

    flows = []
    for f in range(a.flows):
        net = prefixes[f % len(prefixes)]
        hosts = max(1, net.num_addresses - 2)
        dst = net.network_address + 1 + (f // len(prefixes)) % hosts
        if dsts:
            dst = dsts[f % len(dsts)]
        src = src_net.network_address + 1 + f % max(1, src_net.num_addresses - 2)
        flows.append(frame(a.dst_mac, a.src_mac, src, dst,
                           1024 + f % 64000, a.dport, a.size, f))

    with open(a.out, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(a.count):
            data = flows[i % a.flows]
            out.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(data), len(data)))
            out.write(data)
    print(f"mkfeed: wrote {a.count} frames ({a.flows} flows, {a.size} B, "
          f"dst {a.dst_list or ' '.join(map(str, prefixes))}) to {a.out}")


if __name__ == "__main__":
    main()
