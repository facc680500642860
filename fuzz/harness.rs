//! The pipeline fuzz harness, shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/`) and the tests that replay saved inputs
//! (`dataplane/tests/fuzz_regressions.rs`, and `lane_linear.rs` for the
//! target without EAL); they include this file with `#[path]`, so a crash
//! found by the fuzzer replays under `cargo test` through exactly the same
//! code.
//!
//! Each [`Target`] builds a router (as `daemon::build_pipeline` does) from
//! its config once per process:
//!
//! - [`PIPELINE`] (target `pipeline`): parse + acl + route on rte_fib,
//!   from [`CONFIG`]; it starts the test EAL first (rte_acl, rte_fib and
//!   the rte_hash neighbour table need it);
//! - [`ROUTE_NOEAL`] (target `route_noeal`): parse + route on the `linear`
//!   route backend and the Rust neighbour map, from [`ROUTE_CONFIG`] (the
//!   same ports and routes, no ACL): the route fast path as pipeline tests
//!   run it without EAL. It asserts that EAL was never started, after the
//!   build and after every input, and that the tables are the Rust ones.
//!
//! The harness decodes an input into one burst of frames entering on one
//! port, runs the pipeline, dispatches into a [`Collect`] and checks
//! invariants that hold for any input (the same for both targets, but for
//! the ACL's: without one, nothing is dropped as `acl_deny`):
//!
//! - every packet comes out exactly once, as its verdict says (sent on the
//!   verdict's port, dropped with the verdict's reason, or consumed);
//! - output ports exist; every sent frame is one segment (never a chain) of
//!   14..=`VEC_PACKET_MAX` bytes,
//!   at most [`REPLY_GROWTH`] bytes longer than the frame it came from, and
//!   carries the output port's MAC as its source;
//! - every sent frame parses again without error (the router never emits
//!   what it would itself drop as malformed);
//! - every sent frame is either its input forwarded (the input trimmed to
//!   its IP packet, every byte after the MACs kept but the TTL / hop
//!   limit, one lower from above 1, and the IPv4 header checksum) or a
//!   message the router wrote: ARP, or ICMP/ICMPv6 from one of its own
//!   addresses with a valid checksum, to none of them (nor to a subnet
//!   broadcast);
//! - the data-path rules (RFC 1812 / RFC 4291): a unicast frame to a MAC
//!   other than the input port's is dropped as `not_for_us`; any other
//!   frame from a group (broadcast or multicast) source MAC as
//!   `bad_address`; nothing received as a link-layer broadcast or
//!   multicast with a unicast IP destination is sent at all; a forwarded
//!   packet came to the port's own MAC from a unicast one, carries no byte
//!   past its IP packet, fits the output port's MTU, is not to an IPv4
//!   broadcast address (255.255.255.255 or a connected subnet's), is not
//!   from a source that cannot be true (one of the router's own addresses,
//!   a connected IPv4 subnet's broadcast address), and, for IPv6, has
//!   neither a link-local or unspecified source nor a link-local
//!   destination; no ARP request is sent for a broadcast address;
//! - ARP is `truncated` only when it is Ethernet/IPv4 (or too short to
//!   say: under 8 bytes) and shorter than 28 bytes, and `unsupported`
//!   only in another format;
//! - a path-MTU error (ICMP fragmentation needed, ICMPv6 packet too big)
//!   goes back out of the input port about an input over the MTU it
//!   names, which is a port's; it quotes the input's IP header and 8 bytes
//!   (IPv4, whose input had DF set) or the input's first bytes up to a
//!   1280-byte reply (IPv6);
//! - a packet dropped as `too_big` is IPv6 or IPv4 with DF set, one
//!   dropped as `too_big_no_df` IPv4 without DF, and either is larger than
//!   the smallest port MTU;
//! - a packet that parses is dropped as `acl_deny` exactly when a linear
//!   scan of the ACL rules (`AclTable::classify_naive`) denies it (never,
//!   without an ACL);
//! - a chain (module doc below) is dropped as `bad_total_len` when its
//!   length disagrees with its segments, whatever it holds; otherwise the
//!   router's verdict is the harness's own parse of the whole frame (first
//!   segment + `more`) when that fails (`too_big` for an IP packet that
//!   runs past the first segment: larger than every port's MTU), and once
//!   it parses the chain is trimmed to one segment and meets every rule
//!   above as the plain frame of its IP packet would;
//! - the books balance as a worker keeps them: `rx + originated = tx +
//!   dropped + consumed`, where `dropped` is the dispatched drops plus
//!   those the stages counted themselves (a drop whose buffer became an
//!   ARP request, a solicitation, a time exceeded or a path-MTU error, each
//!   also counted as originated), and every consumed packet counted once.
//!
//! Input format: byte 0 = `in_port` (bit 0) and a clock step (bits 1..8,
//! 50 ms each, so rate limits and solicitation timers can be crossed); then
//! up to [`MAX_FRAMES`] frames, each a big-endian `u16` length field
//! followed by the frame's bytes. Its low 15 bits are the frame's length:
//! - up to `VEC_PACKET_MAX`: a plain frame of that many bytes (cut short at
//!   the end of the input); the top bit is ignored;
//! - above: an mbuf chain (what a PMD makes of a frame over one buffer):
//!   the next `VEC_PACKET_MAX` bytes are its first segment (zero-padded
//!   when the input ends first), and the rest, `length - VEC_PACKET_MAX`
//!   bytes, lie in later segments that the input does not hold (zeros:
//!   the pipeline reads only the first segment). With the top bit set the
//!   chain is broken: its length disagrees with its segments
//!   (`VecPacket::broken_chain`).
//!
//! Inputs from before chains (lengths up to `VEC_PACKET_MAX`, which is all
//! the seeds wrote) mean what they meant; a length field above that used
//! to take the rest of its bytes as one frame cut at `VEC_PACKET_MAX`.
//!
//! State: the route tables are shared across inputs, and the neighbour
//! cache learns from ARP/NDP, so an input may behave differently after
//! others; a fresh pipeline (ICMP limiter, ACL counters) is built per input.

