//! An owned packet buffer. `Mbuf` is one non-null pointer (`Option<Mbuf>` is
//! too), freed on drop, `Send` but not `Sync`. Per-packet accessors read the
//! bindgen struct fields directly so they inline; only alloc/free and
//! length changes go through the C shim.
use crate::burst::Burst;
use crate::pipeline::PacketBuf;
use std::ptr::NonNull;

#[repr(transparent)]
pub struct Mbuf(NonNull<dpdk_sys::rte_mbuf>);

// SAFETY: an mbuf is owned by exactly one Mbuf value; moving it between
// threads is how DPDK apps pass packets (rings). Not Sync: no shared access.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Takes ownership of a raw mbuf.
    ///
    /// # Safety
    /// `p` must be a valid, single-segment or chained mbuf owned by nobody else.
    #[inline]
    pub unsafe fn from_raw(p: NonNull<dpdk_sys::rte_mbuf>) -> Mbuf {
        Mbuf(p)
    }

    /// Gives up ownership; the caller must free or transmit the pointer.
    #[inline]
    pub fn into_raw(self) -> NonNull<dpdk_sys::rte_mbuf> {
        let p = self.0;
        std::mem::forget(self);
        p
    }

    #[inline(always)]
    fn raw(&self) -> &dpdk_sys::rte_mbuf {
        // SAFETY: self owns a live mbuf for its whole lifetime.
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn raw_mut(&mut self) -> &mut dpdk_sys::rte_mbuf {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { self.0.as_mut() }
    }

    /// Bytes in the first segment (the whole packet unless chained).
    #[inline(always)]
    pub fn data_len(&self) -> usize {
        self.raw().data_len as usize
    }

    /// Bytes of the whole packet, all segments.
    #[inline(always)]
    pub fn pkt_len(&self) -> usize {
        self.raw().pkt_len as usize
    }

    #[inline(always)]
    pub fn nb_segs(&self) -> u16 {
        self.raw().nb_segs
    }

    #[inline(always)]
    fn data_ptr(&self) -> *mut u8 {
        let m = self.raw();
        // SAFETY: buf_addr + data_off is inside the mbuf's buffer (DPDK invariant).
        unsafe { (m.buf_addr as *mut u8).add(m.data_off as usize) }
    }

    /// The first segment's packet bytes (rte_pktmbuf_mtod).
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        // SAFETY: data_len bytes from the data pointer are the segment's data,
        // owned by this mbuf and alive while &self is.
        unsafe { std::slice::from_raw_parts(self.data_ptr(), self.data_len()) }
    }

    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as data(); &mut self is exclusive. Refcount >1 (clones) is
        // never produced by this crate.
        unsafe { std::slice::from_raw_parts_mut(self.data_ptr(), self.data_len()) }
    }

    /// Input port set by the PMD on receive.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.raw().port
    }

    #[inline(always)]
    pub fn set_port(&mut self, port: u16) {
        self.raw_mut().port = port;
    }

    /// RTE_PTYPE_* bits from the PMD (0 when the device does not parse).
    #[inline(always)]
    pub fn packet_type(&self) -> u32 {
        // SAFETY: reading the u32 arm of a plain-data union.
        unsafe { self.raw().__bindgen_anon_1.packet_type }
    }

    /// RSS hash from the NIC, valid when `ol_flags` has RTE_MBUF_F_RX_RSS_HASH.
    #[inline(always)]
    pub fn rss_hash(&self) -> Option<u32> {
        if self.raw().ol_flags & dpdk_sys::RTE_MBUF_F_RX_RSS_HASH as u64 != 0 {
            // SAFETY: the flag says the rss arm is the valid one.
            Some(unsafe { self.raw().__bindgen_anon_2.hash.rss })
        } else {
            None
        }
    }

    #[inline(always)]
    pub fn ol_flags(&self) -> u64 {
        self.raw().ol_flags
    }

    #[inline(always)]
    pub fn set_ol_flags(&mut self, flags: u64) {
        self.raw_mut().ol_flags = flags;
    }

    /// Asks the port to fill in the IPv4 header checksum on transmit: the
    /// header is `l3_len` bytes after `l2_len` bytes of Ethernet (and VLAN)
    /// header. Only for a port with `RTE_ETH_TX_OFFLOAD_IPV4_CKSUM` enabled.
    #[inline(always)]
    pub fn request_ipv4_checksum(&mut self, l2_len: u8, l3_len: u8) {
        let m = self.raw_mut();
        m.ol_flags |= dpdk_sys::RTE_MBUF_F_TX_IPV4 | dpdk_sys::RTE_MBUF_F_TX_IP_CKSUM;
        // tx_offload's bit fields (rte_mbuf_core.h): l2_len 7 bits, then
        // l3_len 9 bits; the rest (L4, TSO, outer lengths) is unused here, so
        // one store sets them all, including any stale values.
        m.__bindgen_anon_3.tx_offload = u64::from(l2_len & 0x7f) | u64::from(l3_len) << 7;
    }

    /// Whether the receiving port verified the IPv4 header checksum and
    /// found it good (`RTE_MBUF_F_RX_IP_CKSUM_GOOD`; set only by a port
    /// with `RTE_ETH_RX_OFFLOAD_IPV4_CKSUM` enabled). Bad, unknown and
    /// "not verified" all read false: the pipeline verifies those itself.
    #[inline(always)]
    pub fn rx_ipv4_checksum_good(&self) -> bool {
        let mask = u64::from(dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_MASK);
        self.raw().ol_flags & mask == u64::from(dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_GOOD)
    }

    /// The (l2_len, l3_len) of a checksum request, if one is set.
    pub fn ipv4_checksum_request(&self) -> Option<(u8, u8)> {
        let m = self.raw();
        if m.ol_flags & dpdk_sys::RTE_MBUF_F_TX_IP_CKSUM == 0 {
            return None;
        }
        // SAFETY: reading the u64 arm of a plain-data union.
        let t = unsafe { m.__bindgen_anon_3.tx_offload };
        Some(((t & 0x7f) as u8, ((t >> 7) & 0x1ff) as u8))
    }

    /// Bytes free before the data (for prepend).
    #[inline]
    pub fn headroom(&self) -> usize {
        self.raw().data_off as usize
    }

    /// Bytes free after the last segment's data (for append).
    #[inline]
    pub fn tailroom(&self) -> usize {
        let m = self.raw();
        m.buf_len as usize - m.data_off as usize - m.data_len as usize
    }

    /// Extends the packet by `len` bytes at the end; `None` without tailroom.
    #[inline]
    pub fn append(&mut self, len: usize) -> Option<&mut [u8]> {
        let len16 = u16::try_from(len).ok()?;
        // SAFETY: self owns the mbuf; the shim returns NULL when it does not fit.
        let p = unsafe { dpdk_sys::shim_rte_pktmbuf_append(self.0.as_ptr(), len16) };
        if p.is_null() {
            return None;
        }
        // SAFETY: DPDK just made these len bytes part of the (last) segment.
        Some(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) })
    }

    /// Removes `len` bytes from the end; false if the packet is shorter.
    #[inline]
    pub fn trim(&mut self, len: usize) -> bool {
        let Ok(len16) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: self owns the mbuf; DPDK checks the length.
        unsafe { dpdk_sys::shim_rte_pktmbuf_trim(self.0.as_ptr(), len16) == 0 }
    }

    /// Grows or shrinks the packet to exactly `len` bytes. A chain only
    /// shrinks: the segments past `len` are freed ([`Mbuf::truncate`]).
    pub fn resize(&mut self, len: usize) -> bool {
        if self.nb_segs() != 1 || self.pkt_len() != self.data_len() {
            return len <= self.pkt_len() && self.truncate(len);
        }
        let cur = self.data_len();
        if len >= cur {
            self.append(len - cur).is_some()
        } else {
            self.trim(cur - len)
        }
    }

    /// Whether `pkt_len` and `nb_segs` agree with the segments: their
    /// `data_len`s add up to `pkt_len`, and there are `nb_segs` of them.
    /// Walks the chain (slow path).
    pub fn chain_ok(&self) -> bool {
        let head = self.raw();
        let (mut segs, mut bytes) = (0u32, 0u64);
        let mut seg: *const dpdk_sys::rte_mbuf = head;
        while !seg.is_null() {
            // SAFETY: `seg` is the head (owned by self) or a `next` of a
            // segment of this chain, which the chain owns; a chain ends
            // with a NULL `next` (DPDK invariant). The count bounds the
            // walk should a chain ever loop.
            let m = unsafe { &*seg };
            segs += 1;
            bytes += u64::from(m.data_len);
            if segs > u32::from(head.nb_segs) {
                return false;
            }
            seg = m.next;
        }
        segs == u32::from(head.nb_segs) && bytes == u64::from(head.pkt_len)
    }

    /// Cuts the packet to its first `len` bytes, over every segment: the
    /// segment holding byte `len` becomes the last and the ones after it
    /// are freed. False, changing nothing, when the packet is shorter or
    /// its chain does not add up ([`Mbuf::chain_ok`]).
    pub fn truncate(&mut self, len: usize) -> bool {
        if !self.chain_ok() || len > self.pkt_len() {
            return false;
        }
        let head: *mut dpdk_sys::rte_mbuf = self.0.as_ptr();
        let mut seg = head;
        let mut before = 0usize;
        let mut segs = 1u16;
        // SAFETY: the chain was just checked (chain_ok): every `next` up to
        // the last segment is a live segment owned by this chain, and the
        // data lengths add up to pkt_len >= len, so the walk stops at a
        // segment of the chain. The segments after the new last one are
        // detached before they are freed (rte_pktmbuf_free frees a segment
        // and all that follow it), so none is freed twice or left linked.
        unsafe {
            loop {
                let dl = usize::from((*seg).data_len);
                if before + dl >= len || (*seg).next.is_null() {
                    break;
                }
                before += dl;
                seg = (*seg).next;
                segs += 1;
            }
            (*seg).data_len = (len - before) as u16;
            let rest = (*seg).next;
            (*seg).next = std::ptr::null_mut();
            if !rest.is_null() {
                dpdk_sys::shim_rte_pktmbuf_free(rest);
            }
            (*head).nb_segs = segs;
            (*head).pkt_len = len as u32;
        }
        true
    }

    /// Appends `tail` (a packet of its own, single or chained) to this
    /// packet's chain: what a PMD builds of a frame larger than one buffer
    /// (tests use it to make such frames).
    pub fn chain(&mut self, tail: Mbuf) -> bool {
        let segs = u32::from(self.nb_segs()) + u32::from(tail.nb_segs());
        let Ok(segs) = u16::try_from(segs) else {
            return false;
        };
        let Some(len) = (self.raw().pkt_len).checked_add(tail.raw().pkt_len) else {
            return false;
        };
        let head = self.0.as_ptr();
        let tail = tail.into_raw().as_ptr();
        // SAFETY: self owns the chain from `head`, whose last segment has
        // a NULL `next` (DPDK invariant); linking `tail` there hands its
        // ownership to the chain (into_raw gave it up), and the head's
        // totals are updated to cover it.
        unsafe {
            let mut last = head;
            while !(*last).next.is_null() {
                last = (*last).next;
            }
            (*last).next = tail;
            (*head).nb_segs = segs;
            (*head).pkt_len = len;
        }
        true
    }

    /// Extends the packet by `len` bytes at the front; `None` without headroom.
    /// `rte_pktmbuf_prepend` in Rust over the header fields, inlined: it
    /// runs per packet in the load balancer's encapsulation (the shim's
    /// call cost more than its three stores).
    #[inline(always)]
    pub fn prepend(&mut self, len: usize) -> Option<&mut [u8]> {
        let len16 = u16::try_from(len).ok()?;
        let m = self.raw_mut();
        if len16 > m.data_off {
            return None;
        }
        m.data_off -= len16;
        m.data_len += len16;
        m.pkt_len += u32::from(len16);
        let p = m.buf_addr as *mut u8;
        let off = usize::from(m.data_off);
        // SAFETY: the first segment's buffer holds `buf_len` bytes from
        // `buf_addr`; `data_off` was at least `len` bytes in, so the new
        // front `len` bytes lie inside the buffer, owned through `self`.
        Some(unsafe { std::slice::from_raw_parts_mut(p.add(off), len) })
    }

    /// Removes `len` bytes from the front; false if the segment is shorter.
    #[inline]
    pub fn adj(&mut self, len: usize) -> bool {
        let Ok(len16) = u16::try_from(len) else {
            return false;
        };
        // SAFETY: self owns the mbuf; DPDK checks the length.
        unsafe { !dpdk_sys::shim_rte_pktmbuf_adj(self.0.as_ptr(), len16).is_null() }
    }

    /// The raw pointer, for tests that must break an mbuf's invariants.
    #[cfg(test)]
    pub(crate) fn clone_ptr_for_test(&mut self) -> *mut dpdk_sys::rte_mbuf {
        self.0.as_ptr()
    }

    /// Prefetches the mbuf header's first cache line.
    #[inline(always)]
    pub fn prefetch_header(&self) {
        super::prefetch(self.0.as_ptr());
    }

    /// Prefetches the first cache line of packet data.
    #[inline(always)]
    pub fn prefetch_data(&self) {
        super::prefetch(self.data_ptr());
    }
}

