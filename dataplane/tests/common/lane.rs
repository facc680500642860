//! What `lane.rs` (on EAL: the ACL lists) and `lane_linear.rs` (no EAL:
//! the route-only lists on the `linear` route backend) share: the routers
//! compared side by side, one burst run through all of them, and the test
//! bodies. See `lane.rs` for what is compared and why.
//!
//! The including test binary provides `fn setup() -> Vec<Variant>`: it
//! starts whatever its tables need (EAL, or nothing) and names the stage
//! lists it compares.

// Each includer uses a different part (its own stage lists and configs).
#![allow(dead_code)]
use dataplane::burst::{Burst, BURST_SIZE};
use dataplane::config::{Config, Resolved};
use dataplane::daemon::{build_pipeline, build_tables, default_peer_mac, SharedTables};
use dataplane::pipeline::{
    dispatch, new_meta_burst, Collect, DropReason, MetaBurst, Pipeline, StageCtx, VecPacket,
    Verdict, MAX_STAGES,
};
use dataplane::stats::WorkerCounters;
use etherparse::PacketBuilder;
use proptest::prelude::*;
use std::sync::{Mutex, OnceLock};

use crate::harness;

/// The fuzz router with `pipeline = ["route"]` and no ACL.
pub fn route_only_config() -> String {
    let c = harness::CONFIG.replace(r#"pipeline = ["acl", "route"]"#, r#"pipeline = ["route"]"#);
    let acl = c.find("[acl]").expect("fuzz config has [acl]");
    let route = c.find("[route]").expect("fuzz config has [route]");
    format!("{}{}", &c[..acl], &c[route..])
}

/// [`route_only_config`] with every ECMP route cut to one gateway: no
/// stage needs L4 ports or the flow hash then, so the lane runs its
/// `l4 = false` parse sweep (the one a plain routing config, like the
/// bench's, gets).
pub fn route_only_no_ecmp_config() -> String {
    let c = route_only_config()
        .replace(r#"via = ["10.0.1.2", "10.0.2.2"]"#, r#"via = "10.0.1.2""#)
        .replace(
            r#"via = ["2001:db8:1::2", "2001:db8:2::2"]"#,
            r#"via = "2001:db8:2::2""#,
        );
    assert!(!c.contains("via = ["), "an ECMP route is left");
    c
}

/// `config` with its pipeline replaced by `stages`.
pub fn with_pipeline(config: &str, stages: &str) -> String {
    let start = config.find("pipeline = [").expect("a pipeline line");
    let end = start + config[start..].find('\n').expect("line end");
    format!(
        "{}pipeline = [{stages}]{}",
        &config[..start],
        &config[end..]
    )
}

/// `config` with its route tables on `backend` (`"fib"`, `"lpm"`,
/// `"linear"`).
pub fn with_route_backend(config: &str, backend: &str) -> String {
    let c = config.replace("backend = \"fib\"", &format!("backend = \"{backend}\""));
    assert!(
        c.contains(&format!("backend = \"{backend}\"")),
        "fuzz config's [route] backend"
    );
    c
}

/// The fuzz router with an ACL flow cache of `entries` entries.
pub fn acl_config(entries: usize) -> String {
    let c = harness::CONFIG.replace(
        "\nflow_cache = 64\n",
        &format!("\nflow_cache = {entries}\n"),
    );
    let line = format!("\nflow_cache = {entries}\n");
    assert!(c.contains(&line), "fuzz config's [acl] flow_cache");
    c
}

/// One stage list compared: its config and the stage names the pipeline
/// must have.
pub struct Variant {
    pub toml: String,
    pub stages: String,
}

pub struct Side {
    pub tables: SharedTables,
    pipeline: Pipeline,
    /// Packets this side sent so far (a `count` after the forwarder must
    /// have seen them all).
    sent_total: u64,
    /// Kept across bursts, as a worker keeps it: stale metadata from the
    /// previous burst must not leak into the next one's verdicts.
    meta: MetaBurst,
}

pub struct Pair {
    cfg: Config,
    res: Resolved,
    pub lane: Side,
    pub plain: Side,
    /// Fused, run through `run_and_dispatch`.
    pub direct: Side,
    /// As `direct`, on ports with IPv4 checksum offload.
    pub offload: Side,
}

/// The four routers of every variant `crate::setup` names, built once per
/// process; a mutex keeps their neighbour caches in step across test
/// threads.
pub fn pairs() -> &'static Mutex<Vec<Pair>> {
    static PAIRS: OnceLock<Mutex<Vec<Pair>>> = OnceLock::new();
    PAIRS.get_or_init(|| {
        let pairs = crate::setup()
            .iter()
            .map(|v| {
                let (cfg, res) = Config::parse(&v.toml, "lane.toml").expect("config");
                let macs: Vec<[u8; 6]> = cfg
                    .ports
                    .iter()
                    .map(|p| p.mac.as_ref().unwrap().get_ref().0)
                    .collect();
                let peers: Vec<[u8; 6]> = (0..cfg.ports.len()).map(default_peer_mac).collect();
                let side = |lane: bool, offload: bool| {
                    let offload = vec![offload; cfg.ports.len()];
                    let tables = build_tables(&cfg, &res, &macs, &offload).expect("tables");
                    let mut pipeline = build_pipeline(&cfg, &res, &tables, &macs, &peers);
                    pipeline.set_lane(lane);
                    Side {
                        tables,
                        pipeline,
                        sent_total: 0,
                        meta: new_meta_burst(),
                    }
                };
                let lane = side(true, false);
                let plain = side(false, false);
                let direct = side(true, false);
                let offload = side(true, true);
                assert_eq!(lane.pipeline.stage_names().join(","), v.stages);
                assert_eq!(plain.pipeline.stage_names().join(","), v.stages);
                Pair {
                    cfg,
                    res,
                    lane,
                    plain,
                    direct,
                    offload,
                }
            })
            .collect();
        Mutex::new(pairs)
    })
}

/// What one burst did on one side.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub verdicts: Vec<Verdict>,
    /// As the port puts them on the wire (checksums the device was asked
    /// for filled in).
    pub sent: Vec<(u16, Vec<u8>)>,
    /// Packets sent with an IPv4 checksum request.
    pub checksum_requests: usize,
    pub dropped: Vec<(String, Vec<u8>)>,
    pub consumed: Vec<Vec<u8>>,
    pub drops: Vec<u64>,
    pub events: Vec<u64>,
    pub originated: Vec<u64>,
    /// Per-rule ACL hits, then flow-cache hits and misses, in this burst.
    pub acl: Vec<u64>,
    /// The `count` stage's counters so far (null without one).
    pub count: serde_json::Value,
    /// Every stage's counters so far, by stage name.
    pub stages: Vec<(String, serde_json::Value)>,
    /// The load balancer's per-service counters so far (null without one).
    pub lb: serde_json::Value,
}

