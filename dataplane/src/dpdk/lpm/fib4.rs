//! [`Fib4`]: IPv4 routes in rte_fib (DIR-24-8, 4-byte next hops), with
//! the workarounds for DPDK 22.11's DIR-24-8 bugs. Its table is read in
//! place by [`super::Fib4Reader`] (`dir24_8.rs`).
use super::dir24_8::Dir24Arrays;
use super::rib::{rib_add, rib_delete, RibBook, RibRoutes};
use super::{
    check_bulk, mask4, unique_name, LpmConfig, RIB_NODE_BYTES, SOCKET_ID_ANY, TBL24_ENTRIES,
    TBL8_GROUP_ENTRIES,
};
use crate::dpdk::error::{self, DpdkError};
use std::ptr::NonNull;

/// IPv4 FIB over `rte_fib` (DIR-24-8, 4-byte next hops).
///
/// rte_fib keeps the routes in a RIB (a binary trie) beside the lookup
/// tables, so adding or deleting a route costs a trie walk plus the table
/// entries it covers, independent of how many routes there are.
///
/// # Working around DPDK 22.11's DIR-24-8 at the top of the address space
/// When a route changes, DIR-24-8 rewrites its range minus the ranges of the
/// routes inside it, walking left to right with 32-bit edges. For a prefix
/// that ends at 255.255.255.255 (`0/0`, `128/1`, ..., `255.255.255.255/32`)
/// the right edge wraps to 0, and when the routes inside it reach the top as
/// well, the final "install from 0 to 0" is taken as the whole address space:
/// every entry gets the route's next hop. For `0/0` with a route inside the
/// first /24 it even writes about 2^32 tbl8 entries (out of bounds). So:
/// - the default route `0/0` never reaches DPDK: it is kept here and fills
///   misses in [`Fib4::lookup_bulk`] (one compare per result);
/// - a change to another top-ending prefix that has routes inside it first
///   takes those routes out (deepest first, so none of them has routes inside
///   it when removed), changes the prefix, and puts them back (shallowest
///   first). That costs time in the number of routes inside, and such
///   prefixes (`224/3`, `240/4`, ...) are rare; any other change is one call.
///
///
/// A second 22.11 bug: DIR-24-8 reserves a tbl8 group for the first route
/// longer than /24 in each /24, but skips the reservation when the new
/// route's covering route has the same next hop, while deleting it always
/// releases one. The count underflows and every later long route fails with
/// ENOSPC. So a new route longer than /24 is added twice: first with
/// [`Fib4::MISS`] (which no covering route has), then with its next hop.
///
/// The `fib4_*` proptests below cover these cases against the linear oracle.
pub struct Fib4 {
    raw: NonNull<dpdk_sys::rte_fib>,
    cfg: LpmConfig,
    pub(super) book: RibBook,
    /// rte_fib's DIR-24-8 arrays, when their layout checked out.
    pub(super) arrays: Option<Dir24Arrays>,
}

// SAFETY: the rte_fib is owned by this value alone. Lookups (`&self`) only
// read the tables; add/delete need `&mut self`, so they never run at the same
// time as a lookup or each other.
unsafe impl Send for Fib4 {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for Fib4 {}

impl Fib4 {
    /// The default next hop: what lookups return where no route matches.
    /// It is the largest value a 4-byte DIR-24-8 entry holds (one bit is the
    /// extension flag), so no route can use it.
    pub const MISS: u64 = (1 << 31) - 1;
    /// Largest next hop a route may carry.
    pub const MAX_NEXTHOP: u32 = (1 << 31) - 2;

