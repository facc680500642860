//! `rte_ring` of mbuf pointers: lock-free, zero-copy hand-off of packets
//! between lcores (worker ↔ control, pipelines spanning cores).
//!
//! A single-producer/single-consumer ring is handed out as two tokens
//! ([`Ring::spsc`]): one [`RingProducer`] and one [`RingConsumer`], neither
//! `Clone`, each taking `&mut self` to move packets. So the SPSC contract —
//! one enqueuing thread, one dequeuing thread — is kept by ownership, as
//! `RxQueue`/`TxQueue` tokens keep one poller per NIC queue.
use super::error::{self, DpdkError};
use super::mbuf::{slots_as_raw, Mbuf};
use crate::burst::Burst;
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::Arc;

pub struct Ring {
    raw: NonNull<dpdk_sys::rte_ring>,
}

// SAFETY: rte_ring is a multi-producer/multi-consumer lock-free queue unless
// created single-producer/consumer, in which case `Ring::new`'s contract
// (one producer / one consumer thread) is the caller's to keep.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

/// How many threads may enqueue and dequeue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingSync {
    /// Single producer, single consumer: cheapest.
    Spsc,
    /// Multi producer, multi consumer.
    Mpmc,
}

impl Ring {
    /// Creates a ring of `count` slots (power of two; usable count - 1).
    pub fn new(name: &str, count: u32, socket: i32, sync: RingSync) -> Result<Ring, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError::Invalid("ring name".into()))?;
        let flags = match sync {
            RingSync::Spsc => dpdk_sys::RING_F_SP_ENQ | dpdk_sys::RING_F_SC_DEQ,
            RingSync::Mpmc => 0,
        };
        // SAFETY: cname outlives the call; DPDK copies the name.
        let p = unsafe { dpdk_sys::rte_ring_create(cname.as_ptr(), count, socket, flags) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_ring_create"))?;
        Ok(Ring { raw })
    }

    /// Moves as many packets of `burst` as fit into the ring; those that did
    /// not fit stay in the burst (compacted to the front).
    #[inline]
    pub fn enqueue_burst<const N: usize>(&self, burst: &mut Burst<Mbuf, N>) -> usize {
        let len = burst.len();
        if len == 0 {
            return 0;
        }
        let slots = slots_as_raw(burst);
        // SAFETY: slots[..len] are owned mbufs; the ring takes ownership of the
        // first n, which we then clear without dropping.
        let n = unsafe {
            dpdk_sys::shim_rte_ring_enqueue_burst(
                self.raw.as_ptr(),
                slots as *const *mut libc::c_void,
                len as u32,
                std::ptr::null_mut(),
            )
        } as usize;
        let s = burst.slots_mut();
        for slot in &mut s[..n] {
            // SAFETY: ownership moved into the ring: forget without freeing.
            unsafe { std::ptr::write(slot, None) };
        }
        if n == len {
            burst.set_len(0);
        } else {
            burst.compact();
        }
        n
    }

    /// Fills the free tail of `burst` from the ring; returns how many came.
    #[inline]
    pub fn dequeue_burst<const N: usize>(&self, burst: &mut Burst<Mbuf, N>) -> usize {
        let len = burst.len();
        let room = N - len;
        if room == 0 {
            return 0;
        }
        let slots = slots_as_raw(burst);
        // SAFETY: slots[len..N] are None (NULL); the ring writes up to `room`
        // owned mbuf pointers there, which the burst then owns.
        let n = unsafe {
            dpdk_sys::shim_rte_ring_dequeue_burst(
                self.raw.as_ptr(),
                slots.add(len) as *mut *mut libc::c_void,
                room as u32,
                std::ptr::null_mut(),
            )
        } as usize;
        burst.set_len(len + n);
        n
    }

    pub fn count(&self) -> u32 {
        // SAFETY: raw is a live ring.
        unsafe { dpdk_sys::shim_rte_ring_count(self.raw.as_ptr()) }
    }

    /// Frees whatever packets are still queued (shutdown).
    pub fn drain(&self) -> usize {
        let mut b: Burst<Mbuf> = Burst::new();
        let mut total = 0;
        loop {
            let n = self.dequeue_burst(&mut b);
            if n == 0 {
                return total;
            }
            total += n;
            super::mbuf::free_bulk(&mut b);
        }
    }
}

/// The one right to enqueue into a single-producer ring. Not `Clone`.
pub struct RingProducer {
    ring: Arc<Ring>,
}

/// The one right to dequeue from a single-consumer ring. Not `Clone`.
pub struct RingConsumer {
    ring: Arc<Ring>,
}

impl Ring {
    /// A single-producer/single-consumer ring (`RING_F_SP_ENQ |
    /// RING_F_SC_DEQ`) of `count` slots (a power of two; `count - 1`
    /// usable), as its two ends plus a handle for whoever frees it (the
    /// ring is freed when the last of the three goes; [`Ring::count`] on
    /// the handle tells what is still queued).
    pub fn spsc(
        name: &str,
        count: u32,
        socket: i32,
    ) -> Result<(Arc<Ring>, RingProducer, RingConsumer), DpdkError> {
        let ring = Arc::new(Ring::new(name, count, socket, RingSync::Spsc)?);
        Ok((
            ring.clone(),
            RingProducer { ring: ring.clone() },
            RingConsumer { ring },
        ))
    }
}

impl RingProducer {
    /// [`Ring::enqueue_burst`]: what did not fit stays in `burst`.
    #[inline(always)]
    pub fn enqueue_burst<const N: usize>(&mut self, burst: &mut Burst<Mbuf, N>) -> usize {
        self.ring.enqueue_burst(burst)
    }
}

impl RingConsumer {
    /// [`Ring::dequeue_burst`] into the free tail of `burst`.
    #[inline(always)]
    pub fn dequeue_burst<const N: usize>(&mut self, burst: &mut Burst<Mbuf, N>) -> usize {
        self.ring.dequeue_burst(burst)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.drain();
        // SAFETY: raw is a live ring nobody else uses any more (owner dropped).
        unsafe { dpdk_sys::rte_ring_free(self.raw.as_ptr()) }
    }
}
