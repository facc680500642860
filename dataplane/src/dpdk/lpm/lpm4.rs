//! [`Lpm4`]: IPv4 routes in rte_lpm, the default route kept beside it.
use super::{
    check_bulk, check_depth, check_nh, mask4, unique_name, LpmConfig, SOCKET_ID_ANY, TBL24_ENTRIES,
    TBL8_GROUP_ENTRIES,
};
use crate::dpdk::error::{self, DpdkError};
use std::collections::HashSet;
use std::ptr::NonNull;

/// IPv4 LPM over `rte_lpm`.
///
/// rte_lpm keeps its rules in one array sorted by prefix length and scans the
/// rules of the same length on every add, so adding is O(routes of that
/// length): fine for a few thousand routes, slow for a full table (see the
/// `tables` bench). It has no /0 rule; the default route lives here and fills
/// in misses.
pub struct Lpm4 {
    raw: NonNull<dpdk_sys::rte_lpm>,
    cfg: LpmConfig,
    /// The routes (masked prefix, length) other than /0. rte_lpm's own
    /// `is_rule_present` scans every rule of that length, which would double
    /// the O(n) cost of each add just to keep the count.
    routes: HashSet<(u32, u8)>,
    default_nh: Option<u32>,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Lpm4 {}
// SAFETY: as above.
unsafe impl Sync for Lpm4 {}

impl Lpm4 {
    /// What lookups return where no route matches.
    pub const MISS: u32 = u32::MAX;
    /// rte_lpm stores next hops in 24 bits.
    pub const MAX_NEXTHOP: u32 = (1 << 24) - 1;

    pub fn new(cfg: LpmConfig) -> Result<Lpm4, DpdkError> {
        cfg.check("rte_lpm_create")?;
        let name = unique_name("lpm4");
        let conf = dpdk_sys::rte_lpm_config {
            max_rules: cfg.max_routes,
            number_tbl8s: cfg.num_tbl8,
            flags: 0,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_lpm_create(name.as_ptr(), SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_lpm_create"))?;
        Ok(Lpm4 {
            raw,
            cfg,
            routes: HashSet::new(),
            default_nh: None,
        })
    }

    fn contains(&self, masked: u32, depth: u8) -> bool {
        if depth == 0 {
            return self.default_nh.is_some();
        }
        self.routes.contains(&(masked, depth))
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: u32, depth: u8, nh: u32) -> Result<(), DpdkError> {
        check_depth("rte_lpm_add", depth, 32)?;
        check_nh("rte_lpm_add", nh, Self::MAX_NEXTHOP)?;
        let ip = mask4(prefix, depth);
        if depth == 0 {
            self.default_nh = Some(nh);
        } else {
            // SAFETY: raw is a live lpm and we hold &mut self: no lookup runs.
            let rc = unsafe { dpdk_sys::rte_lpm_add(self.raw.as_ptr(), ip, depth, nh) };
            error::check("rte_lpm_add", rc)?;
            self.routes.insert((ip, depth));
        }
        Ok(())
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: u32, depth: u8) -> Result<bool, DpdkError> {
        check_depth("rte_lpm_delete", depth, 32)?;
        let ip = mask4(prefix, depth);
        if !self.contains(ip, depth) {
            return Ok(false);
        }
        if depth == 0 {
            self.default_nh = None;
        } else {
            // SAFETY: raw is a live lpm and we hold &mut self: no lookup runs.
            let rc = unsafe { dpdk_sys::rte_lpm_delete(self.raw.as_ptr(), ip, depth) };
            error::check("rte_lpm_delete", rc)?;
            self.routes.remove(&(ip, depth));
        }
        Ok(true)
    }

    /// Looks up every address of `ips` (host order) into `out`: the next hop,
    /// or [`Lpm4::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u32]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live lpm, only read; DPDK reads ips.len()
        // addresses and writes as many entries into out (long enough, checked
        // above).
        unsafe {
            dpdk_sys::shim_rte_lpm_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr(),
                out.as_mut_ptr(),
                ips.len() as u32,
            );
        }
        // Raw entries: 24-bit next hop, then the valid bit.
        let miss = self.default_nh.unwrap_or(Self::MISS);
        for e in out.iter_mut() {
            *e = if *e & dpdk_sys::RTE_LPM_LOOKUP_SUCCESS != 0 {
                *e & Self::MAX_NEXTHOP
            } else {
                miss
            };
        }
    }

    /// One lookup: `None` when no route matches.
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut out = [0u32; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0])
    }

    pub fn len(&self) -> usize {
        self.routes.len() + usize::from(self.default_nh.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes: tbl24 (2^24 × 4 B) + tbl8 groups (num_tbl8 × 256 ×
    /// 4 B) + the rule array (max_routes × 8 B), allocated at creation, plus
    /// the route set here (capacity × 9 B: 8-byte entry, 1 control byte).
    pub fn memory_bytes(&self) -> usize {
        TBL24_ENTRIES * 4
            + self.cfg.num_tbl8 as usize * TBL8_GROUP_ENTRIES * 4
            + self.cfg.max_routes as usize * 8
            + self.routes.capacity() * 9
    }
}

impl Drop for Lpm4 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_lpm_create and is freed once, here.
        unsafe { dpdk_sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}