    pub fn new(cfg: LpmConfig) -> Result<Fib4, DpdkError> {
        cfg.check("rte_fib_create")?;
        let name = unique_name("fib4");
        let mut conf = dpdk_sys::rte_fib_conf {
            type_: dpdk_sys::RTE_FIB_DIR24_8,
            default_nh: Self::MISS,
            // The RIB counts its inner (branching) nodes too: up to one per
            // route, so twice the routes bounds it.
            max_routes: (cfg.max_routes * 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        conf.__bindgen_anon_1.dir24_8 = dpdk_sys::rte_fib_conf__bindgen_ty_1__bindgen_ty_1 {
            nh_sz: dpdk_sys::RTE_FIB_DIR24_8_4B,
            num_tbl8: cfg.num_tbl8,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno (also when EAL is not up).
        let p = unsafe { dpdk_sys::rte_fib_create(name.as_ptr(), SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_fib_create"))?;
        let arrays = Self::find_arrays(raw, cfg.num_tbl8);
        if arrays.is_none() {
            tracing::warn!("rte_fib's DIR-24-8 layout is not DPDK 22.11's: the data path uses rte_fib_lookup_bulk");
        }
        Ok(Fib4 {
            raw,
            cfg,
            book: RibBook::default(),
            arrays,
        })
    }

    fn rib(&self) -> *mut dpdk_sys::rte_rib {
        // SAFETY: raw is a live fib; its RIB lives as long as it does.
        let rib = unsafe { dpdk_sys::rte_fib_get_rib(self.raw.as_ptr()) };
        debug_assert!(!rib.is_null());
        rib
    }

    fn raw_add_once(&mut self, ip: u32, depth: u8, nh: u64) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib and we hold &mut self: no lookup runs.
        let rc = unsafe { dpdk_sys::rte_fib_add(self.raw.as_ptr(), ip, depth, nh) };
        error::check("rte_fib_add", rc).map(|_| ())
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: u32, depth: u8, nh: u32) -> Result<(), DpdkError> {
        rib_add(self, prefix, depth, nh)
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: u32, depth: u8) -> Result<bool, DpdkError> {
        rib_delete(self, prefix, depth)
    }

    /// Looks up every address of `ips` (host order) into `out`: the next hop,
    /// or [`Fib4::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u64]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live fib; lookups only read it (the C prototype
        // takes `uint32_t *ips` but never writes through it). DPDK reads
        // ips.len() addresses and writes as many results, and out has room
        // for them (checked above).
        let rc = unsafe {
            dpdk_sys::rte_fib_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut u32,
                out.as_mut_ptr(),
                ips.len() as i32,
            )
        };
        debug_assert_eq!(rc, 0);
        if let Some(d) = self.book.default_nh {
            for e in out.iter_mut() {
                if *e == Self::MISS {
                    *e = u64::from(d);
                }
            }
        }
    }

    /// One lookup: `None` when no route matches.
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut out = [0u64; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0] as u32)
    }

    /// Routes in the table.
    pub fn len(&self) -> usize {
        self.book.routes
    }

    pub fn is_empty(&self) -> bool {
        self.book.routes == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes allocated at creation: tbl24 (2^24 × 4 B) + tbl8
    /// groups (num_tbl8 rounded up to 64, plus one, × 256 × 4 B) + RIB nodes
    /// (2 × max_routes × 64 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = (self.cfg.num_tbl8 as usize).div_ceil(64) * 64 + 1;
        TBL24_ENTRIES * 4
            + tbl8s * TBL8_GROUP_ENTRIES * 4
            + 2 * self.cfg.max_routes as usize * RIB_NODE_BYTES
    }
}

impl RibRoutes for Fib4 {
    type Ip = u32;
    const TOP: u32 = u32::MAX;
    const MAX_DEPTH: u8 = 32;
    const MAX_NEXTHOP: u32 = Fib4::MAX_NEXTHOP;
    const ADD: &'static str = "rte_fib_add";
    const DELETE: &'static str = "rte_fib_delete";

    fn mask(ip: u32, depth: u8) -> u32 {
        mask4(ip, depth)
    }

    fn book(&self) -> &RibBook {
        &self.book
    }

    fn book_mut(&mut self) -> &mut RibBook {
        &mut self.book
    }

    fn max_routes(&self) -> usize {
        self.cfg.max_routes as usize
    }

    fn in_rib(&self, masked: u32, depth: u8) -> bool {
        // SAFETY: the RIB is live and only read here (no writer runs while
        // we hold &self or &mut self).
        unsafe { !dpdk_sys::rte_rib_lookup_exact(self.rib(), masked, depth).is_null() }
    }

