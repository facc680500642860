//! The route-only stage lists of `lane.rs` (route alone with and without
//! ECMP, `count` after `route`) on the `linear` route backend, with no EAL
//! at all: the lane and the stage-by-stage pipeline must agree there too
//! (same verdicts, bytes, drops and counters on the fuzz inputs, generated
//! traffic and mutated bursts), and building and running a routing
//! pipeline must not need EAL.
//!
//! It also runs the `route_noeal` fuzz target's harness on the saved fuzz
//! inputs, so that target's path (config, oracle, no-EAL assertions) is
//! covered by `cargo test` and not only by the fuzzer.
//!
//! Nothing in this binary calls `Eal::init`. Every test checks that EAL is
//! still down when it is done, and that the tables are the Rust ones
//! (`HashLpm` routes, the Rust neighbour map): a build that reached for a
//! DPDK table would fail to create it (no EAL) or show here.
#[path = "../../fuzz/harness.rs"]
mod harness;
#[path = "common/lane.rs"]
mod lane;

use dataplane::dpdk::Eal;
use dataplane::tables::neighbor::NeighborBackend;
use dataplane::tables::RouteBackend;
use lane::{
    route_only_config, route_only_no_ecmp_config, with_pipeline, with_route_backend, Variant,
};
use proptest::prelude::*;
use std::panic::catch_unwind;

/// Route alone (with ECMP, so parsing reads L4 ports, and without) and
/// `count` behind the forwarder (it must see every packet sent), all on
/// the linear backend.
fn setup() -> Vec<Variant> {
    assert!(
        !Eal::is_initialised(),
        "EAL up before the routers were built"
    );
    let linear = |c: String| with_route_backend(&c, "linear");
    let v = |toml: String, stages: &str| Variant {
        toml,
        stages: stages.into(),
    };
    vec![
        v(linear(route_only_config()), "parse,route"),
        v(linear(route_only_no_ecmp_config()), "parse,route"),
        v(
            linear(with_pipeline(&route_only_config(), r#""route", "count""#)),
            "parse,route,count",
        ),
    ]
}

/// EAL never came up, and every router runs on the Rust tables.
fn no_eal() {
    assert!(!Eal::is_initialised(), "something started EAL");
    let pairs = lane::pairs().lock().unwrap_or_else(|e| e.into_inner());
    for p in pairs.iter() {
        for side in [&p.lane, &p.plain, &p.direct, &p.offload] {
            assert!(side.tables.acl.is_none());
            let r = side.tables.routing.as_ref().expect("routes");
            assert_eq!(r.v4.backend(), RouteBackend::Linear);
            assert_eq!(r.v6.backend(), RouteBackend::Linear);
            assert_eq!(r.neighbors.backend(), NeighborBackend::Rust);
        }
    }
}

/// The fast path really runs and really forwards on the linear backend.
#[test]
fn plain_ipv4_forwarded_alike() {
    lane::plain_ipv4_forwarded_alike();
    no_eal();
}

#[test]
fn no_acl_routes_everything_alike() {
    lane::acl_verdicts_alike();
    no_eal();
}

#[test]
fn fuzz_inputs_alike() {
    lane::fuzz_inputs_alike();
    no_eal();
}

/// The `route_noeal` fuzz target on every saved fuzz input, as saved and
/// addressed to the router, through the harness it runs (`fuzz/harness.rs`):
/// its invariants hold on the linear backend, and neither building its
/// router nor running it starts EAL (the harness asserts that after every
/// input, and that the tables are the Rust ones). Its router is the one
/// `setup` builds first, so the fuzzer and these tests look at the same one.
#[test]
fn fuzz_harness_route_noeal() {
    assert_eq!(
        harness::ROUTE_NOEAL.config,
        with_route_backend(&route_only_config(), "linear"),
        "the route_noeal target's config"
    );
    for f in lane::saved_fuzz_inputs() {
        let data = std::fs::read(&f).unwrap();
        if let Err(e) = catch_unwind(|| harness::ROUTE_NOEAL.fuzz(&data)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{}: {msg}", f.display());
        }
    }
    assert!(!Eal::is_initialised(), "something started EAL");
}

#[test]
fn generated_traffic_alike() {
    lane::generated_traffic_alike();
    no_eal();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(dataplane::tables::testing::proptest_cases(256)))]

    #[test]
    fn mutated_bursts_alike(
        (frames, in_port) in lane::mutated_bursts(),
        step in 0u64..64,
    ) {
        lane::both_pkts(&frames, in_port, 1_000_000_000 + step * 50_000_000);
        prop_assert!(!Eal::is_initialised());
    }
}
