//! Longest-prefix-match tables: rte_fib (DIR-24-8) and rte_lpm for IPv4,
//! rte_fib6 (trie) and rte_lpm6 for IPv6.
//!
//! Each type owns one DPDK table (freed on drop) under a process-unique name.
//! Lookups take `&self` and only read the table, so a built table can be
//! shared by many workers; `add`/`delete` take `&mut self`, so nobody reads
//! while it changes (the control plane builds a new table and swaps it in
//! between bursts). Addresses are host-order `u32` for IPv4 and network-order
//! `[u8; 16]` for IPv6. Prefixes are masked to their length before they reach
//! DPDK, and next hops are checked against what each table can store.
//!
//! Every table also counts its routes and estimates its memory from its
//! configuration (see each `memory_bytes`): mostly what DPDK allocates at
//! creation, which does not grow with the routes added.
//!
//! rte_lpm and rte_lpm6 have no /0 rule, and DPDK 22.11's DIR-24-8 mishandles
//! /0 and other prefixes that end at 255.255.255.255, so [`Lpm4`], [`Lpm6`]
//! and [`Fib4`] keep the default route themselves and apply it to misses;
//! rte_fib6's trie has the same top-of-address-space wrap, so [`Fib6`] does too.
//! [`Fib4`] also works around two more DIR-24-8 bugs (see its doc); the
//! proptests below check all four tables against a linear scan.
//!
//! One file per table: `fib4` (rte_fib), `fib6` (rte_fib6), `lpm4`
//! (rte_lpm), `lpm6` (rte_lpm6); `rib` holds the top-of-address-space
//! workaround `Fib4` and `Fib6` share, and `dir24_8` the in-place reader of
//! rte_fib's table ([`Fib4Reader`]), built only against DPDK 22.11 (cfg
//! `dpdk_22_11`, set by `build.rs`): elsewhere [`Fib4::reader`] is `None`
//! and the data path uses `rte_fib_lookup_bulk`.
mod fib4;
mod fib6;
mod lpm4;
mod lpm6;
mod rib;

#[cfg(dpdk_22_11)]
mod dir24_8;

/// Built against a DPDK other than 22.11: no in-place reader. The types
/// exist so that callers compile unchanged; none can be made, so
/// [`Fib4::reader`] is always `None` and lookups go through
/// `rte_fib_lookup_bulk`.
#[cfg(not(dpdk_22_11))]
mod dir24_8 {
    use super::Fib4;
    use std::ptr::NonNull;

    /// Never made (see the module).
    #[derive(Debug, Clone, Copy)]
    pub(super) enum Dir24Arrays {}

    /// Never made (see the module).
    #[derive(Clone, Copy)]
    pub struct Fib4Reader<'a> {
        never: Dir24Arrays,
        _fib: std::marker::PhantomData<&'a Fib4>,
    }

    impl Fib4Reader<'_> {
        #[inline(always)]
        pub fn prefetch(&self, _ip: u32) {
            match self.never {}
        }

        #[inline(always)]
        pub fn lookup(&self, _ip: u32) -> u64 {
            match self.never {}
        }
    }

    impl Fib4 {
        pub(super) fn find_arrays(
            _raw: NonNull<dpdk_sys::rte_fib>,
            _num_tbl8: u32,
        ) -> Option<Dir24Arrays> {
            None
        }

        #[inline(always)]
        pub fn reader(&self) -> Option<Fib4Reader<'_>> {
            self.arrays.map(|a| match a {})
        }
    }
}

pub use dir24_8::Fib4Reader;
pub use fib4::Fib4;
pub use fib6::Fib6;
pub use lpm4::Lpm4;
pub use lpm6::Lpm6;

use super::error::DpdkError;
use crate::tables::prefix::{mask4, mask6};
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};

/// DPDK's `SOCKET_ID_ANY` (a macro bindgen does not see).
const SOCKET_ID_ANY: i32 = -1;

