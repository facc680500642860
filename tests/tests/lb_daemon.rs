//! The load balancer through the running daemon (`pipeline = ["acl", "lb",
//! "route"]` on two net_pcap ports): a generated pcap of 10,000 flows to a
//! VIP comes out encapsulated, split over the backends by their weights,
//! every packet checked by an independent parser (etherparse): outer and
//! inner checksums and lengths, protocol 4 / 41, TTL, not fragmented, the
//! inner packet byte for byte. DSR packets carry their backend's MAC; an
//! oversized packet gets a valid ICMP error back; ICMP errors about tracked
//! flows reach those flows' backends. Two daemons (the second with its
//! backends listed in another order) produce the same output byte for
//! byte. The books balance and no mbuf is leaked. In ring mode (1 and 2
//! workers) it sends what run-to-completion sends, each flow in order.
use dataplane_tests::*;
use etherparse::{IpNumber, NetHeaders, PacketBuilder, PacketHeaders, TransportHeader};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::Duration;

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const DC_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const GW_DC: [u8; 6] = [2, 0, 0, 0, 2, 2];
const PEER: [u8; 6] = [2, 0, 0, 0, 9, 9];
const VIP: [u8; 4] = [198, 18, 0, 10];
const DSR_VIP: [u8; 4] = [198, 18, 0, 20];
const FLOWS: usize = 10_000;

fn config(dir: &Path, prefix: &str, reversed: bool) -> String {
    let d = dir.display();
    let mut web: Vec<String> = (1..=4)
        .map(|i| format!("[[lb.service.backend]]\naddress = \"10.2.0.{i}\"\nweight = {i}\n"))
        .collect();
    if reversed {
        web.reverse();
    }
    let web = web.concat();
    format!(
        r#"pipeline = ["acl", "lb", "route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "client"
device = "net_pcap0,rx_pcap={d}/client-in.pcap,tx_pcap={d}/client-out.pcap"
mac = "02:00:00:00:01:01"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8:c::1/64"]
[[port]]
name = "dc"
device = "net_pcap1,rx_pcap={d}/dc-in.pcap,tx_pcap={d}/dc-out.pcap"
mac = "02:00:00:00:02:01"
ipv4 = ["10.1.0.1/16"]
ipv6 = ["2001:db8:d::1/64"]
[[worker]]
core = 1
rx = ["client", "dc"]
[acl]
default = "allow"
[[acl.rule]]
action = "deny"
dst = "198.18.0.10/32"
proto = "tcp"
dport = "22"
[route]
icmp_rate = 1000
[[route.static]]
prefix = "198.51.100.0/24"
via = "192.0.2.2"
[[route.static]]
prefix = "203.0.113.0/24"
via = "192.0.2.2"
[[route.static]]
prefix = "10.2.0.0/16"
via = "10.1.0.2"
[[route.static]]
prefix = "2001:db8:e::/48"
via = "2001:db8:d::2"
[[route.neighbor]]
ip = "192.0.2.2"
mac = "02:00:00:00:01:02"
[[route.neighbor]]
ip = "10.1.0.2"
mac = "02:00:00:00:02:02"
[[route.neighbor]]
ip = "2001:db8:d::2"
mac = "02:00:00:00:02:02"
[lb]
icmp_rate = 1000
[[lb.service]]
name = "web"
vip = "198.18.0.10"
proto = "tcp"
port = 80
source = "10.1.0.1"
{web}
[[lb.service]]
name = "dsr"
vip = "198.18.0.20"
proto = "udp"
method = "dsr"
[[lb.service.backend]]
address = "10.1.0.50"
mac = "02:00:00:00:50:50"
[[lb.service.backend]]
address = "10.1.0.51"
mac = "02:00:00:00:51:51"
[[lb.service]]
name = "v6"
vip = "2001:db8:f::10"
proto = "tcp"
port = 443
source = "2001:db8:d::1"
[[lb.service.backend]]
address = "2001:db8:e::1"
[[lb.service.backend]]
address = "2001:db8:e::2"
"#
    )
}

fn client(k: usize) -> ([u8; 4], u16) {
    (
        [198, 51, 100, (k % 250 + 1) as u8],
        10_000 + (k / 250) as u16,
    )
}

