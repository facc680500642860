#!/usr/bin/env python3
"""Write the load-balancer services of the bench's lb scenarios.

Takes the first --vips addresses of each --dst-list (the routing feed's
destination lists, one IPv4 address a line) as virtual addresses: every VIP
is one UDP service on all ports with --backends IP-in-IP backends
10.2.x.y (the same pool for every VIP, behind the p1 gateway), Maglev table
--table-size, connection tracking on. Writes the services as TOML
(--out, for the template's `# @include LB_SERVICES@`) and, per list, the
VIPs it took (--vip-out PREFIX: PREFIX-p<i>.txt, the feeds' destinations),
then one summary line: `mklb vips=N backends=M table_size=T`.
Standard library only.
"""
import argparse
import ipaddress


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst-list", action="append", required=True)
    ap.add_argument("--vips", type=int, default=4, help="VIPs taken from each list")
    ap.add_argument("--backends", type=int, default=100)
    ap.add_argument("--table-size", type=int, default=65537)
    ap.add_argument("--source", default="10.0.1.1")
    ap.add_argument("--out", required=True)
    ap.add_argument("--vip-out", required=True)
    a = ap.parse_args()
    if not 1 <= a.backends <= 250 * 250:
        ap.error("--backends: 1..62500")
    vips = []
    for i, path in enumerate(a.dst_list):
        with open(path) as f:
            taken = []
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                addr = str(ipaddress.IPv4Address(line))
                if addr not in vips and addr not in taken:
                    taken.append(addr)
                if len(taken) == a.vips:
                    break
        if len(taken) < a.vips:
            ap.error(f"{path}: fewer than {a.vips} addresses")
        with open(f"{a.vip_out}-p{i}.txt", "w") as f:
            f.write("\n".join(taken) + "\n")
        vips += taken
    backends = "".join(
        f'[[lb.service.backend]]\naddress = "10.2.{b // 250}.{b % 250 + 1}"\n\n'
        for b in range(a.backends)
    )
    with open(a.out, "w") as f:
        for n, vip in enumerate(vips):
            f.write(
                f'[[lb.service]]\nname = "vip{n}"\nvip = "{vip}"\nproto = "udp"\n'
                f'method = "ipip"\nsource = "{a.source}"\ntable_size = {a.table_size}\n'
                f"conntrack = true\n\n{backends}"
            )
    print(f"mklb vips={len(vips)} backends={a.backends} table_size={a.table_size}")


if __name__ == "__main__":
    main()
