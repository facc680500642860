//! The load balancer (`lb` stage) end to end through the pipeline as the
//! daemon builds it from a config (`lb` then `route`, and `acl` in front):
//! weight shares over generated flows, IP-in-IP packets checked by an
//! independent parser (etherparse), DSR, connection tracking across
//! reloads (drain, add, remove), a full connection table, idle expiry on a
//! clock the test drives, ICMP too-big errors, ICMP errors steered to their
//! flow's backend, fragment policies, IPv6 in IPv6, traffic to no service,
//! and the fast lane against the stage-by-stage path.
//!
//! The routes are on the `linear` backend and the lb tables are Rust, so
//! only a config with an ACL (rte_acl) starts EAL; the others build and run
//! without it (checked under nextest, where each test is its own process).
use dataplane::burst::{Burst, BURST_SIZE};
use dataplane::config::{Config, Resolved};
use dataplane::daemon::{
    build_table_set, build_worker_pipeline, default_peer_mac, new_neighbor_table, LearnedState,
    PortFacts, Reuse,
};
use dataplane::pipeline::{
    dispatch, new_meta_burst, Collect, DropReason, MetaBurst, Pipeline, StageCtx, VecPacket,
};
use dataplane::stats::WorkerCounters;
use dataplane::tables::lb::{lb_hash_v4, BackendIds};
use dataplane::tables::set::TableSet;
use etherparse::{IpNumber, Ipv4Header, NetHeaders, PacketBuilder, PacketHeaders, TransportHeader};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};

const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
const DC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x01];
const GW_DC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x02];
const GW_CLIENT: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x02];
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0x09, 0x09];

/// Two ports: `client` (where clients are, behind 192.0.2.2) and `dc`
/// (the backends, 10.2.0.0/16 behind 10.1.0.2; DSR backends on the dc
/// subnet itself). `$SERVICES` is replaced by each test's services.
const BASE: &str = r#"
pipeline = ["lb", "route"]

[eal]
memory_mb = 256
hugepages = "off"

[[port]]
name = "client"
device = "net_null0"
mac = "02:00:00:00:01:01"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8:c::1/64"]

[[port]]
name = "dc"
device = "net_null1"
mac = "02:00:00:00:02:01"
ipv4 = ["10.1.0.1/16"]
ipv6 = ["2001:db8:d::1/64"]

[[worker]]
core = 1
rx = ["client", "dc"]

[route]
backend = "linear"
max_routes = 1024
max_routes6 = 1024
tbl8_groups = 64
neighbor_capacity = 1024

[[route.static]]
prefix = "198.51.100.0/24"
via = "192.0.2.2"

[[route.static]]
prefix = "10.2.0.0/16"
via = "10.1.0.2"

[[route.static]]
prefix = "2001:db8:e::/48"
via = "2001:db8:d::2"

[[route.static]]
prefix = "2001:db8:cc::/48"
via = "2001:db8:c::2"

[[route.neighbor]]
ip = "192.0.2.2"
mac = "02:00:00:00:01:02"

[[route.neighbor]]
ip = "10.1.0.2"
mac = "02:00:00:00:02:02"

[[route.neighbor]]
ip = "2001:db8:d::2"
mac = "02:00:00:00:02:02"

[[route.neighbor]]
ip = "2001:db8:c::2"
mac = "02:00:00:00:01:02"

$LB
"#;

fn eal() {
    static EAL: OnceLock<dataplane::dpdk::Eal> = OnceLock::new();
    EAL.get_or_init(|| {
        let mut args = dataplane::tables::testing::TEST_EAL_ARGS.to_vec();
        let m = args.iter().position(|a| *a == "-m").expect("-m") + 1;
        args[m] = "2048";
        dataplane::dpdk::Eal::init(&args).unwrap_or_else(|e| panic!("EAL: {e}"))
    });
}

