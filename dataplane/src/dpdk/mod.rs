//! Safe wrappers over DPDK: the only module allowed `unsafe`.
//!
//! It owns the EAL, mempools, mbufs, ports, rings and the DPDK-backed lookup
//! tables, and promises that nothing outside it can cause undefined behaviour
//! through them: raw pointers never escape, owners free what they own on drop,
//! and every C return code goes through [`error::check`] into a [`DpdkError`].
#![allow(unsafe_code)]

pub mod acl;
pub mod af_packet;
pub mod bigmem;
pub mod eal;
pub mod error;
pub mod hash;
pub mod lpm;
pub mod mbuf;
pub mod mempool;
#[cfg(feature = "pmd-cycles")]
pub mod pmd_cycles;
pub mod port;
pub mod ring;
pub mod sched;
pub mod tap_signals;
pub mod telemetry;

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

/// A bit per element of `v` equal to `x` (bit `i` for `v[i]`): two vector
/// compares and a move-mask where the scalar loop does not vectorise.
#[inline(always)]
pub fn match_mask8(v: &[u32; 8], x: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline; the loads read the 32
    // bytes of `v`, unaligned loads allowed.
    unsafe {
        use core::arch::x86_64::*;
        let p = v.as_ptr() as *const __m128i;
        let k = _mm_set1_epi32(x as i32);
        let lo = _mm_cmpeq_epi32(_mm_loadu_si128(p), k);
        let hi = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(1)), k);
        let eq8 = _mm_packs_epi16(_mm_packs_epi32(lo, hi), _mm_setzero_si128());
        _mm_movemask_epi8(eq8) as u32
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u32;
        for (i, &e) in v.iter().enumerate() {
            m |= u32::from(e == x) << i;
        }
        m
    }
}

#[cfg(test)]
mod tests;