// Each includer uses a different part (the target runs, the test also decodes).
#![allow(dead_code)]
use dataplane::burst::Burst;
use dataplane::config::{Config, Resolved};
use dataplane::daemon::{build_pipeline, build_tables, default_peer_mac, SharedTables};
use dataplane::dpdk::Eal;
use dataplane::pipeline::packet::VEC_PACKET_MAX;
use dataplane::pipeline::parse::{mac_word, Parse};
use dataplane::pipeline::{
    dispatch, new_meta_burst, Collect, DropReason, Event, Meta, StageCtx, VecPacket, Verdict, L3,
};
use dataplane::stats::WorkerCounters;
use dataplane::tables::neighbor::NeighborBackend;
use dataplane::tables::{AclAction, RouteBackend};
use dataplane::wire::{Icmpv4Packet, Icmpv4Type, Icmpv6Packet, Icmpv6Type, IpProtocol, Ipv4Packet};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

/// The ports and the worker of both fuzz routers, as config text (for
/// `concat!`): two ports with IPv4/IPv6 addresses (so ARP, NDP, echo and
/// ICMP errors are reachable), the second with a smaller MTU. Devices are
/// never started.
macro_rules! ports_section {
    () => {
        r#"
[eal]
file_prefix = "dataplane-fuzz"
memory_mb = 256
hugepages = "off"

[[port]]
name = "lan"
device = "net_null0"
mac = "02:00:00:00:01:01"
ipv4 = ["10.0.1.1/24", "10.0.3.1/24"]
ipv6 = ["2001:db8:1::1/64", "fe80::1/64"]

[[port]]
name = "wan"
device = "net_null1"
mac = "02:00:00:00:02:01"
mtu = 1400
ipv4 = ["10.0.2.1/24"]
ipv6 = ["2001:db8:2::1/64"]

[[worker]]
core = 1
rx = ["lan", "wan"]

"#
    };
}

/// The firewall of [`CONFIG`]: ACL rules with ports, protocols and a VLAN.
macro_rules! acl_section {
    () => {
        r#"[acl]
default = "allow"
# Small: the harness builds a pipeline (and its flow cache) per input.
flow_cache = 64

[[acl.rule]]
action = "deny"
dst = "198.18.0.0/24"
proto = "tcp"
dport = "22-23"

[[acl.rule]]
action = "deny"
src = "10.0.99.0/24"

[[acl.rule]]
action = "allow"
src = "10.0.1.0/24"
proto = "udp"
sport = "1024-65535"
dport = "53"

[[acl.rule]]
action = "deny"
proto = "udp"
dport = "53"

[[acl.rule]]
action = "deny"
dst = "2001:db8:100::/48"
proto = "tcp"
dport = "23"

[[acl.rule]]
action = "deny"
vlan = 99

"#
    };
}

