//! Black box: hostile and odd traffic through the router on two net_pcap
//! ports, every frame forwarded or dropped as the data-path rules say
//! (RFC 1812 / RFC 4291), each drop under its reason, and the books and
//! the mempool balanced at the end:
//!
//! - frames to a foreign unicast MAC (another station's, the other port's)
//!   are `not_for_us`; unicast IP in broadcast or multicast frames is
//!   `l2_multicast`; ARP and NDP (broadcast, multicast) still work;
//! - frames padded past their IP packet (to 1,600, 9,000 and 60,000
//!   bytes: the last two arrive as mbuf chains) are forwarded trimmed to
//!   it; a 70,000-byte one, which net_pcap delivers as a chain whose
//!   length disagrees with its segments (what once crashed the PMD's TX
//!   when forwarded), is `bad_total_len`;
//! - 9,000-byte frames: with the default MTU (and so the default 2,176-byte
//!   data room, where net_pcap makes a chain of them) `too_big`, never
//!   `bad_total_len`; with `mtu = 9000` on both ports (the data room then
//!   sized from it) forwarded intact, IPv4, IPv6 and VLAN-tagged; a frame
//!   over that MTU `too_big`;
//! - a chain whose IP length runs past the frame is `bad_total_len`;
//! - subnet broadcasts (from the subnet, as unicast and as link broadcast,
//!   an echo among them), a directed broadcast to the other port's subnet
//!   and the limited broadcast are `broadcast`, never ARPed for;
//! - IPv6 from link-local and unspecified sources and to a link-local
//!   destination is not forwarded (`bad_address`); an echo to the router
//!   from a link-local source is answered;
//! - sources that cannot be true (a connected subnet's broadcast, the
//!   router's own IPv4 and IPv6 addresses), forwarded or to the router,
//!   are `bad_address`, and so are frames from a group source MAC (IPv4,
//!   IPv6, ARP); ARP in another format than Ethernet/IPv4 is
//!   `unsupported`;
//! - every truncation of IPv4, VLAN-tagged and QinQ IPv4, ICMP echo, IPv6,
//!   an NDP neighbour solicitation and IPv6 with a hop-by-hop header is
//!   `truncated` (header cut) or `bad_total_len` (payload cut); every
//!   truncation of an ARP request is `truncated`; an IPv6 packet cut inside
//!   its extension header, its payload length saying so, is `truncated`
//!   (cut inside its UDP header instead, it is forwarded: `route` alone
//!   reads no ports);
//! - through `lb` then `route`: a VIP's packets in broadcast or multicast
//!   frames are `l2_multicast`, from a group MAC, a martian source or one
//!   that cannot be true `bad_address`, never balanced; a unicast one is.
//!
//! The expected output of each port is built here with etherparse and
//! compared as a multiset; the drop counters must be exactly the expected
//! ones; `assert_accounting` holds; the mempool is full again.
use dataplane_tests::*;
use etherparse::{
    Icmpv6Header, Icmpv6Type, IpNumber, Ipv6Header, PacketBuilder, SlicedPacket, VlanId,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const LAN_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const WAN_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const LAN_GW_MAC: [u8; 6] = [2, 0, 0, 0, 1, 2]; // 10.0.1.2
const WAN_GW_MAC: [u8; 6] = [2, 0, 0, 0, 2, 2]; // 10.0.2.2, 2001:db8:2::2
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0x50]; // 10.0.1.50 on lan
const WAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 2, 0x50];
const FOREIGN_MAC: [u8; 6] = [2, 0, 0, 0, 0x99, 0x99];
const BCAST: [u8; 6] = [0xff; 6];
const HOST: [u8; 4] = [10, 0, 1, 50];
const LAN_IP: [u8; 4] = [10, 0, 1, 1];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