/// Runs a burst through `side`: `run` then `dispatch`, or (`direct`) the
/// worker's `run_and_dispatch`.
fn run_side(side: &mut Side, frames: &[VecPacket], in_port: u16, now: u64, direct: bool) -> Run {
    let mut burst = Burst::<VecPacket>::new();
    for f in frames {
        assert!(burst.push(f.clone()).is_ok());
    }
    let n = burst.len();
    let acl_before = acl_counts(side);
    let meta = &mut side.meta;
    let counters = WorkerCounters::default();
    let ctx = StageCtx {
        now,
        tsc_hz: 1_000_000_000,
        counters: &counters,
    };
    let mut out = Collect::default();
    if direct {
        side.pipeline
            .run_and_dispatch(&mut burst, meta, in_port, &ctx, &mut out, MAX_STAGES);
    } else {
        side.pipeline.run(&mut burst, meta, in_port, &ctx);
        dispatch(&mut burst, meta, &mut out);
    }
    side.sent_total += out.sent.len() as u64;
    let count = side
        .pipeline
        .counters()
        .into_iter()
        .find(|(name, _)| *name == "count")
        .map_or(serde_json::Value::Null, |(_, c)| c.report());
    if side.pipeline.stage_names().last() == Some(&"count") {
        let seen: u64 = count["tx_packets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            seen, side.sent_total,
            "count after the forwarder missed packets"
        );
    }
    // The books balance per burst: rx + originated = tx + dropped +
    // consumed, the drops being the dispatched ones and those the stages
    // counted for the buffers they turned into packets of their own.
    let total = |v: &[dataplane::stats::Counter]| v.iter().map(|c| c.get()).sum::<u64>();
    let consumed = counters.events[dataplane::pipeline::Event::Consumed as usize].get();
    assert_eq!(consumed, out.consumed.len() as u64, "consumed counted once");
    assert_eq!(
        n as u64 + total(&counters.originated),
        (out.sent.len() + out.dropped.len()) as u64 + total(&counters.drops) + consumed,
        "accounting: rx + originated = tx + dropped + consumed"
    );
    let stages = side
        .pipeline
        .counters()
        .into_iter()
        .map(|(name, c)| (name.to_owned(), c.report()))
        .collect();
    let lb = side
        .tables
        .lb
        .as_ref()
        .map_or(serde_json::Value::Null, |l| l.report());
    Run {
        count,
        stages,
        lb,
        verdicts: meta[..n].iter().map(|m| m.verdict).collect(),
        checksum_requests: out
            .sent
            .iter()
            .filter(|(_, v)| v.ipv4_checksum_request.is_some())
            .count(),
        sent: out
            .sent
            .into_iter()
            .map(|(p, v)| (p, v.transmitted()))
            .collect(),
        dropped: out
            .dropped
            .into_iter()
            .map(|(r, v)| (r.name().to_owned(), v.bytes))
            .collect(),
        consumed: out.consumed.into_iter().map(|v| v.bytes).collect(),
        drops: counters.drops.iter().map(|c| c.get()).collect(),
        events: counters.events.iter().map(|c| c.get()).collect(),
        originated: counters.originated.iter().map(|c| c.get()).collect(),
        acl: acl_counts(side)
            .iter()
            .zip(&acl_before)
            .map(|(a, b)| a - b)
            .collect(),
    }
}

