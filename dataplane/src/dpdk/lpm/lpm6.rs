//! [`Lpm6`]: IPv6 routes in rte_lpm6, the default route kept beside it.
use super::{
    check_bulk, check_depth, check_nh, mask6, unique_name, LpmConfig, LPM6_RULE_BYTES,
    SOCKET_ID_ANY, TBL24_ENTRIES, TBL8_GROUP_ENTRIES,
};
use crate::dpdk::error::{self, DpdkError};
use std::ptr::NonNull;

/// IPv6 LPM over `rte_lpm6`. Like [`Lpm4`] it has no /0 rule: the default
/// route lives here.
pub struct Lpm6 {
    raw: NonNull<dpdk_sys::rte_lpm6>,
    cfg: LpmConfig,
    routes: usize,
    default_nh: Option<u32>,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Lpm6 {}
// SAFETY: as above.
unsafe impl Sync for Lpm6 {}

impl Lpm6 {
    /// What lookups return where no route matches (rte_lpm6 writes -1).
    pub const MISS: u32 = u32::MAX;
    /// rte_lpm6 stores next hops in 21 bits (and does not check: larger
    /// values would be silently truncated, so they are refused here).
    pub const MAX_NEXTHOP: u32 = (1 << 21) - 1;

    pub fn new(cfg: LpmConfig) -> Result<Lpm6, DpdkError> {
        cfg.check("rte_lpm6_create")?;
        let name = unique_name("lpm6");
        let conf = dpdk_sys::rte_lpm6_config {
            max_rules: cfg.max_routes,
            number_tbl8s: cfg.num_tbl8,
            flags: 0,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_lpm6_create(name.as_ptr(), SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_lpm6_create"))?;
        Ok(Lpm6 {
            raw,
            cfg,
            routes: 0,
            default_nh: None,
        })
    }

    fn contains(&self, masked: &[u8; 16], depth: u8) -> bool {
        if depth == 0 {
            return self.default_nh.is_some();
        }
        let mut nh = 0u32;
        // SAFETY: raw is a live lpm6, only read (the prototype is not const);
        // masked is 16 readable bytes; nh is a local.
        unsafe {
            dpdk_sys::rte_lpm6_is_rule_present(self.raw.as_ptr(), masked.as_ptr(), depth, &mut nh)
                == 1
        }
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: [u8; 16], depth: u8, nh: u32) -> Result<(), DpdkError> {
        check_depth("rte_lpm6_add", depth, 128)?;
        check_nh("rte_lpm6_add", nh, Self::MAX_NEXTHOP)?;
        let ip = mask6(prefix, depth);
        let new = !self.contains(&ip, depth);
        if depth == 0 {
            self.default_nh = Some(nh);
        } else {
            // SAFETY: raw is a live lpm6, we hold &mut self (no lookup runs);
            // ip is 16 readable bytes.
            let rc = unsafe { dpdk_sys::rte_lpm6_add(self.raw.as_ptr(), ip.as_ptr(), depth, nh) };
            error::check("rte_lpm6_add", rc)?;
        }
        self.routes += usize::from(new);
        Ok(())
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: [u8; 16], depth: u8) -> Result<bool, DpdkError> {
        check_depth("rte_lpm6_delete", depth, 128)?;
        let ip = mask6(prefix, depth);
        if !self.contains(&ip, depth) {
            return Ok(false);
        }
        if depth == 0 {
            self.default_nh = None;
        } else {
            // SAFETY: raw is a live lpm6, we hold &mut self; ip is 16 bytes.
            let rc = unsafe { dpdk_sys::rte_lpm6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
            error::check("rte_lpm6_delete", rc)?;
        }
        self.routes -= 1;
        Ok(true)
    }

    /// Looks up every address of `ips` into `out`: the next hop, or
    /// [`Lpm6::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [u32]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live lpm6, only read (`ips` is never written
        // through, whatever the prototype says); DPDK reads ips.len()
        // addresses and writes as many i32 into out, which has room (checked
        // above) and the same size and alignment as i32.
        unsafe {
            dpdk_sys::rte_lpm6_lookup_bulk_func(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut [u8; 16],
                out.as_mut_ptr() as *mut i32,
                ips.len() as u32,
            );
        }
        // A miss is -1, i.e. MISS; only the default route needs a pass.
        if let Some(d) = self.default_nh {
            for e in out.iter_mut() {
                if *e == Self::MISS {
                    *e = d;
                }
            }
        }
    }

    pub fn lookup(&self, ip: [u8; 16]) -> Option<u32> {
        let mut out = [0u32; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0])
    }

    pub fn len(&self) -> usize {
        self.routes
    }

    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes allocated at creation: tbl24 (2^24 × 4 B) + tbl8
    /// groups (num_tbl8 × 256 × 4 B) + tbl8 headers and free list (num_tbl8 ×
    /// 16 B) + the rule hash (max_routes × ~48 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = self.cfg.num_tbl8 as usize;
        TBL24_ENTRIES * 4
            + tbl8s * TBL8_GROUP_ENTRIES * 4
            + tbl8s * 16
            + self.cfg.max_routes as usize * LPM6_RULE_BYTES
    }
}

impl Drop for Lpm6 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_lpm6_create and is freed once, here.
        unsafe { dpdk_sys::rte_lpm6_free(self.raw.as_ptr()) }
    }
}
