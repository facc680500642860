#!/usr/bin/env python3
"""Deterministic firewall rule set for the acl1k_route benchmark.

Writes --out: `[[acl.rule]]` tables (TOML) for the daemon's [acl] section, to
be placed after `[acl]` / `default = "allow"`; prints one summary line.

The mix imitates an edge firewall, first match wins:
  - deny sources: blocklisted / bogon source prefixes (/8../32), any protocol
  - deny service ports: TCP/UDP to risky ports and ranges (telnet, SMB,
    NetBIOS 135-139, RDP, SQL, ...) towards server prefixes, or everywhere
  - allow services: TCP 22/80/443/8080-8090/..., UDP 53/123/500/4500/...
    towards server prefixes, often from any source, sometimes with client
    source port ranges (1024-65535)
  - site-to-site: allow src prefix -> dst prefix, any protocol or one
  - ICMP: allow or deny ICMP from / to prefixes
  - a few IPv6 rules of the same kinds (the feed is IPv4; they make the
    daemon build its IPv6 context too, as a real rule set would)
plus one explicit allow for the feed's traffic (UDP from its source prefix to
port --feed-dport) at about three quarters of the list.

No rule denies a feed packet: every --feed pcap is read and each deny rule
that would match one of its frames is drawn again (so the whole feed is
forwarded, as in route_1k). Everything derives from --seed.
"""
import argparse
import ipaddress
import random
import struct
import sys

TCP, UDP, ICMP = 6, 17, 1
PROTO_NAME = {TCP: "tcp", UDP: "udp", ICMP: "icmp"}
RISKY = [(23, 23), (135, 139), (445, 445), (1433, 1434), (3389, 3389), (5900, 5910),
         (111, 111), (2049, 2049), (161, 162), (69, 69), (1900, 1900), (11211, 11211),
         (6379, 6379), (27017, 27019), (9200, 9300), (137, 139)]
TCP_SERVICES = [(22, 22), (80, 80), (443, 443), (8080, 8090), (25, 25), (587, 587),
                (993, 993), (3306, 3306), (5432, 5432), (8443, 8443), (179, 179),
                (6443, 6443), (9000, 9100)]
UDP_SERVICES = [(53, 53), (123, 123), (500, 500), (4500, 4500), (1194, 1194),
                (51820, 51820), (3478, 3481), (514, 514), (67, 68), (443, 443)]


def read_feed(path):
    """(src, dst, proto, sport, dport) of every IPv4 TCP/UDP frame in a pcap."""
    out = set()
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "IIII", data[off:off + 16])[2]
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(pkt) < 34 or pkt[12:14] != b"\x08\x00":
            continue
        ihl = (pkt[14] & 0xF) * 4
        proto = pkt[23]
        src, dst = struct.unpack("!II", pkt[26:34])
        sport = dport = 0
        if proto in (TCP, UDP) and len(pkt) >= 14 + ihl + 4:
            sport, dport = struct.unpack("!HH", pkt[14 + ihl:14 + ihl + 4])
        out.add((src, dst, proto, sport, dport))
    return out


class Rule:
    def __init__(self, action, src=None, dst=None, proto=None, sport=None, dport=None):
        self.action, self.src, self.dst = action, src, dst
        self.proto, self.sport, self.dport = proto, sport, dport

    def matches_v4(self, t):
        src, dst, proto, sport, dport = t
        for net, addr in ((self.src, src), (self.dst, dst)):
            if net is not None:
                if net.version != 4:
                    return False
                if (addr & int(net.netmask)) != int(net.network_address):
                    return False
        if self.proto is not None and self.proto != proto:
            return False
        for rng, port in ((self.sport, sport), (self.dport, dport)):
            if rng is not None and not rng[0] <= port <= rng[1]:
                return False
        return True

    def toml(self):
        lines = ["[[acl.rule]]", f'action = "{self.action}"']
        if self.src is not None:
            lines.append(f'src = "{self.src}"')
        if self.dst is not None:
            lines.append(f'dst = "{self.dst}"')
        if self.proto is not None:
            lines.append(f'proto = "{PROTO_NAME.get(self.proto, self.proto)}"')
        for key, rng in (("sport", self.sport), ("dport", self.dport)):
            if rng is not None:
                lines.append(f"{key} = {rng[0]}" if rng[0] == rng[1]
                             else f'{key} = "{rng[0]}-{rng[1]}"')
        return "\n".join(lines) + "\n"