/// Entries in the first-level table of DIR-24-8, rte_lpm, the fib6 trie and
/// rte_lpm6: all four index their first level by the top 24 address bits.
const TBL24_ENTRIES: usize = 1 << 24;
/// Entries in one second-level ("tbl8") group.
const TBL8_GROUP_ENTRIES: usize = 256;
/// A RIB node (rte_rib / rte_rib6, 40 / 56 bytes) as stored in its mempool:
/// 8-byte object header, padded to a 64-byte cache line.
const RIB_NODE_BYTES: usize = 64;
/// One rte_lpm6 rule in its rte_hash: 17-byte key in a 32-byte key slot, an
/// 8-byte share of a 64-byte bucket and a free-list slot.
const LPM6_RULE_BYTES: usize = 48;

/// Sizes a table at creation; DPDK allocates everything up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpmConfig {
    /// Most routes the table will hold.
    pub max_routes: u32,
    /// Second-level groups of 256 entries. IPv4 needs one per /24 that holds
    /// a route longer than /24; IPv6 needs up to `(len - 24) / 8` per route
    /// longer than /24 (fewer when routes share their leading bytes).
    pub num_tbl8: u32,
}

impl LpmConfig {
    pub const fn new(max_routes: u32, num_tbl8: u32) -> LpmConfig {
        LpmConfig {
            max_routes,
            num_tbl8,
        }
    }

    fn check(&self, what: &str) -> Result<(), DpdkError> {
        if self.max_routes == 0 || self.max_routes > i32::MAX as u32 / 2 {
            return Err(DpdkError::Invalid(format!(
                "{what}: max_routes {} out of range 1..={}",
                self.max_routes,
                i32::MAX / 2
            )));
        }
        if self.num_tbl8 == 0 || self.num_tbl8 > 1 << 24 {
            return Err(DpdkError::Invalid(format!(
                "{what}: num_tbl8 {} out of range 1..={}",
                self.num_tbl8,
                1 << 24
            )));
        }
        Ok(())
    }
}

impl Default for LpmConfig {
    /// A small table: 1024 routes, 256 second-level groups.
    fn default() -> LpmConfig {
        LpmConfig::new(1024, 256)
    }
}

/// `<prefix>_<n>`: DPDK refuses a second table with the same name (and
/// rte_acl would hand back the existing one), so every table gets its own.
pub(crate) fn unique_name(prefix: &str) -> CString {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    CString::new(format!("{prefix}_{n}")).expect("table name has no NUL")
}

fn check_depth(call: &str, depth: u8, max: u8) -> Result<(), DpdkError> {
    if depth > max {
        return Err(DpdkError::Invalid(format!(
            "{call}: prefix length {depth} > {max}"
        )));
    }
    Ok(())
}

fn check_nh(call: &str, nh: u32, max: u32) -> Result<(), DpdkError> {
    if nh > max {
        return Err(DpdkError::Invalid(format!("{call}: next hop {nh} > {max}")));
    }
    Ok(())
}