/// Per-rule ACL hits, then flow-cache hits and misses, so far.
fn acl_counts(side: &Side) -> Vec<u64> {
    let Some((_, acl)) = side
        .pipeline
        .counters()
        .into_iter()
        .find(|(n, _)| *n == "acl")
    else {
        return Vec::new();
    };
    let r = acl.report();
    let cache = &r["flow_cache"];
    r["rule_hits"]
        .as_array()
        .expect("rule_hits")
        .iter()
        .chain([&cache["hits"], &cache["misses"]])
        .map(|c| c.as_u64().expect("a count"))
        .collect()
}

/// Runs one burst through every router of every variant and asserts they
/// agree; returns each variant's lane result, with `checksum_requests`
/// from its offload router.
pub fn both(frames: &[Vec<u8>], in_port: u16, now: u64) -> Vec<Run> {
    let pkts: Vec<VecPacket> = frames.iter().map(|f| VecPacket::new(f.clone())).collect();
    both_pkts(&pkts, in_port, now)
}

/// [`both`] over packets as given (chains included).
pub fn both_pkts(pkts: &[VecPacket], in_port: u16, now: u64) -> Vec<Run> {
    let mut pairs = pairs().lock().unwrap_or_else(|e| e.into_inner());
    both_locked(&mut pairs, pkts, in_port, now)
}

