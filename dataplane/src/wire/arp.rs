//! ARP (RFC 826) for Ethernet/IPv4: the [`ArpPacket`] view and [`ArpRepr`],
//! used to answer requests for the router's addresses and to learn neighbours.
//!
//! Only 6-byte hardware and 4-byte protocol addresses are supported, so every
//! field sits at a fixed offset.

use std::net::Ipv4Addr;

use super::ethernet::{EtherType, MacAddr};
use super::{be16, enum_with_unknown, Error, Result};

enum_with_unknown! {
    /// ARP opcode.
    pub enum ArpOperation(u16) {
        Request = 1,
        Reply = 2,
    }
}

/// ARP hardware type for Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

mod field {
    use core::ops::Range;

    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const HEADER_LEN: usize = field::TPA.end;

/// A view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps `buffer`, checking its format and length.
    ///
    /// # Errors
    /// - [`Error::Truncated`] if the buffer is shorter than 8 bytes (the
    ///   fixed part, which says the format).
    /// - [`Error::Unsupported`] if the format is not Ethernet/IPv4 (htype
    ///   != 1, ptype != IPv4, hlen != 6 or plen != 4), whatever the
    ///   buffer's length: another format's length is not this view's to
    ///   judge.
    /// - [`Error::Truncated`] if an Ethernet/IPv4 packet is shorter than
    ///   [`HEADER_LEN`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// The checks `new_checked` performs.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < field::OPER.end {
            return Err(Error::Truncated);
        }
        if be16(&d[field::HTYPE]) != HTYPE_ETHERNET
            || be16(&d[field::PTYPE]) != u16::from(EtherType::Ipv4)
            || d[field::HLEN] != 6
            || d[field::PLEN] != 4
        {
            return Err(Error::Unsupported);
        }
        if d.len() < HEADER_LEN {
            return Err(Error::Truncated);
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

    /// Hardware type (1 = Ethernet).
    #[inline]
    pub fn htype(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::HTYPE])
    }

    /// Protocol type (an EtherType; IPv4 here).
    #[inline]
    pub fn ptype(&self) -> EtherType {
        EtherType::from(be16(&self.buffer.as_ref()[field::PTYPE]))
    }

    /// Hardware address length.
    #[inline]
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length.
    #[inline]
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Opcode.
    #[inline]
    pub fn oper(&self) -> ArpOperation {
        ArpOperation::from(be16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Sender hardware address.
    #[inline]
    pub fn sha(&self) -> MacAddr {
        let mut o = [0u8; 6];
        o.copy_from_slice(&self.buffer.as_ref()[field::SHA]);
        MacAddr(o)
    }

    /// Sender protocol address.
    #[inline]
    pub fn spa(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SPA];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Target hardware address.
    #[inline]
    pub fn tha(&self) -> MacAddr {
        let mut o = [0u8; 6];
        o.copy_from_slice(&self.buffer.as_ref()[field::THA]);
        MacAddr(o)
    }

    /// Target protocol address.
    #[inline]
    pub fn tpa(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::TPA];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Bytes after the ARP packet (Ethernet padding).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    #[inline]
    pub fn set_htype(&mut self, v: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_ptype(&mut self, v: EtherType) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&u16::from(v).to_be_bytes());
    }

    /// Sets the hardware address length.
    #[inline]
    pub fn set_hlen(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Sets the protocol address length.
    #[inline]
    pub fn set_plen(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Sets the opcode.
    #[inline]
    pub fn set_oper(&mut self, v: ArpOperation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&u16::from(v).to_be_bytes());
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_sha(&mut self, v: MacAddr) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&v.0);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_spa(&mut self, v: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&v.octets());
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_tha(&mut self, v: MacAddr) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&v.0);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_tpa(&mut self, v: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&v.octets());
    }

    /// Mutable bytes after the ARP packet.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// The parsed form of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: ArpOperation,
    pub sender_mac: MacAddr,
    pub sender_ip: Ipv4Addr,
    pub target_mac: MacAddr,
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Reads an Ethernet/IPv4 ARP packet.
    ///
    /// # Errors
    /// Those of [`ArpPacket::check_len`] (for unchecked views): another
    /// format than Ethernet/IPv4 is [`Error::Unsupported`].
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<Self> {
        p.check_len()?;
        Ok(ArpRepr {
            operation: p.oper(),
            sender_mac: p.sha(),
            sender_ip: p.spa(),
            target_mac: p.tha(),
            target_ip: p.tpa(),
        })
    }

    /// Bytes `emit` writes: [`HEADER_LEN`].
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the packet.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) {
        p.set_htype(HTYPE_ETHERNET);
        p.set_ptype(EtherType::Ipv4);
        p.set_hlen(6);
        p.set_plen(4);
        p.set_oper(self.operation);
        p.set_sha(self.sender_mac);
        p.set_spa(self.sender_ip);
        p.set_tha(self.target_mac);
        p.set_tpa(self.target_ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const REQUEST: [u8; 28] = [
        0x00, 0x01,                         // htype Ethernet
        0x08, 0x00,                         // ptype IPv4
        0x06,                               // hlen
        0x04,                               // plen
        0x00, 0x01,                         // oper request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // sha
        0x0a, 0x00, 0x00, 0x02,             // spa 10.0.0.2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha (unknown)
        0x0a, 0x00, 0x00, 0x01,             // tpa 10.0.0.1
    ];

    #[test]
    fn getters() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.htype(), 1);
        assert_eq!(p.ptype(), EtherType::Ipv4);
        assert_eq!(p.hlen(), 6);
        assert_eq!(p.plen(), 4);
        assert_eq!(p.oper(), ArpOperation::Request);
        assert_eq!(p.sha(), MacAddr([2, 0, 0, 0, 0, 2]));
        assert_eq!(p.spa(), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(p.tha(), MacAddr::ZERO);
        assert_eq!(p.tpa(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.header_len(), 28);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                ArpPacket::new_checked(&REQUEST[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
    }

    #[test]
    fn rejects_bad_hlen_and_plen() {
        let mut p = REQUEST;
        p[4] = 8;
        assert_eq!(
            ArpPacket::new_checked(&p[..]).unwrap_err(),
            Error::Unsupported
        );
        let mut p = REQUEST;
        p[5] = 16;
        assert_eq!(
            ArpPacket::new_checked(&p[..]).unwrap_err(),
            Error::Unsupported
        );
    }

    /// Another format (hardware type, protocol type, address lengths) is
    /// unsupported, also when shorter than an Ethernet/IPv4 packet (its
    /// length is its own format's); a short Ethernet/IPv4 one is truncated.
    #[test]
    fn rejects_other_formats_whatever_their_length() {
        for (at, v) in [(1, 6), (0, 1), (2, 0x86), (3, 0x01), (4, 8), (5, 16)] {
            let mut p = REQUEST;
            p[at] = v;
            for n in [8, 20, 27, 28] {
                assert_eq!(
                    ArpPacket::new_checked(&p[..n]).unwrap_err(),
                    Error::Unsupported,
                    "byte {at} = {v}, {n} bytes"
                );
                assert_eq!(
                    ArpRepr::parse(&ArpPacket::new_unchecked(&p[..n])).unwrap_err(),
                    Error::Unsupported
                );
            }
        }
        assert_eq!(
            ArpPacket::new_checked(&REQUEST[..27]).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn setters_round_trip_and_emit_matches_literal() {
        let mut buf = [0xffu8; 28];
        let mut p = ArpPacket::new_unchecked(&mut buf[..]);
        p.set_htype(1);
        p.set_ptype(EtherType::Ipv4);
        p.set_hlen(6);
        p.set_plen(4);
        p.set_oper(ArpOperation::Unknown(9));
        p.set_sha(MacAddr([1, 2, 3, 4, 5, 6]));
        p.set_spa(Ipv4Addr::new(1, 2, 3, 4));
        p.set_tha(MacAddr([6, 5, 4, 3, 2, 1]));
        p.set_tpa(Ipv4Addr::new(4, 3, 2, 1));
        assert_eq!(p.oper(), ArpOperation::Unknown(9));
        assert_eq!(p.sha(), MacAddr([1, 2, 3, 4, 5, 6]));
        assert_eq!(p.spa(), Ipv4Addr::new(1, 2, 3, 4));
        assert_eq!(p.tha(), MacAddr([6, 5, 4, 3, 2, 1]));
        assert_eq!(p.tpa(), Ipv4Addr::new(4, 3, 2, 1));

        let repr = ArpRepr::parse(&ArpPacket::new_checked(&REQUEST[..]).unwrap()).unwrap();
        let mut out = [0u8; 28];
        repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
        assert_eq!(out, REQUEST);
    }

    proptest! {
        #[test]
        fn repr_emit_parse(op in any::<u16>(), sm in any::<[u8; 6]>(), si in any::<u32>(), tm in any::<[u8; 6]>(), ti in any::<u32>()) {
            let r = ArpRepr {
                operation: ArpOperation::from(op),
                sender_mac: MacAddr(sm),
                sender_ip: Ipv4Addr::from(si),
                target_mac: MacAddr(tm),
                target_ip: Ipv4Addr::from(ti),
            };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()).unwrap(), r);
        }
    }
}
