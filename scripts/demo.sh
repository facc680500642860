#!/usr/bin/env bash
# The demo: set up the machine, build, then
#   1. forward: generated traffic cross-connected between two net_pcap ports
#      (config/demo.toml);
#   2. router: a firewall in front of a router on two net_pcap ports
#      (config/demo-router.toml), fed with traffic that gets routed (IPv4,
#      IPv6, ECMP), denied by the ACL, TTL-expired (ICMP time exceeded back),
#      malformed, and ARP / ICMP echo requests to the router (answered);
#   3. throughput: the forward pcaps replayed in a loop for 3 s;
# and print a summary read from each run's --stats-json report.
#
# Usage: bash scripts/demo.sh [-- EAL args]   e.g. `-- --no-huge` (every run)
# Environment: DEMO_BIN=PATH runs that binary instead of building the release
# one, DEMO_NO_SETUP=1 skips scripts/setup.sh (tests/tests/demo.rs runs the demo
# this way against the debug build).
set -euo pipefail
cd "$(dirname "$0")/.."

EAL=()
if [ "${1:-}" = "--" ]; then
  shift
  EAL=(-- "$@")
fi

[ "${DEMO_NO_SETUP:-0}" = 1 ] || bash scripts/setup.sh
if [ -n "${DEMO_BIN:-}" ]; then
  BIN=$DEMO_BIN
else
  echo "== building (release)"
  cargo build --release -p dataplane --bin dataplane
  BIN=target/release/dataplane
fi
OUT=build/demo
mkdir -p "$OUT"

# ---------------------------------------------------------------- 1. forward
echo "== forward: generating traffic"
"$BIN" gen --out "$OUT/in0.pcap" --count 20000 --flows 256 --size 64 --ipv6-ratio 0.2 --seed 1
"$BIN" gen --out "$OUT/in1.pcap" --count 10000 --flows 64 --size imix --vlan 100 --seed 2

echo "== forward: checking config/demo.toml"
"$BIN" check config/demo.toml

echo "== forward: one pass over the pcaps"
rm -f "$OUT/out0.pcap" "$OUT/out1.pcap"
"$BIN" run --config config/demo.toml --stop-when-idle 500 --stats-json "$OUT/final.json" "${EAL[@]}"

# ----------------------------------------------------------------- 2. router
# LAN port 10.0.1.1/24 (MAC 02:00:00:00:01:01), WAN port 10.0.2.1/24 (MAC
# 02:00:00:00:02:01); see config/demo-router.toml for the routes and rules.
echo "== router: generating traffic"
R="$OUT/router"
mkdir -p "$R"
LAN=(--src-mac 02:00:00:00:01:50 --dst-mac 02:00:00:00:01:01)
WAN=(--src-mac 02:00:00:00:02:02 --dst-mac 02:00:00:00:02:01)
# LAN hosts to 198.18.1.0/24 and 2001:db8:100::/48, routed out of wan.
"$BIN" gen --out "$R/lan-routed.pcap" "${LAN[@]}" --count 4000 --flows 64 --proto mix \
  --ipv6-ratio 0.25 --src-prefix 10.0.1.64/26 --src-prefix 2001:db8:1::100/120 \
  --dst-prefix 198.18.1.0/24 --dst-prefix 2001:db8:100::/64 --seed 3
# To 203.0.113.0/24: ECMP over both gateways (each flow keeps its path).
"$BIN" gen --out "$R/lan-ecmp.pcap" "${LAN[@]}" --count 1000 --flows 32 \
  --src-prefix 10.0.1.64/26 --dst-prefix 203.0.113.0/24 --seed 4
# TTL / hop limit 1: dropped as ttl_exceeded, ICMP time exceeded back.
"$BIN" gen --out "$R/lan-ttl1.pcap" "${LAN[@]}" --count 60 --flows 8 --ttl 1 --ipv6-ratio 0.25 \
  --src-prefix 10.0.1.64/26 --src-prefix 2001:db8:1::100/120 \
  --dst-prefix 198.18.1.0/24 --dst-prefix 2001:db8:100::/64 --seed 5
