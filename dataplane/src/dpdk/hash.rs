//! `rte_hash` as a concurrent map from fixed-size keys to `u64` values:
//! lock-free readers (RW_CONCURRENCY_LF), writers serialised by DPDK
//! (MULTI_WRITER_ADD). The dataplane uses it for the neighbour table, whose
//! readers are the workers and whose rare writers are ARP/NDP learning.
//! Entries are never deleted while readers run (no RCU needed).
use super::error::{self, DpdkError};
use std::ffi::{c_void, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Hash<const K: usize> {
    raw: NonNull<dpdk_sys::rte_hash>,
    capacity: u32,
}

// SAFETY: created with RW_CONCURRENCY_LF | MULTI_WRITER_ADD: concurrent
// lookups and adds from any thread are supported by rte_hash.
unsafe impl<const K: usize> Send for Hash<K> {}
// SAFETY: as above.
unsafe impl<const K: usize> Sync for Hash<K> {}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Most keys one `lookup_bulk` call takes (RTE_HASH_LOOKUP_BULK_MAX).
pub const LOOKUP_BULK_MAX: usize = 64;

impl<const K: usize> Hash<K> {
    /// A table for up to `entries` keys of K bytes.
    pub fn new(entries: u32) -> Result<Self, DpdkError> {
        let name = CString::new(format!("dp_hash{}", SEQ.fetch_add(1, Ordering::Relaxed)))
            .expect("no NUL");
        let params = dpdk_sys::rte_hash_parameters {
            name: name.as_ptr(),
            entries: entries.max(8),
            reserved: 0,
            key_len: K as u32,
            hash_func: None, // DPDK picks CRC32 (SSE4.2) or jhash
            hash_func_init_val: 0,
            socket_id: -1, // SOCKET_ID_ANY
            extra_flag: (dpdk_sys::RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF
                | dpdk_sys::RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD) as u8,
        };
        // SAFETY: params and the name it points to live across the call.
        let p = unsafe { dpdk_sys::rte_hash_create(&params) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_hash_create"))?;
        Ok(Hash {
            raw,
            capacity: entries,
        })
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Inserts or updates `key` → `value` (atomic for concurrent readers).
    /// Callable from any thread: multi-writer add keeps per-lcore free-slot
    /// caches, so a thread without an lcore id gets one for the call.
    pub fn insert(&self, key: &[u8; K], value: u64) -> Result<(), DpdkError> {
        let rc = super::eal::with_lcore_id(|| {
            // SAFETY: key points to K readable bytes; the value travels as
            // the pointer-sized data word and is never dereferenced; the
            // calling thread has an lcore id (with_lcore_id).
            unsafe {
                dpdk_sys::rte_hash_add_key_data(
                    self.raw.as_ptr(),
                    key.as_ptr() as *const c_void,
                    value as usize as *mut c_void,
                )
            }
        });
        error::check("rte_hash_add_key_data", rc).map(|_| ())
    }

    pub fn get(&self, key: &[u8; K]) -> Option<u64> {
        let mut data: *mut c_void = std::ptr::null_mut();
        // SAFETY: key points to K bytes; data is a valid out pointer.
        let rc = unsafe {
            dpdk_sys::rte_hash_lookup_data(
                self.raw.as_ptr(),
                key.as_ptr() as *const c_void,
                &mut data,
            )
        };
        (rc >= 0).then_some(data as usize as u64)
    }

    /// Looks up to 64 keys at once; `out[i]` is `Some(value)` on a hit.
    pub fn lookup_bulk(&self, keys: &[&[u8; K]], out: &mut [Option<u64>]) {
        let n = keys.len().min(LOOKUP_BULK_MAX).min(out.len());
        if n == 0 {
            return;
        }
        let mut ptrs = [std::ptr::null::<c_void>(); LOOKUP_BULK_MAX];
        for (p, k) in ptrs.iter_mut().zip(keys) {
            *p = k.as_ptr() as *const c_void;
        }
        let mut data = [std::ptr::null_mut::<c_void>(); LOOKUP_BULK_MAX];
        let mut hits: u64 = 0;
        // SAFETY: ptrs[..n] point to K-byte keys alive for the call; data and
        // hits are valid outputs for n entries.
        let rc = unsafe {
            dpdk_sys::rte_hash_lookup_bulk_data(
                self.raw.as_ptr(),
                ptrs.as_mut_ptr(),
                n as u32,
                &mut hits,
                data.as_mut_ptr(),
            )
        };
        for i in 0..n {
            out[i] = (rc >= 0 && hits & (1 << i) != 0).then_some(data[i] as usize as u64);
        }
    }

    pub fn len(&self) -> usize {
        // SAFETY: raw is live.
        unsafe { dpdk_sys::rte_hash_count(self.raw.as_ptr()) }.max(0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every (key, value) pair (control path: stats and dumps).
    pub fn entries(&self) -> Vec<([u8; K], u64)> {
        let mut out = Vec::new();
        let mut next: u32 = 0;
        loop {
            let mut key: *const c_void = std::ptr::null();
            let mut data: *mut c_void = std::ptr::null_mut();
            // SAFETY: valid out pointers; `next` is DPDK's iteration cursor.
            let rc = unsafe {
                dpdk_sys::rte_hash_iterate(self.raw.as_ptr(), &mut key, &mut data, &mut next)
            };
            if rc < 0 || key.is_null() {
                break;
            }
            let mut k = [0u8; K];
            // SAFETY: key points to the table's K-byte copy of the key.
            unsafe { std::ptr::copy_nonoverlapping(key as *const u8, k.as_mut_ptr(), K) };
            out.push((k, data as usize as u64));
        }
        out
    }

    /// Approximate memory: DPDK sizes buckets of 8 entries plus key slots.
    pub fn memory_bytes(&self) -> usize {
        let entries = self.capacity.next_power_of_two() as usize;
        entries * (K + 16) + entries / 8 * 64
    }
}

impl<const K: usize> Drop for Hash<K> {
    fn drop(&mut self) {
        // SAFETY: no reader outlives the owner (tables are dropped after workers stop).
        unsafe { dpdk_sys::rte_hash_free(self.raw.as_ptr()) }
    }
}
