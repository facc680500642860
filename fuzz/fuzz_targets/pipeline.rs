//! Fuzzes parse + acl + route over byte buffers: one input is one burst of
//! up to `BURST_SIZE` frames entering the router of `harness::CONFIG` (on
//! EAL: rte_fib, rte_acl) on port 0 or 1 (format and invariants in
//! `fuzz/harness.rs`), as it comes and with its frames addressed to the
//! router (`Target::addressed_to_us`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| harness::PIPELINE.fuzz(data));
