//! The fused parse+route pass (`RouteStage::process_fused`, used whenever
//! the pipeline is `["route"]`) must behave exactly like `parse` followed by
//! `route`: same verdict per packet, same bytes out on the same ports, same
//! drops and the same counters. Both run here side by side, each over its
//! own copy of the tables (the neighbour cache learns from ARP/NDP, so they
//! must not share it), on the fuzz harness's router (`fuzz/harness.rs`,
//! without its ACL): every saved fuzz input, generated traffic of every
//! kind, and random bursts of mutated frames.
#[path = "../../fuzz/harness.rs"]
mod harness;

use dataplane::burst::Burst;
use dataplane::config::{Config, Resolved};
use dataplane::daemon::{build_pipeline, build_tables, default_peer_mac, SharedTables};
use dataplane::pipeline::{
    dispatch, new_meta_burst, Collect, MetaBurst, Pipeline, StageCtx, VecPacket, Verdict,
};
use dataplane::stats::WorkerCounters;
use etherparse::PacketBuilder;
use proptest::prelude::*;
use std::sync::{Mutex, OnceLock};

/// The fuzz router with `pipeline = ["route"]` and no ACL.
fn route_only_config() -> String {
    let c = harness::CONFIG.replace(r#"pipeline = ["acl", "route"]"#, r#"pipeline = ["route"]"#);
    let acl = c.find("[acl]").expect("fuzz config has [acl]");
    let route = c.find("[route]").expect("fuzz config has [route]");
    format!("{}{}", &c[..acl], &c[route..])
}

struct Side {
    tables: SharedTables,
    pipeline: Pipeline,
    /// Kept across bursts, as a worker keeps it: stale metadata from the
    /// previous burst must not leak into the next one's verdicts.
    meta: MetaBurst,
}

struct Pair {
    cfg: Config,
    res: Resolved,
    fused: Side,
    plain: Side,
}

/// Both routers, built once per process (EAL starts once); a mutex keeps
/// their neighbour caches in step across test threads.
fn pair() -> &'static Mutex<Pair> {
    static PAIR: OnceLock<Mutex<Pair>> = OnceLock::new();
    PAIR.get_or_init(|| {
        dataplane::tables::test_eal();
        let (cfg, res) = Config::parse(&route_only_config(), "fused.toml").expect("config");
        let macs: Vec<[u8; 6]> = cfg.ports.iter().map(|p| p.mac.unwrap().0).collect();
        let peers: Vec<[u8; 6]> = (0..cfg.ports.len()).map(default_peer_mac).collect();
        let side = |fused: bool| {
            let tables = build_tables(&cfg, &res, &macs).expect("tables");
            let (mut pipeline, _) = build_pipeline(&cfg, &res, &tables, &macs, &peers);
            pipeline.set_fused(fused);
            Side {
                tables,
                pipeline,
                meta: new_meta_burst(),
            }
        };
        let fused = side(true);
        let plain = side(false);
        assert_eq!(fused.pipeline.stage_names(), ["parse+route"]);
        assert_eq!(plain.pipeline.stage_names(), ["parse", "route"]);
        Mutex::new(Pair {
            cfg,
            res,
            fused,
            plain,
        })
    })
}

/// What one burst did on one side.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    verdicts: Vec<Verdict>,
    sent: Vec<(u16, Vec<u8>)>,
    dropped: Vec<(String, Vec<u8>)>,
    consumed: Vec<Vec<u8>>,
    drops: Vec<u64>,
    events: Vec<u64>,
}

fn run_side(side: &mut Side, frames: &[Vec<u8>], in_port: u16, now: u64) -> Run {
    let mut burst = Burst::<VecPacket>::new();
    for f in frames {
        assert!(burst.push(VecPacket::new(f.clone())).is_ok());
    }
    let n = burst.len();
    let meta = &mut side.meta;
    let counters = WorkerCounters::default();
    let ctx = StageCtx {
        now,
        tsc_hz: 1_000_000_000,
        counters: &counters,
    };
    side.pipeline.run(&mut burst, meta, in_port, &ctx);
    let mut out = Collect::default();
    dispatch(&mut burst, meta, &mut out);
    let _ = &side.tables;
    Run {
        verdicts: meta[..n].iter().map(|m| m.verdict).collect(),
        sent: out.sent.into_iter().map(|(p, v)| (p, v.bytes)).collect(),
        dropped: out
            .dropped
            .into_iter()
            .map(|(r, v)| (r.name().to_owned(), v.bytes))
            .collect(),
        consumed: out.consumed.into_iter().map(|v| v.bytes).collect(),
        drops: counters.drops.iter().map(|c| c.get()).collect(),
        events: counters.events.iter().map(|c| c.get()).collect(),
    }
}

