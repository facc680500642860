//! `lane.rs` and `lane_linear.rs` compare the fast lane with the
//! stage-by-stage pipeline on hand-picked stage lists; this binary does it
//! for every stage list the config accepts. It enumerates every ordered
//! selection, without repetition, of the stage kinds the config knows
//! (`StageKind`), of every length up to their number (a stage listed twice
//! is refused), writes each into the fuzz router's config with exactly the
//! sections its stages need (`[acl]`, `[route]`, `[lb]`, `[forward]`), and
//! keeps those `Config::parse` accepts. The accepted set must be the one the
//! ordering rules give (a filter needs a later `route`; `forward` goes with
//! nothing but `count`), and every refusal must be about the pipeline, not
//! a section this test got wrong.
//!
//! Every accepted list then runs, as the routers of `common/lane.rs` (the
//! lane, stage by stage, `run_and_dispatch`, checksum offload), on every
//! saved fuzz input, generated traffic of every kind, generated traffic to
//! the load-balanced services, and random bursts of mutated frames: same
//! verdicts, bytes, drops and counters (ACL rule hits, flow cache, every
//! stage's counters, the balancer's per-service counters).
//!
//! Routes are on the `linear` backend (`lane.rs` covers rte_fib): a
//! hundred routers on rte_fib would not fit in memory. Lists with an ACL
//! need rte_acl, so this binary starts EAL.
#[path = "../../fuzz/harness.rs"]
mod harness;
#[path = "common/lane.rs"]
mod lane;

use dataplane::burst::BURST_SIZE;
use dataplane::config::{Config, StageKind};
use lane::{acl_config, with_pipeline, with_route_backend, Variant};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Every stage kind, in declaration order. The match is exhaustive: a new
/// kind does not compile until it is given a place here, and so a place in
/// the enumeration.
fn all_kinds() -> Vec<StageKind> {
    let next = |k: StageKind| match k {
        StageKind::Forward => Some(StageKind::Acl),
        StageKind::Acl => Some(StageKind::Route),
        StageKind::Route => Some(StageKind::Lb),
        StageKind::Lb => Some(StageKind::Count),
        StageKind::Count => None,
    };
    std::iter::successors(Some(StageKind::Forward), |k| next(*k)).collect()
}

/// Every ordered selection without repetition of `kinds`, of length 1 up
/// to `kinds.len()`.
fn candidates(kinds: &[StageKind]) -> Vec<Vec<StageKind>> {
    fn extend(kinds: &[StageKind], cur: &mut Vec<StageKind>, out: &mut Vec<Vec<StageKind>>) {
        if !cur.is_empty() {
            out.push(cur.clone());
        }
        for k in kinds {
            if !cur.contains(k) {
                cur.push(*k);
                extend(kinds, cur, out);
                cur.pop();
            }
        }
    }
    let mut out = Vec::new();
    extend(kinds, &mut Vec::new(), &mut out);
    out
}

/// Load-balanced services on the fuzz router: IP-in-IP over UDP (backends
/// behind a resolved gateway, and one on the wan subnet whose MAC must be
/// learnt), TCP without connection tracking, DSR, and IPv6. Small tables,
/// short timeouts: a hundred routers are built, and flows must expire and
/// the connection table fill within a test.
const LB: &str = r#"
[lb]
conntrack_capacity = 64
udp_timeout_s = 1
tcp_timeout_s = 2
closing_timeout_s = 1

[[lb.service]]
name = "udp4"
vip = "198.18.0.53"
proto = "udp"
source = "10.0.2.1"
table_size = 1009
[[lb.service.backend]]
address = "198.18.1.10"
[[lb.service.backend]]
address = "198.18.1.11"
weight = 2
[[lb.service.backend]]
address = "10.0.2.9"

[[lb.service]]
name = "tcp4"
vip = "198.18.0.80"
proto = "tcp"
source = "10.0.2.1"
conntrack = false
table_size = 1009
[[lb.service.backend]]
address = "198.18.1.20"
[[lb.service.backend]]
address = "198.18.1.21"