/// The route section of both fuzz routers on route backend `$backend`:
/// gateway routes with and without static neighbours, connected routes,
/// ECMP in both families.
macro_rules! route_section {
    ($backend:literal) => {
        concat!(
            "[route]\nbackend = \"",
            $backend,
            "\"\n",
            r#"# Low, so that a burst of expiring packets reaches the rate limit.
icmp_rate = 8
max_routes = 1024
max_routes6 = 1024
tbl8_groups = 256
neighbor_capacity = 4096

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
prefix = "198.51.100.0/25"
via = "10.0.2.3"

[[route.static]]
prefix = "192.0.2.0/24"
port = "wan"

[[route.static]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[route.static]]
prefix = "2001:db8:200::/48"
via = ["2001:db8:1::2", "2001:db8:2::2"]

[[route.static]]
prefix = "2001:db8:300::/64"
port = "lan"

[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:02"

[[route.neighbor]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"

[[route.neighbor]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:02:02"
"#
        )
    };
}

/// A router with a firewall (the `pipeline` target's): parse + acl + route
/// on rte_fib, so it needs EAL (rte_acl, rte_fib and the rte_hash
/// neighbour table).
pub const CONFIG: &str = concat!(
    "\npipeline = [\"acl\", \"route\"]\n",
    ports_section!(),
    acl_section!(),
    route_section!("fib")
);

/// The same router without the firewall (the `route_noeal` target's):
/// parse + route on the `linear` route backend, whose neighbour table is
/// the Rust map ([`NeighborBackend::for_routes`]), so nothing in it needs
/// EAL.
pub const ROUTE_CONFIG: &str = concat!(
    "\npipeline = [\"route\"]\n",
    ports_section!(),
    route_section!("linear")
);

/// Most frames in one input (one burst).
pub const MAX_FRAMES: usize = dataplane::burst::BURST_SIZE;

/// The most a reply may outgrow the frame it replaces: an ICMPv6 time
/// exceeded quotes up to 256 bytes of a packet behind 40 + 8 bytes of new
/// headers. The rest grow less: an ARP request (60 bytes) replaces an IPv4
/// packet of at least 34, a solicitation (86) an IPv6 one of at least 54,
/// and a path-MTU error replaces a packet larger than the MTU it reports
/// (at least 1280 for IPv6) with a reply of at most 1280 bytes (IPv6) or
/// 14 + 20 + 8 + 68 (IPv4).
pub const REPLY_GROWTH: usize = 48;

/// A fuzz target's router: the config it is built from and whether that
/// needs EAL. Each is built once per process, on first use.
pub struct Target {
    /// The cargo-fuzz target (`fuzz/fuzz_targets/<name>.rs`).
    pub name: &'static str,
    pub config: &'static str,
    /// Whether the router's tables need EAL: the harness starts the test
    /// EAL before building them. Without, it asserts that EAL stays down,
    /// through the build and after every input, and that the tables are
    /// the Rust ones (no DPDK table can be created without EAL, but a build
    /// that reached for one would show there).
    pub eal: bool,
    router: OnceLock<Router>,
}

/// The `pipeline` target: [`CONFIG`], on EAL.
pub static PIPELINE: Target = Target {
    name: "pipeline",
    config: CONFIG,
    eal: true,
    router: OnceLock::new(),
};

/// The `route_noeal` target: [`ROUTE_CONFIG`], without EAL.
pub static ROUTE_NOEAL: Target = Target {
    name: "route_noeal",
    config: ROUTE_CONFIG,
    eal: false,
    router: OnceLock::new(),
};

impl Target {
    /// Builds the router on first use, after starting the test EAL if the
    /// target needs it (otherwise checking that nothing started it).
    pub fn router(&self) -> &Router {
        self.router.get_or_init(|| {
            if self.eal {
                dataplane::tables::test_eal();
            }
            let r = Router::build(self.config);
            if !self.eal {
                self.assert_no_eal();
                let rt = r.tables.routing.as_ref().expect("the fuzz router routes");
                assert!(r.tables.acl.is_none(), "{}: an ACL needs EAL", self.name);
                assert_eq!(rt.v4.backend(), RouteBackend::Linear, "{}", self.name);
                assert_eq!(rt.v6.backend(), RouteBackend::Linear, "{}", self.name);
                assert_eq!(
                    rt.neighbors.backend(),
                    NeighborBackend::Rust,
                    "{}",
                    self.name
                );
            }
            r
        })
    }

    /// For a target without EAL: panics if EAL is up.
    fn assert_no_eal(&self) {
        assert!(
            self.eal || !Eal::is_initialised(),
            "{}: EAL is up in a target that runs without it",
            self.name
        );
    }

    /// Runs one input through a fresh pipeline over the shared tables.
    pub fn run(&self, data: &[u8]) -> Option<Outcome> {
        let o = run(self.router(), data);
        self.assert_no_eal();
        o
    }

    /// Runs and checks one input.
    pub fn run_and_check(&self, data: &[u8]) -> Option<Outcome> {
        let o = self.run(data)?;
        check(self.router(), &o);
        Some(o)
    }

    /// What a fuzz target does with one input: runs and checks it as it
    /// comes and [addressed to the router](Self::addressed_to_us) (most
    /// random destination MACs stop at the L2 check, which must not hide
    /// what lies past it).
    pub fn fuzz(&self, data: &[u8]) {
        self.run_and_check(data);
        self.run_and_check(&self.addressed_to_us(data));
    }

    /// `data` with every unicast frame's destination MAC set to the input
    /// port's: the same input, addressed to the router. The fuzz targets
    /// and the regression replay run both, so that inputs written before
    /// the L2 destination check (or mutated away from the port's MAC) still
    /// reach everything past it.
    pub fn addressed_to_us(&self, data: &[u8]) -> Vec<u8> {
        addressed_to(data, &self.router().port_macs)
    }
}

/// A router built from a [`Target`]'s config.
pub struct Router {
    pub cfg: Config,
    pub res: Resolved,
    pub tables: SharedTables,
    pub port_macs: Vec<[u8; 6]>,
    pub peer_macs: Vec<[u8; 6]>,
}

impl Router {
    /// Parses `config` and builds its tables (panics on failure: the
    /// configs are the harness's own).
    fn build(config: &str) -> Router {
        let (cfg, res) = match Config::parse(config, "fuzz.toml") {
            Ok(c) => c,
            Err(e) => panic!("fuzz config: {e}"),
        };
        let port_macs: Vec<[u8; 6]> = cfg
            .ports
            .iter()
            .map(|p| {
                p.mac
                    .as_ref()
                    .expect("every fuzz port has a MAC")
                    .get_ref()
                    .0
            })
            .collect();
        let peer_macs = (0..cfg.ports.len()).map(default_peer_mac).collect();
        let tables = match build_tables(&cfg, &res, &port_macs, &[]) {
            Ok(t) => t,
            Err(e) => panic!("fuzz tables: {e:#}"),
        };
        Router {
            cfg,
            res,
            tables,
            port_macs,
            peer_macs,
        }
    }

    /// Each port's MTU (the largest IP packet it sends), by port index.
    fn port_mtus(&self) -> Vec<u16> {
        let rt = self
            .tables
            .routing
            .as_ref()
            .expect("the fuzz router routes");
        rt.ports.iter().map(|p| p.mtu).collect()
    }

    /// Whether `a` is an IPv4 broadcast address of the router: the limited
    /// broadcast or a connected subnet's.
    fn is_v4_broadcast(&self, a: Ipv4Addr) -> bool {
        a.is_broadcast()
            || self
                .tables
                .routing
                .as_ref()
                .is_some_and(|rt| rt.is_broadcast_v4(a))
    }

    /// Whether `a` (an IPv4 source) cannot be true: one of the router's own
    /// addresses or a connected subnet's broadcast address.
    fn impossible_source_v4(&self, a: Ipv4Addr) -> bool {
        self.tables
            .routing
            .as_ref()
            .is_some_and(|rt| rt.ports.iter().any(|p| p.has_v4(a) || p.is_broadcast_v4(a)))
    }

    /// Whether `a` (an IPv6 source) is one of the router's own addresses.
    fn own_v6(&self, a: Ipv6Addr) -> bool {
        self.tables
            .routing
            .as_ref()
            .is_some_and(|rt| rt.ports.iter().any(|p| p.has_v6(a)))
    }
}

/// A decoded input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub in_port: u16,
    /// TSC at the burst (1 GHz clock).
    pub now: u64,
    /// Each frame's first (or only) segment.
    pub frames: Vec<Vec<u8>>,
    /// Per frame: what lies past its first segment.
    pub chains: Vec<Chain>,
}

/// What of a frame lies past its first segment (the default: nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chain {
    /// Bytes in later segments (0: not a chain).
    pub more: u16,
    /// The chain's length disagrees with its segments.
    pub broken: bool,
}

/// One frame of an input: where its bytes start, how many it takes from
/// the input, and what lies past them.
struct Span {
    start: usize,
    take: usize,
    chain: Chain,
}

/// The frames of `data` (the input format, module doc), header byte and
/// all: what `decode` and `addressed_to` both walk.
fn spans(data: &[u8]) -> Vec<Span> {
    let mut v = Vec::new();
    let mut at = 1;
    while v.len() < MAX_FRAMES && at + 2 <= data.len() {
        let field = u16::from_be_bytes([data[at], data[at + 1]]);
        let len = usize::from(field & 0x7fff);
        let start = at + 2;
        let left = data.len() - start;
        let span = if len > VEC_PACKET_MAX {
            Span {
                start,
                take: VEC_PACKET_MAX.min(left),
                chain: Chain {
                    more: (len - VEC_PACKET_MAX) as u16,
                    broken: field & 0x8000 != 0,
                },
            }
        } else {
            Span {
                start,
                take: len.min(left),
                chain: Chain::default(),
            }
        };
        at = start + span.take;
        v.push(span);
    }
    v
}

/// Decodes the input format (see the module doc); `None` without a frame.
pub fn decode(data: &[u8]) -> Option<Input> {
    let &head = data.first()?;
    let spans = spans(data);
    if spans.is_empty() {
        return None;
    }
    let frames = spans
        .iter()
        .map(|s| {
            let mut f = data[s.start..s.start + s.take].to_vec();
            if s.chain.more != 0 {
                f.resize(VEC_PACKET_MAX, 0);
            }
            f
        })
        .collect();
    Some(Input {
        in_port: u16::from(head & 1),
        now: 1_000_000_000 + u64::from(head >> 1) * 50_000_000,
        frames,
        chains: spans.iter().map(|s| s.chain).collect(),
    })
}

/// [`Target::addressed_to_us`] for a router whose ports have the MACs `macs`
/// (without building one).
pub fn addressed_to(data: &[u8], macs: &[[u8; 6]]) -> Vec<u8> {
    let mut v = data.to_vec();
    let Some(&head) = v.first() else {
        return v;
    };
    let mac = macs[usize::from(head & 1)];
    for s in spans(data) {
        if s.take >= 6 && v[s.start] & 1 == 0 {
            v[s.start..s.start + 6].copy_from_slice(&mac);
        }
    }
    v
}

/// Encodes a chain into the input format: `first` (its first segment, at
/// most `VEC_PACKET_MAX` bytes, zero-padded to it) and `more` bytes after
/// it, `broken` or not. Append to an [`encode`]d input.
pub fn encode_chain(first: &[u8], more: u16, broken: bool) -> Vec<u8> {
    assert!(first.len() <= VEC_PACKET_MAX && more != 0);
    let len = VEC_PACKET_MAX + usize::from(more);
    assert!(
        len < 0x8000,
        "a chain of {len} bytes does not fit the format"
    );
    let field = len as u16 | if broken { 0x8000 } else { 0 };
    let mut v = field.to_be_bytes().to_vec();
    v.extend_from_slice(first);
    v.resize(2 + VEC_PACKET_MAX, 0);
    v
}

/// Encodes frames into the input format (for seeds and hand-made tests).
pub fn encode(in_port: u16, clock_step: u8, frames: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![(in_port as u8 & 1) | (clock_step << 1)];
    for f in frames {
        v.extend_from_slice(&(f.len() as u16).to_be_bytes());
        v.extend_from_slice(f);
    }
    v
}

/// What one input did: the burst, each packet's verdict and its output.
#[derive(Debug)]
pub struct Outcome {
    pub input: Input,
    pub meta: Vec<Meta>,
    pub out: Collect<VecPacket>,
    pub counters: WorkerCounters,
}

/// Runs one input through a fresh pipeline over the shared tables.
fn run(r: &Router, data: &[u8]) -> Option<Outcome> {
    let input = decode(data)?;
    let mut pipeline = build_pipeline(&r.cfg, &r.res, &r.tables, &r.port_macs, &r.peer_macs);
    let mut burst = Burst::<VecPacket>::new();
    for (f, c) in input.frames.iter().zip(&input.chains) {
        let pkt = match (c.more, c.broken) {
            (0, _) => VecPacket::new(f.clone()),
            (more, false) => VecPacket::chained(f.clone(), more),
            (more, true) => VecPacket::broken_chain(f.clone(), more),
        };
        if burst.push(pkt).is_err() {
            unreachable!("at most MAX_FRAMES frames");
        }
    }
    let n = burst.len();
    let mut meta = new_meta_burst();
    let counters = WorkerCounters::default();
    let ctx = StageCtx {
        now: input.now,
        tsc_hz: 1_000_000_000,
        counters: &counters,
    };
    pipeline.run(&mut burst, &mut meta, input.in_port, &ctx);
    let mut out = Collect::default();
    dispatch(&mut burst, &meta, &mut out);
    assert!(burst.is_empty(), "dispatch left packets in the burst");
    Some(Outcome {
        input,
        meta: meta[..n].to_vec(),
        out,
        counters,
    })
}

/// Asserts the invariants (module doc) on an outcome; panics with the
/// packet index and what broke.
pub fn check(r: &Router, o: &Outcome) {
    let n = o.input.frames.len();
    let n_ports = r.cfg.ports.len();
    assert_eq!(o.meta.len(), n);
    assert_eq!(
        o.out.sent.len() + o.out.dropped.len() + o.out.consumed.len(),
        n,
        "every packet comes out exactly once"
    );
    let (mut s, mut d, mut c) = (0, 0, 0);
    for (i, m) in o.meta.iter().enumerate() {
        assert_eq!(m.in_port, o.input.in_port, "packet {i}: in_port");
        let Some(input) = check_chain(
            r,
            i,
            &o.input.frames[i],
            o.input.chains[i],
            o.input.in_port,
            m.verdict,
        ) else {
            // A chain dropped before it became one segment: nothing else
            // to check but its place in `out`.
            let Verdict::Drop(reason) = m.verdict else {
                unreachable!("check_chain saw a drop");
            };
            assert_eq!(o.out.dropped[d].0, reason, "packet {i}: drop reason");
            d += 1;
            continue;
        };
        check_acl(r, i, input, o.input.in_port, m.verdict);
        check_l2(r, i, input, o.input.in_port, m.verdict);
        check_arp(r, i, input, o.input.in_port, m.verdict);
        match m.verdict {
            Verdict::Tx(port) => {
                let (p, pkt) = &o.out.sent[s];
                s += 1;
                assert_eq!(
                    *p, port,
                    "packet {i}: sent on another port than its verdict"
                );
                assert!(
                    usize::from(port) < n_ports,
                    "packet {i}: output port {port}"
                );
                assert!(
                    pkt.more == 0 && !pkt.broken,
                    "packet {i}: sent a chain ({} more bytes)",
                    pkt.more
                );
                check_sent(r, i, input, o.input.in_port, port, &pkt.bytes);
            }
            Verdict::Drop(reason) => {
                assert_eq!(o.out.dropped[d].0, reason, "packet {i}: drop reason");
                d += 1;
                check_too_big(r, i, input, o.input.in_port, reason);
                check_no_route(r, i, input, o.input.in_port, reason);
            }
            Verdict::Continue => {
                assert_eq!(o.out.dropped[d].0, DropReason::NoOutput, "packet {i}");
                d += 1;
            }
            Verdict::Consumed => c += 1,
        }
    }
    assert_eq!(
        (s, d, c),
        (o.out.sent.len(), o.out.dropped.len(), o.out.consumed.len())
    );
    check_accounting(o);
}

/// The chain rules (module doc) on packet `i`, whose first segment is
/// `first`: for a chain dropped as it arrives (broken, or its whole frame
/// does not parse), checks the verdict and returns `None`; otherwise
/// returns the frame the other checks see: the input itself, or a chain
/// trimmed to its IP packet (which the router then holds in one segment).
fn check_chain<'a>(
    r: &Router,
    i: usize,
    first: &'a [u8],
    chain: Chain,
    in_port: u16,
    verdict: Verdict,
) -> Option<&'a [u8]> {
    if chain.more == 0 {
        return Some(first);
    }
    if chain.broken {
        assert_eq!(
            verdict,
            Verdict::Drop(DropReason::BadTotalLen),
            "packet {i}: a broken chain"
        );
        return None;
    }
    let mut m = new_meta_burst()[0];
    let mac = r.port_macs[usize::from(in_port)];
    let parse = Parse {
        l4: true,
        hash: true,
        verify_checksum: true,
        port_mac: mac_word(mac),
    };
    let len = first.len() + usize::from(chain.more);
    match parse.parse_frame(first, len, &mut m) {
        Ok(end) => {
            assert!(end <= first.len(), "packet {i}: trimmed into a chain");
            Some(&first[..end])
        }
        Err(reason) => {
            assert_eq!(
                verdict,
                Verdict::Drop(reason),
                "packet {i}: a chain of {len} bytes"
            );
            if reason == DropReason::TooBig {
                // What parse drops as too big runs past the first segment,
                // which holds the largest MTU and its headers.
                let max_mtu = r.port_mtus().into_iter().max().unwrap_or(0);
                let l3 = usize::from(m.l3_off);
                let ip = match first.get(l3..l3 + 6) {
                    Some(h) if h[0] >> 4 == 6 => 40 + usize::from(u16::from_be_bytes([h[4], h[5]])),
                    Some(h) => usize::from(u16::from_be_bytes([h[2], h[3]])),
                    None => 0,
                };
                assert!(
                    ip > usize::from(max_mtu) && l3 + ip > first.len(),
                    "packet {i}: a chain's {ip}-byte IP packet dropped as too_big"
                );
            }
            None
        }
    }
}