/// The router's config: `route` alone, or `lb` then `route` with `lb`'s
/// services (`[[lb.service]]` sections) when given.
fn config(dir: &Path, mtu: Option<u16>, lb: Option<&str>) -> String {
    let d = dir.display();
    let mtu = mtu.map_or(String::new(), |m| format!("mtu = {m}\n"));
    let pipeline = if lb.is_some() {
        r#"["lb", "route"]"#
    } else {
        r#"["route"]"#
    };
    let lb = lb.unwrap_or("");
    format!(
        r#"pipeline = {pipeline}
[eal]
file_prefix = "{prefix}"
memory_mb = 768
hugepages = "off"
[daemon]
stats_interval_ms = 0
[mempool]
mbufs = 8191
[[port]]
name = "lan"
device = "net_pcap0,rx_pcap={d}/lan-in.pcap,tx_pcap={d}/lan-out.pcap"
mac = "02:00:00:00:01:01"
{mtu}ipv4 = ["10.0.1.1/24"]
ipv6 = ["2001:db8:1::1/64", "fe80::1/64"]
[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={d}/wan-in.pcap,tx_pcap={d}/wan-out.pcap"
mac = "02:00:00:00:02:01"
{mtu}ipv4 = ["10.0.2.1/24"]
ipv6 = ["2001:db8:2::1/64"]
[[worker]]
core = 1
rx = ["lan", "wan"]
[route]
icmp_rate = 1000
[[route.static]]
prefix = "198.18.0.0/24"
via = "10.0.1.2"
[[route.static]]
prefix = "198.18.1.0/24"
via = "10.0.2.2"
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
{lb}
"#,
        prefix = file_prefix("hostile")
    )
}

fn udp4(dst_mac: [u8; 6], src: [u8; 4], dst: [u8; 4], payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, dst_mac)
        .ipv4(src, dst, 64)
        .udp(4000, 5000)
        .write(&mut v, &vec![0xab; payload])
        .unwrap();
    v
}

fn vlan_udp4(dst: [u8; 4], payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
        .single_vlan(VlanId::try_new(100).unwrap())
        .ipv4(HOST, dst, 64)
        .udp(1111, 2222)
        .write(&mut v, &vec![7; payload])
        .unwrap();
    v
}

fn udp6(dst_mac: [u8; 6], src: [u8; 16], dst: [u8; 16], payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, dst_mac)
        .ipv6(src, dst, 64)
        .udp(7000, 8000)
        .write(&mut v, &vec![0xcd; payload])
        .unwrap();
    v
}

/// A frame with `n` bytes of 0xee after it.
fn padded(mut f: Vec<u8>, n: usize) -> Vec<u8> {
    f.resize(f.len() + n, 0xee);
    f
}

/// The frame as a router forwards it, computed with etherparse: new MACs,
/// TTL / hop limit − 1, IPv4 header checksum recomputed.
fn routed(frame: &[u8], dst_mac: [u8; 6], src_mac: [u8; 6]) -> Vec<u8> {
    let mut out = frame.to_vec();
    out[..6].copy_from_slice(&dst_mac);
    out[6..12].copy_from_slice(&src_mac);
    let s = SlicedPacket::from_ethernet(frame).unwrap();
    let (l3, hdr) = match s.net.unwrap() {
        etherparse::NetSlice::Ipv4(ip) => {
            let l3 = frame.len() - ip.header().slice().len() - ip.payload().payload.len();
            let mut h = ip.header().to_header();
            h.time_to_live -= 1;
            h.header_checksum = h.calc_header_checksum();
            let mut b = Vec::new();
            h.write(&mut b).unwrap();
            (l3, b)
        }
        etherparse::NetSlice::Ipv6(ip) => {
            let l3 = frame.len() - ip.header().slice().len() - ip.payload().payload.len();
            let mut h = ip.header().to_header();
            h.hop_limit -= 1;
            let mut b = Vec::new();
            h.write(&mut b).unwrap();
            (l3, b)
        }
    };
    out[l3..l3 + hdr.len()].copy_from_slice(&hdr);
    out
}

fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut v = dst.to_vec();
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