/// The pipeline runs over mbufs in the daemon.
impl PacketBuf for Mbuf {
    #[inline(always)]
    fn data(&self) -> &[u8] {
        Mbuf::data(self)
    }
    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        Mbuf::data_mut(self)
    }
    #[inline(always)]
    fn rx_ipv4_checksum_good(&self) -> bool {
        Mbuf::rx_ipv4_checksum_good(self)
    }
    #[inline(always)]
    fn pkt_len(&self) -> usize {
        Mbuf::pkt_len(self)
    }
    fn chain_ok(&self) -> bool {
        Mbuf::chain_ok(self)
    }
    #[inline]
    fn resize(&mut self, len: usize) -> bool {
        Mbuf::resize(self, len)
    }
    #[inline(always)]
    fn request_ipv4_checksum(&mut self, l2_len: u8, l3_len: u8) {
        Mbuf::request_ipv4_checksum(self, l2_len, l3_len)
    }
    #[inline]
    fn prepend(&mut self, len: usize) -> bool {
        Mbuf::prepend(self, len).is_some()
    }
    #[inline]
    fn adj(&mut self, len: usize) -> bool {
        Mbuf::adj(self, len)
    }
    #[inline(always)]
    fn prefetch(&self) {
        self.prefetch_data()
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the mbuf; freeing returns it (and its chain) to its pool.
        unsafe { dpdk_sys::shim_rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// Frees every packet of a burst with one `rte_pktmbuf_free_bulk` call and
/// leaves the burst empty. Empty slots (None = NULL) are skipped by DPDK.
pub fn free_bulk<const N: usize>(burst: &mut Burst<Mbuf, N>) {
    let len = burst.len();
    if len == 0 {
        return;
    }
    let slots = burst.slots_mut();
    // SAFETY: Option<Mbuf> has the layout of *mut rte_mbuf (repr(transparent)
    // NonNull, None = NULL); free_bulk accepts NULL entries. Afterwards the
    // slots are overwritten with None without running Mbuf's Drop.
    unsafe {
        dpdk_sys::rte_pktmbuf_free_bulk(
            slots.as_mut_ptr() as *mut *mut dpdk_sys::rte_mbuf,
            len as u32,
        );
        for s in &mut slots[..len] {
            std::ptr::write(s, None);
        }
    }
    burst.set_len(0);
}

/// The burst's slot array as DPDK's `struct rte_mbuf **`.
#[inline(always)]
pub(crate) fn slots_as_raw<const N: usize>(
    burst: &mut Burst<Mbuf, N>,
) -> *mut *mut dpdk_sys::rte_mbuf {
    burst.slots_mut().as_mut_ptr() as *mut *mut dpdk_sys::rte_mbuf
}

const _: () = assert!(std::mem::size_of::<Option<Mbuf>>() == std::mem::size_of::<usize>());
