//! Pipeline microbenchmark: the daemon's stages on in-memory packets, no PMD.
//!
//! `cargo bench -p dataplane --bench pipeline` prints TSC cycles per packet
//! per stage for three pipelines — forward, route (1,000 routes; on the
//! fast lane, and `route_1k/2` stage by stage) and acl (1,000 rules) +
//! route — over 4,096 distinct 64-byte UDP frames replayed in
//! bursts of 32 (each burst's bytes are first copied into its buffers, as a
//! PMD would). It isolates the dataplane's own cost from the virtual
//! devices', and under `valgrind --tool=callgrind` gives repeatable
//! instruction counts for optimisation work.
//!
//! `BENCH_LB_FLOWS=N` (e.g. 1048576) turns the `lb` and `full` cases into a
//! connection-table test: N distinct tracked UDP flows (a connection table
//! of 2N), one warm pass over all of them that inserts, then timed passes
//! that are all hits (checked: no new flow is tracked while timed). It
//! prints the lb stage's lookups (packets) per second per core beside the
//! whole pipeline's.
use dataplane::burst::Burst;
use dataplane::config::Config;
use dataplane::daemon::{build_pipeline, build_tables};
use dataplane::dpdk::{rdtsc, Eal};
use dataplane::pipeline::{new_meta_burst, DropReason, Output, StageCtx, VecPacket, MAX_STAGES};
use dataplane::stats::WorkerCounters;
use etherparse::PacketBuilder;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;

const FRAMES: usize = 4096;
/// The dispatch pass's profiling slot, as the daemon's worker uses.
const DISPATCH_SLOT: usize = MAX_STAGES;
const PORT_MACS: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 1, 1]];

/// Counts outputs and hands the buffers back for the next burst.
struct Recycle {
    free: Vec<VecPacket>,
    sent: [u64; 2],
    dropped: u64,
}

impl Output<VecPacket> for Recycle {
    fn tx(&mut self, port: u16, pkt: VecPacket) {
        self.sent[port as usize & 1] += 1;
        self.free.push(pkt);
    }
    fn drop(&mut self, pkt: VecPacket, _reason: DropReason) {
        self.dropped += 1;
        self.free.push(pkt);
    }
    fn consume(&mut self, pkt: VecPacket) {
        self.free.push(pkt);
    }
}

fn config(routes: usize, rules: usize, stages: &str, rng: &mut SmallRng) -> (String, Vec<[u8; 4]>) {
    let mut s = format!(
        r#"pipeline = [{stages}]
[[port]]
name = "p0"
device = "net_null0"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "p1"
device = "net_null1"
ipv4 = ["10.0.1.1/24"]
[[worker]]
core = 1
rx = ["p0", "p1"]
"#
    );
    let mut dsts = Vec::new();
    if stages.contains("forward") {
        s.push_str("[forward]\npairs = [[\"p0\", \"p1\"]]\n");
        for _ in 0..FRAMES {
            dsts.push(rng.gen::<[u8; 4]>());
        }
        return (s, dsts);
    }
    if rules > 0 {
        s.push_str("[acl]\ndefault = \"allow\"\n");
        // BENCH_ACL_FLOW_CACHE=N: the flow cache's size (0 = none).
        if let Ok(n) = std::env::var("BENCH_ACL_FLOW_CACHE") {
            let _ = writeln!(s, "flow_cache = {n}");
        }
    }
    // BENCH_ACL_RULES=FILE: these [[acl.rule]]s instead of generated ones
    // (e.g. scripts/bench.sh's build/bench/routes/acl1k_route-acl.toml).
    let rule_file = std::env::var("BENCH_ACL_RULES").ok().filter(|_| rules > 0);
    if let Some(f) = &rule_file {
        s.push_str(&std::fs::read_to_string(f).expect("BENCH_ACL_RULES file"));
    } else if rules > 0 {
        for k in 0..rules {
            let len = [16, 24, 32][k % 3];
            let a: u32 = (172u32 << 24) | (rng.gen::<u32>() & 0x00ff_ffff);
            let a = a & (u32::MAX << (32 - len));
            let b = a.to_be_bytes();
            let _ = write!(
                s,
                "[[acl.rule]]\naction = \"deny\"\nsrc = \"{}.{}.{}.{}/{len}\"\nproto = \"tcp\"\ndport = {}\n",
                b[0],
                b[1],
                b[2],
                b[3],
                1 + k % 1000
            );
        }
    }
    let backend = std::env::var("BENCH_BACKEND").unwrap_or_else(|_| "fib".into());
    let _ = write!(s, "[route]\nbackend = \"{backend}\"\n");
    s.push_str("[[route.neighbor]]\nip = \"10.0.0.2\"\nmac = \"02:00:00:00:00:aa\"\n[[route.neighbor]]\nip = \"10.0.1.2\"\nmac = \"02:00:00:00:00:bb\"\n");
    let mut prefixes = Vec::new();
    for k in 0..routes {
        let len = [16u32, 20, 22, 24, 24, 24, 24, 28, 32][k % 9];
        let a = loop {
            let a: u32 = rng.gen();
            let top = a >> 24;
            if (1..224).contains(&top) && top != 127 && top != 10 && top != 172 {
                break a & (u32::MAX << (32 - len));
            }
        };
        prefixes.push((a, len));
        let b = a.to_be_bytes();
        let via = if k % 2 == 0 { "10.0.0.2" } else { "10.0.1.2" };
        let _ = write!(
            s,
            "[[route.static]]\nprefix = \"{}.{}.{}.{}/{len}\"\nvia = \"{via}\"\n",
            b[0], b[1], b[2], b[3]
        );
    }
    for _ in 0..FRAMES {
        let (a, len) = prefixes[rng.gen_range(0..prefixes.len())];
        let host = if len == 32 {
            0
        } else {
            rng.gen::<u32>() & (u32::MAX >> len)
        };
        dsts.push((a | host).to_be_bytes());
    }
    if stages.contains("lb") {
        // As scripts/bench.sh's lb scenarios: the first LB_VIPS destinations
        // become UDP services over 100 IP-in-IP backends (behind p1), and
        // every frame goes to one of them.
        s.push_str("[[route.static]]\nprefix = \"10.2.0.0/16\"\nvia = \"10.0.1.2\"\n");
        let capacity = lb_flows().map_or(65_536, |n| 2 * n);
        let _ = writeln!(s, "[lb]\nconntrack_capacity = {capacity}");
        let vips: Vec<[u8; 4]> = dsts[..LB_VIPS].to_vec();
        // BENCH_LB_CONNTRACK=false: Maglev alone (what tracking costs).
        let conntrack = std::env::var("BENCH_LB_CONNTRACK").unwrap_or_else(|_| "true".into());
        for v in &vips {
            let _ = write!(
                s,
                "[[lb.service]]\nvip = \"{}.{}.{}.{}\"\nproto = \"udp\"\nsource = \"10.0.1.1\"\nconntrack = {}\n",
                v[0], v[1], v[2], v[3], conntrack
            );
            for b in 0..100 {
                let _ = write!(
                    s,
                    "[[lb.service.backend]]\naddress = \"10.2.0.{}\"\n",
                    b + 1
                );
            }
        }
        for (k, d) in dsts.iter_mut().enumerate() {
            *d = vips[k % LB_VIPS];
        }
    }
    (s, dsts)
}