/// An ICMPv6 message of type `ty` (NS 135, NA 136, echo 128/129) with
/// `body` after its first 8 bytes (`word`: bytes 4..8).
#[allow(clippy::too_many_arguments)]
fn icmp6(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: [u8; 16],
    dst: [u8; 16],
    hop: u8,
    ty: u8,
    word: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let icmp = Icmpv6Header::with_checksum(
        Icmpv6Type::Unknown {
            type_u8: ty,
            code_u8: 0,
            bytes5to8: word,
        },
        src,
        dst,
        body,
    )
    .unwrap();
    let h = Ipv6Header {
        traffic_class: 0,
        flow_label: Default::default(),
        payload_length: (icmp.header_len() + body.len()) as u16,
        next_header: IpNumber::IPV6_ICMP,
        hop_limit: hop,
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

/// What goes in, what must come out, what must be dropped.
#[derive(Default)]
struct Case {
    lan_in: Vec<Vec<u8>>,
    wan_in: Vec<Vec<u8>>,
    lan_out: Vec<Vec<u8>>,
    wan_out: Vec<Vec<u8>>,
    drops: BTreeMap<String, u64>,
}

impl Case {
    fn drop(&mut self, reason: &str, n: u64) {
        *self.drops.entry(reason.to_owned()).or_default() += n;
    }

    /// Runs the daemon over the case (`mtu` on both ports, or the default)
    /// and checks outputs, drops, accounting and the mempool.
    fn run(&self, mtu: Option<u16>) -> serde_json::Value {
        self.run_with(mtu, None)
    }

    /// [`Case::run`] with `lb` in front of `route`, with services `lb`.
    fn run_with(&self, mtu: Option<u16>, lb: Option<&str>) -> serde_json::Value {
        let dir = tempfile::tempdir().unwrap();
        write_big_pcap(&dir.path().join("lan-in.pcap"), &self.lan_in).unwrap();
        write_big_pcap(&dir.path().join("wan-in.pcap"), &self.wan_in).unwrap();
        let cfg = dir.path().join("router.toml");
        std::fs::write(&cfg, config(dir.path(), mtu, lb)).unwrap();
        let r = run_daemon(
            dir.path(),
            &cfg,
            &["--stop-when-idle", "600"],
            Duration::from_secs(120),
        )
        .unwrap();
        let got_lan = read_pcap(&dir.path().join("lan-out.pcap")).unwrap();
        let got_wan = read_pcap(&dir.path().join("wan-out.pcap")).unwrap();
        let show = |v: &[Vec<u8>]| {
            v.iter()
                .map(|f| {
                    let n = f.len().min(80);
                    format!("{} bytes {:02x?}", f.len(), &f[..n])
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            multiset(&got_lan),
            multiset(&self.lan_out),
            "lan output differs\n got:\n{}\n expected:\n{}",
            show(&got_lan),
            show(&self.lan_out)
        );
        assert_eq!(
            multiset(&got_wan),
            multiset(&self.wan_out),
            "wan output differs\n got:\n{}\n expected:\n{}",
            show(&got_wan),
            show(&self.wan_out)
        );
        let drops: BTreeMap<String, u64> =
            serde_json::from_value(r.report["drops"].clone()).unwrap();
        assert_eq!(drops, self.drops, "drop counters");
        assert_eq!(
            r.report["rx"],
            (self.lan_in.len() + self.wan_in.len()) as u64
        );
        assert_eq!(r.report["tx"], (got_lan.len() + got_wan.len()) as u64);
        assert_eq!(r.port("lan")["ipackets"], self.lan_in.len() as u64);
        assert_eq!(r.port("wan")["ipackets"], self.wan_in.len() as u64);
        assert_accounting(&r.report);
        assert_eq!(r.report["mempool"]["in_use"], 0, "an mbuf leaked");
        r.report
    }
}

/// Every cut of `frame` short of `full` bytes of headers: the expected
/// reason is `truncated` while the cut is inside the headers (below
/// `l3_end`: the IP header's end) and `bad_total_len` past them.
fn cuts(c: &mut Case, frame: &[u8], l3_end: usize) {
    for n in 0..frame.len() {
        c.lan_in.push(frame[..n].to_vec());
        c.drop(
            if n < l3_end {
                "truncated"
            } else {
                "bad_total_len"
            },
            1,
        );
    }
}

/// The default MTU (1500, data room 2,176): everything but the jumbo
/// forwarding.
#[test]
fn hostile_frames_default_mtu() {
    let mut c = Case::default();
    let gw = |f: &[u8]| routed(f, WAN_GW_MAC, WAN_MAC);

    // Plain traffic is routed (the baseline the rest is measured against).
    let good4 = udp4(LAN_MAC, HOST, [198, 18, 1, 5], 18);
    let good6 = udp6(LAN_MAC, v6("2001:db8:1::50"), v6("2001:db8:100::5"), 16);
    for f in [&good4, &good6] {
        c.wan_out.push(gw(f));
        c.lan_in.push(f.clone());
    }
    let back = udp4(WAN_MAC, [10, 0, 2, 50], [198, 18, 0, 7], 18);
    let mut back = back;
    back[6..12].copy_from_slice(&WAN_HOST_MAC);
    c.lan_out.push(routed(&back, LAN_GW_MAC, LAN_MAC));
    c.wan_in.push(back);

    // L2 destination: a foreign station's MAC and the other port's MAC
    // (on either port), IPv4 and IPv6 alike.
    c.lan_in.push(udp4(FOREIGN_MAC, HOST, [198, 18, 1, 5], 18));
    c.lan_in.push(udp4(WAN_MAC, HOST, [198, 18, 1, 5], 18));
    c.lan_in.push(udp6(
        FOREIGN_MAC,
        v6("2001:db8:1::50"),
        v6("2001:db8:100::5"),
        16,
    ));
    c.wan_in
        .push(udp4(LAN_MAC, [10, 0, 2, 50], [198, 18, 0, 7], 18));
    c.drop("not_for_us", 4);
    // Unicast IP in broadcast and multicast frames: not routed, not
    // answered (the last is an echo to the router's own address).
    c.lan_in.push(udp4(BCAST, HOST, [198, 18, 1, 5], 18));
    c.lan_in
        .push(udp4([0x01, 0, 0x5e, 0, 0, 5], HOST, [198, 18, 1, 5], 18));
    c.lan_in.push(udp6(
        [0x33, 0x33, 0, 0, 0, 1],
        v6("2001:db8:1::50"),
        v6("2001:db8:100::5"),
        16,
    ));
    let mut ping_bcast = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, BCAST)
        .ipv4(HOST, LAN_IP, 64)
        .icmpv4_echo_request(1, 1)
        .write(&mut ping_bcast, b"ping")
        .unwrap();
    c.lan_in.push(ping_bcast);
    c.drop("l2_multicast", 4);
    // ARP (broadcast, padded to 60 as on the wire) still answered...
    let mut req = eth(BCAST, HOST_MAC, 0x0806);
    req.extend(arp(1, HOST_MAC, HOST, [0; 6], LAN_IP));
    req.resize(60, 0);
    let mut rep = eth(HOST_MAC, LAN_MAC, 0x0806);
    rep.extend(arp(2, LAN_MAC, LAN_IP, HOST_MAC, HOST));
    rep.resize(60, 0);
    c.lan_in.push(req);
    c.lan_out.push(rep);
    // ... and so is NDP (multicast): a solicitation for our address.
    let target = v6("2001:db8:1::1");
    let mut ns_body = target.to_vec();
    ns_body.extend([1, 1]);
    ns_body.extend(HOST_MAC);
    c.lan_in.push(icmp6(
        [0x33, 0x33, 0xff, 0, 0, 1],
        HOST_MAC,
        v6("2001:db8:1::50"),
        v6("ff02::1:ff00:1"),
        255,
        135,
        [0; 4],
        &ns_body,
    ));
    let mut na_body = target.to_vec();
    na_body.extend([2, 1]);
    na_body.extend(LAN_MAC);
    c.lan_out.push(icmp6(
        HOST_MAC,
        LAN_MAC,
        target,
        v6("2001:db8:1::50"),
        255,
        136,
        [0xe0, 0, 0, 0],
        &na_body,
    ));

    // Padding: forwarded trimmed to the IP packet. 1,600 bytes fit one
    // mbuf; 9,000 and 60,000 come as chains.
    for (k, pad) in [1540usize, 8940, 59_940].into_iter().enumerate() {
        let f = udp4(LAN_MAC, HOST, [198, 18, 1, 20 + k as u8], 18);
        c.wan_out.push(gw(&f));
        c.lan_in.push(padded(f, pad));
    }
    // A 70,000-byte record: net_pcap (22.11) copies only its first 70,000
    // mod 65,536 bytes into the chain but sets pkt_len to all of it (its
    // jumbo copy takes a u16 length), so the frame's length disagrees with
    // its segments: bad_total_len. (Forwarded, that chain crashed the
    // PMD's own TX.)
    c.lan_in
        .push(padded(udp4(LAN_MAC, HOST, [198, 18, 1, 23], 18), 69_940));
    c.drop("bad_total_len", 1);
    let f = udp6(LAN_MAC, v6("2001:db8:1::50"), v6("2001:db8:100::9"), 16);
    c.wan_out.push(gw(&f));
    c.lan_in.push(padded(f, 3000));
    // Ethernet minimum padding (a 28-byte IP packet in a 60-byte frame).
    let f = udp4(LAN_MAC, HOST, [198, 18, 1, 30], 0);
    c.wan_out.push(gw(&f));
    c.lan_in.push(padded(f, 18));

    // 9,000-byte frames with the default MTU: too big (chains of 2,048-byte
    // segments here), never bad_total_len; IPv4 and IPv6.
    c.lan_in
        .push(udp4(LAN_MAC, HOST, [198, 18, 1, 40], 9000 - 42));
    c.lan_in.push(udp6(
        LAN_MAC,
        v6("2001:db8:1::50"),
        v6("2001:db8:100::40"),
        9000 - 62,
    ));
    c.drop("too_big", 2);
    // A chain whose IP length runs past the frame: bad_total_len.
    let mut cut = udp4(LAN_MAC, HOST, [198, 18, 1, 41], 8000);
    cut.truncate(5000);
    c.lan_in.push(cut);
    c.drop("bad_total_len", 1);

    // Broadcasts: the lan subnet's (as unicast to us and as link
    // broadcast, an echo among them), the wan subnet's directed from lan,
    // the limited broadcast: none forwarded, answered or ARPed for.
    c.lan_in.push(udp4(LAN_MAC, HOST, [10, 0, 1, 255], 18));
    c.lan_in.push(udp4(BCAST, HOST, [10, 0, 1, 255], 18));
    let mut ping_sub = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
        .ipv4(HOST, [10, 0, 1, 255], 64)
        .icmpv4_echo_request(2, 2)
        .write(&mut ping_sub, b"smurf")
        .unwrap();
    c.lan_in.push(ping_sub);
    c.lan_in.push(udp4(LAN_MAC, HOST, [10, 0, 2, 255], 18));
    c.lan_in.push(udp4(BCAST, HOST, [255, 255, 255, 255], 18));
    c.drop("broadcast", 5);

    // IPv6 scopes: link-local and unspecified sources, a link-local
    // destination (fe80::/64 is lan's connected route): not forwarded. An
    // echo to the router from a link-local source is answered.
    c.lan_in
        .push(udp6(LAN_MAC, v6("fe80::50"), v6("2001:db8:100::5"), 16));
    c.lan_in
        .push(udp6(LAN_MAC, v6("::"), v6("2001:db8:100::5"), 16));
    c.lan_in
        .push(udp6(LAN_MAC, v6("2001:db8:1::50"), v6("fe80::99"), 16));
    c.drop("bad_address", 3);
    let (ll, ours) = (v6("fe80::50"), v6("2001:db8:1::1"));
    c.lan_in.push(icmp6(
        LAN_MAC,
        HOST_MAC,
        ll,
        ours,
        64,
        128,
        [0, 9, 0, 1],
        b"link-local ping",
    ));
    c.lan_out.push(icmp6(
        HOST_MAC,
        LAN_MAC,
        ours,
        ll,
        64,
        129,
        [0, 9, 0, 1],
        b"link-local ping",
    ));

    // Sources that cannot be true (RFC 1812 5.3.7, 4.2.2.11): the lan
    // subnet's broadcast and the wan subnet's, the router's own addresses
    // (lan's, wan's, IPv6), forwarded or to the router (an echo from our
    // own address is not answered): bad_address.
    c.lan_in
        .push(udp4(LAN_MAC, [10, 0, 1, 255], [198, 18, 1, 5], 18));
    c.lan_in
        .push(udp4(LAN_MAC, [10, 0, 2, 255], [198, 18, 1, 5], 18));
    c.lan_in.push(udp4(LAN_MAC, LAN_IP, [198, 18, 1, 5], 18));
    c.lan_in
        .push(udp4(LAN_MAC, [10, 0, 2, 1], [198, 18, 1, 5], 18));
    let mut ping_self = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
        .ipv4(LAN_IP, LAN_IP, 64)
        .icmpv4_echo_request(3, 3)
        .write(&mut ping_self, b"self")
        .unwrap();
    c.lan_in.push(ping_self);
    c.lan_in.push(udp6(
        LAN_MAC,
        v6("2001:db8:1::1"),
        v6("2001:db8:100::5"),
        16,
    ));
    c.drop("bad_address", 6);
    // Frames from a group source MAC (broadcast, multicast), IPv4, IPv6
    // and ARP, to us or broadcast: bad_address, whatever they carry.
    let from = |mac: [u8; 6], mut f: Vec<u8>| {
        f[6..12].copy_from_slice(&mac);
        f
    };
    c.lan_in
        .push(from(BCAST, udp4(LAN_MAC, HOST, [198, 18, 1, 5], 18)));
    c.lan_in.push(from(
        [0x33, 0x33, 0, 0, 0, 1],
        udp6(LAN_MAC, v6("2001:db8:1::50"), v6("2001:db8:100::5"), 16),
    ));
    let mut arp_from_group = eth(BCAST, [0x01, 0, 0x5e, 0, 0, 1], 0x0806);
    arp_from_group.extend(arp(1, HOST_MAC, HOST, [0; 6], LAN_IP));
    arp_from_group.resize(60, 0);
    c.lan_in.push(arp_from_group);
    c.drop("bad_address", 3);
    // ARP in another format than Ethernet/IPv4 (hardware type 6, IEEE
    // 802; hardware address length 8): unsupported, not truncated.
    for (at, v) in [(1, 6u8), (4, 8)] {
        let mut f = eth(BCAST, HOST_MAC, 0x0806);
        let mut body = arp(1, HOST_MAC, HOST, [0; 6], LAN_IP);
        body[at] = v;
        f.extend(body);
        f.resize(60, 0);
        c.lan_in.push(f);
    }
    c.drop("unsupported", 2);

    // Every truncation of the headers: IPv4 (14 + 20), VLAN-tagged IPv4
    // (18 + 20), IPv6 (14 + 40), then ARP, ICMP, NDP, an IPv6 extension
    // header and QinQ.
    cuts(&mut c, &udp4(LAN_MAC, HOST, [198, 18, 1, 50], 18), 34);
    cuts(&mut c, &vlan_udp4([198, 18, 1, 51], 18), 38);
    cuts(
        &mut c,
        &udp6(LAN_MAC, v6("2001:db8:1::50"), v6("2001:db8:100::51"), 16),
        54,
    );
    // ARP (14 + 28, unpadded): a cut body is truncated wherever it ends
    // (the one handled format, or too short to tell another).
    let mut arp_req = eth(BCAST, HOST_MAC, 0x0806);
    arp_req.extend(arp(1, HOST_MAC, HOST, [0; 6], LAN_IP));
    cuts(&mut c, &arp_req, arp_req.len());
    // An ICMP echo to the router (14 + 20 + 8).
    let mut echo = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
        .ipv4(HOST, LAN_IP, 64)
        .icmpv4_echo_request(9, 9)
        .write(&mut echo, b"cut")
        .unwrap();
    cuts(&mut c, &echo, 34);
    // An NDP neighbour solicitation for the router's address, with a
    // source link-layer address option (14 + 40 + 32).
    let mut sll = vec![1, 1];
    sll.extend(HOST_MAC);
    let mut ns_body = v6("2001:db8:1::1").to_vec();
    ns_body.extend(sll);
    let ns = icmp6(
        [0x33, 0x33, 0xff, 0, 0, 1],
        HOST_MAC,
        v6("2001:db8:1::50"),
        v6("ff02::1:ff00:1"),
        255,
        135,
        [0; 4],
        &ns_body,
    );
    cuts(&mut c, &ns, 54);
    // IPv6 with a hop-by-hop header (PadN) before UDP (14 + 40 + 8 + 8).
    let mut hbh = udp6(LAN_MAC, v6("2001:db8:1::50"), v6("2001:db8:100::52"), 16);
    hbh.splice(54..54, [17, 0, 1, 4, 0, 0, 0, 0]);
    hbh[20] = 0;
    let plen = u16::from_be_bytes([hbh[18], hbh[19]]) + 8;
    hbh[18..20].copy_from_slice(&plen.to_be_bytes());
    cuts(&mut c, &hbh, 54);
    // ... cut inside its hop-by-hop header with the payload length cut to
    // match (the IP packet whole, its header chain not): truncated. Cut
    // inside the UDP header past it: forwarded, as any IP payload is, when
    // no stage reads ports (route alone: parse leaves L4 alone).
    for n in 54..66 {
        let mut f = hbh[..n].to_vec();
        f[18..20].copy_from_slice(&((n - 54) as u16).to_be_bytes());
        if n < 62 {
            c.drop("truncated", 1);
        } else {
            let mut out = f.clone();
            out[..6].copy_from_slice(&WAN_GW_MAC);
            out[6..12].copy_from_slice(&WAN_MAC);
            out[21] -= 1;
            c.wan_out.push(out);
        }
        c.lan_in.push(f);
    }
    // QinQ: an 802.1ad S-tag and an 802.1Q C-tag (14 + 8 + 20).
    let mut qinq = Vec::new();
    PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
        .double_vlan(VlanId::try_new(200).unwrap(), VlanId::try_new(100).unwrap())
        .ipv4(HOST, [198, 18, 1, 53], 64)
        .udp(1111, 2222)
        .write(&mut qinq, &[7; 18])
        .unwrap();
    qinq[12..14].copy_from_slice(&[0x88, 0xa8]);
    cuts(&mut c, &qinq, 42);

    let report = c.run(None);
    let ev = |k: &str| report["events"][k].as_u64().unwrap_or(0);
    assert_eq!(ev("arp_request_sent"), 0, "no ARP for a broadcast address");
    assert_eq!(report["originated_total"], 0);
    assert_eq!(ev("arp_reply_sent"), 1);
    assert_eq!(ev("nd_advert_sent"), 1);
    assert_eq!(ev("echo_reply_sent"), 1, "only the link-local source's");
}

/// The L2 and martian cases through `lb` then `route`: a VIP's packets in
/// a broadcast or multicast frame are `l2_multicast`, from a group MAC,
/// from a martian source or one that cannot be true (a subnet broadcast,
/// the router's own address) `bad_address`, to a foreign MAC
/// `not_for_us` — never balanced; the same packet as a plain unicast frame
/// is balanced (IP-in-IP to its one backend, from the router's wan
/// address: a source the router accepts from itself alone), and the
/// balancer counts that one packet alone.
#[test]
fn hostile_frames_through_lb() {
    const VIP: [u8; 4] = [198, 18, 5, 10];
    const BACKEND: [u8; 4] = [198, 18, 1, 77];
    let lb = "[[lb.service]]\nname = \"vip\"\nvip = \"198.18.5.10\"\nproto = \"udp\"\n\
              port = 5000\nmethod = \"ipip\"\nsource = \"10.0.2.1\"\n\
              [[lb.service.backend]]\naddress = \"198.18.1.77\"\n";
    let mut c = Case::default();
    let good = udp4(LAN_MAC, HOST, VIP, 18);
    // The balanced packet: the outer header (TTL 64, one lower once
    // routed; identification = the flow hash's low bits; DF as the
    // inner's) in front of the packet as it came, to the wan gateway.
    let inner = &good[14..];
    let hash = dataplane::tables::lb::lb_hash_v4(
        u32::from_be_bytes(HOST),
        u32::from_be_bytes(VIP),
        4000,
        5000,
        17,
    );
    let mut outer = etherparse::Ipv4Header::new(
        inner.len() as u16,
        63,
        IpNumber::IPV4,
        [10, 0, 2, 1],
        BACKEND,
    )
    .unwrap();
    outer.identification = hash as u16;
    outer.dont_fragment = inner[6] & 0x40 != 0;
    outer.header_checksum = outer.calc_header_checksum();
    let mut ipip = eth(WAN_GW_MAC, WAN_MAC, 0x0800);
    outer.write(&mut ipip).unwrap();
    ipip.extend(inner);
    c.wan_out.push(ipip);
    c.lan_in.push(good.clone());
    // Unicast IP to the VIP in broadcast and multicast frames.
    c.lan_in.push(udp4(BCAST, HOST, VIP, 18));
    c.lan_in.push(udp4([0x01, 0, 0x5e, 0, 0, 5], HOST, VIP, 18));
    c.drop("l2_multicast", 2);
    // From a group MAC; from a martian source; from sources that cannot
    // be true.
    let mut from_group = good.clone();
    from_group[6] |= 1;
    c.lan_in.push(from_group);
    for src in [
        [127, 0, 0, 1],
        [0, 0, 0, 0],
        [10, 0, 1, 255],
        LAN_IP,
        [10, 0, 2, 1],
    ] {
        c.lan_in.push(udp4(LAN_MAC, src, VIP, 18));
    }
    c.drop("bad_address", 6);
    // To another station's MAC; to the lan subnet's broadcast.
    c.lan_in.push(udp4(FOREIGN_MAC, HOST, VIP, 18));
    c.drop("not_for_us", 1);
    c.lan_in.push(udp4(BCAST, HOST, [10, 0, 1, 255], 18));
    c.drop("broadcast", 1);
    let report = c.run_with(None, Some(lb));
    assert_eq!(report["originated_total"], 0);
    // `route` would drop a balanced packet of those frames too (its outer
    // frame is the inner's): only the balancer's books tell that it left
    // them alone, one packet and one flow (the unicast one) seen.
    let lb = &report["stages"]["lb"];
    let vip = &lb["services"][0]["counters"];
    assert_eq!(vip["packets"], 1, "{vip:#}");
    assert_eq!(vip["new_flows"], 1, "{vip:#}");
    assert_eq!(lb["conntrack"]["entries"], 1, "{lb:#}");
}

/// `mtu = 9000` on both ports, `data_room` unset: sized from it, so
/// 9,000-byte frames are one mbuf and forwarded intact; a frame over the
/// MTU still arrives (as a chain) and is too big.
#[test]
fn jumbo_frames_with_mtu_9000() {
    let mut c = Case::default();
    let f4 = udp4(LAN_MAC, HOST, [198, 18, 1, 5], 9000 - 42);
    assert_eq!(f4.len(), 9000);
    let f6 = udp6(
        LAN_MAC,
        v6("2001:db8:1::50"),
        v6("2001:db8:100::5"),
        9000 - 62,
    );
    // IP packets of exactly the MTU, untagged and tagged.
    let max4 = udp4(LAN_MAC, HOST, [198, 18, 1, 6], 9000 - 28);
    let max_vlan = vlan_udp4([198, 18, 1, 7], 9000 - 28);
    for f in [&f4, &f6, &max4, &max_vlan] {
        c.wan_out.push(routed(f, WAN_GW_MAC, WAN_MAC));
        c.lan_in.push(f.clone());
    }
    let mut back = udp4(WAN_MAC, [10, 0, 2, 50], [198, 18, 0, 7], 9000 - 42);
    back[6..12].copy_from_slice(&WAN_HOST_MAC);
    c.lan_out.push(routed(&back, LAN_GW_MAC, LAN_MAC));
    c.wan_in.push(back);
    // Over the MTU and the data room (a chain): too big. (One over the MTU
    // that fits an mbuf meets the route's MTU check, as at any MTU.)
    c.lan_in
        .push(udp4(LAN_MAC, HOST, [198, 18, 1, 8], 9100 - 28));
    c.drop("too_big", 1);
    // Padded past the data room: trimmed and forwarded.
    let small = udp4(LAN_MAC, HOST, [198, 18, 1, 9], 18);
    c.wan_out.push(routed(&small, WAN_GW_MAC, WAN_MAC));
    c.lan_in.push(padded(small, 12_000));
    let report = c.run(Some(9000));
    assert_eq!(report["originated_total"], 0);
}
