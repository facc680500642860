//! Golden black-box test of the router pipeline (parse → acl → route with
//! local delivery) on two net_pcap ports. One generated pcap per port mixes
//! routed, ACL-denied, TTL-expiring, no-route, malformed, ARP, ICMP echo to
//! the router, IPv6, NDP and VLAN frames. The expected output of each port is
//! computed here independently (frames built and rewritten with etherparse,
//! never with the project's own header code) and compared as a multiset;
//! each drop counter must equal the expected count. It runs twice: on the
//! default rte_fib + rte_hash tables and on `route.backend = "linear"`
//! (`HashLpm` and the Rust neighbour map), which must give the same output.
use dataplane_tests::*;
use etherparse::{
    icmpv4, icmpv6, Icmpv4Header, Icmpv4Type, Icmpv6Header, Icmpv6Type, IpNumber, Ipv4Header,
    Ipv6Header, PacketBuilder, SlicedPacket, VlanId,
};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

const LAN_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const WAN_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const LAN_GW_MAC: [u8; 6] = [2, 0, 0, 0, 1, 2]; // 10.0.1.2
const WAN_GW_MAC: [u8; 6] = [2, 0, 0, 0, 2, 2]; // 10.0.2.2, 2001:db8:2::2
const LAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0x50]; // 10.0.1.50
const WAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 2, 0x50];
const LAN_IP: [u8; 4] = [10, 0, 1, 1];
const LAN_HOST: [u8; 4] = [10, 0, 1, 50];
const WAN_HOST: [u8; 4] = [10, 0, 2, 50];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

/// The golden router's config, its route tables on `backend`.
fn config(dir: &std::path::Path, backend: &str) -> String {
    let d = dir.display();
    format!(
        r#"pipeline = ["acl", "route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "lan"
device = "net_pcap0,rx_pcap={d}/lan-in.pcap,tx_pcap={d}/lan-out.pcap"
mac = "02:00:00:00:01:01"
ipv4 = ["10.0.1.1/24"]
ipv6 = ["2001:db8:1::1/64"]
[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={d}/wan-in.pcap,tx_pcap={d}/wan-out.pcap"
mac = "02:00:00:00:02:01"
ipv4 = ["10.0.2.1/24"]
ipv6 = ["2001:db8:2::1/64"]
[[worker]]
core = 1
rx = ["lan", "wan"]
[acl]
default = "allow"
[[acl.rule]]
action = "deny"
dst = "198.18.0.0/24"
proto = "tcp"
dport = "22-23"
[[acl.rule]]
action = "deny"
src = "10.0.99.0/24"
[route]
backend = "{backend}"
icmp_rate = 1000
[[route.static]]
prefix = "198.18.0.0/24"
via = "10.0.1.2"
[[route.static]]
prefix = "198.18.1.0/24"
via = "10.0.2.2"
[[route.static]]
prefix = "203.0.113.0/24"
via = ["10.0.1.2", "10.0.2.2"]
[[route.static]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:02"
[[route.neighbor]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
[[route.neighbor]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:02:02"
"#,
        prefix = file_prefix("golden")
    )
}

fn udp4(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    sport: u16,
) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv4(src, dst, ttl)
        .udp(sport, 5000)
        .write(&mut v, &[0xab; 18])
        .unwrap();
    v
}

fn tcp4(src_mac: [u8; 6], dst_mac: [u8; 6], src: [u8; 4], dst: [u8; 4], dport: u16) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv4(src, dst, 64)
        .tcp(40000, dport, 1, 1000)
        .write(&mut v, &[1, 2, 3, 4])
        .unwrap();
    v
}

fn udp6(src_mac: [u8; 6], dst_mac: [u8; 6], src: [u8; 16], dst: [u8; 16], hop: u8) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv6(src, dst, hop)
        .udp(7000, 8000)
        .write(&mut v, &[0xcd; 16])
        .unwrap();
    v
}

fn vlan_udp4(vid: u16, dst: [u8; 4]) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(LAN_HOST_MAC, LAN_MAC)
        .single_vlan(VlanId::try_new(vid).unwrap())
        .ipv4(LAN_HOST, dst, 64)
        .udp(1111, 2222)
        .write(&mut v, &[7; 10])
        .unwrap();
    v
}

