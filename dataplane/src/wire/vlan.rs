//! The 4-byte 802.1Q / 802.1ad tag that follows a VLAN TPID: the [`VlanPacket`]
//! view (TCI: PCP, DEI, VID; then the encapsulated EtherType) and
//! [`VlanRepr`].
//!
//! The view starts right after the TPID, i.e. at frame offset 14 for the outer
//! tag and 18 for the inner one; its payload is the next tag or the network
//! header. To skip tags on the hot path use [`super::ethernet::l3_offset`].

use super::ethernet::EtherType;
use super::{be16, Error, Result};

mod field {
    use core::ops::{Range, RangeFrom};

    pub const TCI: Range<usize> = 0..2;
    pub const ETHERTYPE: Range<usize> = 2..4;
    pub const PAYLOAD: RangeFrom<usize> = 4..;
}

/// Length of a tag (after its TPID).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of a VLAN tag's TCI and encapsulated EtherType.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanPacket<T> {
    /// Wraps `buffer` without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanPacket { buffer }
    }

    /// Wraps `buffer`, checking that it holds the 4-byte tag.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// The check `new_checked` performs.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
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

    /// The whole tag control information.
    #[inline]
    pub fn tci(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TCI])
    }

    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN id (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The EtherType of what follows the tag.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// Everything after the tag.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanPacket<T> {
    /// Sets the whole TCI.
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }

    /// Sets the priority code point (low 3 bits of `pcp`).
    #[inline]
    pub fn set_pcp(&mut self, pcp: u8) {
        let tci = (self.tci() & 0x1fff) | (u16::from(pcp & 0x7) << 13);
        self.set_tci(tci);
    }

    /// Sets the drop eligible indicator.
    #[inline]
    pub fn set_dei(&mut self, dei: bool) {
        let tci = (self.tci() & !0x1000) | if dei { 0x1000 } else { 0 };
        self.set_tci(tci);
    }

    /// Sets the VLAN id (low 12 bits of `vid`).
    #[inline]
    pub fn set_vid(&mut self, vid: u16) {
        let tci = (self.tci() & 0xf000) | (vid & 0x0fff);
        self.set_tci(tci);
    }

    /// Sets the encapsulated EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(ethertype).to_be_bytes());
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The parsed form of a VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
    /// EtherType of what follows the tag.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Reads a tag.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the view is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(tag: &VlanPacket<T>) -> Result<Self> {
        tag.check_len()?;
        Ok(VlanRepr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        })
    }

    /// Bytes `emit` writes: [`HEADER_LEN`].
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the tag (out-of-range `pcp`/`vid` bits are masked off).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanPacket<T>) {
        let tci = (u16::from(self.pcp & 0x7) << 13)
            | if self.dei { 0x1000 } else { 0 }
            | (self.vid & 0x0fff);
        tag.set_tci(tci);
        tag.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const TAG: [u8; 6] = [
        0xb0, 0x2a, // PCP 5, DEI 1, VID 42
        0x08, 0x06, // ethertype ARP
        0x00, 0x01, // payload
    ];

    #[test]
    fn getters() {
        let t = VlanPacket::new_checked(&TAG[..]).unwrap();
        assert_eq!(t.tci(), 0xb02a);
        assert_eq!(t.pcp(), 5);
        assert!(t.dei());
        assert_eq!(t.vid(), 42);
        assert_eq!(t.ethertype(), EtherType::Arp);
        assert_eq!(t.header_len(), 4);
        assert_eq!(t.payload(), &[0x00, 0x01]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                VlanPacket::new_checked(&TAG[..n]).unwrap_err(),
                Error::Truncated
            );
        }
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; 4];
        let mut t = VlanPacket::new_unchecked(&mut buf[..]);
        t.set_vid(4095);
        t.set_pcp(7);
        t.set_dei(true);
        t.set_ethertype(EtherType::Ipv6);
        assert_eq!(
            (t.vid(), t.pcp(), t.dei(), t.ethertype()),
            (4095, 7, true, EtherType::Ipv6)
        );
        t.set_dei(false);
        t.set_vid(1);
        assert_eq!((t.vid(), t.pcp(), t.dei()), (1, 7, false));
        assert_eq!(buf, [0xe0, 0x01, 0x86, 0xdd]);
    }

    proptest! {
        #[test]
        fn repr_emit_parse(pcp in 0u8..8, dei in any::<bool>(), vid in 0u16..4096, et in any::<u16>()) {
            let r = VlanRepr { pcp, dei, vid, ethertype: EtherType::from(et) };
            let mut buf = [0u8; 4];
            r.emit(&mut VlanPacket::new_unchecked(&mut buf[..]));
            prop_assert_eq!(VlanRepr::parse(&VlanPacket::new_checked(&buf[..]).unwrap()).unwrap(), r);
        }
    }
}
