//! IPv6 (RFC 8200): the fixed-header [`Ipv6Packet`] view, [`Ipv6Repr`], and
//! [`walk_extensions`], which finds the upper-layer header behind extension
//! headers in bounded work.
//!
//! Jumbograms (payload length 0 with a Jumbo Payload option) are not
//! supported: their payload reads as empty.

use std::net::Ipv6Addr;

use super::ip::IpProtocol;
use super::{be16, be32, Error, Result};

mod field {
    use core::ops::Range;

    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// A view of an IPv6 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

#[inline]
fn addr(b: &[u8]) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(b);
    Ipv6Addr::from(o)
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps `buffer`, checking the version and the payload length. The
    /// buffer may be longer than 40 + payload length (padding).
    ///
    /// # Errors
    /// In this order:
    /// - [`Error::Truncated`]: buffer shorter than 40 bytes.
    /// - [`Error::BadVersion`]: version != 6.
    /// - [`Error::BadTotalLen`]: 40 + payload length > buffer length.
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
        if self.version() != 6 {
            return Err(Error::BadVersion);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(Error::BadTotalLen);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Always [`HEADER_LEN`]: extension headers are part of the payload.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    #[inline]
    fn ver_tc_flow(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }

    /// Version (6 for a checked packet).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class (DSCP << 2 | ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    /// Differentiated services code point.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification.
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & 0x000f_ffff
    }

    /// Payload length (everything after the fixed header, extension headers
    /// included).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Next header (an extension header or the upper layer).
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// The payload: `payload_len` bytes after the fixed header (padding
    /// excluded). Pass it to [`walk_extensions`] with
    /// [`Ipv6Packet::next_header`].
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline]
    fn set_ver_tc_flow(&mut self, v: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the version (low 4 bits).
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let w = (self.ver_tc_flow() & 0x0fff_ffff) | (u32::from(v & 0x0f) << 28);
        self.set_ver_tc_flow(w);
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_traffic_class(&mut self, v: u8) {
        let w = (self.ver_tc_flow() & 0xf00f_ffff) | (u32::from(v) << 20);
        self.set_ver_tc_flow(w);
    }

    /// Sets the flow label (low 20 bits).
    #[inline]
    pub fn set_flow_label(&mut self, v: u32) {
        let w = (self.ver_tc_flow() & 0xfff0_0000) | (v & 0x000f_ffff);
        self.set_ver_tc_flow(w);
    }

    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = u8::from(v);
    }

    /// Sets the hop limit (IPv6 has no header checksum to patch).
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, v: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&v.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, v: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&v.octets());
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The parsed form of an IPv6 fixed header. `emit` writes traffic class and
/// flow label 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    pub next_header: IpProtocol,
    /// Payload length in bytes (extension headers included).
    pub payload_len: usize,
    pub hop_limit: u8,
}

impl Ipv6Repr {
    /// Reads the fixed header.
    ///
    /// # Errors
    /// Those of [`Ipv6Packet::check_len`] (for unchecked views).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Self> {
        p.check_len()?;
        Ok(Ipv6Repr {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            next_header: p.next_header(),
            payload_len: usize::from(p.payload_len()),
            hop_limit: p.hop_limit(),
        })
    }

    /// Bytes `emit` writes: the 40-byte fixed header (the payload follows).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`]. `payload_len` must fit
    /// in 16 bits (debug-asserted).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv6Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX));
        p.set_ver_tc_flow(0x6000_0000);
        p.set_payload_len(self.payload_len as u16);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
    }
}

/// Most extension headers [`walk_extensions`] will cross before giving up.
/// Real traffic rarely carries more than two; the cap bounds per-packet work
/// against crafted chains.
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// Length of the IPv6 Fragment header.
pub const FRAGMENT_HEADER_LEN: usize = 8;

/// What [`walk_extensions`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtWalk {
    /// The first header that is not an extension header walked here: the
    /// upper-layer protocol (TCP, UDP, ICMPv6, ...), `Ipv6NoNxt`, `Esp`, or
    /// any unknown value.
    pub protocol: IpProtocol,
    /// Offset of that header from the end of the fixed header (so from the
    /// start of [`Ipv6Packet::payload`]).
    pub l4_offset: usize,
    /// A Fragment header was crossed.
    pub is_fragment: bool,
    /// A Fragment header with a non-zero offset was found. The walk stops
    /// there: the bytes at `l4_offset` are the middle of the upper-layer
    /// payload, so ports must not be read.
    pub is_non_first_fragment: bool,
}