/// What a router does to a forwarded frame, computed with etherparse:
/// new MACs, TTL/hop limit − 1, IPv4 header checksum recomputed.
fn routed(frame: &[u8], dst_mac: [u8; 6], src_mac: [u8; 6]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[..6].copy_from_slice(&dst_mac);
    out[6..12].copy_from_slice(&src_mac);
    let sliced = SlicedPacket::from_ethernet(frame).unwrap();
    let l3 = frame.len()
        - sliced
            .net
            .as_ref()
            .map(|n| match n {
                etherparse::NetSlice::Ipv4(s) => {
                    s.header().slice().len() + s.payload().payload.len()
                }
                etherparse::NetSlice::Ipv6(s) => {
                    s.header().slice().len() + s.payload().payload.len()
                }
            })
            .unwrap();
    match sliced.net.unwrap() {
        etherparse::NetSlice::Ipv4(s) => {
            let mut h = s.header().to_header();
            h.time_to_live -= 1;
            h.header_checksum = h.calc_header_checksum();
            let mut b = Vec::new();
            h.write(&mut b).unwrap();
            out[l3..l3 + b.len()].copy_from_slice(&b);
        }
        etherparse::NetSlice::Ipv6(s) => {
            let mut h = s.header().to_header();
            h.hop_limit -= 1;
            let mut b = Vec::new();
            h.write(&mut b).unwrap();
            out[l3..l3 + b.len()].copy_from_slice(&b);
        }
    }
    out
}

/// Pads a frame to the 60-byte Ethernet minimum, as the router does for
/// frames it builds.
fn pad60(mut v: Vec<u8>) -> Vec<u8> {
    if v.len() < 60 {
        v.resize(60, 0);
    }
    v
}

fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(dst);
    v.extend(src);
    v.extend(ethertype.to_be_bytes());
    v
}

fn arp(op: u16, sha: [u8; 6], spa: [u8; 4], tha: [u8; 6], tpa: [u8; 4]) -> Vec<u8> {
    let mut v = vec![0, 1, 8, 0, 6, 4];
    v.extend(op.to_be_bytes());
    v.extend(sha);
    v.extend(spa);
    v.extend(tha);
    v.extend(tpa);
    v
}

/// ICMP time exceeded from `from` to the sender of `orig`, quoting its IP
/// header and 8 payload bytes, in a fresh IPv4 header (TTL 64, DF, id 0).
fn time_exceeded_v4(orig: &[u8], from: [u8; 4]) -> Vec<u8> {
    let ip = &orig[14..];
    let ihl = (ip[0] & 0xf) as usize * 4;
    let quote = &ip[..ihl + 8];
    let src: [u8; 4] = ip[12..16].try_into().unwrap();
    let icmp = Icmpv4Header::with_checksum(
        Icmpv4Type::TimeExceeded(icmpv4::TimeExceededCode::TtlExceededInTransit),
        quote,
    );
    let mut h = Ipv4Header::new(
        (icmp.header_len() + quote.len()) as u16,
        64,
        IpNumber::ICMP,
        from,
        src,
    )
    .unwrap();
    h.dont_fragment = true;
    h.identification = 0;
    h.header_checksum = h.calc_header_checksum();
    let mut v = eth(orig[6..12].try_into().unwrap(), LAN_MAC, 0x0800);
    h.write(&mut v).unwrap();
    icmp.write(&mut v).unwrap();
    v.extend(quote);
    pad60(v)
}

fn time_exceeded_v6(orig: &[u8], from: [u8; 16]) -> Vec<u8> {
    let ip = &orig[14..];
    let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
    let quote = &ip[..(40 + plen).min(1232)];
    let src: [u8; 16] = ip[8..24].try_into().unwrap();
    let icmp = Icmpv6Header::with_checksum(
        Icmpv6Type::TimeExceeded(icmpv6::TimeExceededCode::HopLimitExceeded),
        from,
        src,
        quote,
    )
    .unwrap();
    let h = Ipv6Header {
        traffic_class: 0,
        flow_label: Default::default(),
        payload_length: (icmp.header_len() + quote.len()) as u16,
        next_header: IpNumber::IPV6_ICMP,
        hop_limit: 64,
        source: from,
        destination: src,
    };
    let mut v = eth(orig[6..12].try_into().unwrap(), LAN_MAC, 0x86dd);
    h.write(&mut v).unwrap();
    icmp.write(&mut v).unwrap();
    v.extend(quote);
    pad60(v)
}