/// VIPs of the lb scenarios.
const LB_VIPS: usize = 8;

/// `BENCH_LB_FLOWS=N`: the lb scenarios' distinct tracked flows (else
/// the 4,096 frames'), at most 4M (one source address each in 100.64/10).
fn lb_flows() -> Option<usize> {
    let n = std::env::var("BENCH_LB_FLOWS").ok()?;
    let n: usize = n.parse().expect("BENCH_LB_FLOWS: a number of flows");
    assert!((1..=1 << 22).contains(&n), "BENCH_LB_FLOWS: 1..=4194304");
    Some(n)
}

fn frames(dsts: &[[u8; 4]], rng: &mut SmallRng, distinct: bool) -> Vec<Vec<u8>> {
    dsts.iter()
        .enumerate()
        .map(|(k, d)| {
            let mut v = Vec::new();
            // Distinct flows: one source address per frame.
            let src = if distinct {
                (0x6440_0000u32 + k as u32).to_be_bytes()
            } else {
                [192, 168, 0, rng.gen()]
            };
            PacketBuilder::ethernet2([2, 0, 0, 0, 9, 9], PORT_MACS[0])
                .ipv4(src, *d, 64)
                .udp(rng.gen(), 80)
                .write(&mut v, &[0u8; 18])
                .unwrap();
            v
        })
        .collect()
}