[[lb.service]]
name = "dsr"
vip = "198.18.1.53"
proto = "udp"
method = "dsr"
table_size = 1009
[[lb.service.backend]]
address = "10.0.2.50"
mac = "02:00:00:00:02:50"

[[lb.service]]
name = "udp6"
vip = "2001:db8:100::53"
proto = "udp"
source = "2001:db8:2::1"
table_size = 1009
[[lb.service.backend]]
address = "2001:db8:200::10"
"#;

const FORWARD: &str = "\n[forward]\npairs = [[\"lan\", \"wan\"]]\n";

/// The fuzz router's config for `list`: its ports and workers, and the
/// sections of exactly the stages listed (the config refuses a section
/// whose stage is not in the pipeline).
fn config_for(list: &[StageKind]) -> String {
    let c = with_route_backend(&acl_config(8), "linear");
    let acl_at = c.find("[acl]").expect("[acl]");
    let route_at = c.find("[route]").expect("[route]");
    let names: Vec<String> = list.iter().map(|k| format!("\"{}\"", k.name())).collect();
    let mut toml = with_pipeline(&c[..acl_at], &names.join(", "));
    for k in list {
        toml.push_str(match k {
            StageKind::Acl => &c[acl_at..route_at],
            StageKind::Route => &c[route_at..],
            StageKind::Lb => LB,
            StageKind::Forward => FORWARD,
            StageKind::Count => "",
        });
        toml.push('\n');
    }
    toml
}

/// What the ordering rules allow, written out apart from the config's
/// code: `acl` and `lb` each need `route` after them; `forward` takes only
/// `count` beside it; anything else goes (`count` alone forwards nothing,
/// with a warning, but is valid).
fn allowed(list: &[StageKind]) -> bool {
    let at = |k: StageKind| list.iter().position(|x| *x == k);
    let route = at(StageKind::Route);
    let before_route = |k| at(k).is_none_or(|i| route.is_some_and(|r| i < r));
    let forward_alone = at(StageKind::Forward).is_none()
        || list
            .iter()
            .all(|k| matches!(k, StageKind::Forward | StageKind::Count));
    before_route(StageKind::Acl) && before_route(StageKind::Lb) && forward_alone
}

fn names(list: &[StageKind]) -> Vec<&'static str> {
    list.iter().map(|k| k.name()).collect()
}

/// The accepted stage lists with their configs, checked against
/// [`allowed`]; computed once per process.
fn accepted() -> &'static [(Vec<StageKind>, String)] {
    static ACCEPTED: OnceLock<Vec<(Vec<StageKind>, String)>> = OnceLock::new();
    ACCEPTED.get_or_init(|| {
        let kinds = all_kinds();
        assert_eq!(kinds.len(), 5, "forward, acl, route, lb, count");
        let cands = candidates(&kinds);
        assert_eq!(cands.len(), 5 + 20 + 60 + 120 + 120);
        let mut out = Vec::new();
        for list in cands {
            let toml = config_for(&list);
            match Config::parse(&toml, "lists.toml") {
                Ok((cfg, _)) => {
                    assert!(allowed(&list), "{:?} accepted", names(&list));
                    assert_eq!(cfg.stages(), list);
                    out.push((list, toml));
                }
                Err(e) => {
                    assert!(!allowed(&list), "{:?} refused: {e}", names(&list));
                    assert_eq!(e.field(), Some("pipeline"), "{:?}: {e}", names(&list));
                }
            }
        }
        out
    })
}

#[test]
fn accepted_lists_are_the_ones_the_rules_allow() {
    let got: BTreeSet<Vec<&str>> = accepted().iter().map(|(l, _)| names(l)).collect();
    // Route with any of the filters in front, in either order, and `count`
    // anywhere or nowhere: 3 + 4 + 4 + 5 + 5; `forward` with or without
    // `count` on either side; `count` alone.
    assert_eq!(got.len(), 21 + 3 + 1, "{got:?}");
    for l in [
        &["acl", "lb", "route"][..],
        &["lb", "acl", "route", "count"],
        &["lb", "route"],
        &["count", "lb", "route"],
        &["route", "count"],
        &["acl", "count", "route"],
        &["forward"],
        &["count", "forward"],
        &["count"],
    ] {
        assert!(got.contains(l), "{l:?} refused");
    }
    for l in [
        &["acl"][..],
        &["route", "lb"],
        &["lb", "route", "acl"],
        &["forward", "route"],
        &["forward", "acl", "route"],
    ] {
        assert!(!got.contains(l), "{l:?} accepted");
    }
}