fn tcp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, syn: bool, payload: usize) -> Vec<u8> {
    let mut b = Vec::new();
    let t = PacketBuilder::ethernet2(PEER, CLIENT_MAC)
        .ipv4(src, dst, 60)
        .tcp(sport, dport, 7, 65535);
    let t = if syn { t.syn() } else { t.ack(1) };
    t.write(&mut b, &vec![0x42; payload]).unwrap();
    b
}

/// The client side's input: what each kind of frame is.
struct Input {
    frames: Vec<Vec<u8>>,
    /// `frames` index -> flow number, for the web flows' packets.
    web: Vec<(usize, usize)>,
    /// Index range of the ICMP errors about web flows (flow k = i - first).
    icmp: std::ops::Range<usize>,
    dsr: std::ops::Range<usize>,
    v6: std::ops::Range<usize>,
}

fn input() -> Input {
    let mut frames = Vec::new();
    let mut web = Vec::new();
    for k in 0..FLOWS {
        let (c, p) = client(k);
        web.push((frames.len(), k));
        frames.push(tcp(c, p, VIP, 80, true, 0));
        web.push((frames.len(), k));
        frames.push(tcp(c, p, VIP, 80, false, k % 64));
    }
    // Denied by the ACL before the balancer.
    frames.push(tcp([198, 51, 100, 9], 999, VIP, 22, true, 0));
    // Too big once encapsulated, DF set: an ICMP error comes back.
    frames.push(tcp([198, 51, 100, 9], 998, VIP, 80, false, 1460));
    // ICMP fragmentation needed about replies of the first 20 flows.
    let first = frames.len();
    for k in 0..20 {
        let (c, p) = client(k);
        let mut reply = Vec::new();
        PacketBuilder::ipv4(VIP, c, 60)
            .tcp(80, p, 1, 100)
            .write(&mut reply, &[0u8; 100])
            .unwrap();
        let mut f = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv4([203, 0, 113, 1], VIP, 60)
            .icmpv4(etherparse::Icmpv4Type::DestinationUnreachable(
                etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded {
                    next_hop_mtu: 1280,
                },
            ))
            .write(&mut f, &reply[..28])
            .unwrap();
        frames.push(f);
    }
    let icmp = first..frames.len();
    let first = frames.len();
    for k in 0..200u16 {
        let (c, p) = client(usize::from(k));
        let mut f = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv4(c, DSR_VIP, 60)
            .udp(p, 5000 + k)
            .write(&mut f, b"dsr")
            .unwrap();
        frames.push(f);
    }
    let dsr = first..frames.len();
    let first = frames.len();
    let vip6: Ipv6Addr = "2001:db8:f::10".parse().unwrap();
    for k in 0..50u16 {
        let src: Ipv6Addr = format!("2001:db8:cc::{}", k + 1).parse().unwrap();
        let mut f = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv6(src.octets(), vip6.octets(), 60)
            .tcp(30_000 + k, 443, 1, 100)
            .write(&mut f, b"six")
            .unwrap();
        frames.push(f);
    }
    let v6 = first..frames.len();
    Input {
        frames,
        web,
        icmp,
        dsr,
        v6,
    }
}

fn run(
    dir: &Path,
    prefix: &str,
    reversed: bool,
    frames: &[Vec<u8>],
) -> (RunResult, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    write_pcap(&dir.join("client-in.pcap"), frames).unwrap();
    write_pcap(&dir.join("dc-in.pcap"), &[]).unwrap();
    let cfg = dir.join("lb.toml");
    std::fs::write(&cfg, config(dir, prefix, reversed)).unwrap();
    let r = run_daemon(
        dir,
        &cfg,
        &["--stop-when-idle", "800"],
        Duration::from_secs(120),
    )
    .unwrap();
    let dc = read_pcap(&dir.join("dc-out.pcap")).unwrap();
    let client = read_pcap(&dir.join("client-out.pcap")).unwrap();
    assert_eq!(r.report["mempool"]["in_use"], 0, "mbufs leaked");
    (r, dc, client)
}