/// `rx + originated = tx + dropped + consumed` for the burst, counted as
/// the worker counts: `Collect` stands in for its TX buffers (one `tx` per
/// sent packet) and its drop bin (one drop per dispatched drop), the stages
/// count the rest in `o.counters`.
fn check_accounting(o: &Outcome) {
    let c = &o.counters;
    let sum = |v: &[dataplane::stats::Counter]| v.iter().map(|x| x.get()).sum::<u64>();
    let rx = o.input.frames.len() as u64;
    let tx = o.out.sent.len() as u64;
    let dropped = o.out.dropped.len() as u64 + sum(&c.drops);
    let originated = sum(&c.originated);
    let consumed = c.events[Event::Consumed as usize].get();
    assert_eq!(
        consumed,
        o.out.consumed.len() as u64,
        "every consumed packet counted once"
    );
    assert_eq!(
        rx + originated,
        tx + dropped + consumed,
        "accounting: rx {rx} + originated {originated} != tx {tx} + dropped {dropped} + consumed {consumed}"
    );
}

/// The harness's own parse, as the router's parse would see `frame`
/// arriving on a port whose MAC is `mac`: `Ok(end)`, the length the frame
/// is trimmed to.
fn parse_as(frame: &[u8], mac: [u8; 6], m: &mut Meta) -> Result<usize, DropReason> {
    let parse = Parse {
        l4: true,
        hash: true,
        verify_checksum: true,
        port_mac: mac_word(mac),
    };
    parse.parse_frame(frame, frame.len(), m)
}

