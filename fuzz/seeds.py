#!/usr/bin/env python3
"""Seed inputs for the fuzz targets, `pipeline` and `route_noeal` (format:
fuzz/harness.rs; both routers have the same ports and routes).

    seeds.py wrap OUT_DIR PORT FRAME_DIR...   one seed per raw frame file
    seeds.py hand OUT_DIR                     hand-made frames and bursts

`hand` builds what the traffic generator does not: ARP and NDP to the
router's own addresses, ICMP echo to it, TTL/hop limit 1, QinQ, IPv6
extension headers (good and cut short), unresolved next hops, MTU, ACL hits,
mbuf chains (trimmed, too big, short, broken) and mixed bursts. The addresses are those of `harness::CONFIG`: port 0 (lan)
is 10.0.1.1/24, 10.0.3.1/24, 2001:db8:1::1/64, fe80::1; port 1 (wan) is
10.0.2.1/24, 2001:db8:2::1/64. Standard library only.
"""
import hashlib
import ipaddress
import os
import struct
import sys

LAN_MAC = bytes.fromhex("020000000101")
WAN_MAC = bytes.fromhex("020000000201")
PEER1 = bytes.fromhex("020000000102")  # 10.0.1.2 on lan
PEER2 = bytes.fromhex("020000000202")  # 10.0.2.2 on wan
HOST = bytes.fromhex("02000000aa01")
BCAST = b"\xff" * 6


VEC_PACKET_MAX = 2048  # dataplane/src/pipeline/packet.rs


def encode(in_port, frames, clock_step=0):
    out = bytes([(in_port & 1) | ((clock_step & 0x7F) << 1)])
    for f in frames:
        assert len(f) <= VEC_PACKET_MAX, "longer frames are chains: encode_chain"
        out += struct.pack(">H", len(f)) + f
    return out


def encode_chain(first, more, broken=False):
    """One frame of the input format (fuzz/harness.rs) that is an mbuf chain:
    `first` zero-padded to VEC_PACKET_MAX as its first segment, then `more`
    bytes in later segments; `broken`: its length disagrees with them."""
    n = VEC_PACKET_MAX + more
    assert len(first) <= VEC_PACKET_MAX and 0 < more and n < 0x8000
    return struct.pack(">H", n | (0x8000 if broken else 0)) + first.ljust(VEC_PACKET_MAX, b"\0")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(a):
    return ipaddress.IPv4Address(a).packed


def ip6(a):
    return ipaddress.IPv6Address(a).packed


def eth(dst, src, ethertype, payload, tags=()):
    """Ethernet frame; `tags` = [(tpid, vid), ...] outermost first; padded to 60."""
    h = dst + src
    for tpid, vid in tags:
        h += struct.pack(">HH", tpid, vid)
    f = h + struct.pack(">H", ethertype) + payload
    return f + b"\0" * max(0, 60 - len(f))


def ipv4(src, dst, proto, payload, ttl=64, ident=1, frag=0):
    h = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, ttl,
                    proto, 0, ip4(src), ip4(dst))
    h = h[:10] + struct.pack(">H", csum(h)) + h[12:]
    return h + payload


def ipv6(src, dst, nh, payload, hop=64):
    return struct.pack(">IHBB16s16s", 0x60000000, len(payload), nh, hop, ip6(src),
                       ip6(dst)) + payload


def udp(sport, dport, data=b"fuzz"):
    return struct.pack(">HHHH", sport, dport, 8 + len(data), 0) + data


