//! The packet-buffer trait the pipeline runs over, and its two carriers:
//! DPDK mbufs in the daemon, plain byte vectors in tests and the fuzzer.
use crate::dpdk::Mbuf;

/// What a stage may do to a packet's bytes.
pub trait PacketBuf {
    /// The packet, from the Ethernet header on.
    fn data(&self) -> &[u8];
    fn data_mut(&mut self) -> &mut [u8];
    /// Grows or shrinks the packet to `len` bytes (for building replies in
    /// place); false when the buffer cannot hold it.
    fn resize(&mut self, len: usize) -> bool;
    /// Hint that the packet will be read soon.
    #[inline(always)]
    fn prefetch(&self) {}
}

impl PacketBuf for Mbuf {
    #[inline(always)]
    fn data(&self) -> &[u8] {
        Mbuf::data(self)
    }
    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        Mbuf::data_mut(self)
    }
    #[inline]
    fn resize(&mut self, len: usize) -> bool {
        Mbuf::resize(self, len)
    }
    #[inline(always)]
    fn prefetch(&self) {
        self.prefetch_data()
    }
}

/// A heap packet for tests and fuzzing; capacity-limited like an mbuf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecPacket {
    pub bytes: Vec<u8>,
}

/// Largest packet a `VecPacket` may grow to (an mbuf's default data room).
pub const VEC_PACKET_MAX: usize = 2048;

impl VecPacket {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        VecPacket {
            bytes: bytes.into(),
        }
    }
}

impl PacketBuf for VecPacket {
    fn data(&self) -> &[u8] {
        &self.bytes
    }
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
    fn resize(&mut self, len: usize) -> bool {
        if len > VEC_PACKET_MAX {
            return false;
        }
        self.bytes.resize(len, 0);
        true
    }
}
