#!/usr/bin/env python3
"""Deterministic route tables and feed destinations for the routing benchmarks.

Writes, under --out-dir with base name --name:
  NAME.routes        the daemon's routes_file: "PREFIX VIA" lines, VIA being
                     10.0.0.2 (port 0) or 10.0.1.2 (port 1)
  NAME.l3fwd-v4.cfg  the same routes for l3fwd --rule_ipv4: "R<PREFIX> <port>"
  NAME.l3fwd-v6.cfg  one IPv6 route for --rule_ipv6 (l3fwd rejects a rule file
                     with none, and with only one of the two files it silently
                     falls back to its built-in routes)
  NAME.dst-p0.txt,   destination addresses of the feed of port 0 / port 1, one
  NAME.dst-p1.txt    per line, for mkfeed.py --dst-list
and prints one summary line (key=value) on stdout, among them exp_p0 = the
share of the feed that the longest-prefix match sends to port 0 (and
exp_p0_from0 / exp_p0_from1: the same for the feed of port 0 / port 1).

Routes: --count distinct IPv4 prefixes with lengths /16../32 drawn with weights
shaped like a BGP table (/24 dominant, /22-/23 next, a few percent of /25-/32
more-specifics), addresses uniform outside the special ranges listed in
EXCLUDED (which also keeps them off the ports' 10.0.0.0/24 and 10.0.1.0/24
and off the feed's 172.16.0.0/12 sources); each route goes to port 0 or 1 at
random. Routes nest like real tables (a /24 inside a /16 is fine).

Feed destinations: for each port, --dsts routes picked at random (distinct
while the table has enough), and a random host inside each (network and
broadcast addresses avoided for /30 and shorter). Every destination is thus
covered by the route it was drawn from; its output port is the longest match,
which may be a more-specific route, computed here with the same table.

Everything derives from --seed: the same arguments write the same files.
"""
import argparse
import collections
import ipaddress
import os
import random
import sys

# Prefix length -> weight (percent), roughly the IPv4 DFZ, plus a tail of
# longer internal more-specifics and host routes.
LEN_WEIGHTS = {
    16: 1.5, 17: 0.8, 18: 1.5, 19: 3.0, 20: 5.0, 21: 6.0, 22: 11.0, 23: 10.0,
    24: 55.0, 25: 0.8, 26: 0.8, 27: 0.7, 28: 0.8, 29: 0.9, 30: 0.7, 31: 0.2,
    32: 1.5,
}
EXCLUDED = [ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/3")]
EXCL = [(int(n.network_address), n.prefixlen) for n in EXCLUDED]
VIA = ("10.0.0.2", "10.0.1.2")
V6_ROUTE = "2001:db8:ffff::/48"


def excluded(addr, plen):
    """True when addr/plen overlaps an excluded range."""
    for net, nlen in EXCL:
        m = min(plen, nlen)
        mask = (0xFFFFFFFF << (32 - m)) & 0xFFFFFFFF
        if (addr & mask) == (net & mask):
            return True
    return False


def gen_routes(rng, count):
    lens = list(LEN_WEIGHTS)
    weights = [LEN_WEIGHTS[k] for k in lens]
    seen = set()
    routes = []                      # (addr, plen, port)
    while len(routes) < count:
        batch = rng.choices(lens, weights, k=min(65536, 2 * (count - len(routes)) + 16))
        for plen in batch:
            mask = (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF
            addr = rng.getrandbits(32) & mask
            if (addr, plen) in seen or excluded(addr, plen):
                continue
            seen.add((addr, plen))
            routes.append((addr, plen, rng.getrandbits(1)))
            if len(routes) == count:
                break
    return routes


def lpm_table(routes):
    by_len = {}
    for addr, plen, port in routes:
        by_len.setdefault(plen, {})[addr] = port
    return sorted(by_len.items(), reverse=True)


def lpm(table, ip):
    for plen, d in table:
        port = d.get(ip & ((0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF))
        if port is not None:
            return port, plen
    return None, None


def pick_host(rng, addr, plen):
    size = 1 << (32 - plen)
    if size <= 2:
        return addr + rng.randrange(size)
    return addr + 1 + rng.randrange(size - 2)


def ip(n):
    return str(ipaddress.IPv4Address(n))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, required=True, help="IPv4 routes")
    ap.add_argument("--dsts", type=int, default=2000, help="feed destinations per port")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", required=True)
    a = ap.parse_args()
    if a.count < 1 or a.dsts < 1:
        sys.exit("mkroutes: --count and --dsts must be >= 1")

    rng = random.Random(a.seed)
    routes = gen_routes(rng, a.count)
    table = lpm_table(routes)
    base = os.path.join(a.out_dir, a.name)
    os.makedirs(a.out_dir, exist_ok=True)

    with open(base + ".routes", "w") as f:
        f.write(f"# mkroutes.py --count {a.count} --seed {a.seed}: daemon routes_file\n")
        f.writelines(f"{ip(addr)}/{plen} {VIA[port]}\n" for addr, plen, port in routes)
    with open(base + ".l3fwd-v4.cfg", "w") as f:
        f.write(f"# mkroutes.py --count {a.count} --seed {a.seed}: l3fwd LPM IPv4 rules\n")
        f.writelines(f"R{ip(addr)}/{plen} {port}\n" for addr, plen, port in routes)
    with open(base + ".l3fwd-v6.cfg", "w") as f:
        f.write("# one IPv6 route (the feed is IPv4 only): l3fwd needs both rule files\n")
        f.write(f"R{V6_ROUTE} 0\n")

    out_ports = [0, 0]
    from_feed = [[0, 0], [0, 0]]     # [feed][output port]
    hit_len = {}
    for p in (0, 1):
        if a.dsts <= len(routes):
            chosen = rng.sample(routes, a.dsts)
        else:
            chosen = [routes[i % len(routes)] for i in range(a.dsts)]
            rng.shuffle(chosen)
        with open(f"{base}.dst-p{p}.txt", "w") as f:
            for addr, plen, _ in chosen:
                host = pick_host(rng, addr, plen)
                port, mlen = lpm(table, host)
                out_ports[port] += 1
                from_feed[p][port] += 1
                hit_len[mlen] = hit_len.get(mlen, 0) + 1
                f.write(ip(host) + "\n")

    long24 = len({addr >> 8 for addr, plen, _ in routes if plen > 24})
    by_len = collections.Counter(plen for _, plen, _ in routes)
    hist = ",".join(f"/{k}:{by_len[k]}" for k in LEN_WEIGHTS)
    print(f"mkroutes name={a.name} routes={len(routes)} seed={a.seed} "
          f"to_p0={sum(1 for r in routes if r[2] == 0)} tbl8_groups={long24} "
          f"dsts_per_port={a.dsts} exp_p0={out_ports[0] / sum(out_ports):.3f} "
          f"exp_p0_from0={from_feed[0][0] / a.dsts:.4f} "
          f"exp_p0_from1={from_feed[1][0] / a.dsts:.4f} "
          f"matched_lens={len(hit_len)} lens={hist}")


if __name__ == "__main__":
    main()
