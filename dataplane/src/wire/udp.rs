//! UDP (RFC 768): the [`UdpPacket`] view, checksums over IPv4 and IPv6, and
//! [`UdpRepr`].
//!
//! A zero checksum means "none" over IPv4 and is invalid over IPv6
//! (RFC 8200 §8.1); a computed zero is sent as `0xFFFF`.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::checksum;
use super::ip::IpProtocol;
use super::{be16, Error, Result};

mod field {
    use core::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A view of a UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` (the IP payload), checking the length field. The buffer
    /// may be longer than the length field says.
    ///
    /// # Errors
    /// - [`Error::Truncated`]: buffer shorter than 8 bytes.
    /// - [`Error::BadTotalLen`]: length field < 8, or > buffer length.
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
        let ulen = usize::from(self.len());
        if ulen < HEADER_LEN || ulen > len {
            return Err(Error::BadTotalLen);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Always [`HEADER_LEN`].
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Length field (header and payload).
    #[inline]
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Is the length field exactly the header (no payload)?
    #[inline]
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum as stored (0: none).
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The payload, up to the length field.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// The datagram as the length field delimits it.
    #[inline]
    fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// Does the checksum verify over IPv4? A zero checksum (none) does.
    #[inline]
    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.checksum() == 0 || checksum::verify_l4_v4(src, dst, IpProtocol::Udp, self.datagram())
    }

    /// Does the checksum verify over IPv6? A zero checksum does not.
    #[inline]
    pub fn verify_checksum_v6(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        self.checksum() != 0 && checksum::verify_l4_v6(src, dst, IpProtocol::Udp, self.datagram())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the stored checksum.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable payload, up to the length field.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes and stores the checksum over IPv4.
    #[inline]
    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let end = usize::from(self.len());
        checksum::fill_l4_v4(
            src,
            dst,
            IpProtocol::Udp,
            &mut self.buffer.as_mut()[..end],
            field::CHECKSUM.start,
        );
    }

    /// Computes and stores the checksum over IPv6.
    #[inline]
    pub fn fill_checksum_v6(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let end = usize::from(self.len());
        checksum::fill_l4_v6(
            src,
            dst,
            IpProtocol::Udp,
            &mut self.buffer.as_mut()[..end],
            field::CHECKSUM.start,
        );
    }

    /// Applies an incremental checksum update (`f` maps the old checksum to
    /// the new one, e.g. `|c| checksum::update_u32(c, old_ip, new_ip)`)
    /// while keeping UDP's zero rule: a zero checksum (none, IPv4) stays
    /// zero, and a computed zero is stored as `0xFFFF`.
    #[inline]
    pub fn update_checksum(&mut self, f: impl FnOnce(u16) -> u16) {
        let c = self.checksum();
        if c == 0 {
            return;
        }
        let n = f(c);
        self.set_checksum(if n == 0 { 0xffff } else { n });
    }
}

/// The parsed form of a UDP header. The checksum is not part of it: fill it
/// with [`UdpPacket::fill_checksum_v4`]/`_v6` once the payload is in place,
/// and verify it on the view before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Payload length in bytes (length field minus 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Reads the header (the checksum is not verified).
    ///
    /// # Errors
    /// Those of [`UdpPacket::check_len`] (for unchecked views).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Result<Self> {
        p.check_len()?;
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: usize::from(p.len()) - HEADER_LEN,
        })
    }

    /// Bytes `emit` writes: the 8-byte header (the payload follows it).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero checksum.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`]. `payload_len` must be at
    /// most 65527 (debug-asserted).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut UdpPacket<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + self.payload_len) as u16);
        p.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);

    #[rustfmt::skip]
    const PACKET: [u8; 14] = [
        0xbf, 0x00,             // source port 48896
        0x00, 0x35,             // destination port 53
        0x00, 0x0c,             // length 12
        0x00, 0x00,             // checksum (filled in by the tests)
        0xaa, 0x00, 0x00, 0xff, // payload
        0x00, 0x00,             // trailing bytes beyond the length field
    ];

    #[test]
    fn getters() {
        let p = UdpPacket::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.src_port(), 48896);
        assert_eq!(p.dst_port(), 53);
        assert_eq!(p.len(), 12);
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0);
        assert_eq!(p.header_len(), 8);
        assert_eq!(p.payload(), &[0xaa, 0x00, 0x00, 0xff]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..12 {
            let expect = if n < HEADER_LEN {
                Error::Truncated
            } else {
                Error::BadTotalLen
            };
            assert_eq!(
                UdpPacket::new_checked(&PACKET[..n]).unwrap_err(),
                expect,
                "n={n}"
            );
        }
        assert!(UdpPacket::new_checked(&PACKET[..12]).is_ok());
    }

    #[test]
    fn rejects_length_below_header() {
        let mut b = PACKET;
        b[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLen
        );
    }

    #[test]
    fn rejects_length_past_buffer() {
        let mut b = PACKET;
        b[4..6].copy_from_slice(&15u16.to_be_bytes());
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLen
        );
    }

    #[test]
    fn checksum_zero_rules() {
        let p = UdpPacket::new_checked(&PACKET[..]).unwrap();
        assert!(p.verify_checksum_v4(SRC, DST), "zero means none over IPv4");
        let s6 = Ipv6Addr::LOCALHOST;
        assert!(!p.verify_checksum_v6(&s6, &s6), "zero is invalid over IPv6");
    }

    #[test]
    fn checksum_fill_verify_and_corrupt() {
        let mut b = PACKET;
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum_v4(SRC, DST);
        assert!(p.verify_checksum_v4(SRC, DST));
        assert!(!p.verify_checksum_v4(SRC, Ipv4Addr::new(192, 168, 0, 3)));
        p.payload_mut()[0] ^= 1;
        assert!(!p.verify_checksum_v4(SRC, DST));
        let (s6, d6) = (Ipv6Addr::LOCALHOST, Ipv6Addr::UNSPECIFIED);
        p.fill_checksum_v6(&s6, &d6);
        assert!(p.verify_checksum_v6(&s6, &d6));
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Pick the payload so that the datagram sums to 0xFFFF with a zero
        // checksum field: then the computed checksum is 0 and must go out as
        // 0xFFFF.
        let mut b = PACKET;
        b[8..12].fill(0);
        let p = UdpPacket::new_checked(&mut b[..]).unwrap();
        let partial = checksum::add(
            checksum::pseudo_header_v4(SRC, DST, IpProtocol::Udp, 12),
            checksum::sum(&p.into_inner()[..12]),
        );
        b[8..10].copy_from_slice(&(!partial).to_be_bytes());
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum_v4(SRC, DST);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum_v4(SRC, DST));
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 10];
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(1);
        p.set_dst_port(65535);
        p.set_len(10);
        p.set_checksum(0x1234);
        p.payload_mut().copy_from_slice(&[9, 8]);
        assert_eq!(
            (p.src_port(), p.dst_port(), p.len(), p.checksum()),
            (1, 65535, 10, 0x1234)
        );
        assert_eq!(p.payload(), &[9, 8]);
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};
        let builder = PacketBuilder::ipv4(SRC.octets(), DST.octets(), 64).udp(5000, 6000);
        let mut pkt = Vec::new();
        builder.write(&mut pkt, b"payload!").unwrap();
        let oracle = SlicedPacket::from_ip(&pkt).unwrap();
        let Some(TransportSlice::Udp(o)) = oracle.transport else {
            panic!("not udp")
        };
        let p = UdpPacket::new_checked(&pkt[20..]).unwrap();
        assert_eq!(
            (p.src_port(), p.dst_port()),
            (o.source_port(), o.destination_port())
        );
        assert_eq!((p.len(), p.checksum()), (o.length(), o.checksum()));
        assert_eq!(p.payload(), o.payload());
        assert!(p.verify_checksum_v4(SRC, DST));
    }

    proptest! {
        #[test]
        fn repr_emit_parse_and_checksum(
            sp in any::<u16>(), dp in any::<u16>(),
            payload in proptest::collection::vec(any::<u8>(), 0..600),
            src in any::<u32>(), dst in any::<u32>(),
        ) {
            let r = UdpRepr { src_port: sp, dst_port: dp, payload_len: payload.len() };
            let mut buf = vec![0u8; r.buffer_len() + payload.len()];
            let mut p = UdpPacket::new_unchecked(&mut buf[..]);
            r.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            let (s, d) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
            p.fill_checksum_v4(s, d);
            let p = UdpPacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(UdpRepr::parse(&p).unwrap(), r);
            prop_assert!(p.verify_checksum_v4(s, d));
            // etherparse computes the same checksum.
            let (h, _) = etherparse::UdpHeader::from_slice(&buf).unwrap();
            prop_assert_eq!(h.calc_checksum_ipv4_raw(s.octets(), d.octets(), &payload).unwrap(), p.checksum());
        }

        #[test]
        fn port_rewrite_update_equals_recompute(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            src in any::<u32>(), new_src in any::<u32>(), new_port in any::<u16>(),
        ) {
            let dst = Ipv4Addr::new(10, 0, 0, 1);
            let mut buf = vec![0u8; 8 + payload.len()];
            let mut p = UdpPacket::new_unchecked(&mut buf[..]);
            UdpRepr { src_port: 1234, dst_port: 80, payload_len: payload.len() }.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum_v4(Ipv4Addr::from(src), dst);
            // NAT-style rewrite of the source address (pseudo-header) and port.
            let old_port = p.src_port();
            p.update_checksum(|c| checksum::update_u16(checksum::update_u32(c, src, new_src), old_port, new_port));
            p.set_src_port(new_port);
            prop_assert!(p.verify_checksum_v4(Ipv4Addr::from(new_src), dst));
            let incremental = p.checksum();
            p.fill_checksum_v4(Ipv4Addr::from(new_src), dst);
            prop_assert_eq!(incremental, p.checksum());
        }
    }
}