    /// The routes strictly inside `ip/depth`: `(prefix, depth, next hop)`.
    fn inner_routes(&self, ip: u32, depth: u8) -> Vec<(u32, u8, u64)> {
        let rib = self.rib();
        let mut out = Vec::new();
        let mut node = std::ptr::null_mut();
        loop {
            // SAFETY: the RIB is live and not modified during the walk; node
            // is NULL or the node the previous call returned.
            node = unsafe {
                dpdk_sys::rte_rib_get_nxt(
                    rib,
                    ip,
                    depth,
                    node,
                    dpdk_sys::RTE_RIB_GET_NXT_ALL as i32,
                )
            };
            if node.is_null() {
                return out;
            }
            let (mut nip, mut nd, mut nh) = (0u32, 0u8, 0u64);
            // SAFETY: node is a valid node of the live RIB; the getters
            // write into locals.
            unsafe {
                dpdk_sys::rte_rib_get_ip(node, &mut nip);
                dpdk_sys::rte_rib_get_depth(node, &mut nd);
                dpdk_sys::rte_rib_get_nh(node, &mut nh);
            }
            out.push((nip, nd, nh));
        }
    }

    fn raw_add(&mut self, ip: u32, depth: u8, nh: u64) -> Result<(), DpdkError> {
        if depth > 24 && !self.contains(ip, depth) {
            // Count the tbl8 reservation (see the type's doc): first add with
            // a next hop no covering route has, then set the real one.
            self.raw_add_once(ip, depth, Self::MISS)?;
        }
        self.raw_add_once(ip, depth, nh)
    }

    fn raw_delete(&mut self, ip: u32, depth: u8) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib and we hold &mut self: no lookup runs.
        let rc = unsafe { dpdk_sys::rte_fib_delete(self.raw.as_ptr(), ip, depth) };
        error::check("rte_fib_delete", rc).map(|_| ())
    }
}

impl Drop for Fib4 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_fib_create and is freed once, here.
        unsafe { dpdk_sys::rte_fib_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::CFG;
    use super::*;
    use crate::tables::testing::test_lock;

    /// DPDK 22.11 DIR-24-8 bugs the wrapper works around (see `Fib4`): a
    /// prefix ending at 255.255.255.255 whose inner routes reach the top,
    /// and `0/0` with a route inside 0.0.0.0/24.
    #[test]
    fn fib4_top_of_address_space() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        f.add(0xffff_ff00, 25, 1).unwrap();
        f.add(0xffff_ff80, 25, 2).unwrap();
        f.add(0xffff_ff00, 24, 3).unwrap(); // fully covered by the /25s
        f.add(0x8000_0000, 1, 4).unwrap();
        f.add(0xffff_ffff, 32, 5).unwrap();
        f.add(0xf000_0000, 4, 6).unwrap();
        f.add(0, 25, 7).unwrap();
        f.add(0, 0, 8).unwrap();
        let probe = |f: &Fib4| {
            [
                0,
                0x80,
                0x0a00_0001,
                0x8000_0000,
                0xf000_0000,
                0xffff_fe01,
                0xffff_ff01,
                0xffff_ff81,
                0xffff_ffff,
            ]
            .map(|a| f.lookup(a))
        };
        assert_eq!(probe(&f), [7, 8, 8, 4, 6, 6, 1, 2, 5].map(Some));
        f.delete(0xf000_0000, 4).unwrap();
        f.delete(0, 0).unwrap();
        f.add(0x8000_0000, 1, 9).unwrap();
        assert_eq!(
            probe(&f),
            [
                Some(7),
                None,
                None,
                Some(9),
                Some(9),
                Some(9),
                Some(1),
                Some(2),
                Some(5)
            ]
        );
        assert_eq!(f.len(), 6);
    }

    /// DPDK 22.11 DIR-24-8 skips the tbl8 reservation of a long route whose
    /// covering route has the same next hop but releases it on delete; the
    /// wrapper keeps the count right, so long routes keep fitting.
    #[test]
    fn fib4_same_nexthop_long_routes_keep_fitting() {
        let _g = test_lock();
        let mut f = Fib4::new(LpmConfig::new(64, 1)).unwrap(); // 64 tbl8s
        f.add(0x0a00_0000, 8, 1).unwrap();
        for i in 0..200u32 {
            let p = 0x0a00_0000 | (i << 8);
            f.add(p, 25, 1).unwrap();
            assert!(f.delete(p, 25).unwrap());
        }
        for i in 0..32u32 {
            f.add(0x0b00_0000 | (i << 8), 30, 2).unwrap();
        }
        assert_eq!(f.lookup(0x0b00_1f01), Some(2));
    }
}