fn run(name: &str, routes: usize, rules: usize, stages: &str, lane: bool, tsc_ghz: f64) {
    // BENCH_ONLY=NAME[,NAME..] runs just those (e.g. one per callgrind run).
    if let Ok(only) = std::env::var("BENCH_ONLY") {
        if !only.split(',').any(|o| o == name) {
            return;
        }
    }
    let mut rng = SmallRng::seed_from_u64(7);
    let (toml, mut dsts) = config(routes, rules, stages, &mut rng);
    let flows = lb_flows().filter(|_| stages.contains("lb"));
    if let Some(n) = flows {
        dsts = (0..n).map(|k| dsts[k % dsts.len()]).collect();
    }
    let (cfg, res) = Config::parse(&toml, name).unwrap();
    let tables = build_tables(&cfg, &res, &PORT_MACS, &[]).unwrap();
    let mut pipeline = build_pipeline(&cfg, &res, &tables, &PORT_MACS, &PORT_MACS);
    pipeline.set_profile(Some(rdtsc));
    pipeline.set_lane(lane);
    let names = pipeline.stage_names();
    let input = frames(&dsts, &mut rng, flows.is_some());
    let counters = WorkerCounters::default();
    let mut out = Recycle {
        free: (0..64).map(|_| VecPacket::new(vec![0u8; 64])).collect(),
        sent: [0; 2],
        dropped: 0,
    };
    let mut burst: Burst<VecPacket> = Burst::new();
    let mut meta = new_meta_burst();
    // With BENCH_LB_FLOWS: one warm pass over every flow (inserts), then
    // two passes (hits) unless BENCH_ITERS says otherwise.
    let warm = flows.map_or(1000, |n| n.div_ceil(32));
    let iterations: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(flows.map_or(20_000, |n| 2 * n.div_ceil(32)));
    let new_flows = || -> u64 {
        tables.lb.as_ref().map_or(0, |lb| {
            lb.counters_for(0)
                .services
                .iter()
                .map(|c| c.new_flows.get())
                .sum()
        })
    };
    let mut warm_flows = 0;
    let mut copy_cycles = 0u64;
    let mut next = 0usize;
    for it in 0..iterations + warm {
        if it == warm {
            warm_flows = new_flows();
            // Warm-up done: reset the counters.
            for c in &counters.stage_cycles {
                c.set(0);
            }
            copy_cycles = 0;
            out.sent = [0; 2];
            out.dropped = 0;
        }
        let t0 = rdtsc();
        for _ in 0..32 {
            let mut p = out.free.pop().unwrap();
            let f = &input[next];
            next = (next + 1) % input.len();
            p.bytes.clear();
            p.headroom = dataplane::pipeline::packet::VEC_PACKET_HEADROOM;
            p.bytes.extend_from_slice(f);
            let _ = burst.push(p);
        }
        let t1 = rdtsc();
        let ctx = StageCtx {
            now: t1,
            tsc_hz: (tsc_ghz * 1e9) as u64,
            counters: &counters,
        };
        // As the worker runs it; the dispatch pass is profiled in its own slot.
        pipeline.run_and_dispatch(&mut burst, &mut meta, 0, &ctx, &mut out, DISPATCH_SLOT);
        copy_cycles += t1 - t0;
    }
    let pkts = (iterations * 32) as f64;
    let mut line = format!("{name:<12}");
    let mut total = 0.0;
    for (k, n) in names.iter().enumerate() {
        let c = counters.stage_cycles[k].get() as f64 / pkts;
        total += c;
        let _ = write!(line, " {n}={c:.1}");
    }
    let d = counters.stage_cycles[DISPATCH_SLOT].get() as f64 / pkts;
    total += d;
    let _ = write!(
        line,
        " dispatch={d:.1} total={total:.1} cycles/pkt ({:.1} ns; copy-in {:.1} cycles) sent={:?} dropped={}",
        total / tsc_ghz,
        copy_cycles as f64 / pkts,
        out.sent,
        out.dropped
    );
    if let Some((_, a)) = pipeline.counters().into_iter().find(|(n, _)| *n == "acl") {
        let cache = &a.report()["flow_cache"];
        let _ = write!(
            line,
            " acl_cache_hits={} misses={}",
            cache["hits"], cache["misses"]
        );
    }
    if let Some(n) = flows {
        if std::env::var("BENCH_LB_CONNTRACK").map_or(true, |v| v != "false") {
            let timed_flows = new_flows() - warm_flows;
            assert_eq!(warm_flows, n as u64, "the warm pass tracks every flow");
            assert_eq!(timed_flows, 0, "timed passes are all hits");
        }
        let lb = names.iter().position(|&s| s == "lb").unwrap();
        let lb_cycles = counters.stage_cycles[lb].get() as f64 / pkts;
        let _ = write!(
            line,
            " flows={n} lb_lookups_per_s_per_core={:.2}M pipeline_pkts_per_s_per_core={:.2}M",
            tsc_ghz * 1e3 / lb_cycles,
            tsc_ghz * 1e3 / total
        );
    }
    println!("{line}");
}

fn main() {
    let extra = std::env::var("BENCH_EAL_ARGS").unwrap_or_default();
    let mut args: Vec<String> = [
        "pipeline-bench",
        "--no-huge",
        "--no-pci",
        "--no-shconf",
        "--no-telemetry",
        "-m",
        "1024",
        "-l",
        "0",
        "--file-prefix=pipeline-bench",
        "--log-level=lib.eal:error",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.split_whitespace().map(String::from));
    let eal = Eal::init(&args).expect("EAL init");
    let ghz = eal.tsc_hz() as f64 / 1e9;
    println!("TSC {ghz:.2} GHz; cycles per packet, bursts of 32, 4096 distinct frames");
    run("forward", 0, 0, "\"forward\"", true, ghz);
    run("route_1k", 1000, 0, "\"route\"", true, ghz);
    // The same pipeline stage by stage (no lane), for comparison.
    run("route_1k/2", 1000, 0, "\"route\"", false, ghz);
    run("acl1k_route", 1000, 1000, "\"acl\", \"route\"", true, ghz);
    run("lb", 1000, 0, "\"lb\", \"route\"", true, ghz);
    run("full", 1000, 1000, "\"acl\", \"lb\", \"route\"", true, ghz);
    run(
        "acl1k_route/2",
        1000,
        1000,
        "\"acl\", \"route\"",
        false,
        ghz,
    );
}
