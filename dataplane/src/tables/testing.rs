//! EAL for tests and benches of DPDK-backed tables.
//!
//! EAL starts once per process and cannot restart, so tests share one
//! [`Eal`] kept in a static and never dropped. This works both under
//! `cargo nextest` (one process per test) and plain `cargo test` (tests as
//! threads of one process). It runs without hugepages or PCI, in memory only,
//! with 512 MiB: enough for a few tables at once (each LPM/FIB table holds a
//! 64 MiB first-level array). [`test_lock`] keeps tests that create such
//! tables from running all at once under `cargo test` on a many-core machine.
use crate::dpdk::Eal;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The arguments [`test_eal`] starts EAL with. `--in-memory` would be the
/// natural choice, but DPDK 22.11 refuses it with `--no-huge` (which implies
/// legacy memory mode); `--no-shconf` (no shared config file to lock, no
/// multi-process IPC) keeps concurrent test processes apart just as well, so
/// they can all share one file prefix.
pub const TEST_EAL_ARGS: [&str; 13] = [
    "tables-test",
    "--no-huge",
    "--no-pci",
    "--no-shconf",
    "--file-prefix=tables-test",
    "-m",
    "512",
    "--no-telemetry",
    "-l",
    "0",
    "--log-level=lib.eal:error",
    "--log-level=lib.acl:error",
    "--log-level=lib.lpm:error",
];

/// Starts EAL on first use (with [`TEST_EAL_ARGS`]) and returns it.
///
/// # Panics
/// If EAL cannot start, e.g. because something else in this process already
/// called [`Eal::init`]: tests that need EAL must all come through here.
pub fn test_eal() -> &'static Eal {
    static EAL: OnceLock<Eal> = OnceLock::new();
    EAL.get_or_init(|| match Eal::init(&TEST_EAL_ARGS) {
        Ok(eal) => eal,
        Err(e) => panic!("test EAL: {e}"),
    })
}

/// Serialises tests that allocate big DPDK tables, so that under `cargo
/// test` they do not exhaust the test EAL's 512 MiB together. Also starts
/// EAL. A test that panicked while holding the lock does not poison it.
pub fn test_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    test_eal();
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cases for a proptest whose usual count is `usual`: `PROPTEST_CASES=N`
/// overrides it for a longer search (proptest itself ignores that variable
/// once a test sets its own count).
pub fn proptest_cases(usual: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usual)
}

/// Asserts that EAL is down, for a unit test that must run without it,
/// where that means something: under nextest (`NEXTEST_EXECUTION_MODE` =
/// `process-per-test`) the test is alone in its process, so EAL up means the
/// code under test started it. Under plain `cargo test` the tests are
/// threads of one process and another may have started the test EAL: no
/// check then (the `lane_linear` test binary, which never starts EAL,
/// checks under both).
pub fn assert_no_eal() {
    let alone = std::env::var_os("NEXTEST_EXECUTION_MODE").is_some_and(|m| m == "process-per-test");
    if alone {
        assert!(
            !Eal::is_initialised(),
            "EAL is up in a test that must run without it"
        );
    }
}
