//! The packet-buffer trait the pipeline runs over, and its two carriers:
//! DPDK mbufs in the daemon (the impl lives with `Mbuf`, in `dpdk::mbuf`),
//! plain byte vectors in tests and the fuzzer.

/// What a stage may do to a packet's bytes.
///
/// A packet may be a chain of segments (an mbuf chain: what a PMD makes of
/// a frame larger than one buffer). Stages read and write only the first
/// segment ([`PacketBuf::data`]); [`PacketBuf::pkt_len`] is the whole
/// packet's length, and shrinking it ([`PacketBuf::resize`]) may free
/// later segments. The router forwards single-segment packets only (see
/// `parse`: a packet still chained once trimmed to its IP length is larger
/// than any port's MTU).
pub trait PacketBuf {
    /// The packet's first segment (all of it unless chained), from the
    /// Ethernet header on.
    fn data(&self) -> &[u8];
    fn data_mut(&mut self) -> &mut [u8];
    /// The whole packet's length, every segment included: `data().len()`
    /// unless chained.
    #[inline(always)]
    fn pkt_len(&self) -> usize {
        self.data().len()
    }
    /// Whether the packet's length agrees with its segments (an mbuf's
    /// `pkt_len` with the sum of its segments' `data_len`, `nb_segs` with
    /// their number). Asked only of packets whose `pkt_len` differs from
    /// their first segment's length (slow path).
    fn chain_ok(&self) -> bool {
        true
    }
    /// Grows or shrinks the packet to `len` bytes (for building replies in
    /// place, and for trimming a frame to its IP length); false when the
    /// buffer cannot hold it. Shrinking a chain frees the segments past
    /// `len`; a chain cannot grow.
    fn resize(&mut self, len: usize) -> bool;
    /// Leaves the IPv4 header checksum to the output port's TX offload: the
    /// header is `l3_len` bytes at offset `l2_len`. Only called for ports
    /// that have the offload enabled (`NextHop::ipv4_checksum_offload`).
    fn request_ipv4_checksum(&mut self, l2_len: u8, l3_len: u8);
    /// Grows the packet by `len` bytes at the front (mbuf headroom), for a
    /// stage that encapsulates; the new bytes are the start of `data()` and
    /// their content is unspecified. False, changing nothing, without room.
    fn prepend(&mut self, len: usize) -> bool;
    /// Removes `len` bytes from the front (decapsulation); false, changing
    /// nothing, when the packet is shorter.
    fn adj(&mut self, len: usize) -> bool;
    /// Whether the receiving device verified the packet's IPv4 header
    /// checksum and found it good (an mbuf's RX offload flag): the lane
    /// then skips its own sum, as l3fwd leaves the check to the NIC. Only
    /// asked of frames from ports with the offload enabled
    /// (`Pipeline::set_rx_checksum_ports`); false where unknown.
    #[inline(always)]
    fn rx_ipv4_checksum_good(&self) -> bool {
        false
    }
    /// Hint that the packet will be read soon.
    #[inline(always)]
    fn prefetch(&self) {}
}

/// A heap packet for tests and fuzzing; capacity-limited like an mbuf,
/// with an mbuf's headroom in front of the data. It may stand for a chain:
/// `bytes` is then the first segment and `more` the length of the rest,
/// whose content is not kept (zeros): the pipeline never reads past the
/// first segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecPacket {
    /// The (first) segment's bytes.
    pub bytes: Vec<u8>,
    /// Bytes that `prepend` may still add at the front (an mbuf's
    /// `RTE_PKTMBUF_HEADROOM` when new). A `u16` as an mbuf's `data_off`
    /// (it keeps the struct at 32 bytes: the benches move it per packet).
    pub headroom: u16,
    /// Bytes in later segments (0: not a chain).
    pub more: u16,
    /// The `(l2_len, l3_len)` of a TX checksum request, as an mbuf keeps it
    /// for the port; [`VecPacket::transmitted`] plays the device's part.
    pub ipv4_checksum_request: Option<(u8, u8)>,
    /// A chain whose length disagrees with its segments
    /// ([`PacketBuf::chain_ok`] is false), as net_pcap makes of records
    /// over 65,535 bytes.
    pub broken: bool,
}

/// Largest packet a `VecPacket` may grow to (an mbuf's default data room).
pub const VEC_PACKET_MAX: usize = 2048;
/// A new `VecPacket`'s headroom: DPDK's default `RTE_PKTMBUF_HEADROOM`.
pub const VEC_PACKET_HEADROOM: u16 = 128;