/// `no_route` is never the reason for an IPv6 packet that must stay on its
/// link (a link-local or unspecified source, a link-local destination): a
/// packet not for the router is `bad_address` then, routed or not.
fn check_no_route(r: &Router, i: usize, input: &[u8], in_port: u16, reason: DropReason) {
    if reason != DropReason::NoRoute {
        return;
    }
    let mut m = new_meta_burst()[0];
    let mac = r.port_macs[usize::from(in_port)];
    if parse_as(input, mac, &mut m).is_err() || m.l3 != L3::Ipv6 {
        return;
    }
    let (s, d) = (Ipv6Addr::from(m.key.src), Ipv6Addr::from(m.key.dst));
    assert!(
        !s.is_unspecified() && !s.is_unicast_link_local() && !d.is_unicast_link_local(),
        "packet {i}: {s} -> {d} dropped as no_route, not bad_address"
    );
}

/// The L2 rules on a packet's verdict: a unicast frame to another MAC than
/// the input port's is `not_for_us`; any other from a group source MAC is
/// `bad_address`; a frame sent to a link-layer broadcast or multicast
/// address with a unicast IP destination is never sent anywhere (not
/// routed, not answered).
fn check_l2(r: &Router, i: usize, input: &[u8], in_port: u16, verdict: Verdict) {
    let mac = r.port_macs[usize::from(in_port)];
    if input.len() < 14 {
        return;
    }
    if input[0] & 1 == 0 && input[..6] != mac {
        assert_eq!(
            verdict,
            Verdict::Drop(DropReason::NotForUs),
            "packet {i}: a frame to a foreign MAC"
        );
        return;
    }
    if input[6] & 1 != 0 {
        assert_eq!(
            verdict,
            Verdict::Drop(DropReason::BadAddress),
            "packet {i}: a frame from a group MAC"
        );
        return;
    }
    let mut m = new_meta_burst()[0];
    if input[0] & 1 == 0 || parse_as(input, mac, &mut m).is_err() {
        return;
    }
    let unicast = match m.l3 {
        L3::Ipv4 => {
            let d = Ipv4Addr::from(m.key.dst_v4());
            !d.is_multicast() && !r.is_v4_broadcast(d) && d.octets()[0] < 224
        }
        L3::Ipv6 => !Ipv6Addr::from(m.key.dst).is_multicast(),
        _ => false,
    };
    if unicast {
        assert!(
            matches!(verdict, Verdict::Drop(_)),
            "packet {i}: unicast IP in a link-layer broadcast/multicast frame got {verdict:?}"
        );
    }
}