/// Echo reply: addresses swapped, type 0/129, checksums recomputed, TTL 64.
fn echo_reply_v4(req: &[u8]) -> Vec<u8> {
    let s = SlicedPacket::from_ethernet(req).unwrap();
    let etherparse::NetSlice::Ipv4(ip) = s.net.unwrap() else {
        panic!()
    };
    let mut h = ip.header().to_header();
    std::mem::swap(&mut h.source, &mut h.destination);
    h.time_to_live = 64;
    h.header_checksum = h.calc_header_checksum();
    let payload = &ip.payload().payload[8..];
    let id_seq = &ip.payload().payload[4..8];
    let icmp = Icmpv4Header::with_checksum(
        Icmpv4Type::EchoReply(etherparse::IcmpEchoHeader {
            id: u16::from_be_bytes([id_seq[0], id_seq[1]]),
            seq: u16::from_be_bytes([id_seq[2], id_seq[3]]),
        }),
        payload,
    );
    let mut v = eth(LAN_HOST_MAC, LAN_MAC, 0x0800);
    h.write(&mut v).unwrap();
    icmp.write(&mut v).unwrap();
    v.extend(payload);
    v
}

fn echo_reply_v6(req: &[u8]) -> Vec<u8> {
    let s = SlicedPacket::from_ethernet(req).unwrap();
    let etherparse::NetSlice::Ipv6(ip) = s.net.unwrap() else {
        panic!()
    };
    let mut h = ip.header().to_header();
    std::mem::swap(&mut h.source, &mut h.destination);
    h.hop_limit = 64;
    let body = ip.payload().payload;
    let payload = &body[8..];
    let icmp = Icmpv6Header::with_checksum(
        Icmpv6Type::EchoReply(etherparse::IcmpEchoHeader {
            id: u16::from_be_bytes([body[4], body[5]]),
            seq: u16::from_be_bytes([body[6], body[7]]),
        }),
        h.source,
        h.destination,
        payload,
    )
    .unwrap();
    let mut v = eth(LAN_HOST_MAC, LAN_MAC, 0x86dd);
    h.write(&mut v).unwrap();
    icmp.write(&mut v).unwrap();
    v.extend(payload);
    v
}

/// An NDP message (NS = 135, NA = 136) with one link-layer option.
struct Ndp {
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 16],
    dst: [u8; 16],
    ty: u8,
    flags: u8,
    target: [u8; 16],
    opt_type: u8,
    lladdr: [u8; 6],
}

fn ndp(m: Ndp) -> Vec<u8> {
    let Ndp {
        src_mac,
        dst_mac,
        src,
        dst,
        ty,
        flags,
        target,
        opt_type,
        lladdr,
    } = m;
    let mut body = target.to_vec();
    body.extend([opt_type, 1]);
    body.extend(lladdr);
    let icmp = Icmpv6Header::with_checksum(
        Icmpv6Type::Unknown {
            type_u8: ty,
            code_u8: 0,
            bytes5to8: [flags, 0, 0, 0],
        },
        src,
        dst,
        &body,
    )
    .unwrap();
    let h = Ipv6Header {
        traffic_class: 0,
        flow_label: Default::default(),
        payload_length: (icmp.header_len() + body.len()) as u16,
        next_header: IpNumber::IPV6_ICMP,
        hop_limit: 255,
        source: src,
        destination: dst,
    };
    let mut v = eth(dst_mac, src_mac, 0x86dd);
    h.write(&mut v).unwrap();
    icmp.write(&mut v).unwrap();
    v.extend(body);
    v
}

fn multiset(frames: &[Vec<u8>]) -> BTreeMap<Vec<u8>, usize> {
    let mut m = BTreeMap::new();
    for f in frames {
        *m.entry(f.clone()).or_insert(0) += 1;
    }
    m
}

#[test]
fn router_golden_pcap() {
    golden("fib");
}

/// The same on the pure-Rust route tables (and so the Rust neighbour map,
/// learning on the worker lcore): the same bytes and counters.
#[test]
fn router_golden_pcap_linear() {
    golden("linear");
}