impl VecPacket {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        VecPacket {
            bytes: bytes.into(),
            headroom: VEC_PACKET_HEADROOM,
            more: 0,
            ipv4_checksum_request: None,
            broken: false,
        }
    }

    /// A chain: `first` as its first segment, then `more` bytes (zeros) in
    /// later segments.
    pub fn chained(first: impl Into<Vec<u8>>, more: u16) -> Self {
        VecPacket {
            more,
            ..VecPacket::new(first)
        }
    }

    /// A chain as [`VecPacket::chained`] whose length disagrees with its
    /// segments ([`VecPacket::broken`]).
    pub fn broken_chain(first: impl Into<Vec<u8>>, more: u16) -> Self {
        VecPacket {
            broken: true,
            ..VecPacket::chained(first, more)
        }
    }

    /// The bytes a device with IPv4 checksum offload puts on the wire: the
    /// requested header's checksum computed in full (as DPDK's
    /// `rte_ipv4_cksum`, which the tap PMD uses); the bytes as they are
    /// without a request. A chain's later segments are zeros.
    pub fn transmitted(&self) -> Vec<u8> {
        let mut b = self.bytes.clone();
        b.resize(b.len() + usize::from(self.more), 0);
        if let Some((l2, l3)) = self.ipv4_checksum_request {
            let (l2, l3) = (usize::from(l2), usize::from(l3));
            if let Some(h) = b.get_mut(l2..l2 + l3) {
                h[10..12].fill(0);
                let c = crate::wire::checksum::internet_checksum(h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
        }
        b
    }
}

impl PacketBuf for VecPacket {
    fn data(&self) -> &[u8] {
        &self.bytes
    }
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
    #[inline(always)]
    fn pkt_len(&self) -> usize {
        self.bytes.len() + usize::from(self.more)
    }
    fn chain_ok(&self) -> bool {
        !self.broken
    }
    fn request_ipv4_checksum(&mut self, l2_len: u8, l3_len: u8) {
        self.ipv4_checksum_request = Some((l2_len, l3_len));
    }
    fn resize(&mut self, len: usize) -> bool {
        if self.more != 0 {
            // A chain: shrinks only, as an mbuf chain does, and not at all
            // when broken (`Mbuf::truncate`).
            if len > self.pkt_len() || self.broken {
                return false;
            }
            if len <= self.bytes.len() {
                self.bytes.truncate(len);
                self.more = 0;
            } else {
                self.more = (len - self.bytes.len()) as u16;
            }
            return true;
        }
        if len > VEC_PACKET_MAX.max(self.bytes.len()) {
            return false;
        }
        self.bytes.resize(len, 0);
        true
    }
    fn prepend(&mut self, len: usize) -> bool {
        if len > usize::from(self.headroom) {
            return false;
        }
        self.headroom -= len as u16;
        // The bytes move up by `len` (an mbuf moves its data pointer down);
        // the new front keeps stale bytes, as `prepend` allows.
        let old = self.bytes.len();
        self.bytes.resize(old + len, 0);
        self.bytes.copy_within(..old, len);
        true
    }
    fn adj(&mut self, len: usize) -> bool {
        if len > self.bytes.len() {
            return false;
        }
        self.bytes.drain(..len);
        self.headroom = self
            .headroom
            .saturating_add(len.min(usize::from(u16::MAX)) as u16);
        true
    }
}

const _: () = assert!(std::mem::size_of::<VecPacket>() == 32);

/// Tests: a frame as a device with IPv4 checksum offload hands it over,
/// `good` its RX flag ([`PacketBuf::rx_ipv4_checksum_good`]).
#[cfg(test)]
#[derive(Clone)]
pub struct NicPacket {
    pub pkt: VecPacket,
    pub good: bool,
}

#[cfg(test)]
impl PacketBuf for NicPacket {
    fn data(&self) -> &[u8] {
        self.pkt.data()
    }
    fn data_mut(&mut self) -> &mut [u8] {
        self.pkt.data_mut()
    }
    fn pkt_len(&self) -> usize {
        self.pkt.pkt_len()
    }
    fn chain_ok(&self) -> bool {
        self.pkt.chain_ok()
    }
    fn resize(&mut self, len: usize) -> bool {
        self.pkt.resize(len)
    }
    fn request_ipv4_checksum(&mut self, l2_len: u8, l3_len: u8) {
        self.pkt.request_ipv4_checksum(l2_len, l3_len)
    }
    fn prepend(&mut self, len: usize) -> bool {
        self.pkt.prepend(len)
    }
    fn adj(&mut self, len: usize) -> bool {
        self.pkt.adj(len)
    }
    fn rx_ipv4_checksum_good(&self) -> bool {
        self.good
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_uses_headroom_and_adj_gives_it_back() {
        let mut p = VecPacket::new(vec![1, 2, 3]);
        assert!(p.prepend(20));
        assert_eq!(p.bytes.len(), 23);
        assert_eq!(&p.bytes[20..], &[1, 2, 3]);
        p.data_mut()[..20].fill(9);
        assert_eq!(p.headroom, VEC_PACKET_HEADROOM - 20);
        assert!(
            !p.prepend(usize::from(VEC_PACKET_HEADROOM)),
            "more than the headroom left"
        );
        assert_eq!(p.bytes.len(), 23, "a refused prepend changes nothing");
        assert!(p.adj(20));
        assert_eq!(p.bytes, vec![1, 2, 3]);
        assert_eq!(p.headroom, VEC_PACKET_HEADROOM);
        assert!(!p.adj(4), "longer than the packet");
        assert_eq!(p.bytes, vec![1, 2, 3]);
    }
}