/// ARP's drop reasons: `truncated` for an Ethernet/IPv4 body (or one too
/// short to tell: under the 8 bytes that give its format) of under 28
/// bytes, `unsupported` for another format (hardware type 1, protocol type
/// IPv4, address lengths 6 and 4 are the one handled), whatever its length.
fn check_arp(r: &Router, i: usize, input: &[u8], in_port: u16, verdict: Verdict) {
    let Verdict::Drop(reason @ (DropReason::Truncated | DropReason::Unsupported)) = verdict else {
        return;
    };
    let mut m = new_meta_burst()[0];
    let mac = r.port_macs[usize::from(in_port)];
    if parse_as(input, mac, &mut m).is_err() || m.l3 != L3::Arp {
        return;
    }
    let body = &input[usize::from(m.l3_off)..];
    let ours = body.len() < 8 || body[..6] == [0, 1, 8, 0, 6, 4];
    if reason == DropReason::Truncated {
        assert!(
            ours && body.len() < 28,
            "packet {i}: ARP truncated at {} bytes: {body:02x?}",
            body.len()
        );
    } else {
        assert!(
            !ours,
            "packet {i}: Ethernet/IPv4 ARP unsupported: {body:02x?}"
        );
    }
}

/// Checks one sent frame against the frame it came from (`input`, received
/// on `in_port`). Both are parsed here: the pipeline's own `Meta` is not
/// complete for packets the lane forwarded straight from their headers.
fn check_sent(r: &Router, i: usize, input: &[u8], in_port: u16, port: u16, out: &[u8]) {
    assert!(
        (14..=VEC_PACKET_MAX).contains(&out.len()),
        "packet {i}: sent {} bytes",
        out.len()
    );
    assert!(
        out.len() <= input.len() + REPLY_GROWTH,
        "packet {i}: grew from {} to {} bytes",
        input.len(),
        out.len()
    );
    assert_eq!(
        out[6..12],
        r.port_macs[usize::from(port)],
        "packet {i}: source MAC is not the output port's"
    );
    // As its receiver parses it: addressed to it (its own MAC), or to a
    // group.
    let mut om = new_meta_burst()[0];
    let to: [u8; 6] = out[..6].try_into().expect("14 bytes or more");
    match parse_as(out, to, &mut om) {
        Err(reason) => panic!("packet {i}: sent a frame that parses as {reason:?}: {out:02x?}"),
        // Nothing past the IP packet or ARP body, but the padding of a
        // frame the router built to the 60-byte minimum.
        Ok(end) => assert!(
            end == out.len() || out.len() <= 60,
            "packet {i}: sent bytes past its IP packet (or ARP body): {out:02x?}"
        ),
    }
    let mut im = new_meta_burst()[0];
    let in_mac = r.port_macs[usize::from(in_port)];
    if let Ok(end) = parse_as(input, in_mac, &mut im) {
        if is_forwarded(&input[..end], &im, &om, out) {
            check_forwarded(r, i, input, port, &om, out);
            return;
        }
    }
    // Anything else the router wrote itself: an ARP reply or request, or an
    // ICMP/ICMPv6 message (echo reply, time exceeded, NDP), always from one
    // of its own addresses and with a valid checksum.
    let ours = |a: &[u8; 16], v6: bool| {
        r.tables.routing.as_ref().is_some_and(|rt| {
            rt.ports.iter().any(|p| {
                if v6 {
                    p.has_v6(Ipv6Addr::from(*a))
                } else {
                    p.has_v4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
                }
            })
        })
    };
    let l3 = usize::from(om.l3_off);
    let l4 = usize::from(om.l4_off);
    let what = || format!("{out:02x?} (from {input:02x?})");
    match om.l3 {
        L3::Arp => {
            let mut sender = [0u8; 16];
            sender[..4].copy_from_slice(&out[l3 + 14..l3 + 18]);
            assert!(
                ours(&sender, false),
                "packet {i}: ARP not from us: {}",
                what()
            );
            let target = Ipv4Addr::new(out[l3 + 24], out[l3 + 25], out[l3 + 26], out[l3 + 27]);
            assert!(
                out[l3 + 7] != 1 || !r.is_v4_broadcast(target),
                "packet {i}: ARP request for a broadcast address: {}",
                what()
            );
        }
        L3::Ipv4 => {
            assert!(
                om.key.proto == u8::from(IpProtocol::Icmp) && l4 != 0,
                "packet {i}: neither forwarded nor an ICMP reply: {}",
                what()
            );
            assert!(
                ours(&om.key.src, false),
                "packet {i}: ICMP not from us: {}",
                what()
            );
            assert!(
                !r.impossible_source_v4(Ipv4Addr::from(om.key.dst_v4())),
                "packet {i}: ICMP to ourselves or a subnet broadcast: {}",
                what()
            );
            let end = l3 + usize::from(u16::from_be_bytes([out[l3 + 2], out[l3 + 3]]));
            let icmp = Icmpv4Packet::new_checked(&out[l4..end])
                .unwrap_or_else(|e| panic!("packet {i}: ICMP reply {e:?}: {}", what()));
            assert!(
                icmp.verify_checksum(),
                "packet {i}: ICMP checksum: {}",
                what()
            );
            if icmp.msg_type() == Icmpv4Type::DstUnreachable && icmp.msg_code() == 4 {
                assert_eq!(port, in_port, "packet {i}: fragmentation needed sent on");
                check_frag_needed(r, i, input, &im, icmp.next_hop_mtu(), icmp.payload());
            }
        }
        L3::Ipv6 => {
            assert!(
                om.key.proto == u8::from(IpProtocol::Icmpv6) && l4 != 0,
                "packet {i}: neither forwarded nor an ICMPv6 reply: {}",
                what()
            );
            assert!(
                ours(&om.key.src, true),
                "packet {i}: ICMPv6 not from us: {}",
                what()
            );
            assert!(
                !r.own_v6(Ipv6Addr::from(om.key.dst)),
                "packet {i}: ICMPv6 to ourselves: {}",
                what()
            );
            let end = l3 + 40 + usize::from(u16::from_be_bytes([out[l3 + 4], out[l3 + 5]]));
            let icmp = Icmpv6Packet::new_checked(&out[l4..end])
                .unwrap_or_else(|e| panic!("packet {i}: ICMPv6 reply {e:?}: {}", what()));
            let (src, dst) = (Ipv6Addr::from(om.key.src), Ipv6Addr::from(om.key.dst));
            assert!(
                icmp.verify_checksum(&src, &dst),
                "packet {i}: ICMPv6 checksum: {}",
                what()
            );
            if icmp.msg_type() == Icmpv6Type::PacketTooBig {
                assert_eq!(port, in_port, "packet {i}: packet too big sent on");
                let mtu = icmp.rest_of_header();
                check_packet_too_big(r, i, input, &im, mtu, icmp.payload(), end - l3);
            }
        }
        l3 => panic!("packet {i}: sent a {l3:?} frame: {}", what()),
    }
}