def tcp(sport, dport):
    return struct.pack(">HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 1024, 0, 0)


def icmp4(typ, code, rest, data):
    m = struct.pack(">BBH", typ, code, 0) + rest + data
    return m[:2] + struct.pack(">H", csum(m)) + m[4:]


def icmp6(src, dst, typ, code, body):
    m = struct.pack(">BBH", typ, code, 0) + body
    pseudo = ip6(src) + ip6(dst) + struct.pack(">I3xB", len(m), 58)
    return m[:2] + struct.pack(">H", csum(pseudo + m)) + m[4:]


def arp(op, smac, sip, tmac, tip):
    return struct.pack(">HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, smac, ip4(sip), tmac, ip4(tip))


def solicited(target):
    t = ip6(target)
    return ("ff02::1:ff%02x:%02x%02x" % (t[13], t[14], t[15]),
            bytes([0x33, 0x33, 0xFF]) + t[13:])


def ns_frame(src, target, options, smac=PEER1, hop=255):
    dst, dmac = solicited(target)
    m = icmp6(src, dst, 135, 0, b"\0" * 4 + ip6(target) + options)
    return eth(dmac, smac, 0x86DD, ipv6(src, dst, 58, m, hop=hop))


DF = 0x4000  # IPv4 flags: don't fragment


def udp4_frame(src, dst, ttl=64, dmac=LAN_MAC, smac=HOST, sport=4000, dport=5000, data=b"fuzz",
               tags=(), frag=0):
    return eth(dmac, smac, 0x0800, ipv4(src, dst, 17, udp(sport, dport, data), ttl=ttl,
                                        frag=frag), tags=tags)


def udp6_frame(src, dst, hop=64, dmac=LAN_MAC, smac=HOST, sport=4000, dport=5000, data=b"fuzz"):
    return eth(dmac, smac, 0x86DD, ipv6(src, dst, 17, udp(sport, dport, data), hop=hop))


def hand():
    """(name, input bytes). Names starting with a letter a..z are stable:
    dataplane/tests/fuzz_regressions.rs keeps some and checks their outcome."""
    s = {}
    # ARP who-has 10.0.1.1 (ours) tell 10.0.1.2, on lan.
    s["arp-request-ours"] = encode(0, [eth(BCAST, PEER1, 0x0806,
                                           arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1"))])
    # ARP request for an address that is not ours; gratuitous reply; cut short.
    s["arp-request-other"] = encode(0, [eth(BCAST, PEER1, 0x0806,
                                            arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.9"))])
    s["arp-reply-learn"] = encode(1, [eth(WAN_MAC, bytes.fromhex("0200000002aa"), 0x0806,
                                          arp(2, bytes.fromhex("0200000002aa"), "10.0.2.3",
                                              WAN_MAC, "10.0.2.1"))])
    s["arp-truncated"] = encode(0, [(BCAST + PEER1 + b"\x08\x06" +
                                     arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1"))[:30]])
    # QinQ (802.1ad outer, 802.1Q inner) ARP to us: the reply keeps the tags.
    s["qinq-arp-ours"] = encode(0, [eth(BCAST, PEER1, 0x0806,
                                        arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1"),
                                        tags=[(0x88A8, 100), (0x8100, 200)])])
    # QinQ UDP forwarded lan -> wan; a third tag is unsupported.
    s["qinq-udp4"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5",
                                           tags=[(0x88A8, 100), (0x8100, 200)])])
    s["qinq-three-tags"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5",
                                                 tags=[(0x88A8, 1), (0x8100, 2), (0x8100, 3)])])
    s["vlan99-acl-deny"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", tags=[(0x8100, 99)])])
    # NS for our address with a source link-layer option, and the same with a
    # zero-length option (invalid, RFC 4861 4.6) and with an option cut short.
    slla = b"\x01\x01" + PEER1
    s["ns-ours"] = encode(0, [ns_frame("2001:db8:1::2", "2001:db8:1::1", slla)])
    s["ns-bad-option"] = encode(0, [ns_frame("2001:db8:1::2", "2001:db8:1::1",
                                             b"\x01\x00" + PEER1)])
    s["ns-option-overruns"] = encode(0, [ns_frame("2001:db8:1::2", "2001:db8:1::1",
                                                  b"\x01\x02" + PEER1)])
    s["ns-dad"] = encode(0, [ns_frame("::", "2001:db8:1::1", b"")])
    s["ns-link-local"] = encode(0, [ns_frame("fe80::2", "fe80::1", slla)])
    s["ns-hop-not-255"] = encode(0, [ns_frame("2001:db8:1::2", "2001:db8:1::1", slla, hop=64)])
    # NA from a neighbour (learned, consumed).
    na = icmp6("2001:db8:2::7", "2001:db8:2::1", 136, 0,
               struct.pack(">I", 0x60000000) + ip6("2001:db8:2::7") + b"\x02\x01" + PEER2)
    s["na-learn"] = encode(1, [eth(WAN_MAC, PEER2, 0x86DD,
                                   ipv6("2001:db8:2::7", "2001:db8:2::1", 58, na, hop=255))])
    # Echo to our addresses.
    s["echo4-ours"] = encode(0, [eth(LAN_MAC, HOST, 0x0800, ipv4(
        "10.0.1.5", "10.0.1.1", 1, icmp4(8, 0, struct.pack(">HH", 7, 1), b"ping" * 4)))])
    # Identifier, sequence and data all zero: the reply is all zeros but its
    # checksum, which must be 0xffff (fuzzer finding: was 0x0000).
    s["echo4-all-zero"] = encode(0, [eth(LAN_MAC, HOST, 0x0800, ipv4(
        "10.0.1.5", "10.0.1.1", 1, icmp4(8, 0, b"\0" * 4, b"\0" * 8)))])
    s["echo4-ours-other-subnet"] = encode(0, [eth(LAN_MAC, HOST, 0x0800, ipv4(
        "10.0.1.5", "10.0.2.1", 1, icmp4(8, 0, struct.pack(">HH", 7, 1), b"ping")))])
    e6 = icmp6("2001:db8:1::5", "2001:db8:1::1", 128, 0, struct.pack(">HH", 7, 1) + b"ping")
    s["echo6-ours"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD,
                                     ipv6("2001:db8:1::5", "2001:db8:1::1", 58, e6))])
    # TTL / hop limit 1 on forwarded packets: ICMP time exceeded back.
    s["ttl1-udp4"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", ttl=1)])
    s["ttl1-icmp-error"] = encode(0, [eth(LAN_MAC, HOST, 0x0800, ipv4(
        "10.0.1.5", "198.18.1.5", 1, icmp4(11, 0, b"\0" * 4, b"\0" * 28), ttl=1))])
    s["ttl1-burst-rate-limited"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.%d" % k, ttl=1)
                                              for k in range(20)])
    s["hop1-udp6"] = encode(0, [udp6_frame("2001:db8:1::5", "2001:db8:100::5", hop=1)])
    s["hop1-udp6-vlan"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 17, udp(1, 2, b"x" * 300), hop=1),
        tags=[(0x8100, 5)])])
    # IPv6 extension headers: hop-by-hop + UDP; hop-by-hop whose length runs
    # past the payload; a non-first fragment; a fragment header cut short.
    hbh = bytes([17, 0]) + b"\x01\x04\0\0\0\0"
    s["v6-hbh-udp"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 0, hbh + udp(1000, 2000)))])
    s["v6-ext-truncated"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 0, bytes([17, 8]) + b"\x01\x04\0\0\0\0"))])
    frag = bytes([17, 0]) + struct.pack(">HI", 185 << 3, 0x1234)
    s["v6-frag-middle"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 44, frag + b"\xab" * 16))])
    s["v6-frag-truncated"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 44, frag[:5]))])
    # Unresolved next hops: a connected route (ARP request / NS out), a
    # gateway without a static neighbour.
    s["unresolved-connected4"] = encode(0, [udp4_frame("10.0.1.5", "192.0.2.9")])
    s["unresolved-gateway4"] = encode(0, [udp4_frame("10.0.1.5", "198.51.100.7")])
    s["unresolved-connected6"] = encode(1, [udp6_frame("2001:db8:2::5", "2001:db8:300::9",
                                                       dmac=WAN_MAC)])
    s["unresolved-on-link6"] = encode(0, [udp6_frame("2001:db8:1::5", "2001:db8:2::77")])
    # ECMP in both families, many flows in one burst.
    s["ecmp4-burst"] = encode(1, [udp4_frame("10.0.2.5", "203.0.113.%d" % k, dmac=WAN_MAC,
                                             sport=1000 + k) for k in range(16)])
    s["ecmp6-burst"] = encode(1, [udp6_frame("2001:db8:2::5", "2001:db8:200::%x" % k,
                                             dmac=WAN_MAC, sport=1000 + k) for k in range(16)])
    # ACL: SSH to the protected servers, DNS allowed from lan and denied from wan.
    s["acl-deny-ssh"] = encode(1, [eth(WAN_MAC, PEER2, 0x0800,
                                       ipv4("10.0.2.5", "198.18.0.5", 6, tcp(40000, 22)))])
    s["acl-dns"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", sport=5353, dport=53),
                              udp4_frame("10.0.2.5", "198.18.1.5", sport=5353, dport=53)])
    s["acl-deny-telnet6"] = encode(0, [eth(LAN_MAC, HOST, 0x86DD, ipv6(
        "2001:db8:1::5", "2001:db8:100::5", 6, tcp(40000, 23)))])
    # MTU: wan is 1400. Without DF: dropped (too_big_no_df); with DF: ICMP
    # fragmentation needed (MTU 1400) back on lan, also VLAN-tagged; IPv6:
    # packet too big. A burst of 12 with DF crosses the rate limit (8).
    s["too-big"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", data=b"\0" * 1400)])
    s["too-big-df4"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", data=b"\0" * 1400,
                                             frag=DF)])
    s["too-big-df4-vlan"] = encode(0, [udp4_frame("10.0.1.5", "198.18.1.5", data=b"\1" * 1400,
                                                  frag=DF, tags=[(0x8100, 7)])])
    s["too-big6"] = encode(0, [udp6_frame("2001:db8:1::5", "2001:db8:100::5",
                                          data=b"\2" * 1400)])
    s["too-big-df4-burst-rate-limited"] = encode(0, [
        udp4_frame("10.0.1.5", "198.18.1.%d" % k, data=b"\0" * 1400, frag=DF)
        for k in range(12)])
    # Martians and multicast.
    s["martians"] = encode(0, [udp4_frame("127.0.0.1", "198.18.1.5"),
                               udp4_frame("10.0.1.5", "0.1.2.3"),
                               udp4_frame("10.0.1.5", "224.0.0.5"),
                               udp6_frame("ff02::1", "2001:db8:100::5"),
                               udp6_frame("2001:db8:1::5", "::1")])
    # Learn 2001:db8:1::2 from its NS, then forward a packet it sends to
    # itself (source = destination, garbage ICMPv6 checksum): forwarded as is,
    # not mistaken for an echo reply the router wrote (found by the fuzzer
    # as a harness false positive).
    junk = struct.pack(">BBH", 0xFF, 0, 0x1234) + b"\0" * 12
    s["forward-src-eq-dst6"] = encode(0, [
        ns_frame("2001:db8:1::2", "2001:db8:1::1", slla),
        eth(LAN_MAC, PEER1, 0x86DD, ipv6("2001:db8:1::2", "2001:db8:1::2", 58, junk))])
    # Hop limit 0 from our own wan address: the time exceeded goes back to
    # that same address, so it keeps the input's source (fuzzer finding,
    # harness false positive: a reply is not a forwarded packet).
    s["hop0-from-our-address6"] = encode(1, [udp6_frame("2001:db8:2::1", "2001:db8:200::1",
                                                        hop=0, dmac=WAN_MAC)])
    s["echo4-from-ourselves"] = encode(0, [eth(LAN_MAC, HOST, 0x0800, ipv4(
        "10.0.1.1", "10.0.1.1", 1, icmp4(8, 0, struct.pack(">HH", 7, 1), b"self")))])
    # Sources that cannot be true (RFC 1812 5.3.7, 4.2.2.11): our own
    # addresses (this port's, the other's, IPv6 link-local included) and
    # our subnets' broadcasts, forwarded or to us; then a host, forwarded.
    s["impossible-sources"] = encode(0, [
        udp4_frame("10.0.1.1", "198.18.1.5"),
        udp4_frame("10.0.2.1", "198.18.1.5"),
        udp4_frame("10.0.1.255", "198.18.1.5"),
        udp4_frame("10.0.3.255", "10.0.1.1"),
        eth(LAN_MAC, HOST, 0x0800, ipv4("10.0.1.255", "10.0.1.1", 1,
                                        icmp4(8, 0, struct.pack(">HH", 7, 1), b"smurf"))),
        udp6_frame("2001:db8:2::1", "2001:db8:100::5"),
        udp6_frame("fe80::1", "2001:db8:1::1"),
        udp4_frame("10.0.1.5", "198.18.1.5")])
    # Frames from a group source MAC (broadcast, IPv4 and IPv6 multicast),
    # to us or to a group: IPv4, IPv6, ARP; then a unicast one, forwarded.
    s["l2-group-source"] = encode(0, [
        udp4_frame("10.0.1.5", "198.18.1.5", smac=BCAST),
        udp4_frame("10.0.1.5", "198.18.1.5", smac=bytes.fromhex("01005e000001")),
        udp6_frame("2001:db8:1::5", "2001:db8:100::5", smac=bytes.fromhex("333300000001")),
        eth(BCAST, bytes.fromhex("01005e000001"), 0x0806,
            arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1")),
        udp4_frame("10.0.1.5", "198.18.1.5")])
    # ARP in other formats (hardware type 6, protocol IPv6, address
    # lengths 8 and 16; type 6 cut to 20 bytes): unsupported; Ethernet/IPv4
    # cut to 27 bytes: truncated.
    req = arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1")
    def arp_frame(body):
        return BCAST + PEER1 + b"\x08\x06" + body
    s["arp-other-formats"] = encode(0, [
        eth(BCAST, PEER1, 0x0806, b"\x00\x06" + req[2:]),
        eth(BCAST, PEER1, 0x0806, req[:2] + b"\x86\xdd" + req[4:]),
        eth(BCAST, PEER1, 0x0806, req[:4] + b"\x08" + req[5:]),
        eth(BCAST, PEER1, 0x0806, req[:5] + b"\x10" + req[6:]),
        arp_frame(b"\x00\x06" + req[2:20]),
        arp_frame(req[:27])])
    # A mixed burst: learn, answer, forward, drop, all at once; 32 frames.
    mixed = [eth(BCAST, PEER1, 0x0806, arp(1, PEER1, "10.0.1.2", b"\0" * 6, "10.0.1.1")),
             ns_frame("2001:db8:1::2", "2001:db8:1::1", slla),
             udp4_frame("10.0.1.5", "198.18.1.5"),
             udp4_frame("10.0.1.5", "198.18.1.5", ttl=1),
             udp6_frame("2001:db8:1::5", "2001:db8:100::5"),
             b"\x01\x02\x03",
             udp4_frame("10.0.1.5", "192.0.2.10")]
    s["burst-mixed"] = encode(0, (mixed * 5)[:32], clock_step=3)
    # The data-path rules (RFC 1812 5.3.4, RFC 4291 2.5.6). L2: unicast to
    # another station's MAC, and to the other port's, is not for us.
    s["l2-foreign-mac"] = encode(0, [
        udp4_frame("10.0.1.5", "198.18.1.5", dmac=bytes.fromhex("020000009999")),
        udp4_frame("10.0.1.5", "198.18.1.5", dmac=WAN_MAC)])
    # Unicast IP in link-layer broadcast / multicast frames: not routed, not
    # answered (the last is an echo to our own address).
    s["l2-group-unicast-ip"] = encode(0, [
        udp4_frame("10.0.1.5", "198.18.1.5", dmac=BCAST),
        udp4_frame("10.0.1.5", "198.18.1.5", dmac=bytes.fromhex("01005e000005")),
        udp6_frame("2001:db8:1::5", "2001:db8:100::5", dmac=bytes.fromhex("333300000001")),
        eth(BCAST, HOST, 0x0800, ipv4("10.0.1.5", "10.0.1.1", 1,
                                      icmp4(8, 0, struct.pack(">HH", 7, 1), b"ping")))])
    # IPv4 broadcasts: the lan subnets' (one per subnet, as unicast and as
    # link broadcast, one an echo), the wan subnet's directed from lan, the
    # limited broadcast: none forwarded, answered or ARPed for.
    s["broadcast-subnet"] = encode(0, [
        udp4_frame("10.0.1.5", "10.0.1.255"),
        udp4_frame("10.0.1.5", "10.0.1.255", dmac=BCAST),
        udp4_frame("10.0.1.5", "10.0.3.255"),
        eth(LAN_MAC, HOST, 0x0800, ipv4("10.0.1.5", "10.0.1.255", 1,
                                        icmp4(8, 0, struct.pack(">HH", 7, 1), b"ping"))),
        udp4_frame("10.0.1.5", "10.0.2.255"),
        udp4_frame("10.0.1.5", "255.255.255.255", dmac=BCAST)])
    # IPv6 scopes: link-local and unspecified sources and a link-local
    # destination (lan has fe80::1/64, so fe80::/64 is a connected route)
    # are not forwarded; an echo to us from a link-local source is answered.
    e6ll = icmp6("fe80::5", "2001:db8:1::1", 128, 0, struct.pack(">HH", 7, 1) + b"ping")
    s["v6-scope"] = encode(0, [
        udp6_frame("fe80::5", "2001:db8:100::5"),
        udp6_frame("::", "2001:db8:100::5"),
        udp6_frame("2001:db8:1::5", "fe80::99"),
        eth(LAN_MAC, HOST, 0x86DD, ipv6("fe80::5", "2001:db8:1::1", 58, e6ll))])
    # Frames longer than their IP packet: forwarded trimmed; one shorter.
    padded4 = udp4_frame("10.0.1.5", "198.18.1.5", data=b"pad") + b"\xee" * 300
    padded6 = udp6_frame("2001:db8:1::5", "2001:db8:100::5") + b"\xee" * 300
    short = bytearray(udp4_frame("10.0.1.5", "198.18.1.5", data=b"x" * 40))
    short[16:18] = struct.pack(">H", 200)
    s["padded-and-short"] = encode(0, [padded4, padded6, bytes(short)])
    # Chains (frames over one mbuf): padding in later segments, trimmed and
    # forwarded; an IPv4 (DF) and an IPv6 packet running past the first
    # segment, too big; one whose chain is a byte short of its IP length;
    # a broken chain (length disagreeing with its segments).
    def big4(total, dst="198.18.1.5"):
        f = bytearray(udp4_frame("10.0.1.5", dst, frag=DF, data=b"\xab" * (total - 28)))
        return bytes(f)

    def big6(total):
        return udp6_frame("2001:db8:1::5", "2001:db8:100::5", data=b"\xab" * (total - 48))

    long4, long6 = big4(9000), big6(9000)
    s["chain-padded"] = encode(0, []) + encode_chain(udp4_frame("10.0.1.5", "198.18.1.5"), 3000) \
        + encode_chain(udp6_frame("2001:db8:1::5", "2001:db8:100::5"), 100)
    s["chain-too-big"] = encode(0, []) + encode_chain(long4[:VEC_PACKET_MAX], 9014 - 2048) \
        + encode_chain(long6[:VEC_PACKET_MAX], 9054 - 2048) \
        + encode_chain(long4[:VEC_PACKET_MAX], 9014 - 2048 - 1)
    s["chain-broken"] = encode(0, []) + encode_chain(udp4_frame("10.0.1.5", "198.18.1.5"), 3000,
                                                     broken=True)
    return s


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "hand":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        for name, data in hand().items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        print("%d hand-made seeds in %s" % (len(hand()), out))
    elif len(sys.argv) >= 5 and sys.argv[1] == "wrap":
        out, port = sys.argv[2], int(sys.argv[3])
        os.makedirs(out, exist_ok=True)
        n = 0
        for d in sys.argv[4:]:
            for name in sorted(os.listdir(d)):
                with open(os.path.join(d, name), "rb") as f:
                    frame = f.read()[:2048]
                data = encode(port, [frame])
                h = hashlib.sha1(data).hexdigest()[:16]
                with open(os.path.join(out, "gen-%s" % h), "wb") as f:
                    f.write(data)
                n += 1
        print("%d wrapped seeds in %s" % (n, out))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