fn eal() {
    static EAL: OnceLock<dataplane::dpdk::Eal> = OnceLock::new();
    EAL.get_or_init(|| {
        let mut args = dataplane::tables::testing::TEST_EAL_ARGS.to_vec();
        let m = args.iter().position(|a| *a == "-m").expect("-m") + 1;
        args[m] = "1024";
        dataplane::dpdk::Eal::init(&args).unwrap_or_else(|e| panic!("EAL: {e}"))
    });
}

/// Every accepted list, with the stage names its pipeline must have
/// (`parse` in front of any stage that reads headers).
fn setup() -> Vec<Variant> {
    eal();
    accepted()
        .iter()
        .map(|(list, toml)| {
            let mut stages = names(list);
            if list.iter().any(StageKind::needs_headers) {
                stages.insert(0, "parse");
            }
            Variant {
                toml: toml.clone(),
                stages: stages.join(","),
            }
        })
        .collect()
}

#[test]
fn fuzz_inputs_alike() {
    lane::fuzz_inputs_alike();
}

#[test]
fn generated_traffic_alike() {
    lane::generated_traffic_alike();
}

/// Generated flows of every protocol to the services' addresses (every
/// port, so to no service too: `tcp4`'s address over UDP), from clients
/// of both families; a burst every 250 ms, so flows come back tracked.
/// Every router with a balancer must have balanced some of them, and
/// tracked those of the services that track.
#[test]
fn generated_traffic_to_services_alike() {
    let mut frames = lane::generated(&[
        "gen",
        "--out",
        "/dev/null",
        "--count",
        "512",
        "--flows",
        "96",
        "--proto",
        "mix",
        "--ipv6-ratio",
        "0.25",
        "--size",
        "imix",
        "--dst-prefix",
        "198.18.0.53/32",
        "--dst-prefix",
        "198.18.0.80/32",
        "--dst-prefix",
        "198.18.1.53/32",
        "--dst-prefix",
        "2001:db8:100::53/128",
    ]);
    for f in &mut frames {
        f[..6].copy_from_slice(&lane::PORT_MAC[0]);
    }
    let mut runs = Vec::new();
    for (k, chunk) in frames.chunks(BURST_SIZE).enumerate() {
        runs = lane::both(chunk, 0, 1_000_000_000 + k as u64 * 250_000_000);
    }
    let lists = accepted();
    assert_eq!(runs.len(), lists.len());
    for ((list, _), run) in lists.iter().zip(&runs) {
        if !list.contains(&StageKind::Lb) {
            assert!(run.lb.is_null());
            continue;
        }
        let balanced: Vec<u64> = run.lb["services"]
            .as_array()
            .expect("services")
            .iter()
            .map(|s| s["counters"]["packets"].as_u64().expect("packets"))
            .collect();
        assert!(
            balanced.iter().all(|n| *n > 0),
            "{:?}: packets per service {balanced:?}",
            names(list)
        );
        // Flows come back within the UDP timeout: tracked where tracking
        // is on (all but `tcp4`).
        for s in run.lb["services"].as_array().unwrap() {
            let c = &s["counters"];
            let (on, off) = (c["tracked"].as_u64(), c["untracked"].as_u64());
            let tracks = s["name"] != "tcp4";
            assert!(
                if tracks { on > Some(0) } else { off > Some(0) },
                "{:?}: {s}",
                names(list)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(dataplane::tables::testing::proptest_cases(64)))]

    #[test]
    fn mutated_bursts_alike(
        (frames, in_port) in lane::mutated_bursts(),
        step in 0u64..64,
    ) {
        lane::both_pkts(&frames, in_port, 1_000_000_000 + step * 50_000_000);
    }
}
