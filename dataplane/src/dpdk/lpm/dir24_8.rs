//! The in-place reader of rte_fib's DIR-24-8 table ([`Fib4Reader`]).
//!
//! ==========================================================================
//! This file reads DPDK 22.11's PRIVATE `struct dir24_8_tbl` layout
//! (`lib/fib/dir24_8.h`, not installed, not API). It is compiled only when
//! `build.rs` found libdpdk 22.11 (cfg `dpdk_22_11`); against any other
//! DPDK the stub in `mod.rs` takes its place, [`Fib4::reader`] is `None`
//! and the data path uses `rte_fib_lookup_bulk`. Even under 22.11,
//! `find_arrays` checks the layout on each fresh table before trusting it.
//! Porting to another DPDK: compare `dir24_8.h` field by field, then widen
//! the version test in `dataplane/build.rs`.
//! ==========================================================================
use super::Fib4;
use std::ptr::NonNull;

/// Where rte_fib keeps a DIR-24-8 table with 4-byte entries: `tbl24`
/// (2^24 entries) and `tbl8` (`n_tbl8` groups of 256). An entry is
/// `next_hop << 1`, or `group << 1 | 1` when the /24 has longer routes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Dir24Arrays {
    tbl24: NonNull<u32>,
    tbl8: NonNull<u32>,
    n_tbl8: u32,
}

// The offsets of `struct dir24_8_tbl` in DPDK 22.11 (`lib/fib/dir24_8.h`,
// private): number_tbl8s u32 at 0 (the configured count rounded up to a
// multiple of 64), nh_sz at 12, def_nh u64 at 16, the
// tbl8 pointer at 24, tbl24 at 64 (cache aligned). Not public API, so
// `Fib4::find_arrays` checks them on the fresh table before using them.
const DIR24_8_NUMBER_TBL8S: usize = 0;
const DIR24_8_NH_SZ: usize = 12;
const DIR24_8_DEF_NH: usize = 16;
const DIR24_8_TBL8: usize = 24;
const DIR24_8_TBL24: usize = 64;
const DIR24_8_TBL8_GROUP: usize = 256;

/// Reads a [`Fib4`]'s table directly, one address at a time, exactly as
/// rte_fib's own lookup does (`LOOKUP_FUNC` in `dir24_8.h`): the tbl24
/// entry, and the tbl8 entry when it is extended. Why by hand: rte_fib's
/// lookup is a call through a function pointer that prefetches only a few
/// entries ahead inside the call; with a million routes its loads missed
/// there. Inlined, the pass is a loop of independent loads the CPU
/// overlaps. The table is still rte_fib's, built and
/// changed only by rte_fib; the reader borrows the `Fib4`, so no route can
/// change while it lives.
#[derive(Clone, Copy)]
pub struct Fib4Reader<'a> {
    arrays: Dir24Arrays,
    /// What a miss reads as: the default route's next hop, or `Fib4::MISS`.
    miss: u64,
    _fib: std::marker::PhantomData<&'a Fib4>,
}

impl Fib4Reader<'_> {
    /// Hints the CPU to load `ip`'s tbl24 entry, for a
    /// [`Fib4Reader::lookup`] later in the burst.
    #[inline(always)]
    pub fn prefetch(&self, ip: u32) {
        crate::dpdk::prefetch(self.arrays.tbl24.as_ptr().wrapping_add((ip >> 8) as usize));
    }

    /// What [`Fib4::lookup_bulk`] writes for `ip`.
    #[inline(always)]
    pub fn lookup(&self, ip: u32) -> u64 {
        let a = &self.arrays;
        // SAFETY: tbl24 has 2^24 entries (checked at creation), so any
        // `ip >> 8` is in bounds; the Fib4 outlives the reader and cannot
        // change while it is borrowed.
        let mut e = unsafe { *a.tbl24.as_ptr().add((ip >> 8) as usize) };
        if e & 1 != 0 {
            let group = e >> 1;
            if group >= a.n_tbl8 {
                return self.miss; // never written by rte_fib; kept in bounds
            }
            let at = group as usize * DIR24_8_TBL8_GROUP + (ip & 0xff) as usize;
            // SAFETY: group < n_tbl8, so `at` is inside the tbl8 array of
            // n_tbl8 groups of 256 entries.
            e = unsafe { *a.tbl8.as_ptr().add(at) };
        }
        let v = u64::from(e >> 1);
        if v == Fib4::MISS {
            self.miss
        } else {
            v
        }
    }
}