def v4net(rng, lo, hi):
    plen = rng.randint(lo, hi)
    addr = rng.getrandbits(32) & ((0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF)
    return ipaddress.IPv4Network((addr, plen))


def v6net(rng, lo, hi):
    plen = rng.randint(lo, hi)
    addr = (0x2001 << 112 | rng.getrandbits(112)) & (((1 << 128) - 1) << (128 - plen))
    return ipaddress.IPv6Network((addr & ((1 << 128) - 1), plen))


def draw(rng):
    """One rule of the mix."""
    k = rng.random()
    v6 = rng.random() < 0.04
    net = (lambda lo, hi: v6net(rng, lo + 16, hi + 96)) if v6 else (lambda lo, hi: v4net(rng, lo, hi))
    if k < 0.25:                                      # blocklisted sources
        return Rule("deny", src=net(8, 32))
    if k < 0.40:                                      # risky service ports
        proto = rng.choice((TCP, UDP))
        return Rule("deny", dst=net(16, 28) if rng.random() < 0.7 else None,
                    proto=proto, dport=rng.choice(RISKY))
    if k < 0.70:                                      # published services
        if rng.random() < 0.65:
            proto, port = TCP, rng.choice(TCP_SERVICES)
        else:
            proto, port = UDP, rng.choice(UDP_SERVICES)
        src = net(8, 24) if rng.random() < 0.3 else None
        sport = (1024, 65535) if rng.random() < 0.3 else None
        return Rule("allow", src=src, dst=net(20, 32), proto=proto, sport=sport, dport=port)
    if k < 0.85:                                      # site-to-site
        proto = rng.choice((None, None, TCP, UDP))
        return Rule(rng.choice(("allow", "allow", "deny")), src=net(12, 24), dst=net(12, 24),
                    proto=proto)
    # ICMP policy
    if v6:
        return Rule("deny", src=net(8, 32))
    return Rule(rng.choice(("allow", "deny")), src=net(8, 24) if rng.random() < 0.5 else None,
                dst=net(16, 28), proto=ICMP)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000, help="rules in total")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--feed", action="append", default=[], help="pcap the rules must pass")
    ap.add_argument("--feed-src", default="172.16.0.0/16")
    ap.add_argument("--feed-dport", type=int, default=5000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.count < 1:
        sys.exit("mkacl: --count must be >= 1")

    feed = set()
    for p in a.feed:
        feed |= read_feed(p)
    rng = random.Random(a.seed)
    feed_rule = Rule("allow", src=ipaddress.ip_network(a.feed_src), proto=UDP,
                     dport=(a.feed_dport, a.feed_dport))
    at = (3 * a.count) // 4
    rules, redrawn = [], 0
    while len(rules) < a.count:
        if len(rules) == at:
            rules.append(feed_rule)
            continue
        r = draw(rng)
        if r.action == "deny" and any(r.matches_v4(t) for t in feed):
            redrawn += 1
            continue
        rules.append(r)

    # Oracle: first match for every feed frame (default allow).
    first = {}
    for t in feed:
        idx = next((i for i, r in enumerate(rules) if r.matches_v4(t)), None)
        first[idx] = first.get(idx, 0) + 1
    denied = sum(n for i, n in first.items() if i is not None and rules[i].action == "deny")
    assert denied == 0, "a deny rule matches the feed"

    with open(a.out, "w") as f:
        f.write(f"# mkacl.py --count {a.count} --seed {a.seed}: {len(rules)} rules, "
                f"generated for scripts/bench.sh\n")
        for r in rules:
            f.write("\n" + r.toml())
    kinds = {}
    for r in rules:
        kinds[r.action] = kinds.get(r.action, 0) + 1
    v6 = sum(1 for r in rules if any(n is not None and n.version == 6 for n in (r.src, r.dst)))
    print(f"mkacl rules={len(rules)} allow={kinds.get('allow', 0)} deny={kinds.get('deny', 0)} "
          f"v6={v6} with_ports={sum(1 for r in rules if r.sport or r.dport)} "
          f"feed_tuples={len(feed)} feed_first_match_rule={','.join(str(k) for k in sorted(first, key=lambda x: -1 if x is None else x))} "
          f"feed_denied={denied} redrawn={redrawn}")


if __name__ == "__main__":
    main()