/// The rules a forwarded packet (`out`, from `input`, sent on `port`,
/// parsed into `om`) must meet: it came to the input port's own MAC from a
/// unicast one, fits the output MTU, is to no IPv4 broadcast address, is
/// from no source that cannot be true (the router's own addresses, a
/// connected subnet's broadcast), and (IPv6) is neither from a link-local
/// or unspecified source nor to a link-local destination.
fn check_forwarded(r: &Router, i: usize, input: &[u8], port: u16, om: &Meta, out: &[u8]) {
    assert_eq!(
        input[0] & 1,
        0,
        "packet {i}: forwarded a link-layer group frame"
    );
    assert_eq!(
        input[6] & 1,
        0,
        "packet {i}: forwarded a frame from a group MAC"
    );
    let l3 = usize::from(om.l3_off);
    let mtu = r.cfg.ports[usize::from(port)]
        .mtu
        .as_ref()
        .map_or(1500, |m| *m.get_ref());
    assert!(
        out.len() - l3 <= usize::from(mtu),
        "packet {i}: {} bytes of IP forwarded on a port with MTU {mtu}",
        out.len() - l3
    );
    match om.l3 {
        L3::Ipv4 => {
            let d = Ipv4Addr::from(om.key.dst_v4());
            assert!(
                !r.is_v4_broadcast(d),
                "packet {i}: forwarded to broadcast {d}"
            );
            let s = Ipv4Addr::from(om.key.src_v4());
            assert!(
                !r.impossible_source_v4(s),
                "packet {i}: forwarded from {s}, ours or a subnet broadcast"
            );
        }
        L3::Ipv6 => {
            let (s, d) = (Ipv6Addr::from(om.key.src), Ipv6Addr::from(om.key.dst));
            let link_local = |a: Ipv6Addr| a.segments()[0] & 0xffc0 == 0xfe80;
            assert!(
                !s.is_unspecified() && !link_local(s) && !link_local(d),
                "packet {i}: forwarded {s} -> {d} off its link"
            );
            assert!(!r.own_v6(s), "packet {i}: forwarded from our own {s}");
        }
        _ => {}
    }
}