# Upstream to the LAN servers 198.18.0.0/24, 2 % of it malformed.
"$BIN" gen --out "$R/wan-routed.pcap" "${WAN[@]}" --count 3000 --flows 64 --proto mix \
  --src-prefix 198.51.100.0/24 --dst-prefix 198.18.0.0/24 --malformed-ratio 0.02 --seed 6
# From 10.0.99.0/24, which ACL rule 1 denies.
"$BIN" gen --out "$R/wan-denied.pcap" "${WAN[@]}" --count 1000 --flows 16 \
  --src-prefix 10.0.99.0/24 --dst-prefix 198.18.0.0/24 --seed 7

# The generator builds UDP/TCP flows only: the frames to the router itself
# (ARP and ICMP echo requests) and SSH to a LAN server (ACL rule 0) are
# built here, then each port's input is these frames followed by the
# generated ones.
python3 - "$R" "$OUT" <<'PY'
import struct, sys
r, out = sys.argv[1], sys.argv[2]

def mac(s): return bytes(int(x, 16) for x in s.split(":"))
def ip(s): return bytes(int(x) for x in s.split("."))
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack(f"!{len(b)//2}H", b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def pad(f): return f + b"\0" * max(0, 60 - len(f))
def eth(dst, src, etype): return mac(dst) + mac(src) + struct.pack("!H", etype)
def ipv4(src, dst, proto, payload, ident):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0, 64, proto, 0, ip(src), ip(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
def arp_request(host_mac, host_ip, target_ip):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac(host_mac), ip(host_ip), b"\0" * 6, ip(target_ip))
    return pad(eth("ff:ff:ff:ff:ff:ff", host_mac, 0x0806) + body)
def echo_request(host_mac, router_mac, host_ip, router_ip, seq):
    icmp = struct.pack("!BBHHH", 8, 0, 0, 0x1234, seq) + bytes(range(32))
    icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
    return eth(router_mac, host_mac, 0x0800) + ipv4(host_ip, router_ip, 1, icmp, seq)
def tcp_syn(src_mac, dst_mac, src, dst, sport, dport):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
    pseudo = ip(src) + ip(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp)) + tcp[18:]
    return pad(eth(dst_mac, src_mac, 0x0800) + ipv4(src, dst, 6, tcp, sport))

def read_pcap(path):
    data = open(path, "rb").read()
    frames, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frames.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return frames
def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1, i, len(fr), len(fr)) + fr)

lan_host, wan_host = "02:00:00:00:01:50", "02:00:00:00:02:50"
lan_r, wan_r = "02:00:00:00:01:01", "02:00:00:00:02:01"
lan = [arp_request(lan_host, "10.0.1.50", "10.0.1.1") for _ in range(4)]
lan += [echo_request(lan_host, lan_r, "10.0.1.50", "10.0.1.1", s) for s in range(10)]
wan = [arp_request(wan_host, "10.0.2.50", "10.0.2.1") for _ in range(4)]
wan += [echo_request(wan_host, wan_r, "10.0.2.50", "10.0.2.1", s) for s in range(10)]
wan += [tcp_syn("02:00:00:00:02:02", wan_r, "198.51.100.7", "198.18.0.10", 40000 + i, 22) for i in range(20)]
for name in ("lan-routed", "lan-ecmp", "lan-ttl1"):
    lan += read_pcap(f"{r}/{name}.pcap")
for name in ("wan-routed", "wan-denied"):
    wan += read_pcap(f"{r}/{name}.pcap")
write_pcap(f"{out}/router-lan-in.pcap", lan)
write_pcap(f"{out}/router-wan-in.pcap", wan)
print(f"router input: lan {len(lan)} frames, wan {len(wan)} frames "
      "(4 ARP + 10 echo requests to the router on each, 20 SSH SYNs on wan)")
PY

echo "== router: checking config/demo-router.toml"
"$BIN" check config/demo-router.toml