/// The outer IPv4 header of an IP-in-IP frame, checked; the inner bytes.
fn check_ipip(f: &[u8]) -> (Ipv4Addr, Vec<u8>) {
    assert_eq!(&f[..6], &GW_DC);
    assert_eq!(&f[6..12], &DC_MAC);
    let h = PacketHeaders::from_ethernet_slice(f).expect("outer parses");
    let Some(NetHeaders::Ipv4(outer, _)) = h.net else {
        panic!("not IPv4")
    };
    assert_eq!(outer.protocol, IpNumber::IPV4);
    assert_eq!(outer.header_checksum, outer.calc_header_checksum());
    assert_eq!(usize::from(outer.total_len), f.len() - 14);
    assert!(outer.time_to_live >= 1);
    assert!(!outer.more_fragments && outer.fragment_offset.value() == 0);
    assert_eq!(outer.source, [10, 1, 0, 1]);
    let inner = f[34..].to_vec();
    let ih = PacketHeaders::from_ip_slice(&inner).expect("inner parses");
    let Some(NetHeaders::Ipv4(ip, _)) = ih.net else {
        panic!("inner not IPv4")
    };
    assert_eq!(ip.header_checksum, ip.calc_header_checksum());
    if let Some(TransportHeader::Tcp(t)) = ih.transport {
        assert_eq!(
            t.checksum,
            t.calc_checksum_ipv4(&ip, ih.payload.slice()).unwrap()
        );
    }
    (Ipv4Addr::from(outer.destination), inner)
}

#[test]
fn ten_thousand_flows_are_balanced_by_weight_and_encapsulated_right() {
    let dir = tempfile::tempdir().unwrap();
    let inp = input();
    let (r, dc, client) = run(dir.path(), &file_prefix("lb-a"), false, &inp.frames);
    let want_dc = inp.web.len() + inp.icmp.len() + inp.dsr.len() + inp.v6.len();
    assert_eq!(dc.len(), want_dc, "every balanced packet out on dc");
    // One worker, one port in: out in input order, with the ACL-denied and
    // the too-big packets missing.
    let mut it = dc.iter();
    let mut flow_backend: HashMap<usize, Ipv4Addr> = HashMap::new();
    let mut per: HashMap<Ipv4Addr, usize> = HashMap::new();
    for &(i, k) in &inp.web {
        let f = it.next().unwrap();
        let (b, inner) = check_ipip(f);
        assert_eq!(inner, inp.frames[i][14..], "inner packet unchanged");
        let was = *flow_backend.entry(k).or_insert(b);
        assert_eq!(was, b, "flow {k} stays on one backend");
        *per.entry(b).or_default() += 1;
    }
    for i in 1..=4u8 {
        let got = per[&Ipv4Addr::new(10, 2, 0, i)] as f64 / inp.web.len() as f64;
        let want = f64::from(i) / 10.0;
        assert!(
            (got - want).abs() < 0.02,
            "backend {i}: share {got:.3}, weight share {want}"
        );
    }
    for (j, _) in inp.icmp.clone().enumerate() {
        let (b, inner) = check_ipip(it.next().unwrap());
        assert_eq!(
            b, flow_backend[&j],
            "ICMP error about flow {j} reaches its backend"
        );
        assert_eq!(inner[9], 1, "the ICMP error itself, encapsulated");
    }
    for i in inp.dsr.clone() {
        let f = it.next().unwrap();
        assert!(f[..6] == [2, 0, 0, 0, 0x50, 0x50] || f[..6] == [2, 0, 0, 0, 0x51, 0x51]);
        assert_eq!(&f[6..12], &DC_MAC);
        assert_eq!(&f[12..], &inp.frames[i][12..]);
    }
    for i in inp.v6.clone() {
        let f = it.next().unwrap();
        let h = PacketHeaders::from_ethernet_slice(f).unwrap();
        let Some(NetHeaders::Ipv6(outer, _)) = h.net else {
            panic!("not IPv6")
        };
        assert_eq!(outer.next_header, IpNumber::IPV6);
        assert_eq!(usize::from(outer.payload_length), f.len() - 54);
        assert_eq!(&f[54..], &inp.frames[i][14..]);
    }
    // The too-big packet's ICMP error, from the VIP to its client.
    assert_eq!(client.len(), 1);
    let h = PacketHeaders::from_ethernet_slice(&client[0]).unwrap();
    let Some(NetHeaders::Ipv4(ip, _)) = &h.net else {
        panic!()
    };
    assert_eq!((ip.source, ip.destination), (VIP, [198, 51, 100, 9]));
    let Some(TransportHeader::Icmpv4(icmp)) = &h.transport else {
        panic!()
    };
    let etherparse::Icmpv4Type::DestinationUnreachable(
        etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded { next_hop_mtu },
    ) = icmp.icmp_type
    else {
        panic!("{:?}", icmp.icmp_type)
    };
    assert_eq!(next_hop_mtu, 1480);
    assert_eq!(
        icmp.checksum,
        etherparse::Icmpv4Header::with_checksum(icmp.icmp_type.clone(), h.payload.slice()).checksum
    );
    // The report.
    assert_eq!(r.drop_count("acl_deny"), 1);
    assert_eq!(r.drop_count("too_big"), 1);
    let lb = &r.report["stages"]["lb"];
    let web = lb["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "web")
        .unwrap();
    assert_eq!(web["counters"]["new_flows"], FLOWS as u64 + 1);
    assert_eq!(web["counters"]["tracked"], FLOWS as u64);
    assert_eq!(web["counters"]["icmp_steered"], 20);
    let pk: u64 = web["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["packets"].as_u64().unwrap())
        .sum();
    assert_eq!(pk, inp.web.len() as u64 + 20);
    assert!(lb["conntrack"]["entries"].as_u64().unwrap() >= FLOWS as u64);
}

#[test]
fn two_daemons_choose_the_same_backends_byte_for_byte() {
    let inp = input();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (ra, dc_a, client_a) = run(a.path(), &file_prefix("lb-b1"), false, &inp.frames);
    // The second lists its backends in the opposite order.
    let (rb, dc_b, client_b) = run(b.path(), &file_prefix("lb-b2"), true, &inp.frames);
    assert_eq!(dc_a.len(), dc_b.len());
    assert!(dc_a == dc_b, "same backend choices, same bytes");
    assert_eq!(client_a, client_b);
    // The report names the same tables: per service, size and fingerprint.
    let tables = |r: &RunResult| -> Vec<(String, u64, String)> {
        r.report["stages"]["lb"]["services"]
            .as_array()
            .expect("lb services in the report")
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_string(),
                    s["table_size"].as_u64().expect("table_size"),
                    s["fingerprint"].as_str().expect("fingerprint").to_string(),
                )
            })
            .collect()
    };
    let (ta, tb) = (tables(&ra), tables(&rb));
    assert!(ta.len() >= 2, "{ta:?}");
    assert!(
        ta.iter()
            .all(|(_, size, f)| *size == 65_537 && f.len() == 16),
        "{ta:?}"
    );
    assert_eq!(ta, tb, "the same Maglev tables in both daemons");
}