/// Takes one off an IPv6 header's hop limit (byte 7; there is no header
/// checksum to patch): the router's forwarding rewrite, beside
/// [`super::ipv4::decrement_ttl_v4`].
#[inline(always)]
pub fn decrement_hop_limit(ip: &mut [u8]) {
    ip[7] -= 1;
}

/// Walks the IPv6 extension headers starting with `next_header` over
/// `payload` (the bytes after the fixed header) to the upper-layer header.
///
/// Hop-by-Hop (0), Routing (43) and Destination Options (60) are
/// `(len + 1) * 8` bytes, Fragment (44) is 8 bytes, AH (51) is
/// `(len + 2) * 4` bytes. Any other value ends the walk. The order of the
/// others is not enforced, but Hop-by-Hop must come first (RFC 8200 4.1).
///
/// # Errors
/// - [`Error::Truncated`] if an extension header runs past `payload`.
/// - [`Error::Unsupported`] if more than [`MAX_EXTENSION_HEADERS`] extension
///   headers precede the upper layer, or a Hop-by-Hop header follows another
///   extension header.
#[inline]
pub fn walk_extensions(next_header: IpProtocol, payload: &[u8]) -> Result<ExtWalk> {
    let mut nh = next_header;
    let mut off = 0usize;
    let mut is_fragment = false;
    let mut walked = 0;
    loop {
        let (len, is_frag) = match nh {
            // RFC 8200 4.1: Hop-by-Hop comes right after the fixed header or
            // not at all; elsewhere its Next Header value is unrecognised.
            IpProtocol::HopByHop if walked > 0 => return Err(Error::Unsupported),
            IpProtocol::HopByHop | IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts => {
                let h = payload.get(off..off + 2).ok_or(Error::Truncated)?;
                ((usize::from(h[1]) + 1) * 8, false)
            }
            IpProtocol::Ah => {
                let h = payload.get(off..off + 2).ok_or(Error::Truncated)?;
                ((usize::from(h[1]) + 2) * 4, false)
            }
            IpProtocol::Ipv6Frag => (FRAGMENT_HEADER_LEN, true),
            _ => {
                return Ok(ExtWalk {
                    protocol: nh,
                    l4_offset: off,
                    is_fragment,
                    is_non_first_fragment: false,
                });
            }
        };
        if walked == MAX_EXTENSION_HEADERS {
            return Err(Error::Unsupported);
        }
        walked += 1;
        let h = payload.get(off..off + len).ok_or(Error::Truncated)?;
        nh = IpProtocol::from(h[0]);
        off += len;
        if is_frag {
            is_fragment = true;
            // Bytes 2..4: 13-bit offset, 2 reserved bits, M flag.
            if be16(&h[2..4]) & 0xfff8 != 0 {
                return Ok(ExtWalk {
                    protocol: nh,
                    l4_offset: off,
                    is_fragment,
                    is_non_first_fragment: true,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

    #[rustfmt::skip]
    const PACKET: [u8; 86] = [
        // fixed header
        0x6b, 0x81, 0x23, 0x45,             // version 6, traffic class 0xb8, flow label 0x12345
        0x00, 0x2c,                         // payload length 44
        0x00,                               // next header Hop-by-Hop
        0x40,                               // hop limit 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, // source 2001:db8::1
        0, 0, 0, 0, 0, 0, 0, 0x01,
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, // destination 2001:db8::2
        0, 0, 0, 0, 0, 0, 0, 0x02,
        // Hop-by-Hop options, 8 bytes
        0x2b,                               // next header Routing
        0x00,                               // length 0 (8 bytes)
        0x01, 0x04, 0x00, 0x00, 0x00, 0x00, // PadN, 4 bytes
        // Routing, 8 bytes
        0x2c,                               // next header Fragment
        0x00,                               // length 0 (8 bytes)
        0x00,                               // routing type 0
        0x00,                               // segments left 0
        0x00, 0x00, 0x00, 0x00,             // reserved
        // Fragment, 8 bytes
        0x3c,                               // next header Destination Options
        0x00,                               // reserved
        0x00, 0x00,                         // offset 0, M 0 (atomic fragment)
        0x00, 0x00, 0x00, 0x2a,             // identification 42
        // Destination options, 8 bytes
        0x11,                               // next header UDP
        0x00,                               // length 0 (8 bytes)
        0x01, 0x04, 0x00, 0x00, 0x00, 0x00, // PadN, 4 bytes
        // UDP at offset 32 from the end of the fixed header
        0x30, 0x39,                         // source port 12345
        0x00, 0x35,                         // destination port 53
        0x00, 0x0c,                         // length 12
        0x00, 0x00,                         // checksum (none)
        0xca, 0xfe, 0xba, 0xbe,             // data
        // Ethernet padding
        0x00, 0x00,
    ];

    #[test]
    fn getters() {
        let p = Ipv6Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.dscp(), 46);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 44);
        assert_eq!(p.next_header(), IpProtocol::HopByHop);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), SRC);
        assert_eq!(p.dst_addr(), DST);
        assert_eq!(p.header_len(), 40);
        assert_eq!(p.payload(), &PACKET[40..84]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..84 {
            let expect = if n < HEADER_LEN {
                Error::Truncated
            } else {
                Error::BadTotalLen
            };
            assert_eq!(
                Ipv6Packet::new_checked(&PACKET[..n]).unwrap_err(),
                expect,
                "n={n}"
            );
        }
        assert!(Ipv6Packet::new_checked(&PACKET[..84]).is_ok());
    }

    #[test]
    fn rejects_bad_version() {
        let mut b = PACKET;
        b[0] = 0x4b;
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadVersion
        );
    }

    #[test]
    fn rejects_payload_len_past_buffer() {
        let mut b = PACKET;
        b[4..6].copy_from_slice(&47u16.to_be_bytes());
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLen
        );
    }

    #[test]
    fn walks_hop_by_hop_routing_fragment_dest_opts() {
        let p = Ipv6Packet::new_checked(&PACKET[..]).unwrap();
        let w = walk_extensions(p.next_header(), p.payload()).unwrap();
        assert_eq!(
            w,
            ExtWalk {
                protocol: IpProtocol::Udp,
                l4_offset: 32,
                is_fragment: true,
                is_non_first_fragment: false
            }
        );
        assert_eq!(
            &p.payload()[w.l4_offset..w.l4_offset + 4],
            &[0x30, 0x39, 0x00, 0x35]
        );
    }

    /// Hop-by-Hop is first or nowhere (RFC 8200 4.1): after a Destination
    /// Options or Routing header, or a second one, ends the walk unsupported.
    #[test]
    fn hop_by_hop_anywhere_but_first_is_refused() {
        let hbh_to = |next: u8| [next, 0, 1, 4, 0, 0, 0, 0];
        let udp = [0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0];
        let chain = |parts: &[[u8; 8]]| parts.concat();
        let first = chain(&[hbh_to(17), udp]);
        assert_eq!(
            walk_extensions(IpProtocol::HopByHop, &first)
                .unwrap()
                .l4_offset,
            8
        );
        for (start, body) in [
            (IpProtocol::Ipv6Opts, chain(&[hbh_to(0), hbh_to(17), udp])),
            (IpProtocol::Ipv6Route, chain(&[hbh_to(0), hbh_to(17), udp])),
            (IpProtocol::HopByHop, chain(&[hbh_to(0), hbh_to(17), udp])),
        ] {
            assert_eq!(
                walk_extensions(start, &body).unwrap_err(),
                Error::Unsupported,
                "{start:?} then Hop-by-Hop"
            );
        }
    }

    #[test]
    fn ext_chain_past_buffer_is_truncated_at_every_offset() {
        let payload = &PACKET[40..84];
        for n in 0..32 {
            assert_eq!(
                walk_extensions(IpProtocol::HopByHop, &payload[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
        assert_eq!(
            walk_extensions(IpProtocol::HopByHop, &payload[..32])
                .unwrap()
                .l4_offset,
            32
        );
        // A Hop-by-Hop header claiming 16 bytes where 8 remain.
        let hbh = [0x11, 0x01, 0x01, 0x04, 0, 0, 0, 0];
        assert_eq!(
            walk_extensions(IpProtocol::HopByHop, &hbh).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn non_first_fragment_stops_the_walk() {
        let mut b = PACKET;
        b[58..60].copy_from_slice(&[0x00, 0x08]); // offset 1 (8 bytes), M 0
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        let w = walk_extensions(p.next_header(), p.payload()).unwrap();
        // The fragmentable part starts with the Destination Options header,
        // and what follows the Fragment header is mid-payload.
        assert_eq!(
            w,
            ExtWalk {
                protocol: IpProtocol::Ipv6Opts,
                l4_offset: 24,
                is_fragment: true,
                is_non_first_fragment: true
            }
        );
        // M set with offset 0 is a first fragment: the walk continues.
        b[58..60].copy_from_slice(&[0x00, 0x01]);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        let w = walk_extensions(p.next_header(), p.payload()).unwrap();
        assert_eq!(
            (
                w.protocol,
                w.l4_offset,
                w.is_fragment,
                w.is_non_first_fragment
            ),
            (IpProtocol::Udp, 32, true, false)
        );
    }

    #[test]
    fn authentication_header_length_in_4_octet_units() {
        #[rustfmt::skip]
        let ah = [
            0x06,                   // next header TCP
            0x01,                   // payload length 1: (1 + 2) * 4 = 12 bytes
            0x00, 0x00,             // reserved
            0x00, 0x00, 0x01, 0x00, // SPI
            0x00, 0x00, 0x00, 0x07, // sequence number
            0xaa, 0xbb,             // TCP...
        ];
        let w = walk_extensions(IpProtocol::Ah, &ah).unwrap();
        assert_eq!(
            (w.protocol, w.l4_offset, w.is_fragment),
            (IpProtocol::Tcp, 12, false)
        );
        assert_eq!(
            walk_extensions(IpProtocol::Ah, &ah[..11]).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn walk_stops_at_upper_layer_esp_and_no_next_header() {
        for nh in [
            IpProtocol::Udp,
            IpProtocol::Esp,
            IpProtocol::Ipv6NoNxt,
            IpProtocol::Unknown(253),
        ] {
            let w = walk_extensions(nh, &[]).unwrap();
            assert_eq!((w.protocol, w.l4_offset), (nh, 0));
        }
    }

    #[test]
    fn walk_is_capped() {
        let chain = |n: usize| {
            let mut v = Vec::new();
            for i in 0..n {
                let next = if i + 1 == n { 17 } else { 60 };
                v.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]);
            }
            v
        };
        let w = walk_extensions(IpProtocol::Ipv6Opts, &chain(MAX_EXTENSION_HEADERS)).unwrap();
        assert_eq!(
            (w.protocol, w.l4_offset),
            (IpProtocol::Udp, 8 * MAX_EXTENSION_HEADERS)
        );
        assert_eq!(
            walk_extensions(IpProtocol::Ipv6Opts, &chain(MAX_EXTENSION_HEADERS + 1)).unwrap_err(),
            Error::Unsupported
        );
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 48];
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        p.set_version(6);
        p.set_traffic_class(0xff);
        p.set_flow_label(0xfffff);
        p.set_traffic_class(0x12);
        p.set_flow_label(0xabcde);
        p.set_payload_len(8);
        p.set_next_header(IpProtocol::Icmpv6);
        p.set_hop_limit(255);
        p.set_src_addr(SRC);
        p.set_dst_addr(DST);
        p.payload_mut().fill(7);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.traffic_class(), p.flow_label()),
            (6, 0x12, 0xabcde)
        );
        assert_eq!(
            (p.payload_len(), p.next_header(), p.hop_limit()),
            (8, IpProtocol::Icmpv6, 255)
        );
        assert_eq!((p.src_addr(), p.dst_addr()), (SRC, DST));
        assert_eq!(p.payload(), &[7; 8]);
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{NetSlice, SlicedPacket};
        let oracle = SlicedPacket::from_ip(&PACKET[..84]).unwrap();
        let Some(NetSlice::Ipv6(o)) = oracle.net else {
            panic!("not ipv6")
        };
        let p = Ipv6Packet::new_checked(&PACKET[..]).unwrap();
        let h = o.header();
        assert_eq!(p.src_addr(), h.source_addr());
        assert_eq!(p.dst_addr(), h.destination_addr());
        assert_eq!(p.traffic_class(), h.traffic_class());
        assert_eq!(p.flow_label(), h.flow_label().value());
        assert_eq!(p.hop_limit(), h.hop_limit());
        assert_eq!(p.payload_len(), h.payload_length());
        let w = walk_extensions(p.next_header(), p.payload()).unwrap();
        assert_eq!(u8::from(w.protocol), o.payload().ip_number.0);
        assert_eq!(&p.payload()[w.l4_offset..], o.payload().payload);
    }

    proptest! {
        #[test]
        fn repr_emit_parse(
            src in any::<u128>(), dst in any::<u128>(), nh in any::<u8>(),
            payload_len in 0usize..1500, hop_limit in any::<u8>(),
        ) {
            let r = Ipv6Repr {
                src_addr: Ipv6Addr::from(src),
                dst_addr: Ipv6Addr::from(dst),
                next_header: IpProtocol::from(nh),
                payload_len,
                hop_limit,
            };
            let mut buf = vec![0xffu8; r.buffer_len() + payload_len];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
            let p = Ipv6Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Ipv6Repr::parse(&p).unwrap(), r);
            prop_assert_eq!((p.traffic_class(), p.flow_label()), (0, 0));
        }

        #[test]
        fn walk_never_panics(nh in any::<u8>(), buf in proptest::collection::vec(any::<u8>(), 0..128)) {
            if let Ok(w) = walk_extensions(IpProtocol::from(nh), &buf) {
                prop_assert!(w.l4_offset <= buf.len());
            }
        }
    }
}