echo "== router: one pass over the pcaps"
rm -f "$OUT/router-lan-out.pcap" "$OUT/router-wan-out.pcap"
"$BIN" run --config config/demo-router.toml --stop-when-idle 500 --stats-json "$OUT/router.json" "${EAL[@]}"

# ------------------------------------------------------ 2b. live reload
# The same router, its input replayed in a loop; while traffic flows, the
# route for 198.18.1.0/24 moves from the wan gateway to the lan one and
# `dataplane reload` swaps the new tables in. Counters per port, read from
# the running daemon (`dataplane stats`), show the traffic moving.
echo "== router, live: input replayed in a loop; a reload moves 198.18.1.0/24 from wan to lan"
sed -e 's#,tx_pcap=build/demo/router-lan-out.pcap#,infinite_rx=1#' \
    -e 's#,tx_pcap=build/demo/router-wan-out.pcap#,infinite_rx=1#' \
    -e 's/file_prefix = "dataplane-demo-router"/file_prefix = "dataplane-demo-live"/' \
    config/demo-router.toml > "$OUT/live-router.toml"
printf '\n[mempool]\nmbufs = 65535\n' >> "$OUT/live-router.toml"
"$BIN" run --config "$OUT/live-router.toml" --stats-json "$OUT/live.json" "${EAL[@]}" \
  >"$OUT/live.out" 2>"$OUT/live.log" &
live=$!
for _ in $(seq 120); do
  grep -q "control socket ready" "$OUT/live.log" && break
  kill -0 $live 2>/dev/null || { cat "$OUT/live.log"; exit 1; }
  sleep 0.25
done
sleep 0.5
"$BIN" stats --config "$OUT/live-router.toml" > "$OUT/live-s0.json"; sleep 1
"$BIN" stats --config "$OUT/live-router.toml" > "$OUT/live-s1.json"
sed -i '/prefix = "198.18.1.0\/24"/{n;s/10.0.2.2/10.0.1.2/}' "$OUT/live-router.toml"
"$BIN" reload --config "$OUT/live-router.toml" | tee "$OUT/live-reload.txt"
"$BIN" stats --config "$OUT/live-router.toml" > "$OUT/live-s2.json"; sleep 1
"$BIN" stats --config "$OUT/live-router.toml" > "$OUT/live-s3.json"
kill -INT $live
wait $live || { cat "$OUT/live.log"; exit 1; }

# ------------------------------------------------------------- 3. throughput
echo "== throughput (forward pcaps replayed in a loop for 3 s, no TX file)"
sed -e "s#rx_pcap=build/demo/in0.pcap,tx_pcap=build/demo/out0.pcap#rx_pcap=$OUT/in0.pcap,infinite_rx=1#" \
    -e "s#rx_pcap=build/demo/in1.pcap,tx_pcap=build/demo/out1.pcap#rx_pcap=$OUT/in1.pcap,infinite_rx=1#" \
    -e 's/file_prefix = "dataplane-demo"/file_prefix = "dataplane-demo-perf"/' \
    -e 's/^mbufs = 0 .*/mbufs = 65535/' \
    config/demo.toml > "$OUT/perf.toml"
"$BIN" run --config "$OUT/perf.toml" --duration 3 --stats-json "$OUT/perf.json" "${EAL[@]}" >/dev/null 2>"$OUT/perf.log" || {
  cat "$OUT/perf.log"; exit 1; }

# ---------------------------------------------------------------- summary
python3 - "$OUT" <<'PY'
import json, sys, struct
out = sys.argv[1]
def frames(path):
    data = open(path, "rb").read()
    fs, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        fs.append(data[off + 16: off + 16 + incl])
        off += 16 + incl
    return fs