/// DPDK table builds are not thread-safe across test threads sharing EAL
/// (only the ACL's here; the lock is cheap, so every build takes it).
fn lock() -> std::sync::MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` IP-in-IP backends `10.2.0.1..` with `weight(i)`.
fn backends(n: usize, weight: impl Fn(usize) -> u32) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[[lb.service.backend]]\naddress = \"10.2.{}.{}\"\nweight = {}\n",
                i / 250,
                i % 250 + 1,
                weight(i)
            )
        })
        .collect()
}

fn web(extra: &str, backends: &str) -> String {
    format!(
        "[[lb.service]]\nname = \"web\"\nvip = \"198.18.0.10\"\nproto = \"tcp\"\nport = 80\n\
         method = \"ipip\"\nsource = \"10.1.0.1\"\n{extra}\n{backends}"
    )
}

fn config(lb: &str) -> String {
    BASE.replace("$LB", lb)
}

struct Router {
    cfg: Config,
    res: Resolved,
    facts: PortFacts,
    learned: LearnedState,
    tables: TableSet,
    pipeline: Pipeline,
    meta: Box<MetaBurst>,
    counters: WorkerCounters,
    now: u64,
}

/// What one burst did.
#[derive(Default)]
struct Out {
    sent: Vec<(u16, Vec<u8>)>,
    dropped: Vec<(DropReason, Vec<u8>)>,
}

impl Router {
    fn new(toml: &str) -> Router {
        Self::with_lane(toml, true)
    }

    fn with_lane(toml: &str, lane: bool) -> Router {
        let acl = toml.contains("[acl]");
        if acl {
            eal();
        }
        let _l = lock();
        let (cfg, res) = Config::parse(toml, "lb.toml").unwrap_or_else(|e| panic!("{e}"));
        let facts = PortFacts {
            macs: cfg
                .ports
                .iter()
                .map(|p| p.mac.as_ref().unwrap().get_ref().0)
                .collect(),
            checksum_offload: vec![false; cfg.ports.len()],
        };
        let mut learned = LearnedState {
            neighbors: new_neighbor_table(&cfg).unwrap(),
            lb_ids: BackendIds::default(),
        };
        let tables = build_table_set(
            &cfg,
            &res,
            &facts,
            learned.learned(),
            0,
            1,
            Reuse::default(),
            &AtomicBool::new(false),
        )
        .unwrap();
        let peers: Vec<[u8; 6]> = (0..cfg.ports.len()).map(default_peer_mac).collect();
        let mut pipeline = build_worker_pipeline(&cfg, &res, &tables, &facts.macs, &peers, 0);
        pipeline.set_lane(lane);
        if !acl {
            dataplane::tables::testing::assert_no_eal();
        }
        Router {
            cfg,
            res,
            facts,
            learned,
            tables,
            pipeline,
            meta: Box::new(new_meta_burst()),
            counters: WorkerCounters::default(),
            now: 1_000_000_000,
        }
    }

    /// Builds the tables of `toml` as a reload does (same learned state)
    /// and rebinds the pipeline to them.
    fn reload(&mut self, toml: &str) {
        let _l = lock();
        let (cfg, res) = Config::parse(toml, "lb.toml").unwrap_or_else(|e| panic!("{e}"));
        let g = self.tables.generation + 1;
        let set = build_table_set(
            &cfg,
            &res,
            &self.facts,
            self.learned.learned(),
            g,
            1,
            Reuse::default(),
            &AtomicBool::new(false),
        )
        .unwrap();
        self.pipeline.rebind(&set, 0);
        self.tables = set;
        self.cfg = cfg;
        self.res = res;
    }

    /// Runs `frames` (received on `port`) in full bursts.
    fn run(&mut self, port: u16, frames: &[Vec<u8>]) -> Out {
        let mut out = Out::default();
        let ctx = StageCtx {
            now: self.now,
            tsc_hz: 1_000_000_000,
            counters: &self.counters,
        };
        for chunk in frames.chunks(BURST_SIZE) {
            let mut b = Burst::<VecPacket>::new();
            for f in chunk {
                b.push(VecPacket::new(f.clone())).unwrap();
            }
            self.pipeline.run(&mut b, &mut self.meta, port, &ctx);
            let mut c = Collect::default();
            dispatch(&mut b, &self.meta, &mut c);
            out.sent
                .extend(c.sent.into_iter().map(|(p, v)| (p, v.transmitted())));
            out.dropped
                .extend(c.dropped.into_iter().map(|(r, v)| (r, v.bytes)));
        }
        out
    }

    /// The `lb` report's first service's counters.
    fn counters(&self, service: &str) -> serde_json::Value {
        let r = self.tables.lb.as_ref().unwrap().report();
        r["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == service)
            .unwrap_or_else(|| panic!("no service {service}"))
            .clone()
    }
}

fn tcp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, flags: u8, payload: usize) -> Vec<u8> {
    let mut b = Vec::new();
    let mut builder = PacketBuilder::ethernet2(PEER, CLIENT_MAC)
        .ipv4(src, dst, 60)
        .tcp(sport, dport, 1, 65535);
    if flags & 0x02 != 0 {
        builder = builder.syn();
    }
    if flags & 0x01 != 0 {
        builder = builder.fin();
    }
    if flags & 0x04 != 0 {
        builder = builder.rst();
    }
    builder.write(&mut b, &vec![0x5a; payload]).unwrap();
    b
}

fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
    let mut b = Vec::new();
    PacketBuilder::ethernet2(PEER, CLIENT_MAC)
        .ipv4(src, dst, 60)
        .udp(sport, dport)
        .write(&mut b, b"hello")
        .unwrap();
    b
}

/// Client `k` of many: 198.51.100.x with a port.
fn client(k: usize) -> ([u8; 4], u16) {
    (
        [198, 51, 100, (k % 250 + 1) as u8],
        10_000 + (k / 250) as u16,
    )
}

const VIP: [u8; 4] = [198, 18, 0, 10];

/// What a router on the way back sends, to the VIP, about the backend's
/// reply (VIP:80 -> client `c`:`p`): an ICMP error of type `t` quoting the
/// reply's IP header and 8 bytes.
fn icmp_about_reply(c: [u8; 4], p: u16, t: etherparse::Icmpv4Type) -> Vec<u8> {
    let mut reply = Vec::new();
    PacketBuilder::ipv4(VIP, c, 60)
        .tcp(80, p, 1, 100)
        .write(&mut reply, &[0u8; 1400])
        .unwrap();
    let mut icmp = Vec::new();
    PacketBuilder::ethernet2(PEER, CLIENT_MAC)
        .ipv4([203, 0, 113, 1], VIP, 60)
        .icmpv4(t)
        .write(&mut icmp, &reply[..28])
        .unwrap();
    icmp
}

/// The outer header and the inner packet's bytes of an IP-in-IP frame.
fn ipip(frame: &[u8]) -> (Ipv4Header, Vec<u8>) {
    let h = PacketHeaders::from_ethernet_slice(frame).expect("parses");
    let Some(NetHeaders::Ipv4(outer, _)) = h.net else {
        panic!("not IPv4")
    };
    assert_eq!(outer.protocol, IpNumber::IPV4, "IP-in-IP");
    (outer, frame[34..].to_vec())
}

/// The backend (outer destination) of each sent frame.
fn backend_of(frame: &[u8]) -> Ipv4Addr {
    Ipv4Addr::from(ipip(frame).0.destination)
}

#[test]
fn shares_follow_weights_over_10k_flows() {
    let mut r = Router::new(&config(&web("", &backends(4, |i| i as u32 + 1))));
    let frames: Vec<_> = (0..10_000)
        .map(|k| {
            let (c, p) = client(k);
            tcp(c, p, VIP, 80, 0x02, 0)
        })
        .collect();
    let out = r.run(0, &frames);
    assert!(out.dropped.is_empty(), "{:?}", out.dropped.first());
    assert_eq!(out.sent.len(), 10_000);
    let mut per: HashMap<Ipv4Addr, usize> = HashMap::new();
    for (port, f) in &out.sent {
        assert_eq!(*port, 1, "to the dc port");
        *per.entry(backend_of(f)).or_default() += 1;
    }
    for i in 0..4u8 {
        let got = per[&Ipv4Addr::new(10, 2, 0, i + 1)] as f64 / 10_000.0;
        let want = f64::from(i + 1) / 10.0;
        assert!((got - want).abs() < 0.02, "backend {i}: {got} vs {want}");
    }
    let c = r.counters("web");
    assert_eq!(c["counters"]["new_flows"], 10_000);
    assert_eq!(c["counters"]["packets"], 10_000);
    let flows: u64 = c["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["flows"].as_u64().unwrap())
        .sum();
    assert_eq!(flows, 10_000);
}

#[test]
fn ipip_packets_are_well_formed() {
    let mut r = Router::new(&config(&web("", &backends(3, |_| 1))));
    for (k, payload) in [(1, 0), (2, 100), (3, 1400)] {
        let (c, p) = client(k);
        let input = tcp(c, p, VIP, 80, 0x10, payload);
        let out = r.run(0, std::slice::from_ref(&input));
        assert_eq!(out.sent.len(), 1, "{:?}", out.dropped);
        let (port, f) = &out.sent[0];
        assert_eq!(*port, 1);
        assert_eq!(&f[..6], &GW_DC, "to the gateway toward the backends");
        assert_eq!(&f[6..12], &DC_MAC);
        let (outer, inner) = ipip(f);
        assert_eq!(outer.header_checksum, outer.calc_header_checksum());
        assert_eq!(usize::from(outer.total_len), f.len() - 14);
        assert_eq!(outer.source, [10, 1, 0, 1]);
        assert_eq!(outer.time_to_live, 63, "64, less the route's hop");
        assert!(!outer.more_fragments && outer.fragment_offset.value() == 0);
        assert_eq!(
            outer.dont_fragment,
            input[20] & 0x40 != 0,
            "DF from the inner"
        );
        assert_eq!(inner, input[14..], "the inner packet unchanged");
        let ih = PacketHeaders::from_ip_slice(&inner).unwrap();
        let Some(NetHeaders::Ipv4(ip, _)) = ih.net else {
            panic!()
        };
        assert_eq!(ip.header_checksum, ip.calc_header_checksum());
        let Some(TransportHeader::Tcp(t)) = ih.transport else {
            panic!()
        };
        assert_eq!(
            t.checksum,
            t.calc_checksum_ipv4(&ip, ih.payload.slice()).unwrap()
        );
    }
}

#[test]
fn tracked_flows_keep_their_backend_when_the_pool_changes() {
    let before = config(&web("", &backends(10, |_| 1)));
    let mut r = Router::new(&before);
    let flows: Vec<_> = (0..2000).map(client).collect();
    let syn: Vec<_> = flows
        .iter()
        .map(|&(c, p)| tcp(c, p, VIP, 80, 0x02, 0))
        .collect();
    let ack: Vec<_> = flows
        .iter()
        .map(|&(c, p)| tcp(c, p, VIP, 80, 0x10, 0))
        .collect();
    let first: Vec<Ipv4Addr> = r
        .run(0, &syn)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    // Backend 0 drained, two added: every tracked flow stays.
    let drained = Ipv4Addr::new(10, 2, 0, 1);
    let after = config(&web("", &backends(12, |i| u32::from(i != 0))));
    r.reload(&after);
    let again: Vec<Ipv4Addr> = r
        .run(0, &ack)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    assert_eq!(first, again, "tracked flows stay on their backends");
    let c = r.counters("web");
    assert_eq!(c["counters"]["tracked"], 2000);
    let on_drained = first.iter().filter(|&&b| b == drained).count() as u64;
    assert!(on_drained > 0);
    assert_eq!(c["counters"]["drained"], on_drained);
    // New flows never go to the drained backend; some go to the new ones.
    let fresh: Vec<_> = (5000..7000)
        .map(|k| {
            let (c, p) = client(k);
            tcp(c, p, VIP, 80, 0x02, 0)
        })
        .collect();
    let new: Vec<Ipv4Addr> = r
        .run(0, &fresh)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    assert!(!new.contains(&drained));
    assert!(new.contains(&Ipv4Addr::new(10, 2, 0, 12)));
    // Backend 2 removed: its flows move (counted), the others stay.
    let removed = Ipv4Addr::new(10, 2, 0, 3);
    let mut list = backends(12, |i| u32::from(i != 0));
    list = list.replace(
        "[[lb.service.backend]]\naddress = \"10.2.0.3\"\nweight = 1\n",
        "",
    );
    r.reload(&config(&web("", &list)));
    let last: Vec<Ipv4Addr> = r
        .run(0, &ack)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    let on_removed = first.iter().filter(|&&b| b == removed).count();
    assert!(on_removed > 0);
    for (a, b) in first.iter().zip(&last) {
        if *a == removed {
            assert_ne!(b, &removed);
        } else {
            assert_eq!(a, b);
        }
    }
    assert_eq!(r.counters("web")["counters"]["moved"], on_removed as u64);
}

#[test]
fn a_full_connection_table_is_counted_and_falls_back_to_maglev() {
    let lb = format!(
        "[lb]\nconntrack_capacity = 16\n{}",
        web("", &backends(8, |_| 1))
    );
    let mut r = Router::new(&config(&lb));
    let flows: Vec<_> = (0..500).map(client).collect();
    let frames: Vec<_> = flows
        .iter()
        .map(|&(c, p)| tcp(c, p, VIP, 80, 0x02, 0))
        .collect();
    let out = r.run(0, &frames);
    assert_eq!(out.sent.len(), 500, "nothing lost to a full table");
    let c = r.counters("web");
    let full = c["counters"]["conntrack_full"].as_u64().unwrap();
    assert!(full >= 500 - 16, "{full}");
    assert_eq!(c["counters"]["untracked"], full);
    let t = r.tables.lb.as_ref().unwrap();
    let s = &t.services[0];
    for ((cl, p), (_, f)) in flows.iter().zip(&out.sent) {
        let h = lb_hash_v4(u32::from_be_bytes(*cl), u32::from_be_bytes(VIP), *p, 80, 6);
        let b = &s.backends[s.maglev.backend(h).unwrap()];
        assert_eq!(std::net::IpAddr::V4(backend_of(f)), b.addr);
    }
}

#[test]
fn idle_flows_expire_on_the_clock() {
    let udp_svc = |n: usize| {
        format!(
            "[lb]\nudp_timeout_s = 30\n[[lb.service]]\nname = \"dns\"\nvip = \"198.18.0.53\"\n\
             proto = \"udp\"\nport = 53\nsource = \"10.1.0.1\"\n{}",
            backends(n, |_| 1)
        )
    };
    let mut r = Router::new(&config(&udp_svc(2)));
    let flows: Vec<_> = (0..400).map(client).collect();
    let frames: Vec<_> = flows
        .iter()
        .map(|&(c, p)| udp(c, p, [198, 18, 0, 53], 53))
        .collect();
    let first: Vec<_> = r
        .run(0, &frames)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    // A bigger pool: Maglev now sends many flows elsewhere, but tracked
    // flows stay while they are not idle for 30 s.
    r.reload(&config(&udp_svc(8)));
    r.now += 29_000_000_000;
    let kept: Vec<_> = r
        .run(0, &frames)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    assert_eq!(first, kept);
    // Idle for 31 s: forgotten, balanced by the new table.
    r.now += 31_000_000_000;
    let later: Vec<_> = r
        .run(0, &frames)
        .sent
        .iter()
        .map(|(_, f)| backend_of(f))
        .collect();
    let moved = first.iter().zip(&later).filter(|(a, b)| a != b).count();
    assert!(moved > 100, "{moved} of 400 moved after expiry");
    // Counters start anew with the reloaded services.
    assert_eq!(r.counters("dns")["counters"]["new_flows"], 400);
}

#[test]
fn tcp_fin_shortens_the_timeout() {
    let lb = format!(
        "[lb]\ntcp_timeout_s = 300\nclosing_timeout_s = 5\n{}",
        web("", &backends(2, |_| 1))
    );
    let mut r = Router::new(&config(&lb));
    let (c, p) = client(7);
    r.run(0, &[tcp(c, p, VIP, 80, 0x02, 0)]);
    r.now += 1_000_000_000;
    r.run(0, &[tcp(c, p, VIP, 80, 0x11, 0)]); // FIN
    r.now += 6_000_000_000;
    r.run(0, &[tcp(c, p, VIP, 80, 0x10, 0)]);
    let k = r.counters("web")["counters"].clone();
    assert_eq!(k["new_flows"], 2, "closed flow forgotten after 5 s");
    assert_eq!(k["tracked"], 1);
}

#[test]
fn dsr_rewrites_the_destination_mac_only() {
    let lb = r#"
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
"#;
    let mut r = Router::new(&config(lb));
    let frames: Vec<_> = (0..200)
        .map(|k| {
            let (c, p) = client(k);
            udp(c, p, [198, 18, 0, 20], 5000 + k as u16)
        })
        .collect();
    let out = r.run(0, &frames);
    assert_eq!(out.sent.len(), 200);
    let mut macs = std::collections::HashSet::new();
    for ((port, f), input) in out.sent.iter().zip(&frames) {
        assert_eq!(*port, 1);
        assert!(f[..6] == [2, 0, 0, 0, 0x50, 0x50] || f[..6] == [2, 0, 0, 0, 0x51, 0x51]);
        macs.insert(f[..6].to_vec());
        assert_eq!(&f[6..12], &DC_MAC);
        assert_eq!(&f[12..], &input[12..], "the packet unchanged, TTL included");
    }
    assert_eq!(macs.len(), 2);
}

#[test]
fn too_big_once_encapsulated_gets_an_icmp_error_back() {
    let mut r = Router::new(&config(&web("", &backends(2, |_| 1))));
    let (c, p) = client(3);
    // 1500-byte IP packet with DF: 1520 once encapsulated.
    let mut big = tcp(c, p, VIP, 80, 0x10, 1500 - 40);
    assert_eq!(big.len(), 1514);
    let out = r.run(0, std::slice::from_ref(&big));
    assert_eq!(out.sent.len(), 1);
    let (port, f) = &out.sent[0];
    assert_eq!(*port, 0, "back toward the client");
    assert_eq!(&f[..6], &GW_CLIENT);
    let h = PacketHeaders::from_ethernet_slice(f).unwrap();
    let Some(NetHeaders::Ipv4(ip, _)) = &h.net else {
        panic!()
    };
    assert_eq!(ip.source, VIP);
    assert_eq!(ip.destination, c);
    assert_eq!(ip.header_checksum, ip.calc_header_checksum());
    let Some(TransportHeader::Icmpv4(icmp)) = &h.transport else {
        panic!("{h:?}")
    };
    match icmp.icmp_type {
        etherparse::Icmpv4Type::DestinationUnreachable(
            etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded { next_hop_mtu },
        ) => assert_eq!(next_hop_mtu, 1480),
        ref t => panic!("{t:?}"),
    }
    assert_eq!(
        icmp.checksum,
        etherparse::Icmpv4Header::with_checksum(icmp.icmp_type.clone(), h.payload.slice()).checksum
    );
    assert_eq!(r.counters.drops[DropReason::TooBig as usize].get(), 1);
    // Without DF: dropped, no error.
    big[20] &= !0x40;
    let c2 = Ipv4Header::from_slice(&big[14..]).unwrap().0;
    big[24..26].copy_from_slice(&c2.calc_header_checksum().to_be_bytes());
    let out = r.run(0, &[big]);
    assert!(out.sent.is_empty());
    assert_eq!(out.dropped.len(), 1);
    assert_eq!(out.dropped[0].0, DropReason::TooBigNoDf);
}

#[test]
fn icmp_errors_about_a_flow_reach_its_backend() {
    let mut r = Router::new(&config(&web("", &backends(16, |_| 1))));
    let mut seen = HashMap::new();
    for k in 0..64 {
        let (c, p) = client(k);
        let out = r.run(0, &[tcp(c, p, VIP, 80, 0x02, 0)]);
        seen.insert(k, backend_of(&out.sent[0].1));
    }
    // Grow the pool so that Maglev alone would move many of them.
    r.reload(&config(&web("", &backends(40, |_| 1))));
    for k in 0..64 {
        let (c, p) = client(k);
        let icmp = icmp_about_reply(
            c,
            p,
            etherparse::Icmpv4Type::DestinationUnreachable(
                etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded {
                    next_hop_mtu: 1300,
                },
            ),
        );
        let out = r.run(0, &[icmp]);
        assert_eq!(out.sent.len(), 1, "{:?}", out.dropped);
        assert_eq!(backend_of(&out.sent[0].1), seen[&k], "flow {k}");
    }
    assert_eq!(r.counters("web")["counters"]["icmp_steered"], 64);
}

#[test]
fn fragments_are_dropped_or_hashed_by_three_tuple() {
    let frag = |c: [u8; 4], first: bool| {
        let mut f = udp(c, 4000, [198, 18, 0, 30], 7000);
        if first {
            f[20] = 0x20; // MF
        } else {
            f[20] = 0x00;
            f[21] = 0x10; // offset 128 bytes
        }
        let h = Ipv4Header::from_slice(&f[14..]).unwrap().0;
        f[24..26].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
        f
    };
    let svc = |policy: &str| {
        config(&format!(
            "[[lb.service]]\nname = \"f\"\nvip = \"198.18.0.30\"\nproto = \"udp\"\n\
             source = \"10.1.0.1\"\nfragments = \"{policy}\"\n{}",
            backends(8, |_| 1)
        ))
    };
    let mut r = Router::new(&svc("drop"));
    let (c, _) = client(9);
    let out = r.run(
        0,
        &[
            frag(c, true),
            frag(c, false),
            udp(c, 4000, [198, 18, 0, 30], 7000),
        ],
    );
    assert_eq!(out.sent.len(), 1);
    assert_eq!(out.dropped.len(), 2);
    assert!(out
        .dropped
        .iter()
        .all(|(d, _)| *d == DropReason::LbFragment));
    assert_eq!(r.counters("f")["counters"]["fragments"], 2);
    let mut r = Router::new(&svc("three_tuple"));
    for k in 0..50 {
        let (c, _) = client(k);
        let out = r.run(
            0,
            &[
                frag(c, true),
                frag(c, false),
                udp(c, 4000, [198, 18, 0, 30], 7000),
                udp(c, 4001, [198, 18, 0, 30], 7001),
            ],
        );
        assert_eq!(out.sent.len(), 4);
        let b: Vec<_> = out.sent.iter().map(|(_, f)| backend_of(f)).collect();
        assert!(
            b.iter().all(|x| *x == b[0]),
            "one backend per 3-tuple: {b:?}"
        );
    }
}

#[test]
fn ipv6_services_encapsulate_ipv6_in_ipv6() {
    let lb = r#"
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
"#;
    let mut r = Router::new(&config(lb));
    let vip: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let mut backends = std::collections::HashSet::new();
    for k in 0..100u16 {
        let mut src = [0u8; 16];
        src[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0xcc]);
        src[15] = k as u8 + 1;
        let mut input = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv6(src, vip, 60)
            .tcp(20_000 + k, 443, 1, 100)
            .write(&mut input, b"x")
            .unwrap();
        let out = r.run(0, std::slice::from_ref(&input));
        assert_eq!(out.sent.len(), 1, "{:?}", out.dropped);
        let (port, f) = &out.sent[0];
        assert_eq!(*port, 1);
        let h = PacketHeaders::from_ethernet_slice(f).unwrap();
        let Some(NetHeaders::Ipv6(outer, _)) = h.net else {
            panic!()
        };
        assert_eq!(outer.next_header, IpNumber::IPV6);
        assert_eq!(usize::from(outer.payload_length), f.len() - 54);
        assert_eq!(outer.hop_limit, 63);
        assert_eq!(&f[54..], &input[14..], "inner unchanged");
        backends.insert(outer.destination);
    }
    assert_eq!(backends.len(), 2);
}

#[test]
fn traffic_to_no_service_passes_through() {
    let mut r = Router::new(&config(&web("", &backends(2, |_| 1))));
    let (c, p) = client(1);
    // Routed as the router routes it: to a backend network address,
    // and to the VIP on a port no service has (no route: dropped).
    let to_host = tcp(c, p, [10, 2, 7, 7], 80, 0x02, 0);
    let out = r.run(0, &[to_host.clone(), tcp(c, p, VIP, 81, 0x02, 0)]);
    assert_eq!(out.sent.len(), 1);
    assert_eq!(out.sent[0].1.len(), to_host.len(), "not encapsulated");
    assert_eq!(out.dropped[0].0, DropReason::NoRoute);
    assert_eq!(r.counters("web")["counters"]["packets"], 0);
}

#[test]
fn lane_and_stage_by_stage_agree() {
    for pipeline in [r#"["lb", "route"]"#, r#"["acl", "lb", "route"]"#] {
        let acl = if pipeline.contains("acl") {
            "[acl]\ndefault = \"allow\"\n[[acl.rule]]\naction = \"deny\"\nsrc = \"198.51.100.7/32\"\n"
        } else {
            ""
        };
        let lb = format!("{acl}{}", web("", &backends(8, |_| 1)));
        let toml = config(&lb).replace(
            r#"pipeline = ["lb", "route"]"#,
            &format!("pipeline = {pipeline}"),
        );
        let mut a = Router::with_lane(&toml, true);
        let mut b = Router::with_lane(&toml, false);
        let mut frames = Vec::new();
        for k in 0..300 {
            let (c, p) = client(k);
            frames.push(tcp(
                c,
                p,
                VIP,
                80,
                if k % 7 == 0 { 0x11 } else { 0x02 },
                k % 50,
            ));
            frames.push(tcp(c, p, [10, 2, 0, 9], 22, 0x02, 0));
            frames.push(udp(c, p, VIP, 80));
            if k % 5 == 0 {
                let mut v = tcp(c, p, VIP, 80, 0x10, 1500 - 40);
                v.truncate(60);
                frames.push(v);
            }
        }
        let x = a.run(0, &frames);
        let y = b.run(0, &frames);
        assert_eq!(x.sent, y.sent, "{pipeline}");
        assert_eq!(x.dropped, y.dropped, "{pipeline}");
        assert_eq!(a.counters("web"), b.counters("web"));
        for d in DropReason::ALL {
            assert_eq!(
                a.counters.drops[d as usize].get(),
                b.counters.drops[d as usize].get(),
                "{d:?}"
            );
        }
    }
}

/// The lane's passes (`pipeline::lb::plain`) against the stage-by-stage
/// path on mixed bursts, seeded: every kind of packet the stage treats
/// apart (new, tracked, closing, fragments under both policies, ICMP
/// errors about flows, too big with and without DF, an untracked service,
/// DSR, IPv6, to no service, truncated, a byte mutated), a connection table
/// small enough to fill, a clock that lets flows expire and a reload that
/// removes backends in the middle: the same verdicts, bytes and counters,
/// burst after burst.
#[test]
fn lane_and_stage_by_stage_agree_on_mixed_bursts() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    // `drain`: every `drain`-th backend of `web` has weight 0.
    let services = |n: usize, drain: usize| {
        format!(
            "[lb]\nconntrack_capacity = 64\nudp_timeout_s = 2\ntcp_timeout_s = 5\n\
             closing_timeout_s = 1\n{web}\n\
             [[lb.service]]\nname = \"frag3\"\nvip = \"198.18.0.30\"\nproto = \"udp\"\n\
             source = \"10.1.0.1\"\nfragments = \"three_tuple\"\n{b}\n\
             [[lb.service]]\nname = \"notrack\"\nvip = \"198.18.0.40\"\nproto = \"udp\"\n\
             source = \"10.1.0.1\"\nconntrack = false\ndf = \"set\"\n{b}\n\
             [[lb.service]]\nname = \"drained\"\nvip = \"198.18.0.50\"\nproto = \"udp\"\n\
             source = \"10.1.0.1\"\n{none}\n\
             [[lb.service]]\nname = \"notrack_drained\"\nvip = \"198.18.0.60\"\n\
             proto = \"udp\"\nsource = \"10.1.0.1\"\nconntrack = false\n{none}\n\
             [[lb.service]]\nname = \"dsr\"\nvip = \"198.18.0.20\"\nproto = \"udp\"\n\
             method = \"dsr\"\n[[lb.service.backend]]\naddress = \"10.1.0.50\"\n\
             mac = \"02:00:00:00:50:50\"\n\n\
             [[lb.service]]\nname = \"v6\"\nvip = \"2001:db8:f::10\"\nproto = \"tcp\"\n\
             source = \"2001:db8:d::1\"\n[[lb.service.backend]]\naddress = \"2001:db8:e::1\"\n",
            web = web("", &backends(n, |i| u32::from(i % drain != 0))),
            b = backends(n, |_| 1),
            none = backends(3, |_| 0),
        )
    };
    // The reload removes backends and drains some that had flows.
    let (toml, smaller) = (config(&services(12, 5)), config(&services(7, 3)));
    let mut a = Router::with_lane(&toml, true);
    let mut b = Router::with_lane(&toml, false);
    let mut rng = SmallRng::seed_from_u64(11);
    let vip6: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let fix_checksum = |f: &mut Vec<u8>| {
        if let Ok((h, _)) = Ipv4Header::from_slice(&f[14..]) {
            f[24..26].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
        }
    };
    for burst in 0..400 {
        let mut frames = Vec::new();
        for _ in 0..rng.gen_range(1..=BURST_SIZE) {
            // Few clients, so flows come back, are tracked, expire.
            let (c, p) = client(rng.gen_range(0..120));
            let mut f = match rng.gen_range(0..13) {
                0..=2 => {
                    let flags = [0x02, 0x10, 0x11, 0x04][rng.gen_range(0..4)];
                    tcp(c, p, VIP, 80, flags, rng.gen_range(0..64))
                }
                3 => {
                    // Too big once encapsulated, with or without DF.
                    let mut f = tcp(c, p, VIP, 80, 0x10, 1500 - 40);
                    if rng.gen() {
                        f[20] &= !0x40;
                        fix_checksum(&mut f);
                    }
                    f
                }
                4 => {
                    let mut f = udp(c, p, [198, 18, 0, 30], 7000);
                    f[20] = if rng.gen() { 0x20 } else { 0x00 };
                    f[21] = if f[20] == 0 { 0x10 } else { 0 };
                    fix_checksum(&mut f);
                    f
                }
                5 => udp(c, p, [198, 18, 0, 30], rng.gen()),
                6 => udp(c, p, [198, 18, 0, 40], rng.gen()),
                7 => udp(c, p, [198, 18, 0, 20], 53),
                8 => icmp_about_reply(
                    c,
                    p,
                    etherparse::Icmpv4Type::TimeExceeded(
                        etherparse::icmpv4::TimeExceededCode::TtlExceededInTransit,
                    ),
                ),
                9 => {
                    let mut src = [0u8; 16];
                    src[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0xcc]);
                    src[15] = c[3];
                    let mut f = Vec::new();
                    PacketBuilder::ethernet2(PEER, CLIENT_MAC)
                        .ipv6(src, vip6, 60)
                        .tcp(p, 443, 1, 100)
                        .write(&mut f, b"x")
                        .unwrap();
                    f
                }
                10 => tcp(c, p, [10, 2, 0, 9], 22, 0x02, 0),
                // Every backend drained: no backend for a new flow
                // (tracked or not).
                11 => udp(c, p, [198, 18, 0, [50, 60][rng.gen_range(0..2)]], 53),
                _ => {
                    let mut f = tcp(c, p, VIP, 80, 0x10, 4);
                    f.truncate(rng.gen_range(14..f.len()));
                    f
                }
            };
            if f.len() > 15 && rng.gen_ratio(1, 10) {
                let at = rng.gen_range(14..f.len().min(60));
                f[at] ^= 1 << rng.gen_range(0..8);
            }
            frames.push(f);
        }
        let step = rng.gen_range(0..700_000_000u64);
        a.now += step;
        b.now += step;
        if burst == 200 {
            a.reload(&smaller);
            b.reload(&smaller);
        }
        let (x, y) = (a.run(0, &frames), b.run(0, &frames));
        assert_eq!(x.sent, y.sent, "burst {burst}");
        assert_eq!(x.dropped, y.dropped, "burst {burst}");
    }
    for s in [
        "web",
        "frag3",
        "notrack",
        "drained",
        "notrack_drained",
        "dsr",
        "v6",
    ] {
        assert_eq!(a.counters(s), b.counters(s), "{s}");
    }
    for s in ["drained", "notrack_drained"] {
        let c = &a.counters(s)["counters"];
        assert!(c["no_backend"].as_u64().unwrap() > 0, "{s}: {c}");
    }
    let notrack = &a.counters("notrack")["counters"];
    assert!(notrack["untracked"].as_u64().unwrap() > 0, "{notrack}");
    let web = &a.counters("web")["counters"];
    for c in [
        "tracked",
        "new_flows",
        "conntrack_full",
        "too_big",
        "drained",
        "moved",
    ] {
        assert!(web[c].as_u64().unwrap() > 0, "the bursts reach {c}: {web}");
    }
    assert!(
        a.counters("frag3")["counters"]["new_flows"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(web["icmp_steered"].as_u64().unwrap() > 0, "{web}");
    for d in DropReason::ALL {
        assert_eq!(
            a.counters.drops[d as usize].get(),
            b.counters.drops[d as usize].get(),
            "{d:?}"
        );
    }
}

/// An IPv4 fragment of `f` (checksum fixed): the first (MF, offset 0) or a
/// later one (offset 128 bytes, which also hides its ports).
fn fragment_v4(mut f: Vec<u8>, first: bool) -> Vec<u8> {
    if first {
        f[20] = 0x20; // MF
    } else {
        f[20] = 0x00;
        f[21] = 0x10;
    }
    f[24..26].fill(0);
    let h = Ipv4Header::from_slice(&f[14..]).unwrap().0;
    f[24..26].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
    f
}

/// Non-first fragments carry no ports: they belong to the VIP's one service
/// for their protocol (here one with a port), dropped or balanced as its
/// policy says, on the lane and stage by stage alike; where the VIP has
/// several services for the protocol, which one is unknowable and they are
/// dropped.
#[test]
fn later_fragments_find_a_port_service_by_its_protocol() {
    let (c, p) = client(3);
    let whole = tcp(c, p, VIP, 80, 0x10, 64);
    let frames = [
        fragment_v4(whole.clone(), true),
        fragment_v4(whole.clone(), false),
        whole.clone(),
    ];
    for lane in [true, false] {
        let mut r = Router::with_lane(&config(&web("", &backends(8, |_| 1))), lane);
        let out = r.run(0, &frames);
        assert_eq!(out.sent.len(), 1, "lane {lane}");
        let reasons: Vec<_> = out.dropped.iter().map(|(d, _)| *d).collect();
        assert_eq!(reasons, [DropReason::LbFragment; 2], "lane {lane}");
        assert_eq!(r.counters("web")["counters"]["fragments"], 2);

        let three = web("fragments = \"three_tuple\"", &backends(8, |_| 1));
        let mut r = Router::with_lane(&config(&three), lane);
        for k in 0..40 {
            let (c, p) = client(k);
            let whole = tcp(c, p, VIP, 80, 0x10, 64);
            let out = r.run(
                0,
                &[
                    fragment_v4(whole.clone(), true),
                    fragment_v4(whole.clone(), false),
                    whole,
                ],
            );
            assert_eq!(out.sent.len(), 3, "lane {lane}: {:?}", out.dropped);
            let b: Vec<_> = out.sent.iter().map(|(_, f)| backend_of(f)).collect();
            assert!(b.iter().all(|x| *x == b[0]), "lane {lane}: {b:?}");
        }

        // A second TCP service on the VIP: a later fragment's is unknowable.
        let two = format!(
            "{three}\n[[lb.service]]\nname = \"tls\"\nvip = \"198.18.0.10\"\nproto = \"tcp\"\n\
             port = 443\nsource = \"10.1.0.1\"\nfragments = \"three_tuple\"\n{}",
            backends(2, |_| 1)
        );
        let mut r = Router::with_lane(&config(&two), lane);
        let out = r.run(0, &frames);
        assert_eq!(out.sent.len(), 2, "lane {lane}");
        assert_eq!(out.dropped.len(), 1, "lane {lane}");
        assert_eq!(out.dropped[0].0, DropReason::LbFragment);
    }
}

/// An IPv6 TCP packet to `dst`:`dport` from client `k`, whole or as its
/// first fragment (a Fragment header, offset 0, M set).
fn tcp6(k: u8, dst: [u8; 16], dport: u16, first_fragment: bool) -> Vec<u8> {
    let mut src = [0u8; 16];
    src[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0xcc]);
    src[15] = k;
    let mut f = Vec::new();
    PacketBuilder::ethernet2(PEER, CLIENT_MAC)
        .ipv6(src, dst, 60)
        .tcp(20_000, dport, 1, 100)
        .write(&mut f, b"x")
        .unwrap();
    if first_fragment {
        let plen = u16::from_be_bytes([f[18], f[19]]) + 8;
        f[18..20].copy_from_slice(&plen.to_be_bytes());
        f[20] = 44;
        f.splice(54..54, [6, 0, 0, 1, 0, 0, 0, 7]);
    }
    f
}

#[test]
fn ipv6_first_fragments_follow_the_fragment_policy() {
    let svc = |policy: &str| {
        config(&format!(
            "[[lb.service]]\nname = \"v6\"\nvip = \"2001:db8:f::10\"\nproto = \"tcp\"\n\
             port = 443\nsource = \"2001:db8:d::1\"\nfragments = \"{policy}\"\n\
             [[lb.service.backend]]\naddress = \"2001:db8:e::1\"\n\
             [[lb.service.backend]]\naddress = \"2001:db8:e::2\"\n"
        ))
    };
    let vip: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    for lane in [true, false] {
        let mut r = Router::with_lane(&svc("drop"), lane);
        let out = r.run(0, &[tcp6(1, vip, 443, true), tcp6(1, vip, 443, false)]);
        assert_eq!(out.sent.len(), 1, "lane {lane}");
        assert_eq!(out.dropped.len(), 1, "lane {lane}");
        assert_eq!(out.dropped[0].0, DropReason::LbFragment);
        assert_eq!(r.counters("v6")["counters"]["fragments"], 1);
        let mut r = Router::with_lane(&svc("three_tuple"), lane);
        let out = r.run(0, &[tcp6(1, vip, 443, true), tcp6(1, vip, 443, false)]);
        assert_eq!(out.sent.len(), 2, "lane {lane}: {:?}", out.dropped);
    }
}

/// What `route` would not forward (a martian source, one that cannot be
/// true — a connected subnet's broadcast, the router's own address — an
/// IPv6 source that must not leave its link, unicast IP in a link-layer
/// broadcast or multicast frame) is not handed to a backend: the balancer
/// leaves it untouched for `route` to drop, on the lane and stage by stage
/// alike. A frame from a group MAC never gets past `parse`.
#[test]
fn martian_sources_are_not_balanced() {
    let ll: [u8; 16] = "fe80::5".parse::<std::net::Ipv6Addr>().unwrap().octets();
    let lo: [u8; 16] = std::net::Ipv6Addr::LOCALHOST.octets();
    let v6vip: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let v6 = |src: [u8; 16]| {
        let mut f = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv6(src, v6vip, 60)
            .tcp(20_000, 443, 1, 100)
            .write(&mut f, b"x")
            .unwrap();
        f
    };
    let lb = format!(
        "{}\n[[lb.service]]\nname = \"v6\"\nvip = \"2001:db8:f::10\"\nproto = \"tcp\"\n\
         port = 443\nsource = \"2001:db8:d::1\"\n\
         [[lb.service.backend]]\naddress = \"2001:db8:e::1\"\n",
        web("", &backends(4, |_| 1))
    );
    let to = |mac: [u8; 6], mut f: Vec<u8>| {
        f[..6].copy_from_slice(&mac);
        f
    };
    let from = |mac: [u8; 6], mut f: Vec<u8>| {
        f[6..12].copy_from_slice(&mac);
        f
    };
    let ours6: [u8; 16] = "2001:db8:c::1"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let client = [198, 51, 100, 9];
    let client6: [u8; 16] = "2001:db8:cc::9"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let frames = [
        tcp([0, 0, 0, 0], 1000, VIP, 80, 0x02, 0),
        tcp([127, 0, 0, 1], 1000, VIP, 80, 0x02, 0),
        tcp([224, 0, 0, 5], 1000, VIP, 80, 0x02, 0),
        v6(ll),
        v6(lo),
        tcp([192, 0, 2, 255], 1000, VIP, 80, 0x02, 0),
        tcp([10, 1, 255, 255], 1000, VIP, 80, 0x02, 0),
        tcp([192, 0, 2, 1], 1000, VIP, 80, 0x02, 0),
        tcp([10, 1, 0, 1], 1000, VIP, 80, 0x02, 0),
        v6(ours6),
        to([0xff; 6], tcp(client, 1000, VIP, 80, 0x02, 0)),
        to(
            [0x01, 0, 0x5e, 0, 0, 1],
            tcp(client, 1001, VIP, 80, 0x02, 0),
        ),
        to([0x33, 0x33, 0, 0, 0, 1], v6(client6)),
        from(
            [0x01, 0, 0x5e, 0, 0, 1],
            tcp(client, 1000, VIP, 80, 0x02, 0),
        ),
    ];
    let mut outs = Vec::new();
    for lane in [true, false] {
        let mut r = Router::with_lane(&config(&lb), lane);
        let out = r.run(0, &frames);
        assert!(out.sent.is_empty(), "lane {lane}: {:?}", out.sent);
        let reasons: Vec<_> = out.dropped.iter().map(|(d, _)| *d).collect();
        // The link-local source too (`route` has no route to the v6 VIP,
        // and the scope is the reason then).
        use DropReason::{BadAddress, L2Multicast};
        let want = [
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            BadAddress,
            L2Multicast,
            L2Multicast,
            L2Multicast,
            BadAddress,
        ];
        assert_eq!(reasons, want, "lane {lane}");
        outs.push(out.dropped);
        assert_eq!(r.counters("web")["counters"]["packets"], 0);
        assert_eq!(r.counters("v6")["counters"]["packets"], 0);
    }
    assert_eq!(outs[0], outs[1], "the lane and stage by stage differ");
}

/// An ICMPv6 packet too big about a flow's reply (VIP -> client) that
/// carries extension headers before TCP reaches the flow's backend.
#[test]
fn icmpv6_errors_quoting_extension_headers_reach_the_flows_backend() {
    let lb = "[[lb.service]]\nname = \"v6\"\nvip = \"2001:db8:f::10\"\nproto = \"tcp\"\n\
              port = 443\nsource = \"2001:db8:d::1\"\n"
        .to_owned()
        + &(1..=8)
            .map(|i| format!("[[lb.service.backend]]\naddress = \"2001:db8:e::{i}\"\n"))
            .collect::<String>();
    let vip: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let outer_dst = |f: &[u8]| -> [u8; 16] { f[38..54].try_into().unwrap() };
    for lane in [true, false] {
        let mut r = Router::with_lane(&config(&lb), lane);
        for k in 1..=20u8 {
            let flow = tcp6(k, vip, 443, false);
            let client: [u8; 16] = flow[22..38].try_into().unwrap();
            let out = r.run(0, &[flow]);
            assert_eq!(out.sent.len(), 1, "lane {lane}");
            let backend = outer_dst(&out.sent[0].1);
            // The reply as quoted: IPv6, Destination Options, TCP 443 -> 20000.
            let mut quote = vec![0x60, 0, 0, 0, 0, 28, 60, 64];
            quote.extend_from_slice(&vip);
            quote.extend_from_slice(&client);
            quote.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
            quote.extend_from_slice(&443u16.to_be_bytes());
            quote.extend_from_slice(&20_000u16.to_be_bytes());
            quote.extend_from_slice(&[0; 16]);
            let mut ptb = Vec::new();
            let router: [u8; 16] = "2001:db8:77::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets();
            PacketBuilder::ethernet2(PEER, CLIENT_MAC)
                .ipv6(router, vip, 60)
                .icmpv6(etherparse::Icmpv6Type::PacketTooBig { mtu: 1280 })
                .write(&mut ptb, &quote)
                .unwrap();
            let out = r.run(0, &[ptb]);
            assert_eq!(out.sent.len(), 1, "lane {lane}: {:?}", out.dropped);
            assert_eq!(outer_dst(&out.sent[0].1), backend, "lane {lane}");
        }
        assert_eq!(r.counters("v6")["counters"]["icmp_steered"], 20);
    }
}

#[test]
fn tcp_rst_shortens_the_timeout() {
    let lb = format!(
        "[lb]\ntcp_timeout_s = 300\nclosing_timeout_s = 5\n{}",
        web("", &backends(2, |_| 1))
    );
    let mut r = Router::new(&config(&lb));
    let (a, b, c) = (client(7), client(8), client(9));
    let start = r.now;
    // Three tracked flows; A and B then see an RST, C does not.
    r.run(
        0,
        &[
            tcp(a.0, a.1, VIP, 80, 0x02, 0),
            tcp(b.0, b.1, VIP, 80, 0x02, 0),
            tcp(c.0, c.1, VIP, 80, 0x02, 0),
        ],
    );
    r.now = start + 1_000_000_000;
    r.run(
        0,
        &[
            tcp(a.0, a.1, VIP, 80, 0x04, 0),
            tcp(b.0, b.1, VIP, 80, 0x04, 0),
        ],
    );
    assert_eq!(r.counters("web")["counters"]["tracked"], 2, "RSTs tracked");
    // 4 s after the RST: within the closing timeout, still tracked.
    r.now = start + 5_000_000_000;
    r.run(0, &[tcp(a.0, a.1, VIP, 80, 0x10, 0)]);
    let k = r.counters("web")["counters"].clone();
    assert_eq!(
        (k["new_flows"].clone(), k["tracked"].clone()),
        (3.into(), 3.into())
    );
    // 6 s after the RST: B forgotten (a new flow); C, idle as long without
    // an RST, is still tracked (300 s).
    r.now = start + 7_000_000_000;
    r.run(
        0,
        &[
            tcp(b.0, b.1, VIP, 80, 0x10, 0),
            tcp(c.0, c.1, VIP, 80, 0x10, 0),
        ],
    );
    let k = r.counters("web")["counters"].clone();
    assert_eq!(k["new_flows"], 4, "the RST flow forgotten after 5 s");
    assert_eq!(k["tracked"], 4, "the flow without RST kept");
}

#[test]
fn icmp_too_big_errors_follow_the_rate() {
    let mut r = Router::new(&config(&format!(
        "[lb]\nicmp_rate = 2\n{}",
        web("", &backends(2, |_| 1))
    )));
    // Five 1500-byte DF packets (1520 once encapsulated) in one burst.
    let big: Vec<_> = (0..5)
        .map(|k| {
            let (c, p) = client(k);
            tcp(c, p, VIP, 80, 0x10, 1500 - 40)
        })
        .collect();
    let out = r.run(0, &big);
    assert_eq!(out.sent.len(), 2, "the limiter's burst: icmp_rate errors");
    for (port, f) in &out.sent {
        assert_eq!(*port, 0);
        let h = PacketHeaders::from_ethernet_slice(f).unwrap();
        assert!(matches!(h.transport, Some(TransportHeader::Icmpv4(_))));
    }
    assert_eq!(out.dropped.len(), 3);
    assert!(out.dropped.iter().all(|(d, _)| *d == DropReason::TooBig));
    assert_eq!(r.counters("web")["counters"]["too_big"], 5);
    let limited = r.counters.events[dataplane::pipeline::Event::IcmpRateLimited as usize].get();
    assert_eq!(limited, 3);
    // One second later: two more tokens.
    r.now += 1_000_000_000;
    let out = r.run(0, &big);
    assert_eq!(out.sent.len(), 2);
    assert_eq!(r.counters("web")["counters"]["too_big"], 10);
}

#[test]
fn ipv6_too_big_for_6in6_gets_a_packet_too_big() {
    let lb = r#"
[[lb.service]]
name = "v6"
vip = "2001:db8:f::10"
proto = "tcp"
port = 443
source = "2001:db8:d::1"

[[lb.service.backend]]
address = "2001:db8:e::1"
"#;
    let mut r = Router::new(&config(lb));
    let vip: [u8; 16] = "2001:db8:f::10"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let src: [u8; 16] = "2001:db8:cc::7"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let frame = |len: usize| {
        let mut f = Vec::new();
        PacketBuilder::ethernet2(PEER, CLIENT_MAC)
            .ipv6(src, vip, 60)
            .tcp(20_000, 443, 1, 100)
            .write(&mut f, &vec![0x5a; len - 60])
            .unwrap();
        f
    };
    // 1460 bytes of IPv6 fit a 1500-byte path behind a 40-byte header.
    let out = r.run(0, &[frame(1460)]);
    assert_eq!(out.sent.len(), 1);
    assert_eq!(out.sent[0].0, 1, "encapsulated to the backend");
    assert_eq!(out.sent[0].1.len(), 14 + 40 + 1460);
    let input = frame(1461);
    let out = r.run(0, std::slice::from_ref(&input));
    assert_eq!(out.sent.len(), 1, "{:?}", out.dropped);
    let (port, f) = &out.sent[0];
    assert_eq!(*port, 0, "back toward the client");
    assert_eq!(&f[..6], &GW_CLIENT);
    let h = PacketHeaders::from_ethernet_slice(f).unwrap();
    let Some(NetHeaders::Ipv6(ip, _)) = &h.net else {
        panic!("{h:?}")
    };
    assert_eq!(ip.source, vip);
    assert_eq!(ip.destination, src);
    let Some(TransportHeader::Icmpv6(icmp)) = &h.transport else {
        panic!("{h:?}")
    };
    assert_eq!(
        icmp.icmp_type,
        etherparse::Icmpv6Type::PacketTooBig { mtu: 1460 }
    );
    let payload = h.payload.slice();
    let want = etherparse::Icmpv6Header::with_checksum(icmp.icmp_type, vip, src, payload).unwrap();
    assert_eq!(icmp.checksum, want.checksum, "ICMPv6 checksum");
    // The quote: the offending packet from its IPv6 header on, as much as
    // keeps the error within 1280 bytes.
    assert_eq!(payload, &input[14..14 + 1280 - 48]);
    assert_eq!(usize::from(ip.payload_length), 8 + payload.len());
    assert_eq!(r.counters("v6")["counters"]["too_big"], 1);
}

/// A packet to a VIP with TTL 1 is balanced, not expired: the balancer
/// does not route it (the outer header, TTL 64, is what `route`
/// decrements); the inner TTL reaches the backend as it came.
#[test]
fn ttl_one_packets_are_encapsulated_with_a_fresh_outer_ttl() {
    let mut r = Router::new(&config(&web("", &backends(2, |_| 1))));
    let (c, p) = client(4);
    let mut f = tcp(c, p, VIP, 80, 0x02, 0);
    f[22] = 1; // TTL
    let h = Ipv4Header::from_slice(&f[14..]).unwrap().0;
    f[24..26].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
    let out = r.run(0, std::slice::from_ref(&f));
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
    assert_eq!(out.sent.len(), 1);
    let (outer, inner) = ipip(&out.sent[0].1);
    assert_eq!(outer.time_to_live, 63, "64, less route's hop");
    assert_eq!(inner, f[14..], "the inner packet unchanged, TTL 1");
    assert_eq!(r.counters.drops[DropReason::TtlExceeded as usize].get(), 0);
}
