//! Fuzzes parse + acl + route over byte buffers: one input is one burst of
//! up to 32 frames entering the router of `harness::CONFIG` on port 0 or 1
//! (format and invariants in `fuzz/harness.rs`).
#![no_main]

#[path = "../harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::run_and_check(data);
});