/// UDP flows from 198.51.100.x to the VIP 198.18.0.53, replayed forever.
fn udp_feed(flows: u16) -> Vec<Vec<u8>> {
    (0..flows)
        .map(|k| {
            let mut f = Vec::new();
            PacketBuilder::ethernet2(PEER, CLIENT_MAC)
                .ipv4([198, 51, 100, (k % 250 + 1) as u8], [198, 18, 0, 53], 60)
                .udp(2000 + k, 53)
                .write(&mut f, &[0u8; 18])
                .unwrap();
            f
        })
        .collect()
}

/// A daemon balancing the feed over `backends` (address, weight).
fn reload_config(dir: &Path, prefix: &str, backends: &[(u8, u32)], capacity: u32) -> String {
    let d = dir.display();
    let list: String = backends
        .iter()
        .map(|(b, w)| format!("[[lb.service.backend]]\naddress = \"10.2.0.{b}\"\nweight = {w}\n"))
        .collect();
    format!(
        r#"pipeline = ["lb", "route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
[daemon]
stats_interval_ms = 200
[[port]]
name = "client"
device = "net_pcap0,rx_pcap={d}/feed.pcap,infinite_rx=1,tx_pcap=/dev/null"
mac = "02:00:00:00:01:01"
ipv4 = ["192.0.2.1/24"]
[[port]]
name = "dc"
device = "net_pcap1,rx_pcap={d}/empty.pcap,tx_pcap=/dev/null"
mac = "02:00:00:00:02:01"
ipv4 = ["10.1.0.1/16"]
[[worker]]
core = 1
rx = ["client", "dc"]
[route]
[[route.static]]
prefix = "10.2.0.0/16"
via = "10.1.0.2"
[[route.neighbor]]
ip = "10.1.0.2"
mac = "02:00:00:00:02:02"
[lb]
conntrack_capacity = {capacity}
[[lb.service]]
name = "dns"
vip = "198.18.0.53"
proto = "udp"
port = 53
source = "10.1.0.1"
{list}"#
    )
}

