//! Fuzzes parse + route without EAL: the router of `harness::ROUTE_CONFIG`
//! (the `pipeline` target's ports and routes, no ACL) on the `linear` route
//! backend and the Rust neighbour map, through the same input format and
//! invariants as `pipeline` (`fuzz/harness.rs`), as each input comes and
//! addressed to the router. Every input also asserts that EAL is still
//! down: the route fast path must build and run without it.
#![no_main]

#[path = "../harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| harness::ROUTE_NOEAL.fuzz(data));