/// Whether `out` is `input` forwarded: an IP packet of the same family,
/// length and bytes after the MACs, except the TTL / hop limit, one lower
/// (from above 1), and the IPv4 header checksum (which the re-parse of
/// `out` verified). Replies never look like this: they set a fresh TTL or
/// hop limit (64 or 255) and rewrite the addresses or the ICMP type. `m`
/// and `om` are the harness's own parses of `input` and `out`.
fn is_forwarded(input: &[u8], m: &Meta, om: &Meta, out: &[u8]) -> bool {
    if !matches!(m.l3, L3::Ipv4 | L3::Ipv6) || om.l3 != m.l3 || out.len() != input.len() {
        return false;
    }
    let l3 = usize::from(m.l3_off);
    let ttl_at = l3 + if m.l3 == L3::Ipv6 { 7 } else { 8 };
    if input[ttl_at] <= 1 || out[ttl_at] != input[ttl_at] - 1 {
        return false;
    }
    (12..out.len()).all(|k| {
        let csum = m.l3 == L3::Ipv4 && (k == l3 + 10 || k == l3 + 11);
        k == ttl_at || csum || out[k] == input[k]
    })
}

/// The ACL against a linear scan of the configured rules: a packet that
/// parses (as it arrives on `in_port`) is dropped as `acl_deny` exactly
/// when the first matching rule (or the default) denies it. Without an
/// ACL nothing is.
fn check_acl(r: &Router, i: usize, input: &[u8], in_port: u16, verdict: Verdict) {
    let Some(acl) = r.tables.acl.as_ref().map(|a| &a.table) else {
        assert_ne!(
            verdict,
            Verdict::Drop(DropReason::AclDeny),
            "packet {i}: acl_deny without an ACL"
        );
        return;
    };
    let mut km = new_meta_burst()[0];
    let mac = r.port_macs[usize::from(in_port)];
    if parse_as(input, mac, &mut km).is_err() || !matches!(km.l3, L3::Ipv4 | L3::Ipv6) {
        return;
    }
    let rule = acl.classify_naive(&km.key, km.l3 == L3::Ipv6);
    let deny = acl.action(rule) == AclAction::Deny;
    let denied = verdict == Verdict::Drop(DropReason::AclDeny);
    assert_eq!(
        denied,
        deny,
        "packet {i}: ACL verdict {verdict:?}, first matching rule {rule} ({:?})",
        acl.action(rule)
    );
}

/// The IP packet's length (IPv4 total length, IPv6 40 + payload length) of
/// a frame that parsed as `m`.
fn ip_len(frame: &[u8], m: &Meta) -> usize {
    let l3 = usize::from(m.l3_off);
    match m.l3 {
        L3::Ipv4 => usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]])),
        L3::Ipv6 => 40 + usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]])),
        _ => 0,
    }
}

/// An ICMP fragmentation needed the router sent about `input` (`im`, the
/// harness's parse of it, empty if it did not parse): the input was IPv4
/// with DF set and over `mtu`, a port's MTU, and `quote` is its IP header
/// and 8 bytes.
fn check_frag_needed(r: &Router, i: usize, input: &[u8], im: &Meta, mtu: u16, quote: &[u8]) {
    assert_eq!(
        im.l3,
        L3::Ipv4,
        "packet {i}: fragmentation needed about a non-IPv4 input"
    );
    let l3 = usize::from(im.l3_off);
    let ip = Ipv4Packet::new_unchecked(&input[l3..]);
    assert!(
        ip.dont_frag(),
        "packet {i}: fragmentation needed without DF"
    );
    assert!(
        r.port_mtus().contains(&mtu) && usize::from(ip.total_len()) > usize::from(mtu),
        "packet {i}: fragmentation needed with MTU {mtu} for {} bytes",
        ip.total_len()
    );
    let n = (ip.header_len() + 8).min(usize::from(ip.total_len()));
    assert_eq!(quote, &input[l3..l3 + n], "packet {i}: quoted header");
}

/// An ICMPv6 packet too big about `input` (`im` as for
/// [`check_frag_needed`]): the input was IPv6 and over `mtu`, a port's
/// MTU, and `quote` is its first bytes, as many as fit a 1280-byte reply
/// (`reply_len`, from the IPv6 header on).
fn check_packet_too_big(
    r: &Router,
    i: usize,
    input: &[u8],
    im: &Meta,
    mtu: u32,
    quote: &[u8],
    reply_len: usize,
) {
    assert_eq!(
        im.l3,
        L3::Ipv6,
        "packet {i}: packet too big about a non-IPv6 input"
    );
    let len = ip_len(input, im);
    assert!(
        r.port_mtus().iter().any(|&m| u32::from(m) == mtu) && len > mtu as usize,
        "packet {i}: packet too big with MTU {mtu} for {len} bytes"
    );
    let l3 = usize::from(im.l3_off);
    let n = len.min(1280 - 48);
    assert_eq!(quote, &input[l3..l3 + n], "packet {i}: quoted packet");
    assert!(
        reply_len <= 1280,
        "packet {i}: a {reply_len}-byte packet too big"
    );
}

/// A drop as `too_big` is of an IPv6 packet or of an IPv4 one with DF;
/// `too_big_no_df` of IPv4 without DF; both larger than some port's MTU.
fn check_too_big(r: &Router, i: usize, input: &[u8], in_port: u16, reason: DropReason) {
    if !matches!(reason, DropReason::TooBig | DropReason::TooBigNoDf) {
        return;
    }
    let mut m = new_meta_burst()[0];
    let mac = r.port_macs[usize::from(in_port)];
    assert!(
        parse_as(input, mac, &mut m).is_ok(),
        "packet {i}: dropped as {reason:?} but does not parse"
    );
    let min_mtu = r.port_mtus().into_iter().min().unwrap_or(0);
    assert!(
        ip_len(input, &m) > usize::from(min_mtu),
        "packet {i}: {reason:?} at {} bytes",
        ip_len(input, &m)
    );
    let df =
        m.l3 == L3::Ipv4 && Ipv4Packet::new_unchecked(&input[usize::from(m.l3_off)..]).dont_frag();
    match reason {
        DropReason::TooBig => assert!(
            m.l3 == L3::Ipv6 || df,
            "packet {i}: too_big for IPv4 without DF"
        ),
        _ => assert!(
            m.l3 == L3::Ipv4 && !df,
            "packet {i}: too_big_no_df for {:?} (DF {df})",
            m.l3
        ),
    }
}
