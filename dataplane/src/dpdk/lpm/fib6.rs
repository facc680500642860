//! [`Fib6`]: IPv6 routes in rte_fib6 (the trie, 4-byte next hops), with the
//! top-of-address-space workaround it shares with [`super::Fib4`].
use super::rib::{rib_add, rib_delete, RibBook, RibRoutes};
use super::{
    check_bulk, mask6, unique_name, LpmConfig, RIB_NODE_BYTES, SOCKET_ID_ANY, TBL24_ENTRIES,
    TBL8_GROUP_ENTRIES,
};
use crate::dpdk::error::{self, DpdkError};
use std::ptr::NonNull;

/// IPv6 FIB over `rte_fib6` (the 24-8-8-... trie, 4-byte next hops).
///
/// DPDK 22.11's trie rewrites a changed route's range the same way DIR-24-8
/// does (see [`Fib4`]) and has the same wrap at the top of the address
/// space: `::/0` added over `::/1` and `8000::/1` overwrote both halves. So
/// the same workaround applies: `::/0` is kept here and fills misses, and a
/// change to another prefix that ends at `ffff:...:ffff` first takes the
/// routes inside it out. (The trie's tbl8 count has no reservation bug: see
/// `fib6_same_nexthop_long_routes_keep_fitting`.)
pub struct Fib6 {
    raw: NonNull<dpdk_sys::rte_fib6>,
    cfg: LpmConfig,
    book: RibBook,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Fib6 {}
// SAFETY: as above.
unsafe impl Sync for Fib6 {}

impl Fib6 {
    /// The default next hop, returned where no route matches (largest value
    /// a 4-byte trie entry holds).
    pub const MISS: u64 = (1 << 31) - 1;
    pub const MAX_NEXTHOP: u32 = (1 << 31) - 2;

    pub fn new(cfg: LpmConfig) -> Result<Fib6, DpdkError> {
        cfg.check("rte_fib6_create")?;
        let name = unique_name("fib6");
        let mut conf = dpdk_sys::rte_fib6_conf {
            type_: dpdk_sys::RTE_FIB6_TRIE,
            default_nh: Self::MISS,
            max_routes: (cfg.max_routes * 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        conf.__bindgen_anon_1.trie = dpdk_sys::rte_fib6_conf__bindgen_ty_1__bindgen_ty_1 {
            nh_sz: dpdk_sys::RTE_FIB6_TRIE_4B,
            num_tbl8: cfg.num_tbl8,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_fib6_create(name.as_ptr(), SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_fib6_create"))?;
        Ok(Fib6 {
            raw,
            cfg,
            book: RibBook::default(),
        })
    }

    fn rib(&self) -> *mut dpdk_sys::rte_rib6 {
        // SAFETY: raw is a live fib6; its RIB lives as long as it does.
        let rib = unsafe { dpdk_sys::rte_fib6_get_rib(self.raw.as_ptr()) };
        debug_assert!(!rib.is_null());
        rib
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: [u8; 16], depth: u8, nh: u32) -> Result<(), DpdkError> {
        rib_add(self, prefix, depth, nh)
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: [u8; 16], depth: u8) -> Result<bool, DpdkError> {
        rib_delete(self, prefix, depth)
    }

    /// Looks up every address of `ips` into `out`: the next hop, or
    /// [`Fib6::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [u64]) {
        check_bulk(ips.len(), out.len());
        // SAFETY: raw is a live fib6, only read (the prototype's `ips` is not
        // const but is never written); DPDK reads ips.len() 16-byte addresses
        // and writes as many results into out (long enough, checked above).
        let rc = unsafe {
            dpdk_sys::rte_fib6_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut [u8; 16],
                out.as_mut_ptr(),
                ips.len() as i32,
            )
        };
        debug_assert_eq!(rc, 0);
        if let Some(d) = self.book.default_nh {
            for e in out[..ips.len()].iter_mut() {
                if *e == Self::MISS {
                    *e = u64::from(d);
                }
            }
        }
    }

    pub fn lookup(&self, ip: [u8; 16]) -> Option<u32> {
        let mut out = [0u64; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0] as u32)
    }

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
    /// groups ((num_tbl8 + 1) × 256 × 4 B) + the tbl8 free list (num_tbl8 ×
    /// 4 B) + RIB nodes (2 × max_routes × 64 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = self.cfg.num_tbl8 as usize;
        TBL24_ENTRIES * 4
            + (tbl8s + 1) * TBL8_GROUP_ENTRIES * 4
            + tbl8s * 4
            + 2 * self.cfg.max_routes as usize * RIB_NODE_BYTES
    }
}

impl RibRoutes for Fib6 {
    type Ip = [u8; 16];
    const TOP: [u8; 16] = [0xff; 16];
    const MAX_DEPTH: u8 = 128;
    const MAX_NEXTHOP: u32 = Fib6::MAX_NEXTHOP;
    const ADD: &'static str = "rte_fib6_add";
    const DELETE: &'static str = "rte_fib6_delete";

