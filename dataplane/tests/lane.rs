//! The fast lane (`pipeline::lane`, the pipeline's default wherever
//! `parse` leads) must behave exactly like the same stages run one by one
//! over fully parsed `Meta` (`Pipeline::set_lane(false)`), for every stage
//! list the config accepts: same verdict per packet, same bytes out on the
//! same ports, same drops and the same counters, ACL rule hits, flow-cache
//! hits and `count` counters included. Both run here side by side, each
//! over its own copy of the tables (the neighbour cache learns from
//! ARP/NDP, so they must not share it), on the fuzz harness's router
//! (`fuzz/harness.rs`) with its stage lists: route alone (with ECMP, so
//! parsing reads L4 ports, and without), ACL + route with an 8-entry flow
//! cache (so entries are evicted all the time and most packets go to
//! rte_acl), and `count` after `route` (it must see every packet that is
//! sent), after ACL + route, and in front of them.
//! Inputs: every saved fuzz input, generated traffic of every kind, and
//! random bursts of mutated frames. `every_stage_list.rs` runs the same
//! comparison on every stage list the config accepts (`lb` and `forward`
//! included), with routes on the `linear` backend.
//!
//! This binary runs the lists that need EAL: those with an ACL (rte_acl),
//! and route alone on rte_fib, whose table the lane prefetches and reads in
//! place (`Fib4Reader`). The route-only lists run again, on the `linear`
//! backend and without EAL, in `lane_linear.rs`; both share
//! `common/lane.rs`.
//!
//! A third router runs the lane as the worker does
//! (`Pipeline::run_and_dispatch`), where the last stage's fast-path
//! packets go out as they are rewritten, ahead of the burst's other
//! packets: its output per port must be the same packets (compared as
//! sorted lists), and everything else the same.
//!
//! A fourth runs as the third but with every port's IPv4 checksum offload
//! on: what leaves, once the device has filled in the requested checksums
//! (`VecPacket::transmitted`), must be the same bytes as the software
//! checksum update gives.
#[path = "../../fuzz/harness.rs"]
mod harness;
#[path = "common/lane.rs"]
mod lane;

use lane::{acl_config, route_only_config, with_pipeline, Variant};
use proptest::prelude::*;
use std::sync::OnceLock;

/// EAL as `tables::test_eal` starts it but with 4 GiB: 16 routers (each
/// with a 64 MiB IPv4 first-level table and an IPv6 FIB) do not fit the
/// shared test EAL's 512 MiB. Nothing else in this test binary starts EAL.
fn eal() {
    static EAL: OnceLock<dataplane::dpdk::Eal> = OnceLock::new();
    EAL.get_or_init(|| {
        let mut args = dataplane::tables::testing::TEST_EAL_ARGS.to_vec();
        let m = args.iter().position(|a| *a == "-m").expect("-m") + 1;
        args[m] = "4096";
        dataplane::dpdk::Eal::init(&args).unwrap_or_else(|e| panic!("EAL: {e}"))
    });
}

/// The routers compared, with their stages: route only on rte_fib (with
/// ECMP, so parsing reads L4 ports), ACL with a tiny cache (most packets
/// miss it and go to rte_acl, as without one; the rest hit), and `count`
/// behind the forwarder and in front of it.
fn setup() -> Vec<Variant> {
    eal();
    let acl = acl_config(8);
    let v = |toml: String, stages: &str| Variant {
        toml,
        stages: stages.into(),
    };
    vec![
        v(route_only_config(), "parse,route"),
        v(acl.clone(), "parse,acl,route"),
        v(
            with_pipeline(&acl, r#""acl", "route", "count""#),
            "parse,acl,route,count",
        ),
        v(
            with_pipeline(&acl, r#""count", "acl", "route""#),
            "parse,count,acl,route",
        ),
    ]
}

/// The fast path really runs and really forwards: a plain packet to a
/// resolved gateway goes out rewritten, identically on all sides.
#[test]
fn plain_ipv4_forwarded_alike() {
    lane::plain_ipv4_forwarded_alike();
}

#[test]
fn acl_verdicts_alike() {
    lane::acl_verdicts_alike();
}

#[test]
fn fuzz_inputs_alike() {
    lane::fuzz_inputs_alike();
}

#[test]
fn generated_traffic_alike() {
    lane::generated_traffic_alike();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(dataplane::tables::testing::proptest_cases(256)))]

    #[test]
    fn mutated_bursts_alike(
        (frames, in_port) in lane::mutated_bursts(),
        step in 0u64..64,
    ) {
        lane::both_pkts(&frames, in_port, 1_000_000_000 + step * 50_000_000);
    }
}