/// [`both`] with the routers already locked (for a test whose bursts must
/// follow one another with no other test's in between).
pub fn both_locked(pairs: &mut [Pair], frames: &[VecPacket], in_port: u16, now: u64) -> Vec<Run> {
    let mut runs = Vec::new();
    for (k, p) in pairs.iter_mut().enumerate() {
        let _ = (&p.cfg, &p.res);
        let lane = run_side(&mut p.lane, frames, in_port, now, false);
        let plain = run_side(&mut p.plain, frames, in_port, now, false);
        let direct = run_side(&mut p.direct, frames, in_port, now, true);
        let mut offload = run_side(&mut p.offload, frames, in_port, now, true);
        assert_eq!(
            lane, plain,
            "the lane and the stage-by-stage pipeline differ (variant {k})"
        );
        assert_eq!(plain.checksum_requests, 0, "no port has the offload");
        let plain_sorted = Run {
            sent: {
                let mut s = plain.sent.clone();
                s.sort();
                s
            },
            ..plain
        };
        assert_eq!(
            sent_early_alike(direct, &plain_sorted),
            plain_sorted,
            "run_and_dispatch differs from run + dispatch (variant {k})"
        );
        let requests = std::mem::take(&mut offload.checksum_requests);
        let offloaded = sent_early_alike(offload, &plain_sorted);
        assert_eq!(
            offloaded, plain_sorted,
            "with checksum offload, the wire differs (variant {k})"
        );
        runs.push(Run {
            checksum_requests: requests,
            ..lane
        });
    }
    runs
}

/// A `run_and_dispatch` run made comparable with `plain` (whose `sent` is
/// sorted): sent early or not, the same packets must leave on the same
/// ports, so `sent` is sorted too. The verdicts of packets sent early were
/// never written (their `Meta` holds whatever an earlier burst left): the
/// sent and dropped lists decide where every packet went, so those are
/// taken from `plain`.
fn sent_early_alike(mut direct: Run, plain: &Run) -> Run {
    direct.sent.sort();
    for (d, p) in direct.verdicts.iter_mut().zip(&plain.verdicts) {
        if matches!(p, Verdict::Tx(_)) {
            *d = *p;
        }
    }
    direct
}

/// The ports' MACs in the fuzz router (lan, wan).
pub const PORT_MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 2, 1]];

pub fn udp4(src: [u8; 4], dst: [u8; 4], ttl: u8, payload: usize) -> Vec<u8> {
    udp4_to(PORT_MAC[0], src, dst, ttl, payload)
}

pub fn udp4_to(mac: [u8; 6], src: [u8; 4], dst: [u8; 4], ttl: u8, payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], mac)
        .ipv4(src, dst, ttl)
        .udp(4000, 53)
        .write(&mut v, &vec![7u8; payload])
        .unwrap();
    v
}

/// The fast path really runs and really forwards: a plain packet to a
/// resolved gateway goes out rewritten, identically on all sides.
pub fn plain_ipv4_forwarded_alike() {
    let runs = both(
        &[udp4([10, 0, 1, 5], [198, 18, 1, 7], 64, 18)],
        0,
        1_000_000_000,
    );
    for r in &runs {
        assert_eq!(r.verdicts, [Verdict::Tx(1)]);
        let (port, f) = &r.sent[0];
        assert_eq!(*port, 1);
        assert_eq!(&f[..6], &[2, 0, 0, 0, 2, 2], "gateway 10.0.2.2's MAC");
        assert_eq!(&f[6..12], &[2, 0, 0, 0, 2, 1], "wan's MAC");
        assert_eq!(f[22], 63, "TTL decremented");
        assert_eq!(r.checksum_requests, 1, "the offload router's request");
    }
}