fn dns_counters(prefix: &str) -> serde_json::Value {
    let a = dataplane::control::socket::request(prefix, "stats").expect("stats request");
    let s = a
        .data
        .unwrap_or_else(|| serde_json::from_str(&a.message).unwrap());
    s["stages"]["lb"]["services"][0].clone()
}

/// Through the running daemon: a reload that drains one backend and adds
/// another keeps every tracked flow where it was (no flow is new or moved
/// after it: the stable backend ids survived the reload); one that removes
/// a backend moves exactly its flows; the connection table's size is
/// refused as a restart-only change.
#[test]
fn reloads_keep_tracked_flows_on_their_backends() {
    let dir = tempfile::tempdir().unwrap();
    write_pcap(&dir.path().join("feed.pcap"), &udp_feed(500)).unwrap();
    write_pcap(&dir.path().join("empty.pcap"), &[]).unwrap();
    let prefix = file_prefix("lb-reload");
    let path = dir.path().join("lb.toml");
    let five: Vec<(u8, u32)> = (1..=5).map(|b| (b, 1)).collect();
    std::fs::write(&path, reload_config(dir.path(), &prefix, &five, 4096)).unwrap();
    let mut d = Daemon::start(dir.path(), &path, &[]).unwrap();
    d.wait_log("traffic", Duration::from_secs(60), |l| {
        l.lines().any(|x| x.contains("lb_new_flows=500"))
    })
    .unwrap();
    // The stats line's totals, two intervals later (the occupancy is
    // published after each burst, the counters within it).
    std::thread::sleep(Duration::from_millis(500));
    let log = d.log();
    let line = log
        .lines()
        .rfind(|x| x.contains("lb_packets="))
        .expect("a stats line with lb totals");
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .parse()
            .unwrap_or_else(|e| panic!("{name} in {line}: {e}"))
    };
    assert!(field("lb_packets") > 500, "the feed replays: {line}");
    assert_eq!(field("lb_new_flows"), 500, "{line}");
    assert_eq!(field("conntrack"), 500, "every flow tracked once: {line}");
    let reload = |cfg: String| {
        std::fs::write(&path, cfg).unwrap();
        let a = dataplane::control::socket::request(&prefix, &format!("reload {}", path.display()))
            .expect("reload request");
        (a.ok, a.message)
    };
    // Backend 1 drained, backend 6 added.
    let mut drained = five.clone();
    drained[0].1 = 0;
    drained.push((6, 1));
    let (ok, msg) = reload(reload_config(dir.path(), &prefix, &drained, 4096));
    assert!(ok, "{msg}");
    assert!(msg.contains("lb services 1 -> 1, backends +2 -1"), "{msg}");
    std::thread::sleep(Duration::from_millis(500));
    let c = dns_counters(&prefix);
    assert_eq!(c["counters"]["new_flows"], 0, "{c:#}");
    assert_eq!(c["counters"]["moved"], 0, "{c:#}");
    assert!(c["counters"]["tracked"].as_u64().unwrap() > 500, "{c:#}");
    assert!(c["counters"]["drained"].as_u64().unwrap() > 0, "{c:#}");
    let b = |c: &serde_json::Value, i: usize| c["backends"][i]["packets"].as_u64().unwrap();
    assert!(b(&c, 0) > 0, "the drained backend keeps its flows");
    assert_eq!(b(&c, 5), 0, "the new backend gets no tracked flow");
    // Backend 2 removed: its flows move, and only they.
    let removed: Vec<(u8, u32)> = drained.iter().copied().filter(|(a, _)| *a != 2).collect();
    let (ok, msg) = reload(reload_config(dir.path(), &prefix, &removed, 4096));
    assert!(ok, "{msg}");
    std::thread::sleep(Duration::from_millis(500));
    let c = dns_counters(&prefix);
    let moved = c["counters"]["moved"].as_u64().unwrap();
    assert!(moved > 0 && moved < 500, "{c:#}");
    assert_eq!(c["counters"]["new_flows"], moved, "{c:#}");
    // The table's capacity needs a restart.
    let (ok, msg) = reload(reload_config(dir.path(), &prefix, &removed, 8192));
    assert!(!ok);
    assert!(
        msg.contains("lb.conntrack_capacity") && msg.contains("restart"),
        "{msg}"
    );
    let (_, report, _) = d.stop(libc::SIGINT, Duration::from_secs(20)).unwrap();
    assert_eq!(report["mempool"]["in_use"], 0);
    let lost: Vec<_> = report["drops"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| *k != "tx_full" && v.as_u64() != Some(0))
        .collect();
    assert!(lost.is_empty(), "no drop but a full TX ring: {lost:?}");
}