/// Bulk lookups hand DPDK `n` as a C int and write `n` results.
#[inline(always)]
fn check_bulk(n_in: usize, n_out: usize) {
    assert!(
        n_out >= n_in,
        "lookup_bulk: output slice ({n_out}) shorter than input ({n_in})"
    );
    assert!(n_in <= i32::MAX as usize, "lookup_bulk: too many keys");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::route::{LinearRoutes, RouteAddr, RouteTable};
    use crate::tables::testing::test_lock;
    use proptest::prelude::*;

    /// A test-sized config: the 64 MiB first level is fixed, the rest small.
    pub(super) const CFG: LpmConfig = LpmConfig::new(512, 2048);

    #[test]
    fn miss_sentinels_and_limits() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        let mut out = [0u64; 2];
        f.lookup_bulk(&[1, 2], &mut out);
        assert_eq!(out, [Fib4::MISS; 2]);
        f.add(0, 0, Fib4::MAX_NEXTHOP).unwrap();
        assert_eq!(f.lookup(5), Some(Fib4::MAX_NEXTHOP));
        assert!(f.add(0, 0, Fib4::MAX_NEXTHOP + 1).is_err());

        let mut l = Lpm4::new(CFG).unwrap();
        assert_eq!(l.lookup(1), None);
        l.add(0x0100_0000, 8, Lpm4::MAX_NEXTHOP).unwrap();
        assert_eq!(l.lookup(0x0102_0304), Some(Lpm4::MAX_NEXTHOP));
        assert!(l.add(0, 8, Lpm4::MAX_NEXTHOP + 1).is_err());
        drop((f, l));

        let mut f6 = Fib6::new(CFG).unwrap();
        let mut out = [0u64; 1];
        f6.lookup_bulk(&[[1; 16]], &mut out);
        assert_eq!(out, [Fib6::MISS]);
        assert!(f6.add([0; 16], 8, Fib6::MAX_NEXTHOP + 1).is_err());
        let mut l6 = Lpm6::new(CFG).unwrap();
        assert_eq!(l6.lookup([1; 16]), None);
        assert!(l6.add([1; 16], 8, Lpm6::MAX_NEXTHOP + 1).is_err());
        l6.add([1; 16], 8, Lpm6::MAX_NEXTHOP).unwrap();
        assert_eq!(l6.lookup([1; 16]), Some(Lpm6::MAX_NEXTHOP));
    }

    #[test]
    fn bad_depths_are_errors() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        assert!(f.add(0, 33, 1).is_err());
        assert!(f.delete(0, 33).is_err());
        let mut l = Lpm4::new(CFG).unwrap();
        assert!(l.add(0, 33, 1).is_err());
        assert!(l.delete(0, 255).is_err());
        drop((f, l));
        let mut f6 = Fib6::new(CFG).unwrap();
        assert!(f6.add([0; 16], 129, 1).is_err());
        let mut l6 = Lpm6::new(CFG).unwrap();
        assert!(l6.add([0; 16], 129, 1).is_err());
        assert!(l6.delete([0; 16], 129).is_err());
    }

    #[test]
    fn bad_configs_are_errors() {
        let _g = test_lock();
        for cfg in [
            LpmConfig::new(0, 16),
            LpmConfig::new(16, 0),
            LpmConfig::new(u32::MAX, 16),
        ] {
            assert!(Fib4::new(cfg).is_err());
            assert!(Lpm4::new(cfg).is_err());
            assert!(Fib6::new(cfg).is_err());
            assert!(Lpm6::new(cfg).is_err());
        }
    }

    #[test]
    #[should_panic(expected = "shorter")]
    fn short_output_panics() {
        let _g = test_lock();
        let f = Fib4::new(CFG).unwrap();
        f.lookup_bulk(&[1, 2], &mut [0u64; 1]);
    }

    #[test]
    fn memory_estimates() {
        let _g = test_lock();
        let f = Fib4::new(LpmConfig::new(1000, 100)).unwrap();
        // 64 MiB tbl24 + 129 tbl8 groups of 1 KiB + 2000 RIB nodes of 64 B.
        assert_eq!(f.memory_bytes(), (64 << 20) + 129 * 1024 + 2000 * 64);
        let l = Lpm4::new(LpmConfig::new(1000, 100)).unwrap();
        assert_eq!(l.memory_bytes(), (64 << 20) + 100 * 1024 + 1000 * 8);
    }

    // --- proptest: each backend against the linear scan --------------------

    /// Operations on a table: add (prefix, len, nh) or delete (prefix, len).
    #[derive(Debug, Clone)]
    pub(super) enum Op<A> {
        Add(A, u8, u32),
        Delete(A, u8),
    }

    pub(super) fn v4_addr() -> impl Strategy<Value = u32> + Clone {
        // A few shared leading bytes make prefixes overlap and nest.
        prop_oneof![
            any::<u32>(),
            (
                prop::sample::select(
                    &[
                        0x0a00_0000u32,
                        0x0a01_0000,
                        0xc0a8_0100,
                        0,
                        0xffff_ff00,
                        0xffff_fe00,
                        0x8000_0000
                    ][..]
                ),
                any::<u16>()
            )
                .prop_map(|(b, r)| b | u32::from(r & 0x3ff)),
        ]
    }

    pub(super) fn v4_len() -> impl Strategy<Value = u8> + Clone {
        prop_oneof![Just(0u8), Just(32), Just(24), Just(25), 0u8..=32]
    }

    fn v6_addr() -> impl Strategy<Value = [u8; 16]> + Clone {
        prop_oneof![
            any::<u128>(),
            (
                prop::sample::select(
                    &[
                        0x2001_0db8u128 << 96,
                        (0x2001_0db8_0001u128) << 80,
                        0xfd00u128 << 112,
                        0,
                        u128::MAX << 32,
                        1 << 127
                    ][..]
                ),
                any::<u64>()
            )
                .prop_map(|(b, r)| b | u128::from(r & 0xffff_ffff) | (u128::from(r >> 48) << 64)),
        ]
        .prop_map(|v| v.to_be_bytes())
    }

    fn v6_len() -> impl Strategy<Value = u8> + Clone {
        prop_oneof![
            Just(0u8),
            Just(128),
            Just(24),
            Just(48),
            Just(64),
            0u8..=128
        ]
    }

    pub(super) fn ops<A: std::fmt::Debug + Clone>(
        addr: impl Strategy<Value = A> + Clone,
        len: impl Strategy<Value = u8> + Clone,
    ) -> impl Strategy<Value = Vec<Op<A>>> {
        let op = prop_oneof![
            // Few distinct next hops: routes often share their parent's.
            6 => (addr.clone(), len.clone(), prop_oneof![0u32..4, 0u32..1000])
                .prop_map(|(a, l, n)| Op::Add(a, l, n)),
            1 => (addr, len).prop_map(|(a, l)| Op::Delete(a, l)),
        ];
        prop::collection::vec(op, 0..80)
    }

    /// Applies `ops` to `table` and the oracle, re-adding some routes (so
    /// duplicates overwrite) and deleting some that exist, then compares
    /// lookups of `probes` and of addresses inside every added prefix.
    fn check<T: RouteTable>(
        mut table: T,
        ops: &[Op<T::Addr>],
        probes: &[T::Addr],
        host_bits: impl Fn(T::Addr, u8, u64) -> T::Addr,
    ) -> Result<(), TestCaseError> {
        let mut oracle = LinearRoutes::<T::Addr>::new();
        let mut targets = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(a, l, nh) => {
                    table
                        .add(a, l, nh)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    oracle.add(a, l, nh).unwrap();
                    targets.push(a);
                    targets.push(host_bits(a, l, i as u64));
                    targets.push(host_bits(a, l, !(i as u64)));
                }
                Op::Delete(a, l) => {
                    // Half the deletes hit an existing route.
                    let (a, l) = match oracle.routes().get(i % (oracle.len() + 1)) {
                        Some(&(p, pl, _)) if i % 2 == 0 => (p, pl),
                        _ => (a, l),
                    };
                    let got = table
                        .delete(a, l)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(got, oracle.delete(a, l).unwrap(), "delete {:?}/{}", a, l);
                }
            }
            prop_assert_eq!(table.len(), oracle.len());
        }
        let addrs: Vec<T::Addr> = probes.iter().chain(&targets).copied().collect();
        let mut got = vec![0u32; addrs.len()];
        let mut want = vec![0u32; addrs.len()];
        table.lookup_bulk(&addrs, &mut got);
        oracle.lookup_bulk(&addrs, &mut want);
        for ((a, g), w) in addrs.iter().zip(&got).zip(&want) {
            prop_assert_eq!(g, w, "addr {:?}, routes {:?}", a, oracle.routes());
        }
        Ok(())
    }

    pub(super) fn host4(a: u32, len: u8, r: u64) -> u32 {
        a.mask(len) | (r as u32 & u32::MAX.checked_shr(u32::from(len)).unwrap_or(0))
    }

    fn host6(a: [u8; 16], len: u8, r: u64) -> [u8; 16] {
        let r = u128::from(r) | (u128::from(r.rotate_left(17)) << 64);
        let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
        (u128::from_be_bytes(a.mask(len)) | (r & host)).to_be_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::tables::testing::proptest_cases(32)))]

        #[test]
        fn fib4_matches_linear(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            check(Fib4::new(CFG).unwrap(), &ops, &probes, host4)?;
        }

        #[test]
        fn lpm4_matches_linear(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            check(Lpm4::new(CFG).unwrap(), &ops, &probes, host4)?;
        }

        #[test]
        fn fib6_matches_linear(ops in ops(v6_addr(), v6_len()), probes in prop::collection::vec(v6_addr(), 0..64)) {
            let _g = test_lock();
            check(Fib6::new(CFG).unwrap(), &ops, &probes, host6)?;
        }

        #[test]
        fn lpm6_matches_linear(ops in ops(v6_addr(), v6_len()), probes in prop::collection::vec(v6_addr(), 0..64)) {
            let _g = test_lock();
            check(Lpm6::new(CFG).unwrap(), &ops, &probes, host6)?;
        }
    }
}