/// The ACL on the lane really classifies: SSH to 198.18.0.0/24 is denied by
/// the first rule and the same packet to port 80 is allowed (the second
/// round hits the flow cache); without an ACL all three are routed.
pub fn acl_verdicts_alike() {
    let tcp = |dport: u16| {
        let mut v = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 1, 1])
            .ipv4([10, 0, 1, 5], [198, 18, 0, 7], 64)
            .tcp(40000, dport, 1, 1024)
            .write(&mut v, &[])
            .unwrap();
        v
    };
    let burst = [tcp(22), tcp(80), tcp(22)].map(VecPacket::new);
    let mut pairs = pairs().lock().unwrap_or_else(|e| e.into_inner());
    for round in 0..2 {
        let runs = both_locked(&mut pairs, &burst, 0, 1_000_000_000 + round);
        for r in &runs {
            if r.acl.is_empty() {
                assert_eq!(r.verdicts, [Verdict::Tx(0); 3], "no ACL: all routed");
                continue;
            }
            assert_eq!(
                r.verdicts,
                [
                    Verdict::Drop(DropReason::AclDeny),
                    Verdict::Tx(0),
                    Verdict::Drop(DropReason::AclDeny)
                ]
            );
            assert_eq!(r.acl[0], 2, "rule 1 hits: {:?}", r.acl);
            let (hits, misses) = (r.acl[r.acl.len() - 2], r.acl[r.acl.len() - 1]);
            assert_eq!(hits + misses, 3);
            if round == 1 {
                assert_eq!(hits, 3, "second round: all in the cache");
            }
        }
    }
}

/// The saved fuzz inputs (`tests/fuzz_regressions/`: crashes found once,
/// hand-made tricky cases), in name order.
pub fn saved_fuzz_inputs() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "saved inputs in {}", dir.display());
    files
}

/// Every saved fuzz input.
pub fn fuzz_inputs_alike() {
    for f in saved_fuzz_inputs() {
        let data = std::fs::read(&f).unwrap();
        for data in [data.clone(), harness::addressed_to(&data, &PORT_MAC)] {
            if let Some(input) = harness::decode(&data) {
                both(&input.frames, input.in_port, input.now);
            }
        }
    }
}

/// The traffic generator's output (IPv4/IPv6, VLAN, IMIX, every malformed
/// kind) over the router's prefixes, in full bursts.
pub fn generated_traffic_alike() {
    let mut total = 0;
    for extra in [
        &[][..],
        &["--vlan", "7"][..],
        &["--ipv6-ratio", "0.5", "--size", "imix", "--proto", "mix"][..],
        &["--malformed-ratio", "0.5", "--ttl", "1"][..],
    ] {
        let mut args = vec![
            "gen",
            "--out",
            "/dev/null",
            "--count",
            "256",
            "--flows",
            "64",
            "--dst-prefix",
            "198.18.0.0/24",
            "--dst-prefix",
            "198.18.1.0/24",
            "--dst-prefix",
            "203.0.113.0/24",
            "--dst-prefix",
            "192.0.2.0/24",
            "--dst-prefix",
            "10.0.1.0/24",
            "--dst-prefix",
            "198.51.100.0/24",
            "--dst-prefix",
            "2001:db8:100::/48",
            "--dst-prefix",
            "2001:db8:200::/48",
        ];
        args.extend_from_slice(extra);
        let frames = generated(&args);
        for (k, chunk) in frames.chunks(BURST_SIZE).enumerate() {
            // To the input port's MAC, but for one frame in eight left at
            // the generator's (not for us).
            let in_port = k % 2;
            let mut chunk = chunk.to_vec();
            for (j, f) in chunk.iter_mut().enumerate() {
                if j % 8 != 7 && f.len() >= 6 {
                    f[..6].copy_from_slice(&PORT_MAC[in_port]);
                }
            }
            both(
                &chunk,
                in_port as u16,
                1_000_000_000 + k as u64 * 10_000_000,
            );
            total += chunk.len();
        }
    }
    assert!(total >= 1024);
}

/// The generator's frames for `gen`-style arguments.
pub fn generated(args: &[&str]) -> Vec<Vec<u8>> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        gen: dataplane::gen::GenArgs,
    }
    let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
    dataplane::gen::generate(&cli.gen).unwrap_or_else(|e| panic!("gen {args:?}: {e}"))
}