def kind(f):
    """What a frame the router sent is, from its headers."""
    off, et = 14, struct.unpack_from("!H", f, 12)[0]
    while et in (0x8100, 0x88a8):
        et, off = struct.unpack_from("!H", f, off + 2)[0], off + 4
    if et == 0x0806:
        return {1: "ARP request", 2: "ARP reply"}.get(struct.unpack_from("!H", f, off + 6)[0], "ARP")
    if et == 0x0800:
        if f[off + 9] == 1:
            t = f[off + (f[off] & 15) * 4]
            return {0: "ICMP echo reply", 11: "ICMP time exceeded"}.get(t, "routed IPv4")
        return "routed IPv4"
    if et == 0x86dd:
        if f[off + 6] == 58:
            return {129: "ICMPv6 echo reply", 3: "ICMPv6 time exceeded", 136: "neighbour advert"}.get(f[off + 40], "routed IPv6")
        return "routed IPv6"
    return "other"
def counts(d):
    return ", ".join(f"{k}={v}" for k, v in d.items()) if d else "(none)"

reports = {name: json.load(open(f"{out}/{name}.json")) for name in ("final", "router", "live", "perf")}
r, rt, p = reports["final"], reports["router"], reports["perf"]
print()
print("=================== demo summary ===================")
print("1. forward (config/demo.toml)")
for port in r["ports"]:
    print(f"  port {port['name']:<5} in {port['ipackets']:>8}  out {port['opackets']:>8}")
print(f"  pcap files: in0 {len(frames(out+'/in0.pcap'))} -> out1 {len(frames(out+'/out1.pcap'))}, "
      f"in1 {len(frames(out+'/in1.pcap'))} -> out0 {len(frames(out+'/out0.pcap'))}")
print("  drops by reason: " + counts(r["drops"]))

print("2. router: acl + route (config/demo-router.toml)")
for port in rt["ports"]:
    sent = {}
    for f in frames(f"{out}/router-{port['name']}-out.pcap"):
        sent[kind(f)] = sent.get(kind(f), 0) + 1
    print(f"  port {port['name']:<5} in {port['ipackets']:>8}  out {port['opackets']:>8}: {counts(sent)}")
print("  drops by reason: " + counts(rt["drops"]))
print("  events: " + counts(rt["events"]))
acl = rt["stages"]["acl"]
hits = acl["rule_hits"]
print("  ACL hits: " + ", ".join([f"rule {i}={h}" for i, h in enumerate(hits[:-1])] + [f"default={hits[-1]}"])
      + f"; flow cache hits={acl['flow_cache']['hits']} misses={acl['flow_cache']['misses']}")
t = rt["tables"]
print(f"  tables: {t['routes_v4']} IPv4 + {t['routes_v6']} IPv6 routes, {t['nexthops']} next hops, "
      f"{t['ecmp_groups']} ECMP group, {t['neighbors']} neighbours")

print("2b. live reload: 198.18.1.0/24 moved from wan to lan under traffic")
live = [json.load(open(f"{out}/live-s{i}.json")) for i in range(4)]
def rate(a, b, name):
    out_of = lambda s: next(p["opackets"] for p in s["ports"] if p["name"] == name)
    return out_of(b) - out_of(a)
for name in ("lan", "wan"):
    print(f"  port {name:<5} out per second: before {rate(live[0], live[1], name):>9}  "
          f"after {rate(live[2], live[3], name):>9}")
print("  reload: " + open(f"{out}/live-reload.txt").read().strip())
lv = reports["live"]
print(f"  whole run: rx={lv['rx']} tx={lv['tx']} dropped={lv['dropped']}, "
      f"tables generation {lv['reloads']['generation']}, reloads {lv['reloads']['reloads']}")

busy = sum(w["busy_cycles"] for w in p["workers"]) / max(1, sum(w["total_cycles"] for w in p["workers"]))
print(f"3. throughput: {p['rx']/p['duration_s']/1e6:.2f} Mpps forwarded on 1 core "
      f"(pcap replay, {p['duration_s']:.1f} s, worker busy {busy:.0%}, hugepages={p['hugepages']})")
leaks = {name: rep["mempool"]["in_use"] for name, rep in reports.items()}
print("====================================================")
if any(leaks.values()):
    print("mempool: mbufs still in use at exit: " + counts(leaks))
    sys.exit(1)
print(f"mempool: every run gave back all its mbufs, 0 in use at exit (no leak)")
PY
