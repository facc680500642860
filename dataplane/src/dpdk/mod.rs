//! Safe wrappers over DPDK: the only module allowed `unsafe`.
//!
//! It owns the EAL, mempools, mbufs, ports, rings and the DPDK-backed lookup
//! tables, and promises that nothing outside it can cause undefined behaviour
//! through them: raw pointers never escape, owners free what they own on drop,
//! and every C return code goes through [`error::check`] into a [`DpdkError`].
#![allow(unsafe_code)]

pub mod acl;
pub mod eal;
pub mod error;
pub mod hash;
pub mod lpm;
pub mod mbuf;
pub mod mempool;
pub mod port;
pub mod ring;

pub use eal::{Eal, LcoreId};
pub use error::DpdkError;
pub use mbuf::Mbuf;
pub use mempool::Mempool;
pub use port::{Port, PortConfig, PortId, QueueId};
pub use ring::Ring;

/// Reads the CPU's time-stamp counter: the clock of every hot loop.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: plain call into the shim, no arguments.
        unsafe { dpdk_sys::shim_rte_rdtsc() }
    }
}

/// Hint the CPU to pull `p`'s cache line into L1 (rte_prefetch0).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests;