/// Marks a sequenced frame's payload: MAGIC, flow (u32), seq (u32).
const MAGIC: &[u8; 4] = b"LBSQ";
/// Frames per flow in the ring test.
const SEQS: u32 = 5;

/// (flow, seq) of a sequenced frame (the inner packet's payload).
fn flow_seq(frame: &[u8]) -> Option<(u32, u32)> {
    let at = frame.windows(4).position(|w| w == MAGIC)?;
    let b = frame.get(at + 4..at + 12)?;
    Some((
        u32::from_be_bytes(b[..4].try_into().unwrap()),
        u32::from_be_bytes(b[4..].try_into().unwrap()),
    ))
}

/// The ring test's config: run-to-completion (`workers` = 0: one worker
/// polling both ports) or a distributor over `workers` workers, each with
/// its own TX file per port.
fn ring_config(dir: &Path, tag: &str, workers: usize) -> String {
    let d = dir.display();
    let prefix = file_prefix(tag);
    let backends: String = (1..=4)
        .map(|i| format!("[[lb.service.backend]]\naddress = \"10.2.0.{i}\"\n"))
        .collect();
    let tx = |port: &str| -> String {
        (0..workers.max(1))
            .map(|w| format!(",tx_pcap={d}/{tag}-{port}-{w}.pcap"))
            .collect()
    };
    let threads = if workers == 0 {
        "[[worker]]\ncore = 1\nrx = [\"client\", \"dc\"]\n".to_owned()
    } else {
        // Room for the whole pcap: the pcap port reads it faster than
        // debug-built workers take it, and a full ring drops.
        let mut s: String = (0..workers)
            .map(|w| format!("[[worker]]\ncore = {}\n", w % 2))
            .collect();
        s += "[distributor]\ncore = 1\nrx = [\"client\", \"dc\"]\nring_size = 8192\n";
        s
    };
    format!(
        r#"pipeline = ["lb", "route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
control_core = 0
[daemon]
stats_interval_ms = 0
[[port]]
name = "client"
device = "net_pcap0,rx_pcap={d}/client-in.pcap{client_tx}"
mac = "02:00:00:00:01:01"
ipv4 = ["192.0.2.1/24"]
[[port]]
name = "dc"
device = "net_pcap1,rx_pcap={d}/dc-in.pcap{dc_tx}"
mac = "02:00:00:00:02:01"
ipv4 = ["10.1.0.1/16"]
{threads}
[route]
[[route.static]]
prefix = "10.2.0.0/16"
via = "10.1.0.2"
[[route.neighbor]]
ip = "10.1.0.2"
mac = "02:00:00:00:02:02"
[[lb.service]]
name = "web"
vip = "198.18.0.10"
proto = "tcp"
port = 80
source = "10.1.0.1"
{backends}"#,
        client_tx = tx("client"),
        dc_tx = tx("dc"),
    )
}

