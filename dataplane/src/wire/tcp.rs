//! TCP (RFC 9293) header: the [`TcpPacket`] view and [`TcpFlags`]. The router
//! reads ports and flags (for ACLs and load balancing) and patches
//! checksums; it does not terminate TCP, so there is no `TcpRepr`.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::checksum;
use super::ip::IpProtocol;
use super::{be16, be32, Error, Result};

mod field {
    use core::ops::Range;

    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

/// The eight TCP flag bits (byte 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// Are all bits of `other` set?
    #[inline]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

/// A view of a TCP segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps `buffer` (the IP payload: TCP has no length field, so the
    /// segment is the whole buffer), checking the data offset.
    ///
    /// # Errors
    /// - [`Error::Truncated`]: buffer shorter than 20 bytes.
    /// - [`Error::BadHeaderLen`]: data offset < 5, or data offset * 4 >
    ///   buffer length.
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
        let hlen = self.header_len();
        if hlen < HEADER_LEN || hlen > len {
            return Err(Error::BadHeaderLen);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
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

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// Data offset in 32-bit words.
    #[inline]
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFF] >> 4
    }

    /// Header length in bytes (data offset * 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The eight flag bits.
    #[inline]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    /// FIN flag.
    #[inline]
    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }

    /// SYN flag.
    #[inline]
    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }

    /// RST flag.
    #[inline]
    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }

    /// PSH flag.
    #[inline]
    pub fn psh(&self) -> bool {
        self.flags().contains(TcpFlags::PSH)
    }

    /// ACK flag.
    #[inline]
    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }

    /// URG flag.
    #[inline]
    pub fn urg(&self) -> bool {
        self.flags().contains(TcpFlags::URG)
    }

    /// ECE flag.
    #[inline]
    pub fn ece(&self) -> bool {
        self.flags().contains(TcpFlags::ECE)
    }

    /// CWR flag.
    #[inline]
    pub fn cwr(&self) -> bool {
        self.flags().contains(TcpFlags::CWR)
    }

    /// Window size.
    #[inline]
    pub fn window_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::WINDOW])
    }

    /// Checksum as stored.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent_at(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::URGENT])
    }

    /// Options (empty when the data offset is 5).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The payload: everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Does the checksum verify over IPv4?
    #[inline]
    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        checksum::verify_l4_v4(src, dst, IpProtocol::Tcp, self.buffer.as_ref())
    }

    /// Does the checksum verify over IPv6?
    #[inline]
    pub fn verify_checksum_v6(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        checksum::verify_l4_v6(src, dst, IpProtocol::Tcp, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
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

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEQ_NUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, v: u32) {
        self.buffer.as_mut()[field::ACK_NUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the header length in bytes (a multiple of 4, 20..=60); the low
    /// nibble of byte 12 (reserved, and the old NS bit) is kept.
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len.is_multiple_of(4) && (HEADER_LEN..=60).contains(&len));
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | (((len / 4) as u8) << 4);
    }

    /// Sets the eight flag bits.
    #[inline]
    pub fn set_flags(&mut self, v: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = v.0;
    }

    /// Sets the window size.
    #[inline]
    pub fn set_window_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::WINDOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the stored checksum.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_at(&mut self, v: u16) {
        self.buffer.as_mut()[field::URGENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable options.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }

    /// Computes and stores the checksum over IPv4.
    #[inline]
    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        checksum::fill_l4_v4(
            src,
            dst,
            IpProtocol::Tcp,
            self.buffer.as_mut(),
            field::CHECKSUM.start,
        );
    }

    /// Computes and stores the checksum over IPv6.
    #[inline]
    pub fn fill_checksum_v6(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        checksum::fill_l4_v6(
            src,
            dst,
            IpProtocol::Tcp,
            self.buffer.as_mut(),
            field::CHECKSUM.start,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const SEGMENT: [u8; 30] = [
        0x04, 0xd2,             // source port 1234
        0x01, 0xbb,             // destination port 443
        0x00, 0x00, 0x10, 0x00, // sequence number 4096
        0x00, 0x00, 0x20, 0x01, // acknowledgment number 8193
        0x60,                   // data offset 6 (24 bytes), reserved 0
        0x12,                   // flags SYN + ACK
        0xff, 0xff,             // window 65535
        0x00, 0x00,             // checksum (filled in by the tests)
        0x00, 0x00,             // urgent pointer 0
        0x02, 0x04, 0x05, 0xb4, // option MSS 1460
        0x01, 0x02, 0x03, 0x04, // payload
        0x05, 0x06,
    ];

    #[test]
    fn getters() {
        let p = TcpPacket::new_checked(&SEGMENT[..]).unwrap();
        assert_eq!(p.src_port(), 1234);
        assert_eq!(p.dst_port(), 443);
        assert_eq!(p.seq_number(), 4096);
        assert_eq!(p.ack_number(), 8193);
        assert_eq!(p.data_offset(), 6);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.flags(), TcpFlags::SYN | TcpFlags::ACK);
        assert!(p.syn() && p.ack());
        assert!(!p.fin() && !p.rst() && !p.psh() && !p.urg() && !p.ece() && !p.cwr());
        assert_eq!(p.window_len(), 65535);
        assert_eq!(p.checksum(), 0);
        assert_eq!(p.urgent_at(), 0);
        assert_eq!(p.options(), &[0x02, 0x04, 0x05, 0xb4]);
        assert_eq!(p.payload(), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..24 {
            let expect = if n < HEADER_LEN {
                Error::Truncated
            } else {
                Error::BadHeaderLen
            };
            assert_eq!(
                TcpPacket::new_checked(&SEGMENT[..n]).unwrap_err(),
                expect,
                "n={n}"
            );
        }
        assert!(TcpPacket::new_checked(&SEGMENT[..24]).is_ok());
    }

    #[test]
    fn rejects_data_offset_below_5() {
        let mut b = SEGMENT;
        b[12] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLen
        );
    }

    #[test]
    fn rejects_data_offset_past_buffer() {
        let mut b = SEGMENT;
        b[12] = 0xf0; // 60 bytes
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLen
        );
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 28];
        let mut p = TcpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_seq_number(0xdead_beef);
        p.set_ack_number(0xfeed_f00d);
        p.set_header_len(24);
        p.set_flags(TcpFlags::FIN | TcpFlags::PSH | TcpFlags::URG | TcpFlags::CWR);
        p.set_window_len(1000);
        p.set_checksum(0xabcd);
        p.set_urgent_at(7);
        p.options_mut().copy_from_slice(&[1, 1, 1, 0]);
        p.payload_mut().copy_from_slice(&[9; 4]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (1, 2));
        assert_eq!((p.seq_number(), p.ack_number()), (0xdead_beef, 0xfeed_f00d));
        assert_eq!(p.header_len(), 24);
        assert!(p.fin() && p.psh() && p.urg() && p.cwr() && !p.syn());
        assert_eq!(
            (p.window_len(), p.checksum(), p.urgent_at()),
            (1000, 0xabcd, 7)
        );
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.payload(), &[9; 4]);
    }

    #[test]
    fn checksum_fill_and_verify() {
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut b = SEGMENT;
        let mut p = TcpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum_v4(s, d);
        assert!(p.verify_checksum_v4(s, d));
        p.payload_mut()[0] = 0;
        assert!(!p.verify_checksum_v4(s, d));
        let (s6, d6) = (
            Ipv6Addr::LOCALHOST,
            Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1),
        );
        p.fill_checksum_v6(&s6, &d6);
        assert!(p.verify_checksum_v6(&s6, &d6));
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};
        let (s, d) = (
            [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        );
        let builder = PacketBuilder::ipv6(s, d, 64)
            .tcp(4321, 80, 777, 512)
            .syn()
            .ack(99)
            .options_raw(&[2, 4, 5, 0xdc])
            .unwrap();
        let mut pkt = Vec::new();
        builder.write(&mut pkt, b"GET /").unwrap();
        let oracle = SlicedPacket::from_ip(&pkt).unwrap();
        let Some(TransportSlice::Tcp(o)) = oracle.transport else {
            panic!("not tcp")
        };
        let p = TcpPacket::new_checked(&pkt[40..]).unwrap();
        assert_eq!(
            (p.src_port(), p.dst_port()),
            (o.source_port(), o.destination_port())
        );
        assert_eq!(
            (p.seq_number(), p.ack_number()),
            (o.sequence_number(), o.acknowledgment_number())
        );
        assert_eq!(p.header_len(), o.header_len());
        assert_eq!((p.syn(), p.ack(), p.fin()), (o.syn(), o.ack(), o.fin()));
        assert_eq!(
            (p.window_len(), p.checksum()),
            (o.window_size(), o.checksum())
        );
        assert_eq!(p.options(), o.options());
        assert_eq!(p.payload(), o.payload());
        assert!(p.verify_checksum_v6(&Ipv6Addr::from(s), &Ipv6Addr::from(d)));
    }

    proptest! {
        #[test]
        fn ipv6_address_rewrite_update_bytes_equals_recompute(
            seg in proptest::collection::vec(any::<u8>(), 20..100),
            src in any::<[u8; 16]>(), new_src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(),
        ) {
            let mut seg = seg;
            seg[12] = 0x50;
            let (s, ns, d) = (Ipv6Addr::from(src), Ipv6Addr::from(new_src), Ipv6Addr::from(dst));
            let mut p = TcpPacket::new_checked(&mut seg[..]).unwrap();
            p.fill_checksum_v6(&s, &d);
            let c = checksum::update_bytes(p.checksum(), &src, &new_src);
            p.fill_checksum_v6(&ns, &d);
            prop_assert_eq!(c, p.checksum());
        }
    }
}