impl Fib4 {
    /// The arrays of a freshly created (empty) fib, if the private layout is
    /// the expected one: the header holds what the fib was created with,
    /// and the first and last tbl24 entries hold the default next hop (as
    /// every entry of an empty table does).
    pub(super) fn find_arrays(
        raw: NonNull<dpdk_sys::rte_fib>,
        num_tbl8: u32,
    ) -> Option<Dir24Arrays> {
        // SAFETY: raw is a live fib.
        let dp = unsafe { dpdk_sys::rte_fib_get_dp(raw.as_ptr()) } as *const u8;
        if dp.is_null() {
            return None;
        }
        let empty = (Self::MISS << 1) as u32;
        // SAFETY: rte_fib_create allocated the 64-byte header and, behind it,
        // 2^24 4-byte tbl24 entries for a DIR24_8_4B table; each check
        // passes before the next read relies on the layout it confirms.
        unsafe {
            let u32_at = |off: usize| std::ptr::read_unaligned(dp.add(off) as *const u32);
            // rte_fib rounds the group count up to its bitmap's 64-bit
            // slabs and allocates that many (plus one) groups.
            let n_tbl8 = num_tbl8.div_ceil(64) * 64;
            let header_ok = u32_at(DIR24_8_NUMBER_TBL8S) == n_tbl8
                && u32_at(DIR24_8_NH_SZ) == dpdk_sys::RTE_FIB_DIR24_8_4B
                && std::ptr::read_unaligned(dp.add(DIR24_8_DEF_NH) as *const u64) == Self::MISS;
            if !header_ok
                || u32_at(DIR24_8_TBL24) != empty
                || u32_at(DIR24_8_TBL24 + 4 * ((1 << 24) - 1)) != empty
            {
                tracing::debug!(
                    number_tbl8s = u32_at(DIR24_8_NUMBER_TBL8S),
                    want_tbl8s = n_tbl8,
                    nh_sz = u32_at(DIR24_8_NH_SZ),
                    def_nh = std::ptr::read_unaligned(dp.add(DIR24_8_DEF_NH) as *const u64),
                    first = u32_at(DIR24_8_TBL24),
                    last = u32_at(DIR24_8_TBL24 + 4 * ((1 << 24) - 1)),
                    "rte_fib header"
                );
                return None;
            }
            let tbl8 = std::ptr::read_unaligned(dp.add(DIR24_8_TBL8) as *const *mut u32);
            Some(Dir24Arrays {
                tbl24: NonNull::new(dp.add(DIR24_8_TBL24) as *mut u32)?,
                tbl8: NonNull::new(tbl8)?,
                n_tbl8,
            })
        }
    }

    /// A direct reader of the table ([`Fib4Reader`]), when the layout
    /// checked out.
    #[inline(always)]
    pub fn reader(&self) -> Option<Fib4Reader<'_>> {
        Some(Fib4Reader {
            arrays: self.arrays?,
            miss: self.book.default_nh.map_or(Self::MISS, u64::from),
            _fib: std::marker::PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{host4, ops, v4_addr, v4_len, Op, CFG};
    use super::super::LpmConfig;
    use super::*;
    use crate::tables::testing::test_lock;
    use proptest::prelude::*;

    #[test]
    fn fib4_reader_finds_the_table() {
        let _g = test_lock();
        // A group count that is not a multiple of 64, as the daemon's are.
        let mut f = Fib4::new(LpmConfig::new(512, 1000)).unwrap();
        assert!(f.reader().is_some(), "DPDK 22.11's dir24_8 layout");
        let ip = 0xc633_6400; // 198.51.100.0
        f.add(ip, 24, 77).unwrap();
        f.add(ip + 128, 25, 78).unwrap();
        let r = f.reader().unwrap();
        assert_eq!(r.lookup(ip + 9), 77);
        assert_eq!(r.lookup(ip + 200), 78, "through tbl8");
        assert_eq!(r.lookup(ip + 256), Fib4::MISS);
        f.add(0, 0, 5).unwrap();
        assert_eq!(f.reader().unwrap().lookup(ip + 256), 5, "default route");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::tables::testing::proptest_cases(32)))]

        /// The direct reader answers exactly as rte_fib's bulk lookup, on
        /// random tables (default routes, tbl8 groups, deletions).
        #[test]
        fn fib4_reader_matches_rte_fib(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            let mut f = Fib4::new(CFG).unwrap();
            let mut targets = probes.clone();
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Add(a, l, nh) => {
                        f.add(a, l, nh).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        targets.extend([a, host4(a, l, i as u64), host4(a, l, !(i as u64))]);
                    }
                    Op::Delete(a, l) => {
                        f.delete(a, l).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                }
            }
            let r = f.reader().unwrap();
            for c in targets.chunks(32) {
                let mut want = [0u64; 32];
                f.lookup_bulk(c, &mut want[..c.len()]);
                for (a, w) in c.iter().zip(&want) {
                    prop_assert_eq!(r.lookup(*a), *w, "address {:#x}", a);
                }
            }
        }
    }
}