/// `lb` in ring mode: one receiving core steers 1,000 TCP flows (5
/// sequenced frames each, rounds in a shuffled flow order) over 1 and over
/// 2 workers, each with its own connection table. Each sends the same
/// frames as run-to-completion (a multiset: flows interleave differently),
/// every flow's frames leave in order through one worker's TX queue and to
/// one backend, and every flow is tracked exactly once (the tables hold
/// 1,000 entries between them, not more); with 2 both workers take a share.
#[test]
fn ring_mode_tracks_each_flow_on_one_worker() {
    let dir = tempfile::tempdir().unwrap();
    let flows = 1000u32;
    let mut frames = Vec::new();
    let mut state = 0x2545_f491_u32;
    for seq in 0..SEQS {
        let mut order: Vec<u32> = (0..flows).collect();
        for i in (1..order.len()).rev() {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            order.swap(i, (state >> 8) as usize % (i + 1));
        }
        for f in order {
            let (c, p) = client(f as usize);
            let mut pl = MAGIC.to_vec();
            pl.extend_from_slice(&f.to_be_bytes());
            pl.extend_from_slice(&seq.to_be_bytes());
            let mut b = Vec::new();
            let t = PacketBuilder::ethernet2(PEER, CLIENT_MAC)
                .ipv4(c, VIP, 60)
                .tcp(p, 80, 7, 65535);
            let t = if seq == 0 { t.syn() } else { t.ack(1) };
            t.write(&mut b, &pl).unwrap();
            frames.push(b);
        }
    }
    write_pcap(&dir.path().join("client-in.pcap"), &frames).unwrap();
    write_pcap(&dir.path().join("dc-in.pcap"), &[]).unwrap();
    let total = frames.len() as u64;
    let run = |tag: &str, workers: usize| -> (Vec<Vec<Vec<u8>>>, serde_json::Value) {
        let path = dir.path().join(format!("{tag}.toml"));
        std::fs::write(&path, ring_config(dir.path(), tag, workers)).unwrap();
        let r = run_daemon(
            dir.path(),
            &path,
            &["--stop-when-idle", "800"],
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("{tag}: {e}"));
        assert_eq!(r.report["mempool"]["in_use"], 0, "{tag}: mbufs leaked");
        assert_eq!(r.report["rx"], total, "{tag}");
        let files = (0..workers.max(1))
            .map(|w| read_pcap(&dir.path().join(format!("{tag}-dc-{w}.pcap"))).unwrap())
            .collect();
        (files, r.report)
    };
    let multiset = |files: &[Vec<Vec<u8>>]| -> HashMap<Vec<u8>, usize> {
        let mut m = HashMap::new();
        for f in files.iter().flatten() {
            *m.entry(f.clone()).or_default() += 1;
        }
        m
    };
    let (rtc, rtc_report) = run("lb-rtc", 0);
    for (tag, workers) in [("lb-ring1", 1), ("lb-ring2", 2)] {
        let (out, report) = run(tag, workers);
        assert_eq!(
            out.iter().map(Vec::len).sum::<usize>(),
            frames.len(),
            "{tag}: every packet balanced and sent"
        );
        assert!(
            multiset(&out) == multiset(&rtc),
            "{tag}: other frames than run-to-completion"
        );
        // Per flow: one TX queue, one backend, frames in sequence.
        let mut seen: HashMap<u32, (usize, Ipv4Addr, u32)> = HashMap::new();
        for (q, file) in out.iter().enumerate() {
            for f in file {
                let (b, _) = check_ipip(f);
                let (flow, seq) = flow_seq(f).expect("a sequenced frame");
                match seen.insert(flow, (q, b, seq)) {
                    None => assert_eq!(seq, 0, "{tag}: flow {flow} starts at {seq}"),
                    Some((pq, pb, ps)) => {
                        assert_eq!(pq, q, "{tag}: flow {flow} left through two queues");
                        assert_eq!(pb, b, "{tag}: flow {flow} changed backend");
                        assert_eq!(seq, ps + 1, "{tag}: flow {flow}: seq {seq} after {ps}");
                    }
                }
            }
        }
        assert_eq!(seen.len(), flows as usize, "{tag}");
        assert!(seen.values().all(|&(_, _, s)| s == SEQS - 1), "{tag}");
        let lb = &report["stages"]["lb"];
        let web = &lb["services"][0]["counters"];
        assert_eq!(web["new_flows"], u64::from(flows), "{tag}: {web:#}");
        assert_eq!(
            web["tracked"],
            u64::from(flows * (SEQS - 1)),
            "{tag}: {web:#}"
        );
        assert_eq!(
            lb["conntrack"]["entries"],
            u64::from(flows),
            "{tag}: each flow in one worker's table"
        );
        assert_eq!(report["tx"], rtc_report["tx"], "{tag}");
        let workers_r = report["workers"].as_array().unwrap();
        assert_eq!(workers_r.len(), workers);
        for (i, w) in workers_r.iter().enumerate() {
            assert!(
                w["ring_rx"].as_u64().unwrap_or(0) > 0,
                "{tag}: worker {i} got nothing: {w:#}"
            );
        }
    }
}
