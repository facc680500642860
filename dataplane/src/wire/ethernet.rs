//! Ethernet II: [`MacAddr`], [`EtherType`], the [`EthernetFrame`] view,
//! [`EthernetRepr`], and [`l3_offset`], which walks up to two VLAN tags
//! (802.1Q, or 802.1ad QinQ) to the network header.
//!
//! The view covers the untagged 14-byte header only; tags are read with
//! [`super::vlan::VlanPacket`] or, on the hot path, skipped by `l3_offset`.

use core::fmt;
use core::str::FromStr;

use super::{be16, enum_with_unknown, Error, Result};

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// `00:00:00:00:00:00` (NDP/ARP "unknown").
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// The address with these octets.
    #[inline]
    pub const fn new(octets: [u8; 6]) -> Self {
        MacAddr(octets)
    }

    /// The address read from the first six bytes of `b`, or `None` if `b` is
    /// shorter.
    #[inline]
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        let o: [u8; 6] = b.get(..6)?.try_into().ok()?;
        Some(MacAddr(o))
    }

    /// The six octets.
    #[inline]
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// All ones.
    #[inline]
    pub fn is_broadcast(&self) -> bool {
        self.0 == [0xff; 6]
    }

    /// Group bit set (includes broadcast).
    #[inline]
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Group bit clear.
    #[inline]
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Locally administered bit set.
    #[inline]
    pub fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// The address as the low 48 bits of a `u64`, first octet most
    /// significant (handy as a hash or table key).
    #[inline]
    pub fn to_u64(&self) -> u64 {
        let o = self.0;
        u64::from_be_bytes([0, 0, o[0], o[1], o[2], o[3], o[4], o[5]])
    }

    /// The inverse of [`MacAddr::to_u64`]; the top 16 bits are ignored.
    #[inline]
    pub fn from_u64(v: u64) -> Self {
        let b = v.to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl From<[u8; 6]> for MacAddr {
    #[inline]
    fn from(o: [u8; 6]) -> Self {
        MacAddr(o)
    }
}

impl From<MacAddr> for [u8; 6] {
    #[inline]
    fn from(m: MacAddr) -> Self {
        m.0
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            o[0], o[1], o[2], o[3], o[4], o[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

/// A string was not six colon-separated pairs of hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address (expected aa:bb:cc:dd:ee:ff)")]
pub struct ParseMacAddrError;

impl FromStr for MacAddr {
    type Err = ParseMacAddrError;

    /// Parses `aa:bb:cc:dd:ee:ff` (hex digits in either case, exactly two per
    /// octet).
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let mut o = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut o {
            let p = parts.next().ok_or(ParseMacAddrError)?;
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseMacAddrError);
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| ParseMacAddrError)?;
        }
        if parts.next().is_some() {
            return Err(ParseMacAddrError);
        }
        Ok(MacAddr(o))
    }
}

enum_with_unknown! {
    /// The EtherType of an Ethernet II frame or of a VLAN tag's payload.
    pub enum EtherType(u16) {
        Ipv4 = 0x0800,
        Arp = 0x0806,
        /// 802.1Q customer tag (C-tag).
        Vlan = 0x8100,
        /// 802.1ad service tag (S-tag), the outer tag of QinQ.
        QinQ = 0x88a8,
        Ipv6 = 0x86dd,
    }
}

impl EtherType {
    /// Is this a VLAN tag (C-tag or S-tag) rather than a payload protocol?
    #[inline]
    pub fn is_vlan_tag(self) -> bool {
        matches!(self, EtherType::Vlan | EtherType::QinQ)
    }
}

mod field {
    use core::ops::{Range, RangeFrom};

    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of the untagged Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of an Ethernet II frame (no FCS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer`, checking that it holds the 14-byte header.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
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

    /// Always [`HEADER_LEN`]: tags are not part of this view.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> MacAddr {
        let mut o = [0u8; 6];
        o.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        MacAddr(o)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> MacAddr {
        let mut o = [0u8; 6];
        o.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        MacAddr(o)
    }

    /// The EtherType (a VLAN TPID when the frame is tagged).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// Everything after the 14-byte header (tags included, if any).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(ethertype).to_be_bytes());
    }

    /// Mutable payload (everything after the 14-byte header).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The parsed form of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub src_addr: MacAddr,
    pub dst_addr: MacAddr,
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of a checked frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the frame is shorter than [`HEADER_LEN`]
    /// (only possible for a view made with `new_unchecked`).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes `emit` writes: [`HEADER_LEN`].
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header.
    ///
    /// # Panics
    /// If the frame's buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_src_addr(self.src_addr);
        frame.set_dst_addr(self.dst_addr);
        frame.set_ethertype(self.ethertype);
    }
}

/// Where the network header of a frame starts, as found by [`l3_offset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct L2Info {
    /// The EtherType after all tags (the network protocol).
    pub ethertype: EtherType,
    /// Offset of the network header from the start of the frame: 14, 18 or 22.
    pub l3_offset: usize,
    /// VLAN ids, outermost first: `[None, None]` untagged, `[Some(v), None]`
    /// single-tagged, `[Some(outer), Some(inner)]` QinQ.
    pub vids: [Option<u16>; 2],
}

/// Maximum number of VLAN tags [`l3_offset`] walks.
pub const MAX_VLAN_TAGS: usize = 2;

/// Walks the Ethernet header and up to two VLAN tags of `frame` and reports
/// the inner EtherType, the offset of the network header and the VLAN ids.
///
/// The outer tag may be 802.1Q (`0x8100`) or 802.1ad (`0x88a8`); an inner tag
/// must be 802.1Q, as 802.1ad specifies. The returned offset may equal
/// `frame.len()` (empty payload); the network header's own `new_checked`
/// rejects that.
///
/// # Errors
/// - [`Error::Truncated`] if the frame ends inside the header or a tag.
/// - [`Error::Unsupported`] for a third tag, or an S-tag inside a tag.
#[inline]
pub fn l3_offset(frame: &[u8]) -> Result<L2Info> {
    let mut off = field::ETHERTYPE.start;
    let mut vids = [None, None];
    let mut tags = 0;
    loop {
        let ty = frame.get(off..off + 2).ok_or(Error::Truncated)?;
        let ethertype = EtherType::from(be16(ty));
        if !ethertype.is_vlan_tag() {
            return Ok(L2Info {
                ethertype,
                l3_offset: off + 2,
                vids,
            });
        }
        if tags == MAX_VLAN_TAGS || (tags > 0 && ethertype != EtherType::Vlan) {
            return Err(Error::Unsupported);
        }
        let tci = frame.get(off + 2..off + 4).ok_or(Error::Truncated)?;
        vids[tags] = Some(be16(tci) & 0x0fff);
        tags += 1;
        // The tag's own EtherType sits two bytes after its TCI.
        off += 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    const FRAME: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // destination 02:00:00:00:00:01
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // source 02:00:00:00:00:02
        0x08, 0x00,                         // ethertype IPv4
        0xaa, 0xbb, 0xcc, 0xdd,             // payload
    ];

    #[rustfmt::skip]
    const QINQ: [u8; 26] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // destination broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // source
        0x88, 0xa8,                         // S-tag TPID
        0xa0, 0x64,                         // PCP 5, DEI 0, VID 100
        0x81, 0x00,                         // C-tag TPID
        0x10, 0xc8,                         // PCP 0, DEI 1, VID 200
        0x86, 0xdd,                         // ethertype IPv6
        0x60, 0x00, 0x00, 0x00,             // start of IPv6
    ];

    #[test]
    fn getters() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), MacAddr([0x02, 0, 0, 0, 0, 0x01]));
        assert_eq!(f.src_addr(), MacAddr([0x02, 0, 0, 0, 0, 0x02]));
        assert_eq!(f.ethertype(), EtherType::Ipv4);
        assert_eq!(f.header_len(), 14);
        assert_eq!(f.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                EthernetFrame::new_checked(&FRAME[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
            assert_eq!(
                l3_offset(&FRAME[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
        for n in 0..20 {
            assert_eq!(
                l3_offset(&QINQ[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
        // The header alone is a valid (empty-payload) frame.
        assert!(EthernetFrame::new_checked(&FRAME[..HEADER_LEN]).is_ok());
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; 14];
        let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
        f.set_dst_addr(MacAddr::BROADCAST);
        f.set_src_addr(MacAddr([1, 2, 3, 4, 5, 6]));
        f.set_ethertype(EtherType::Unknown(0x1234));
        assert_eq!(f.dst_addr(), MacAddr::BROADCAST);
        assert_eq!(f.src_addr(), MacAddr([1, 2, 3, 4, 5, 6]));
        assert_eq!(f.ethertype(), EtherType::Unknown(0x1234));
        assert_eq!(&buf[12..14], &[0x12, 0x34]);
    }

    #[test]
    fn l3_offset_untagged_single_and_qinq() {
        assert_eq!(
            l3_offset(&FRAME).unwrap(),
            L2Info {
                ethertype: EtherType::Ipv4,
                l3_offset: 14,
                vids: [None, None]
            }
        );
        assert_eq!(
            l3_offset(&QINQ).unwrap(),
            L2Info {
                ethertype: EtherType::Ipv6,
                l3_offset: 22,
                vids: [Some(100), Some(200)]
            }
        );
        // Single 802.1Q tag: drop the S-tag from the QinQ frame.
        let mut single = QINQ[..12].to_vec();
        single.extend_from_slice(&QINQ[16..]);
        assert_eq!(
            l3_offset(&single).unwrap(),
            L2Info {
                ethertype: EtherType::Ipv6,
                l3_offset: 18,
                vids: [Some(200), None]
            }
        );
    }

    #[test]
    fn l3_offset_rejects_third_tag_and_inner_s_tag() {
        let mut triple = QINQ[..18].to_vec();
        triple.extend_from_slice(&[0x00, 0x05, 0x81, 0x00, 0x00, 0x06, 0x08, 0x00]);
        assert_eq!(l3_offset(&triple).unwrap_err(), Error::Unsupported);
        let mut s_in_s = QINQ.to_vec();
        s_in_s[16..18].copy_from_slice(&[0x88, 0xa8]);
        assert_eq!(l3_offset(&s_in_s).unwrap_err(), Error::Unsupported);
    }

    #[test]
    fn mac_addr_display_parse_and_classes() {
        let m: MacAddr = "aa:BB:0c:dd:ee:ff".parse().unwrap();
        assert_eq!(m, MacAddr([0xaa, 0xbb, 0x0c, 0xdd, 0xee, 0xff]));
        assert_eq!(m.to_string(), "aa:bb:0c:dd:ee:ff");
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:ff:00",
            "a:bb:cc:dd:ee:ff",
            "aa-bb-cc-dd-ee-ff",
            "gg:bb:cc:dd:ee:ff",
            "+a:bb:cc:dd:ee:ff",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
        assert!(MacAddr::BROADCAST.is_broadcast() && MacAddr::BROADCAST.is_multicast());
        let mc = MacAddr([0x33, 0x33, 0xff, 0, 0, 1]);
        assert!(mc.is_multicast() && !mc.is_broadcast() && !mc.is_unicast());
        assert!(MacAddr([0x02, 0, 0, 0, 0, 1]).is_unicast());
        assert_eq!(m.to_u64(), 0xaabb_0cdd_eeff);
        assert_eq!(MacAddr::from_u64(0xffff_aabb_0cdd_eeff), m);
        assert_eq!(MacAddr::from_slice(&[1, 2, 3]), None);
    }

    #[test]
    fn ethertype_round_trips() {
        for v in [0x0800u16, 0x0806, 0x8100, 0x88a8, 0x86dd, 0x9100, 0] {
            assert_eq!(u16::from(EtherType::from(v)), v);
        }
        assert_eq!(EtherType::from(0x86dd), EtherType::Ipv6);
    }

    #[test]
    fn repr_emit_parse() {
        let r = EthernetRepr {
            src_addr: MacAddr([2, 0, 0, 0, 0, 2]),
            dst_addr: MacAddr([2, 0, 0, 0, 0, 1]),
            ethertype: EtherType::Ipv4,
        };
        let mut buf = [0u8; 14];
        r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..], &FRAME[..14]);
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_checked(&buf[..]).unwrap()).unwrap(),
            r
        );
    }

    proptest::proptest! {
        #[test]
        fn repr_emit_parse_prop(src in proptest::prelude::any::<[u8; 6]>(), dst in proptest::prelude::any::<[u8; 6]>(), et in proptest::prelude::any::<u16>()) {
            let r = EthernetRepr { src_addr: MacAddr(src), dst_addr: MacAddr(dst), ethertype: EtherType::from(et) };
            let mut buf = [0u8; HEADER_LEN];
            r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
            let parsed = EthernetRepr::parse(&EthernetFrame::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(parsed, r);
        }
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{PacketBuilder, SlicedPacket};
        let builder = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1])
            .double_vlan(0x123.try_into().unwrap(), 0x234.try_into().unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1000, 2000);
        let mut pkt = Vec::new();
        builder.write(&mut pkt, &[1, 2, 3]).unwrap();
        let info = l3_offset(&pkt).unwrap();
        assert_eq!(
            info,
            L2Info {
                ethertype: EtherType::Ipv4,
                l3_offset: 22,
                vids: [Some(0x123), Some(0x234)]
            }
        );
        let oracle = SlicedPacket::from_ethernet(&pkt).unwrap();
        let eth = EthernetFrame::new_checked(&pkt[..]).unwrap();
        let etherparse::LinkSlice::Ethernet2(ol) = oracle.link.unwrap() else {
            panic!("not ethernet")
        };
        assert_eq!(eth.src_addr().0, ol.source());
        assert_eq!(eth.dst_addr().0, ol.destination());
        assert_eq!(u16::from(eth.ethertype()), ol.ether_type().0);
    }
}
