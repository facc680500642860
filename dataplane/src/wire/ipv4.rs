//! IPv4 (RFC 791): the [`Ipv4Packet`] view, its header checksum, the
//! forwarding fast path's TTL decrement ([`decrement_ttl_v4`], the one
//! helper the router and [`Ipv4Packet::decrement_ttl_update_checksum`] use),
//! and [`Ipv4Repr`] for building replies.
//!
//! The buffer may be longer than the total length (Ethernet pads short
//! frames to 60 bytes): [`Ipv4Packet::payload`] stops at the total length, so
//! padding never reaches L4.

use std::net::Ipv4Addr;

use super::checksum;
use super::ip::IpProtocol;
use super::{be16, Error, Result};

mod field {
    use core::ops::Range;

    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer`, checking version and length fields against each other
    /// and the buffer. The header checksum is not checked
    /// ([`Ipv4Packet::verify_checksum`]).
    ///
    /// # Errors
    /// In this order:
    /// - [`Error::Truncated`]: buffer shorter than 20 bytes.
    /// - [`Error::BadVersion`]: version != 4.
    /// - [`Error::BadHeaderLen`]: IHL < 5, or IHL * 4 > buffer length.
    /// - [`Error::BadTotalLen`]: total length < IHL * 4, or > buffer length.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// The checks `new_checked` performs.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::BadVersion);
        }
        let hlen = self.header_len();
        if hlen < HEADER_LEN || hlen > len {
            return Err(Error::BadHeaderLen);
        }
        let tlen = usize::from(self.total_len());
        if tlen < hlen || tlen > len {
            return Err(Error::BadTotalLen);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (4 for a checked packet).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Internet header length in 32-bit words.
    #[inline]
    pub fn ihl(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] & 0x0f
    }

    /// Header length in bytes (IHL * 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// Differentiated services code point.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification.
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length (header and payload) in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }

    #[inline]
    fn flags_offset(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::FLG_OFF])
    }

    /// Don't Fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.flags_offset() & FLAG_DF != 0
    }

    /// More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.flags_offset() & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (self.flags_offset() & FRAG_OFFSET_MASK) << 3
    }

    /// Is this any fragment (MF set or non-zero offset)?
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flags_offset() & (FLAG_MF | FRAG_OFFSET_MASK) != 0
    }

    /// Is this a fragment other than the first? Its payload does not start
    /// with an L4 header, so ports must not be read.
    #[inline]
    pub fn is_non_first_fragment(&self) -> bool {
        self.flags_offset() & FRAG_OFFSET_MASK != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum as stored.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// The header bytes, options included.
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// Options (empty when IHL is 5).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The payload: from the end of the header to the total length (Ethernet
    /// padding excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }

    /// Does the header checksum verify?
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.header()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version.
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Sets the header length in bytes (must be a multiple of 4, 20..=60).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len.is_multiple_of(4) && (HEADER_LEN..=60).contains(&len));
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    /// Sets the DSCP (low 6 bits).
    #[inline]
    pub fn set_dscp(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (v << 2);
    }

    /// Sets the ECN bits (low 2 bits).
    #[inline]
    pub fn set_ecn(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0xfc) | (v & 0x03);
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    fn set_flags_offset(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the Don't Fragment flag.
    #[inline]
    pub fn set_dont_frag(&mut self, v: bool) {
        let f = self.flags_offset() & !FLAG_DF;
        self.set_flags_offset(f | if v { FLAG_DF } else { 0 });
    }

    /// Sets the More Fragments flag.
    #[inline]
    pub fn set_more_frags(&mut self, v: bool) {
        let f = self.flags_offset() & !FLAG_MF;
        self.set_flags_offset(f | if v { FLAG_MF } else { 0 });
    }

    /// Sets the fragment offset in bytes (must be a multiple of 8).
    #[inline]
    pub fn set_frag_offset(&mut self, bytes: u16) {
        debug_assert!(bytes.is_multiple_of(8));
        let f = self.flags_offset() & !FRAG_OFFSET_MASK;
        self.set_flags_offset(f | (bytes >> 3));
    }

    /// Sets the TTL (the checksum is not updated; see
    /// [`Ipv4Packet::decrement_ttl_update_checksum`]).
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = u8::from(v);
    }

    /// Sets the stored header checksum.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, v: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&v.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, v: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&v.octets());
    }

    /// Mutable options.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Mutable payload (header end to total length).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[start..end]
    }

    /// Recomputes and stores the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet_checksum(self.header());
        self.set_checksum(c);
    }

    /// Forwarding fast path: decrements the TTL and patches the header
    /// checksum incrementally (RFC 1624 eqn. 3), without summing the header.
    /// Returns the new TTL.
    ///
    /// The caller decides first whether to forward at all (a router sends
    /// ICMP Time Exceeded instead when the TTL is <= 1). A TTL of 0 is left
    /// unchanged, checksum included, and 0 is returned.
    #[inline]
    pub fn decrement_ttl_update_checksum(&mut self) -> u8 {
        let ttl = self.ttl();
        if ttl == 0 {
            return 0;
        }
        decrement_ttl_v4(self.buffer.as_mut());
        ttl - 1
    }
}

/// The checksum `header` should carry, whatever its checksum field (bytes
/// 10..12) holds: the field counts as zero. `header` is the header as its
/// IHL should say (options included), at least 12 bytes: a generator that
/// writes a wrong IHL or checksum on purpose still gets the right sum of
/// the bytes it wrote.
pub fn header_checksum(header: &[u8]) -> u16 {
    !checksum::add(checksum::sum(&header[..10]), checksum::sum(&header[12..]))
}

/// Takes one off an IPv4 header's TTL and patches its checksum. TTL is the
/// high byte of the 16-bit word at offset 8, so the checksum gains 0x0100
/// (RFC 1624 eqn. 3 with m' = m - 0x0100), end-around carry included; a
/// result of 0xffff is written as 0x0000, as a full recomputation gives.
/// The TTL must be at least 1 (callers decide first: a router sends Time
/// Exceeded for a TTL <= 1).
///
/// Read as one little-endian word, bytes 8..12 hold the TTL at bit 0 and
/// the checksum's high byte at bit 16, its low byte at bit 24: adding
/// 0xffff takes one off the TTL (no borrow, as it is not 0) and adds 0x0100
/// to the checksum, whose carry out of the high byte lands on the low byte,
/// which is the end-around carry. Only a low byte of 0xff breaks that (its
/// own carry would leave the word, and 0xfeff + 0x0100 makes 0xffff, to be
/// written as 0x0000): those checksums, one in 256, take the 16-bit sum.
#[inline(always)]
pub fn decrement_ttl_v4(ip: &mut [u8]) {
    let w: &mut [u8; 4] = (&mut ip[8..12]).try_into().expect("4 bytes");
    debug_assert!(w[0] != 0, "decrement_ttl_v4 on a TTL of 0");
    if w[3] != 0xff {
        *w = u32::from_le_bytes(*w).wrapping_add(0xffff).to_le_bytes();
    } else {
        decrement_ttl_v4_by_sum(ip);
    }
}

/// [`decrement_ttl_v4`] by the 16-bit one's-complement sum, right for every
/// checksum. The sum is taken on the checksum read little-endian, where the
/// change is + 1: a one's-complement sum does not depend on byte order
/// (RFC 1071), and 0xffff reads the same both ways.
#[cold]
#[inline(never)]
fn decrement_ttl_v4_by_sum(ip: &mut [u8]) {
    ip[8] -= 1;
    let c = u32::from(u16::from_le_bytes([ip[10], ip[11]])) + 1;
    let c = ((c & 0xffff) + (c >> 16)) as u16;
    let c = if c == 0xffff { 0 } else { c };
    ip[10..12].copy_from_slice(&c.to_le_bytes());
}

/// Takes one off an IPv4 header's TTL for a port that computes the header
/// checksum itself (TX offload): the field is zeroed, as devices expect.
#[inline(always)]
pub fn decrement_ttl_v4_offloaded(ip: &mut [u8]) {
    ip[8] -= 1;
    ip[10..12].fill(0);
}

/// The parsed form of an IPv4 header, without options or fragmentation.
///
/// `emit` writes a 20-byte header with DSCP/ECN 0, identification 0 and DF
/// set: the router only originates small control replies, and an atomic
/// datagram may carry identification 0 (RFC 6864).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: IpProtocol,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    pub ttl: u8,
}

impl Ipv4Repr {
    /// Reads a header, verifying its checksum. Options are skipped.
    ///
    /// # Errors
    /// - Those of [`Ipv4Packet::check_len`] (for unchecked views).
    /// - [`Error::BadChecksum`] if the header checksum does not verify.
    /// - [`Error::Unsupported`] for a fragment: a reply needs the whole
    ///   datagram, and the router does not reassemble.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self> {
        p.check_len()?;
        if !p.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        if p.is_fragment() {
            return Err(Error::Unsupported);
        }
        Ok(Ipv4Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
        })
    }

    /// Bytes `emit` writes: the 20-byte header (the payload follows it).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header and its checksum.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`]. `payload_len` must be
    /// at most 65515 (debug-asserted).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        let d = p.buffer.as_mut();
        d[field::VER_IHL] = 0x45;
        d[field::DSCP_ECN] = 0;
        p.set_total_len((HEADER_LEN + self.payload_len) as u16);
        p.set_ident(0);
        p.set_flags_offset(FLAG_DF);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const PACKET: [u8; 30] = [
        0x46,                   // version 4, IHL 6 (one option word)
        0xb8,                   // DSCP 46 (EF), ECN 0
        0x00, 0x1c,             // total length 28
        0x12, 0x34,             // identification
        0x40, 0x00,             // DF, offset 0
        0x40,                   // TTL 64
        0x11,                   // protocol UDP
        0x00, 0x00,             // checksum (filled in by the tests)
        0x0a, 0x00, 0x00, 0x01, // source 10.0.0.1
        0xc0, 0xa8, 0x01, 0x02, // destination 192.168.1.2
        0x01, 0x01, 0x01, 0x00, // options: NOP, NOP, NOP, EOL
        0xde, 0xad, 0xbe, 0xef, // payload
        0x00, 0x00,             // Ethernet padding, beyond total length
    ];

    #[rustfmt::skip]
    const IPV4_HEADER: [u8; 20] = [
        0x45, 0x00,             // version 4, IHL 5; DSCP/ECN 0
        0x00, 0x73,             // total length 115
        0x00, 0x00,             // identification 0
        0x40, 0x00,             // DF, fragment offset 0
        0x40, 0x11,             // TTL 64, protocol UDP
        0xb8, 0x61,             // header checksum
        0xc0, 0xa8, 0x00, 0x01, // source 192.168.0.1
        0xc0, 0xa8, 0x00, 0xc7, // destination 192.168.0.199
    ];

    #[test]
    fn header_checksum_ignores_the_field() {
        // The classic Wikipedia example header: the stored field is ignored.
        assert_eq!(header_checksum(&IPV4_HEADER), 0xb861);
        let mut zeroed = IPV4_HEADER;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(header_checksum(&zeroed), 0xb861);
    }

    #[test]
    fn header_checksum_covers_options() {
        let mut b = PACKET;
        Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        let h = &b[..24];
        assert_eq!(header_checksum(h), u16::from_be_bytes([h[10], h[11]]));
    }

    fn packet() -> [u8; 30] {
        let mut b = PACKET;
        Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        b
    }

    #[test]
    fn getters() {
        let b = packet();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.ihl(), 6);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.dscp(), 46);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.total_len(), 28);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert!(!p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::Udp);
        assert_eq!(p.src_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 1, 2));
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        assert!(p.verify_checksum());
        assert_ne!(p.checksum(), 0);
    }

    #[test]
    fn truncated_at_every_offset() {
        let b = packet();
        for n in 0..28 {
            let e = Ipv4Packet::new_checked(&b[..n]).unwrap_err();
            let expect = match n {
                0..=19 => Error::Truncated,
                20..=23 => Error::BadHeaderLen,
                _ => Error::BadTotalLen,
            };
            assert_eq!(e, expect, "n={n}");
        }
        assert!(Ipv4Packet::new_checked(&b[..28]).is_ok());
    }

    #[test]
    fn rejects_bad_version() {
        let mut b = packet();
        b[0] = 0x66;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadVersion
        );
    }

    #[test]
    fn rejects_ihl_below_5() {
        let mut b = packet();
        b[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLen
        );
    }

    #[test]
    fn rejects_ihl_past_buffer() {
        let mut b = packet();
        b[0] = 0x4f; // 60 bytes
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLen
        );
    }

    #[test]
    fn rejects_total_len_below_header_len() {
        let mut b = packet();
        b[2..4].copy_from_slice(&23u16.to_be_bytes());
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLen
        );
    }

    #[test]
    fn rejects_total_len_past_buffer() {
        let mut b = packet();
        b[2..4].copy_from_slice(&31u16.to_be_bytes());
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLen
        );
    }

    #[test]
    fn padding_is_not_payload() {
        let b = packet();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload().len(), 4);
        assert_eq!(p.into_inner().len(), 30);
    }

    #[test]
    fn bad_checksum_detected() {
        let mut b = packet();
        b[8] = 63; // change TTL without updating the checksum
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::BadChecksum);
    }

    #[test]
    fn fragments_are_flagged() {
        let mut b = packet();
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_more_frags(true);
        assert!(p.is_fragment() && !p.is_non_first_fragment());
        p.set_more_frags(false);
        p.set_frag_offset(1480);
        assert!(p.is_fragment() && p.is_non_first_fragment());
        assert_eq!(p.frag_offset(), 1480);
        assert!(p.dont_frag());
        p.fill_checksum();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Unsupported);
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 40];
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_version(4);
        p.set_header_len(24);
        p.set_dscp(10);
        p.set_ecn(3);
        p.set_total_len(40);
        p.set_ident(0xbeef);
        p.set_dont_frag(true);
        p.set_more_frags(true);
        p.set_frag_offset(8 * 100);
        p.set_ttl(1);
        p.set_protocol(IpProtocol::Unknown(253));
        p.set_src_addr(Ipv4Addr::new(1, 2, 3, 4));
        p.set_dst_addr(Ipv4Addr::new(5, 6, 7, 8));
        p.options_mut().copy_from_slice(&[1, 1, 1, 0]);
        p.payload_mut().fill(0xaa);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.header_len(), p.dscp(), p.ecn()),
            (4, 24, 10, 3)
        );
        assert_eq!((p.total_len(), p.ident()), (40, 0xbeef));
        assert!(p.dont_frag() && p.more_frags());
        assert_eq!(p.frag_offset(), 800);
        assert_eq!((p.ttl(), p.protocol()), (1, IpProtocol::Unknown(253)));
        assert_eq!(
            (p.src_addr(), p.dst_addr()),
            (Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8))
        );
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.payload(), &[0xaa; 16]);
        assert!(p.verify_checksum());
    }

    #[test]
    fn decrement_ttl_at_zero_is_a_no_op() {
        let mut b = packet();
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_ttl(0);
        p.fill_checksum();
        let c = p.checksum();
        assert_eq!(p.decrement_ttl_update_checksum(), 0);
        assert_eq!((p.ttl(), p.checksum()), (0, c));
    }

    #[test]
    fn decrement_ttl_hits_the_0xffff_corner() {
        // Find a header whose checksum after the decrement is 0x0000 (its sum
        // is 0xFFFF): the RFC 1141 shortcut would store 0xFFFF there.
        let mut b = packet();
        let mut hit = false;
        for ident in 0..=u16::MAX {
            let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
            p.set_ident(ident);
            p.fill_checksum();
            p.decrement_ttl_update_checksum();
            let incremental = p.checksum();
            p.fill_checksum();
            assert_eq!(incremental, p.checksum(), "ident={ident}");
            hit |= incremental == 0;
        }
        assert!(hit);
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{NetSlice, PacketBuilder, SlicedPacket};
        let builder = PacketBuilder::ipv4([10, 1, 2, 3], [10, 4, 5, 6], 17).udp(53, 4000);
        let mut pkt = Vec::new();
        builder.write(&mut pkt, b"hello").unwrap();
        pkt.extend_from_slice(&[0; 7]); // padding
        let p = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        let oracle = SlicedPacket::from_ip(&pkt).unwrap();
        let Some(NetSlice::Ipv4(o)) = oracle.net else {
            panic!("not ipv4")
        };
        let h = o.header();
        assert_eq!(p.src_addr(), h.source_addr());
        assert_eq!(p.dst_addr(), h.destination_addr());
        assert_eq!(p.ttl(), h.ttl());
        assert_eq!(u8::from(p.protocol()), h.protocol().0);
        assert_eq!(p.total_len(), h.total_len());
        assert_eq!(p.ident(), h.identification());
        assert_eq!(p.dont_frag(), h.dont_fragment());
        assert_eq!(p.checksum(), h.header_checksum());
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), o.payload().payload);
    }

    fn arb_header() -> impl Strategy<Value = Vec<u8>> {
        (proptest::collection::vec(any::<u8>(), 20..=60), 1u8..=255).prop_map(|(mut v, ttl)| {
            let n = v.len() & !3;
            v.truncate(n);
            v[0] = 0x40 | (n / 4) as u8;
            v[2..4].copy_from_slice(&(n as u16).to_be_bytes());
            v[8] = ttl;
            Ipv4Packet::new_unchecked(&mut v[..]).fill_checksum();
            v
        })
    }

    fn full_checksum(h: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for (k, w) in h.chunks(2).enumerate() {
            if k != 5 {
                s += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// Every checksum value before the update (the word at offset 12 sweeps
    /// them all), with TTLs whose change does and does not carry: the
    /// incremental update equals the recomputed checksum, 0xffff/0x0000
    /// edge included.
    #[test]
    fn ttl_decrement_every_checksum() {
        for ttl in [2u8, 64, 255] {
            for w in 0..=u16::MAX {
                let mut h = [
                    0x45, 0, 0, 84, 0, 0, 0x40, 0, ttl, 17, 0, 0, 0, 0, 10, 0, 0, 1, 0, 0,
                ];
                h[12..14].copy_from_slice(&w.to_be_bytes());
                let c = full_checksum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
                decrement_ttl_v4(&mut h);
                assert_eq!(
                    u16::from_be_bytes([h[10], h[11]]),
                    full_checksum(&h),
                    "word {w:#x} ttl {ttl}"
                );
            }
        }
    }

    proptest! {
        /// The incremental TTL update gives exactly the recomputed checksum.
        #[test]
        fn ttl_decrement_equals_recomputation(mut h in any::<[u8; 20]>(), ttl in 2u8..=255) {
            h[0] = 0x45;
            h[8] = ttl;
            let c = full_checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            decrement_ttl_v4(&mut h);
            prop_assert_eq!(h[8], ttl - 1);
            prop_assert_eq!(u16::from_be_bytes([h[10], h[11]]), full_checksum(&h));
        }
    }

    /// [`decrement_ttl_v4`] gives what RFC 1624 eqn. 3 for the TTL/protocol
    /// word gives, for every checksum.
    #[test]
    fn ttl_helper_equals_update_u16_for_every_checksum() {
        for (ttl, proto) in [(1u8, 17u8), (64, 6), (255, 0)] {
            for c in 0..=u16::MAX {
                let mut h = [0u8; 20];
                h[8] = ttl;
                h[9] = proto;
                h[10..12].copy_from_slice(&c.to_be_bytes());
                decrement_ttl_v4(&mut h);
                let old = u16::from_be_bytes([ttl, proto]);
                let new = u16::from_be_bytes([ttl - 1, proto]);
                assert_eq!(
                    u16::from_be_bytes([h[10], h[11]]),
                    checksum::update_u16(c, old, new),
                    "checksum {c:#x} ttl {ttl}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn ttl_decrement_equals_recompute(mut h in arb_header()) {
            let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
            let ttl = p.ttl();
            prop_assert_eq!(p.decrement_ttl_update_checksum(), ttl - 1);
            let incremental = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(incremental, p.checksum());
        }

        #[test]
        fn address_rewrite_update_u32_equals_recompute(mut h in arb_header(), new in any::<u32>()) {
            let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
            let old = u32::from(p.dst_addr());
            let c = checksum::update_u32(p.checksum(), old, new);
            p.set_dst_addr(Ipv4Addr::from(new));
            p.set_checksum(c);
            prop_assert!(p.verify_checksum());
            p.fill_checksum();
            prop_assert_eq!(c, p.checksum());
        }

        #[test]
        fn ident_rewrite_update_u16_equals_recompute(mut h in arb_header(), new in any::<u16>()) {
            let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
            let c = checksum::update_u16(p.checksum(), p.ident(), new);
            p.set_ident(new);
            p.fill_checksum();
            prop_assert_eq!(c, p.checksum());
        }

        #[test]
        fn address_rewrite_update_bytes_equals_recompute(mut h in arb_header(), new in any::<[u8; 4]>()) {
            let mut p = Ipv4Packet::new_checked(&mut h[..]).unwrap();
            let c = checksum::update_bytes(p.checksum(), &p.src_addr().octets(), &new);
            p.set_src_addr(Ipv4Addr::from(new));
            p.fill_checksum();
            prop_assert_eq!(c, p.checksum());
        }

        #[test]
        fn repr_emit_parse(
            src in any::<u32>(), dst in any::<u32>(), proto in any::<u8>(),
            payload_len in 0usize..1500, ttl in any::<u8>(),
        ) {
            let r = Ipv4Repr {
                src_addr: Ipv4Addr::from(src),
                dst_addr: Ipv4Addr::from(dst),
                protocol: IpProtocol::from(proto),
                payload_len,
                ttl,
            };
            let mut buf = vec![0u8; r.buffer_len() + payload_len];
            r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
            // The independent oracle agrees on the header and its checksum.
            let (h, _) = etherparse::Ipv4Header::from_slice(&buf).unwrap();
            prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
            prop_assert_eq!(usize::from(h.total_len), 20 + payload_len);
        }

        #[test]
        fn new_checked_never_panics(buf in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Ipv4Packet::new_checked(&buf[..]) {
                let _ = (p.header(), p.options(), p.payload(), p.verify_checksum(), p.protocol());
            }
        }
    }
}
