//! Fuzzes parse + acl + route over byte buffers: one input is one burst of
//! up to `BURST_SIZE` frames entering the router of `harness::CONFIG` on
//! port 0 or 1 (format and invariants in `fuzz/harness.rs`), as it comes and with its
//! frames addressed to the router (`harness::addressed_to_us`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::run_and_check(data);
    // The same frames addressed to the router: most random destination
    // MACs stop at the L2 check, which must not hide what lies past it.
    harness::run_and_check(&harness::addressed_to_us(data));
});
