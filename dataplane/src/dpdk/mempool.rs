//! Packet-buffer pools (`rte_pktmbuf_pool_create`). Thread-safe by design;
//! each lcore keeps a local cache so alloc/free on the hot path stay local.
use super::error::{self, DpdkError};
use super::mbuf::Mbuf;
use std::ffi::CString;
use std::ptr::NonNull;

pub struct Mempool {
    raw: NonNull<dpdk_sys::rte_mempool>,
    name: String,
    size: u32,
}

// SAFETY: rte_mempool is designed for concurrent use from many lcores.
unsafe impl Send for Mempool {}
// SAFETY: as above; all methods go through DPDK's thread-safe API.
unsafe impl Sync for Mempool {}

/// Default data room: 2048 bytes of packet plus the standard headroom.
pub const DEFAULT_DATA_ROOM: u16 = (2048 + dpdk_sys::RTE_PKTMBUF_HEADROOM) as u16;

impl Mempool {
    /// Creates a pool of `n` mbufs (best as 2^k - 1) with a per-lcore cache.
    pub fn new_pktmbuf(
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
        socket: i32,
    ) -> Result<Mempool, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError::Invalid("mempool name".into()))?;
        // SAFETY: EAL is up (only reachable after Eal::init in practice; DPDK
        // returns NULL with rte_errno otherwise); cname outlives the call.
        let p = unsafe {
            dpdk_sys::rte_pktmbuf_pool_create(cname.as_ptr(), n, cache, 0, data_room, socket)
        };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_pktmbuf_pool_create"))?;
        Ok(Mempool {
            raw,
            name: name.to_owned(),
            size: n,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Total mbufs in the pool.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Mbufs free (in the pool or in lcore caches).
    pub fn avail_count(&self) -> u32 {
        // SAFETY: raw is a live mempool.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// Mbufs handed out and not yet returned: zero when nothing leaked.
    pub fn in_use_count(&self) -> u32 {
        // SAFETY: raw is a live mempool.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.raw.as_ptr()) }
    }

    /// Allocates one mbuf (reset, empty).
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: raw is a live pktmbuf pool; a non-null result is an mbuf we now own.
        let p = unsafe { dpdk_sys::shim_rte_pktmbuf_alloc(self.raw.as_ptr()) };
        NonNull::new(p).map(|p| unsafe { Mbuf::from_raw(p) })
    }

    /// Allocates an mbuf holding a copy of `bytes`.
    pub fn alloc_from(&self, bytes: &[u8]) -> Option<Mbuf> {
        let mut m = self.alloc()?;
        let dst = m.append(bytes.len())?;
        dst.copy_from_slice(bytes);
        Some(m)
    }

    pub(crate) fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.raw.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: ports using this pool are stopped/closed before (owners hold an
        // Arc<Mempool>); freeing a pool with mbufs still out would be the leak
        // the stats report, not UB for the pool itself.
        unsafe { dpdk_sys::rte_mempool_free(self.raw.as_ptr()) }
    }
}