/// Random bursts of frames aimed at every kind of route (gateway,
/// unresolved gateway, ECMP, connected, local, subnet broadcast, no route,
/// a load-balanced service), from hosts, martian sources and sources that
/// cannot be true (the router's own addresses, its subnets' broadcasts),
/// with random TTLs, lengths, byte flips and truncations, to the input
/// port's MAC or not (the other port's, broadcast, multicast), some from a
/// group MAC, padded past their IP length or not, and some as chains
/// (their IP packet in the first segment or running past it, or a broken
/// chain); with the input port.
pub fn mutated_bursts() -> impl Strategy<Value = (Vec<VecPacket>, u16)> {
    let pkt = (
        prop::sample::select(
            &[
                [198, 18, 0, 1],
                [198, 18, 1, 2],
                // Load-balanced services in `every_stage_list.rs` (routed
                // as any other address without an lb stage).
                [198, 18, 0, 53],
                [198, 18, 1, 53],
                [203, 0, 113, 9],
                [192, 0, 2, 5],
                [10, 0, 1, 1],
                [10, 0, 2, 9],
                [198, 51, 100, 3],
                [8, 8, 8, 8],
                [127, 0, 0, 1],
                [224, 0, 0, 5],
                [0, 1, 2, 3],
                [10, 0, 1, 255],
                [10, 0, 2, 255],
                [255, 255, 255, 255],
            ][..],
        ),
        prop::sample::select(
            &[
                [10u8, 0, 1, 5],
                [10, 0, 2, 5],
                [10, 0, 1, 5],
                [10, 0, 2, 5],
                [127, 0, 0, 1],
                [240, 0, 0, 1],
                [10, 0, 1, 1],
                [10, 0, 2, 1],
                [10, 0, 3, 255],
                [10, 0, 2, 255],
            ][..],
        ),
        prop_oneof![Just(64u8), 0u8..3],
        prop_oneof![Just(18usize), 0usize..1500],
        prop::collection::vec((0usize..48, any::<u8>()), 0..2),
        prop::option::weighted(0.1, 0usize..60),
        prop_oneof![6 => Just(0u8), 1 => 1u8..4],
        prop::option::weighted(0.15, 1usize..200),
        prop::option::weighted(0.1, (0usize..1600, 1u16..4000, prop::bool::weighted(0.2))),
        prop::bool::weighted(0.05),
    );
    (prop::collection::vec(pkt, 1..=BURST_SIZE), 0u16..2).prop_map(|(pkts, in_port)| {
        let frames = pkts
            .into_iter()
            .map(
                |(dst, src, ttl, len, flips, cut, to, pad, chain, group_src)| {
                    let mac = match to {
                        0 => PORT_MAC[usize::from(in_port)],
                        1 => PORT_MAC[usize::from(1 - in_port)],
                        2 => [0xff; 6],
                        _ => [0x01, 0, 0x5e, 0, 0, 5],
                    };
                    let mut f = udp4_to(mac, src, dst, ttl, len);
                    if group_src {
                        f[6] |= 1;
                    }
                    if let Some(n) = pad {
                        f.resize(f.len() + n, 0xee);
                    }
                    for (at, x) in flips {
                        if at < f.len() {
                            f[at] ^= x;
                        }
                    }
                    if let Some(c) = cut {
                        f.truncate(c.min(f.len()));
                    }
                    let chained = |f: Vec<u8>, more, broken| {
                        if broken {
                            VecPacket::broken_chain(f, more)
                        } else {
                            VecPacket::chained(f, more)
                        }
                    };
                    match chain {
                        // A first segment of `first` bytes, `more` after it.
                        Some((first, more, broken)) if first < f.len() => {
                            f.truncate(first);
                            chained(f, more, broken)
                        }
                        Some((_, more, broken)) => chained(f, more, broken),
                        None => VecPacket::new(f),
                    }
                },
            )
            .collect();
        (frames, in_port)
    })
}