fn golden(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut lan_in: Vec<Vec<u8>> = Vec::new();
    let mut wan_in: Vec<Vec<u8>> = Vec::new();
    let mut lan_out: Vec<Vec<u8>> = Vec::new();
    let mut wan_out: Vec<Vec<u8>> = Vec::new();
    let mut drops: BTreeMap<&str, u64> = BTreeMap::new();

    // 1. Routed IPv4 to 198.18.1.0/24 via 10.0.2.2 (wan).
    for k in 0..10u8 {
        let f = udp4(
            LAN_HOST_MAC,
            LAN_MAC,
            LAN_HOST,
            [198, 18, 1, 10 + k],
            64,
            1000 + k as u16,
        );
        wan_out.push(routed(&f, WAN_GW_MAC, WAN_MAC));
        lan_in.push(f);
    }
    // 2. Routed IPv6 to 2001:db8:100::/48 via 2001:db8:2::2 (wan).
    for k in 0..5u8 {
        let mut d = v6("2001:db8:100::");
        d[15] = k + 1;
        let f = udp6(LAN_HOST_MAC, LAN_MAC, v6("2001:db8:1::50"), d, 64);
        wan_out.push(routed(&f, WAN_GW_MAC, WAN_MAC));
        lan_in.push(f);
    }
    // 3. VLAN-tagged routed IPv4: the tag is kept.
    for k in 0..4u8 {
        let f = vlan_udp4(100, [198, 18, 1, 100 + k]);
        wan_out.push(routed(&f, WAN_GW_MAC, WAN_MAC));
        lan_in.push(f);
    }
    // 4. TTL 1: ICMP time exceeded back to the sender, counted as ttl_exceeded.
    for k in 0..3u8 {
        let f = udp4(
            LAN_HOST_MAC,
            LAN_MAC,
            LAN_HOST,
            [198, 18, 1, 200 + k],
            1,
            3000 + k as u16,
        );
        lan_out.push(time_exceeded_v4(&f, LAN_IP));
        lan_in.push(f);
    }
    *drops.entry("ttl_exceeded").or_default() += 3;
    // 5. Hop limit 1 (IPv6).
    for k in 0..2u8 {
        let mut d = v6("2001:db8:100::9");
        d[14] = k;
        let f = udp6(LAN_HOST_MAC, LAN_MAC, v6("2001:db8:1::50"), d, 1);
        lan_out.push(time_exceeded_v6(&f, v6("2001:db8:1::1")));
        lan_in.push(f);
    }
    *drops.entry("ttl_exceeded").or_default() += 2;
    // 6. No route.
    for k in 0..3u8 {
        lan_in.push(udp4(
            LAN_HOST_MAC,
            LAN_MAC,
            LAN_HOST,
            [192, 0, 2, k + 1],
            64,
            9,
        ));
    }
    for k in 0..2u8 {
        let mut d = v6("2001:db8:999::");
        d[15] = k;
        lan_in.push(udp6(LAN_HOST_MAC, LAN_MAC, v6("2001:db8:1::50"), d, 64));
    }
    *drops.entry("no_route").or_default() += 5;
    // 7. Malformed.
    let good = udp4(LAN_HOST_MAC, LAN_MAC, LAN_HOST, [198, 18, 1, 1], 64, 1);
    let mut bad_csum = good.clone();
    bad_csum[14 + 10] ^= 0x5a;
    lan_in.push(bad_csum);
    *drops.entry("bad_checksum").or_default() += 1;
    let mut bad_ver = good.clone();
    bad_ver[14] = 0x65;
    lan_in.push(bad_ver);
    *drops.entry("bad_version").or_default() += 1;
    let mut bad_ihl = good.clone();
    bad_ihl[14] = 0x43;
    lan_in.push(bad_ihl);
    *drops.entry("bad_header_len").or_default() += 1;
    let mut bad_len = good.clone();
    bad_len[16..18].copy_from_slice(&1500u16.to_be_bytes());
    lan_in.push(bad_len);
    *drops.entry("bad_total_len").or_default() += 1;
    lan_in.push(good[..10].to_vec());
    let six = udp6(
        LAN_HOST_MAC,
        LAN_MAC,
        v6("2001:db8:1::50"),
        v6("2001:db8:100::1"),
        64,
    );
    lan_in.push(six[..14 + 30].to_vec());
    *drops.entry("truncated").or_default() += 2;
    // 8. ARP: a request for our address is answered; one for another host is
    // only learned from (consumed, not dropped).
    let mut req = eth([0xff; 6], LAN_HOST_MAC, 0x0806);
    req.extend(arp(1, LAN_HOST_MAC, LAN_HOST, [0; 6], LAN_IP));
    let mut rep = eth(LAN_HOST_MAC, LAN_MAC, 0x0806);
    rep.extend(arp(2, LAN_MAC, LAN_IP, LAN_HOST_MAC, LAN_HOST));
    lan_in.push(req);
    lan_out.push(rep);
    let mut other = eth([0xff; 6], LAN_HOST_MAC, 0x0806);
    other.extend(arp(1, LAN_HOST_MAC, LAN_HOST, [0; 6], [10, 0, 1, 99]));
    lan_in.push(other);
    // 9. Echo to the router, IPv4 and IPv6.
    let mut ping = Vec::new();
    PacketBuilder::ethernet2(LAN_HOST_MAC, LAN_MAC)
        .ipv4(LAN_HOST, LAN_IP, 64)
        .icmpv4_echo_request(0x1234, 7)
        .write(&mut ping, b"ping payload")
        .unwrap();
    lan_out.push(echo_reply_v4(&ping));
    lan_in.push(ping);
    let mut ping6 = Vec::new();
    PacketBuilder::ethernet2(LAN_HOST_MAC, LAN_MAC)
        .ipv6(v6("2001:db8:1::50"), v6("2001:db8:1::1"), 64)
        .icmpv6_echo_request(0x4321, 9)
        .write(&mut ping6, b"ping6 payload")
        .unwrap();
    lan_out.push(echo_reply_v6(&ping6));
    lan_in.push(ping6);
    // 10. Neighbour solicitation for our address → advertisement (R|S|O).
    let solicited_node = v6("ff02::1:ff00:1");
    let ns = ndp(Ndp {
        src_mac: LAN_HOST_MAC,
        dst_mac: [0x33, 0x33, 0xff, 0, 0, 1],
        src: v6("2001:db8:1::50"),
        dst: solicited_node,
        ty: 135,
        flags: 0,
        target: v6("2001:db8:1::1"),
        opt_type: 1,
        lladdr: LAN_HOST_MAC,
    });
    lan_in.push(ns);
    lan_out.push(ndp(Ndp {
        src_mac: LAN_MAC,
        dst_mac: LAN_HOST_MAC,
        src: v6("2001:db8:1::1"),
        dst: v6("2001:db8:1::50"),
        ty: 136,
        flags: 0xe0,
        target: v6("2001:db8:1::1"),
        opt_type: 2,
        lladdr: LAN_MAC,
    }));
    // 11. UDP to the router itself: not served.
    lan_in.push(udp4(LAN_HOST_MAC, LAN_MAC, LAN_HOST, LAN_IP, 64, 53));
    *drops.entry("local_unhandled").or_default() += 1;
    // 12. ACL: a denied source.
    lan_in.push(udp4(
        LAN_HOST_MAC,
        LAN_MAC,
        [10, 0, 99, 5],
        [198, 18, 1, 1],
        64,
        1,
    ));
    *drops.entry("acl_deny").or_default() += 1;
    // 13. Connected destination with no known neighbour: the first packet
    // becomes an ARP request, the second (within the retry interval) is
    // only dropped; both count as neighbor_unresolved.
    lan_in.push(udp4(LAN_HOST_MAC, LAN_MAC, LAN_HOST, [10, 0, 2, 77], 64, 1));
    lan_in.push(udp4(LAN_HOST_MAC, LAN_MAC, LAN_HOST, [10, 0, 2, 77], 64, 2));
    let mut who = eth([0xff; 6], WAN_MAC, 0x0806);
    who.extend(arp(1, WAN_MAC, [10, 0, 2, 1], [0; 6], [10, 0, 2, 77]));
    wan_out.push(pad60(who));
    *drops.entry("neighbor_unresolved").or_default() += 2;

    // From the WAN side: SSH to the LAN servers is denied, HTTP routed.
    for k in 0..3u8 {
        wan_in.push(tcp4(
            WAN_HOST_MAC,
            WAN_MAC,
            WAN_HOST,
            [198, 18, 0, 5 + k],
            22,
        ));
    }
    *drops.entry("acl_deny").or_default() += 3;
    for k in 0..2u8 {
        let f = tcp4(WAN_HOST_MAC, WAN_MAC, WAN_HOST, [198, 18, 0, 5 + k], 80);
        lan_out.push(routed(&f, LAN_GW_MAC, LAN_MAC));
        wan_in.push(f);
    }

    // 14. ECMP flows (checked separately below): 8 flows x 3 packets.
    let mut ecmp = Vec::new();
    for flow in 0..8u8 {
        for _ in 0..3 {
            let f = udp4(
                LAN_HOST_MAC,
                LAN_MAC,
                LAN_HOST,
                [203, 0, 113, 1 + flow],
                64,
                4000 + flow as u16,
            );
            ecmp.push((flow, f.clone()));
            lan_in.push(f);
        }
    }

    write_pcap(&dir.path().join("lan-in.pcap"), &lan_in).unwrap();
    write_pcap(&dir.path().join("wan-in.pcap"), &wan_in).unwrap();
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, config(dir.path(), backend)).unwrap();
    let r = run_daemon(
        dir.path(),
        &cfg,
        &["--stop-when-idle", "600"],
        Duration::from_secs(90),
    )
    .unwrap();
    let got_lan = read_pcap(&dir.path().join("lan-out.pcap")).unwrap();
    let got_wan = read_pcap(&dir.path().join("wan-out.pcap")).unwrap();

    // Split the ECMP frames out of what came back, checking each flow took
    // one path and was rewritten for it.
    let mut flow_port: HashMap<u8, &str> = HashMap::new();
    let mut rest_lan = got_lan.clone();
    let mut rest_wan = got_wan.clone();
    for (flow, f) in &ecmp {
        let via_lan = routed(f, LAN_GW_MAC, LAN_MAC);
        let via_wan = routed(f, WAN_GW_MAC, WAN_MAC);
        let port = if let Some(i) = rest_lan.iter().position(|x| *x == via_lan) {
            rest_lan.remove(i);
            "lan"
        } else if let Some(i) = rest_wan.iter().position(|x| *x == via_wan) {
            rest_wan.remove(i);
            "wan"
        } else {
            panic!("ECMP frame of flow {flow} missing from both outputs");
        };
        let prev = *flow_port.entry(*flow).or_insert(port);
        assert_eq!(prev, port, "flow {flow} changed path");
    }
    let used: std::collections::HashSet<_> = flow_port.values().collect();
    assert_eq!(used.len(), 2, "ECMP used one path only: {flow_port:?}");

    let show = |v: &[Vec<u8>]| {
        v.iter()
            .map(|f| format!("{f:02x?}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        multiset(&rest_lan),
        multiset(&lan_out),
        "lan output differs\n got:\n{}\n expected:\n{}",
        show(&rest_lan),
        show(&lan_out)
    );
    assert_eq!(
        multiset(&rest_wan),
        multiset(&wan_out),
        "wan output differs\n got:\n{}\n expected:\n{}",
        show(&rest_wan),
        show(&wan_out)
    );

    let report_drops: BTreeMap<String, u64> =
        serde_json::from_value(r.report["drops"].clone()).unwrap();
    let expected: BTreeMap<String, u64> = drops.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(report_drops, expected, "drop counters");
    assert_eq!(r.report["rx"], (lan_in.len() + wan_in.len()) as u64);
    assert_eq!(r.report["tx"], (got_lan.len() + got_wan.len()) as u64);
    let ev = &r.report["events"];
    assert_eq!(ev["arp_reply_sent"], 1);
    assert_eq!(ev["echo_reply_sent"], 2);
    assert_eq!(ev["nd_advert_sent"], 1);
    assert_eq!(ev["icmp_error_sent"], 5);
    assert_eq!(ev["arp_request_sent"], 1);
    assert_eq!(ev["consumed"], 1);
    // The ARP request and the five time exceeded went out in the buffers of
    // packets counted as drops: originated, so the books balance.
    assert_eq!(
        r.report["originated"],
        serde_json::json!({"arp_request": 1, "icmp_error": 5})
    );
    assert_eq!(r.report["originated_total"], 6);
    assert_eq!(r.report["consumed"], 1);
    assert_accounting(&r.report);
    // ACL hits: rule 0 (ssh) 3, rule 1 (source) 1, default the rest of IP.
    let acl = &r.report["stages"]["acl"];
    assert_eq!(acl["rule_hits"][0], 3);
    assert_eq!(acl["rule_hits"][1], 1);
    // Every packet the ACL classified went through its flow cache.
    let hits: Vec<u64> = serde_json::from_value(acl["rule_hits"].clone()).unwrap();
    let cache = &acl["flow_cache"];
    assert_eq!(cache["entries_per_worker"], 16384);
    assert_eq!(
        cache["hits"].as_u64().unwrap() + cache["misses"].as_u64().unwrap(),
        hits.iter().sum::<u64>()
    );
    assert_eq!(r.report["mempool"]["in_use"], 0);
}