/// Runs one burst through both sides and asserts they agree; returns the
/// fused side's result.
fn both(frames: &[Vec<u8>], in_port: u16, now: u64) -> Run {
    let mut p = pair().lock().unwrap_or_else(|e| e.into_inner());
    let _ = (&p.cfg, &p.res);
    let fused = run_side(&mut p.fused, frames, in_port, now);
    let plain = run_side(&mut p.plain, frames, in_port, now);
    assert_eq!(fused, plain, "fused and unfused pipelines differ");
    fused
}

fn udp4(src: [u8; 4], dst: [u8; 4], ttl: u8, payload: usize) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 1, 1])
        .ipv4(src, dst, ttl)
        .udp(4000, 53)
        .write(&mut v, &vec![7u8; payload])
        .unwrap();
    v
}

/// The fast path really runs and really forwards: a plain packet to a
/// resolved gateway goes out rewritten, identically on both sides.
#[test]
fn plain_ipv4_forwarded_alike() {
    let r = both(
        &[udp4([10, 0, 1, 5], [198, 18, 1, 7], 64, 18)],
        0,
        1_000_000_000,
    );
    assert_eq!(r.verdicts, [Verdict::Tx(1)]);
    let (port, f) = &r.sent[0];
    assert_eq!(*port, 1);
    assert_eq!(&f[..6], &[2, 0, 0, 0, 2, 2], "gateway 10.0.2.2's MAC");
    assert_eq!(&f[6..12], &[2, 0, 0, 0, 2, 1], "wan's MAC");
    assert_eq!(f[22], 63, "TTL decremented");
}

/// Every saved fuzz input (crashes found once, hand-made tricky cases).
#[test]
fn fuzz_inputs_alike() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "saved inputs in {}", dir.display());
    for f in files {
        let data = std::fs::read(&f).unwrap();
        if let Some(input) = harness::decode(&data) {
            both(&input.frames, input.in_port, input.now);
        }
    }
}

/// The traffic generator's output (IPv4/IPv6, VLAN, IMIX, every malformed
/// kind) over the router's prefixes, in bursts of 32.
#[test]
fn generated_traffic_alike() {
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
        for (k, chunk) in frames.chunks(32).enumerate() {
            both(chunk, (k % 2) as u16, 1_000_000_000 + k as u64 * 10_000_000);
            total += chunk.len();
        }
    }
    assert!(total >= 1024);
}

/// The generator's frames for `gen`-style arguments.
fn generated(args: &[&str]) -> Vec<Vec<u8>> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        gen: dataplane::gen::GenArgs,
    }
    let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
    dataplane::gen::generate(&cli.gen).unwrap_or_else(|e| panic!("gen {args:?}: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(dataplane::tables::testing::proptest_cases(256)))]

    /// Random bursts of frames aimed at every kind of route (gateway,
    /// unresolved gateway, ECMP, connected, local, no route), with random
    /// TTLs, lengths, byte flips and truncations.
    #[test]
    fn mutated_bursts_alike(
        pkts in prop::collection::vec(
            (
                prop::sample::select(&[
                    [198, 18, 0, 1], [198, 18, 1, 2], [203, 0, 113, 9], [192, 0, 2, 5],
                    [10, 0, 1, 1], [10, 0, 2, 9], [198, 51, 100, 3], [8, 8, 8, 8],
                    [127, 0, 0, 1], [224, 0, 0, 5], [0, 1, 2, 3],
                ][..]),
                prop::sample::select(&[[10u8, 0, 1, 5], [10, 0, 2, 5], [127, 0, 0, 1], [240, 0, 0, 1]][..]),
                prop_oneof![Just(64u8), 0u8..3],
                prop_oneof![Just(18usize), 0usize..1500],
                prop::collection::vec((0usize..48, any::<u8>()), 0..2),
                prop::option::weighted(0.1, 0usize..60),
            ),
            1..=32,
        ),
        in_port in 0u16..2,
        step in 0u64..64,
    ) {
        let frames: Vec<Vec<u8>> = pkts
            .into_iter()
            .map(|(dst, src, ttl, len, flips, cut)| {
                let mut f = udp4(src, dst, ttl, len);
                for (at, x) in flips {
                    if at < f.len() {
                        f[at] ^= x;
                    }
                }
                if let Some(c) = cut {
                    f.truncate(c.min(f.len()));
                }
                f
            })
            .collect();
        both(&frames, in_port, 1_000_000_000 + step * 50_000_000);
    }
}