    fn mask(ip: [u8; 16], depth: u8) -> [u8; 16] {
        mask6(ip, depth)
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

    fn in_rib(&self, masked: [u8; 16], depth: u8) -> bool {
        // SAFETY: the RIB is live and only read; masked is 16 readable bytes.
        unsafe { !dpdk_sys::rte_rib6_lookup_exact(self.rib(), masked.as_ptr(), depth).is_null() }
    }

    /// The routes strictly inside `ip/depth`: `(prefix, depth, next hop)`.
    fn inner_routes(&self, ip: [u8; 16], depth: u8) -> Vec<([u8; 16], u8, u64)> {
        let rib = self.rib();
        let mut out = Vec::new();
        let mut node = std::ptr::null_mut();
        loop {
            // SAFETY: the RIB is live and not modified during the walk; node
            // is NULL or the node the previous call returned; ip is 16 bytes.
            node = unsafe {
                dpdk_sys::rte_rib6_get_nxt(
                    rib,
                    ip.as_ptr(),
                    depth,
                    node,
                    dpdk_sys::RTE_RIB6_GET_NXT_ALL as i32,
                )
            };
            if node.is_null() {
                return out;
            }
            let (mut nip, mut nd, mut nh) = ([0u8; 16], 0u8, 0u64);
            // SAFETY: node is a valid node of the live RIB; the getters
            // write into locals (nip has the 16 bytes get_ip writes).
            unsafe {
                dpdk_sys::rte_rib6_get_ip(node, nip.as_mut_ptr());
                dpdk_sys::rte_rib6_get_depth(node, &mut nd);
                dpdk_sys::rte_rib6_get_nh(node, &mut nh);
            }
            out.push((nip, nd, nh));
        }
    }

    fn raw_add(&mut self, ip: [u8; 16], depth: u8, nh: u64) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib6, we hold &mut self (no lookup runs); ip
        // is 16 readable bytes.
        let rc = unsafe { dpdk_sys::rte_fib6_add(self.raw.as_ptr(), ip.as_ptr(), depth, nh) };
        error::check("rte_fib6_add", rc).map(|_| ())
    }

    fn raw_delete(&mut self, ip: [u8; 16], depth: u8) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib6, we hold &mut self; ip is 16 bytes.
        let rc = unsafe { dpdk_sys::rte_fib6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
        error::check("rte_fib6_delete", rc).map(|_| ())
    }
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_fib6_create and is freed once, here.
        unsafe { dpdk_sys::rte_fib6_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::CFG;
    use super::*;
    use crate::tables::testing::test_lock;

    /// The same churn on rte_fib6, whose trie keeps a similar tbl8 count.
    #[test]
    fn fib6_same_nexthop_long_routes_keep_fitting() {
        let _g = test_lock();
        // The /32 takes 1 tbl8 group, each /48 below 2 more: 81 of 128.
        let mut f = Fib6::new(LpmConfig::new(64, 128)).unwrap();
        let base = 0x2001_0db8u128 << 96;
        f.add(base.to_be_bytes(), 32, 1).unwrap();
        for i in 0..300u128 {
            let p = (base | (i << 64)).to_be_bytes();
            f.add(p, 64, 1).unwrap();
            assert!(f.delete(p, 64).unwrap());
        }
        // 40 routes in distinct /40s: each needs fresh tbl8 groups.
        for i in 0..40u128 {
            f.add((base | (i << 88)).to_be_bytes(), 48, 2).unwrap();
        }
        assert_eq!(f.lookup((base | (39 << 88) | 5).to_be_bytes()), Some(2));
    }

    /// DPDK 22.11's trie has DIR-24-8's top-of-address-space bug (found by
    /// `fib6_matches_linear` in CI): `::/0` added over `::/1` and `8000::/1`
    /// overwrote both halves with its own next hop.
    #[test]
    fn fib6_top_of_address_space() {
        let _g = test_lock();
        let mut f = Fib6::new(CFG).unwrap();
        let low = 0u128.to_be_bytes();
        let high = (1u128 << 127).to_be_bytes();
        f.add((0x07e0_1c66_0d5bu128 << 80).to_be_bytes(), 48, 488)
            .unwrap();
        f.add(high, 1, 0).unwrap();
        f.add(low, 1, 1).unwrap();
        f.add(low, 0, 3).unwrap();
        let probe = 0xfd00_0000_0000_716c_0000_0000_50d6_50dbu128.to_be_bytes();
        assert_eq!(f.lookup(probe), Some(0));
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(0));
        assert_eq!(f.lookup(low), Some(1));
        assert_eq!(
            f.lookup((0x07e0_1c66_0d5bu128 << 80 | 9).to_be_bytes()),
            Some(488)
        );
        // Changing and deleting top-ending prefixes keeps the others.
        f.add(u128::MAX.to_be_bytes(), 128, 7).unwrap();
        f.add(high, 1, 5).unwrap();
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(7));
        assert_eq!(f.lookup(probe), Some(5));
        assert!(f.delete(high, 1).unwrap());
        assert_eq!(f.lookup(probe), Some(3));
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(7));
        assert!(f.delete(low, 0).unwrap());
        assert_eq!(f.lookup(probe), None);
        assert_eq!(f.lookup(low), Some(1));
    }
}
