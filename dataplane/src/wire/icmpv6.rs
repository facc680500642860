//! ICMPv6 (RFC 4443) and the Neighbor Discovery messages the router needs
//! (RFC 4861: Neighbor Solicitation and Advertisement with their link-layer
//! address options): the [`Icmpv6Packet`] view, [`NdpOption`] iteration and
//! [`Icmpv6Repr`], used to answer echo and NDP and to originate Time Exceeded
//! and Packet Too Big.
//!
//! The checksum covers an IPv6 pseudo-header and the whole message, so the
//! view's buffer must be exactly the ICMPv6 message (the upper-layer part of
//! the IPv6 payload) and checksum methods take the IPv6 addresses.

use std::net::Ipv6Addr;

use super::checksum;
use super::ethernet::MacAddr;
use super::ip::IpProtocol;
use super::{be16, be32, enum_with_unknown, Error, Result};

enum_with_unknown! {
    /// ICMPv6 message type.
    pub enum Icmpv6Type(u8) {
        DstUnreachable = 1,
        PacketTooBig = 2,
        TimeExceeded = 3,
        ParamProblem = 4,
        EchoRequest = 128,
        EchoReply = 129,
        RouterSolicit = 133,
        RouterAdvert = 134,
        NeighborSolicit = 135,
        NeighborAdvert = 136,
        Redirect = 137,
    }
}

impl Icmpv6Type {
    /// Neighbor Solicitation or Advertisement: a target address follows the
    /// header, then options.
    #[inline]
    pub fn is_neighbor(self) -> bool {
        matches!(
            self,
            Icmpv6Type::NeighborSolicit | Icmpv6Type::NeighborAdvert
        )
    }
}

/// Time Exceeded codes.
pub mod time_exceeded {
    /// Hop limit exceeded in transit.
    pub const HOP_LIMIT: u8 = 0;
    pub const REASSEMBLY: u8 = 1;
}

/// The most of the invoking packet an error should quote so that the reply
/// fits the IPv6 minimum MTU (RFC 4443 §2.4(c)): 1280 - 40 - 8.
pub const MAX_ERROR_QUOTE: usize = 1232;

/// NDP option type: Source Link-Layer Address.
pub const OPT_SOURCE_LLADDR: u8 = 1;
/// NDP option type: Target Link-Layer Address.
pub const OPT_TARGET_LLADDR: u8 = 2;
/// Length of a link-layer address option for Ethernet (type, length 1, MAC).
pub const LLADDR_OPTION_LEN: usize = 8;

mod field {
    use core::ops::{Range, RangeFrom};

    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const NDP_FLAGS: usize = 4;
    pub const DATA: RangeFrom<usize> = 8..;
    pub const TARGET: Range<usize> = 8..24;
    pub const NDP_OPTIONS: RangeFrom<usize> = 24..;
}

/// Length of the ICMPv6 header (type, code, checksum, four message bytes).
pub const HEADER_LEN: usize = field::DATA.start;
/// Length of a Neighbor Solicitation/Advertisement without options.
pub const NEIGHBOR_LEN: usize = field::NDP_OPTIONS.start;

/// The R, S and O bits of a Neighbor Advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NdpFlags(pub u8);

impl NdpFlags {
    /// R: the sender is a router.
    pub const ROUTER: NdpFlags = NdpFlags(0x80);
    /// S: sent in response to a solicitation.
    pub const SOLICITED: NdpFlags = NdpFlags(0x40);
    /// O: override an existing cache entry.
    pub const OVERRIDE: NdpFlags = NdpFlags(0x20);

    /// Are all bits of `other` set?
    #[inline]
    pub fn contains(self, other: NdpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// R bit.
    #[inline]
    pub fn is_router(self) -> bool {
        self.contains(Self::ROUTER)
    }

    /// S bit.
    #[inline]
    pub fn is_solicited(self) -> bool {
        self.contains(Self::SOLICITED)
    }

    /// O bit.
    #[inline]
    pub fn is_override(self) -> bool {
        self.contains(Self::OVERRIDE)
    }
}

impl core::ops::BitOr for NdpFlags {
    type Output = NdpFlags;
    #[inline]
    fn bitor(self, rhs: NdpFlags) -> NdpFlags {
        NdpFlags(self.0 | rhs.0)
    }
}

/// One NDP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdpOption<'a> {
    /// Type 1; for links with longer addresses the first six bytes.
    SourceLinkLayerAddr(MacAddr),
    /// Type 2.
    TargetLinkLayerAddr(MacAddr),
    /// Any other option: its type and the bytes after type and length.
    Unknown { kind: u8, data: &'a [u8] },
}

/// Splits the first option off `d`: `Ok(None)` at the end.
#[inline]
fn next_option(d: &[u8]) -> Result<Option<(NdpOption<'_>, &[u8])>> {
    if d.is_empty() {
        return Ok(None);
    }
    let hdr = d.get(..2).ok_or(Error::Truncated)?;
    let len = usize::from(hdr[1]) * 8;
    if len == 0 {
        // RFC 4861 §4.6: nodes must discard a packet with a zero-length option.
        return Err(Error::BadOption);
    }
    let (opt, rest) = d.split_at_checked(len).ok_or(Error::Truncated)?;
    let body = &opt[2..];
    let mac = || {
        let mut m = [0u8; 6];
        m.copy_from_slice(&body[..6]);
        MacAddr(m)
    };
    let o = match opt[0] {
        OPT_SOURCE_LLADDR => NdpOption::SourceLinkLayerAddr(mac()),
        OPT_TARGET_LLADDR => NdpOption::TargetLinkLayerAddr(mac()),
        kind => NdpOption::Unknown { kind, data: body },
    };
    Ok(Some((o, rest)))
}

/// Iterator over the options of a Neighbor Solicitation/Advertisement. On a
/// checked view every option is well formed; on an unchecked one iteration
/// stops at the first malformed option.
#[derive(Debug, Clone)]
pub struct NdpOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for NdpOptions<'a> {
    type Item = NdpOption<'a>;

    #[inline]
    fn next(&mut self) -> Option<NdpOption<'a>> {
        match next_option(self.rest) {
            Ok(Some((o, rest))) => {
                self.rest = rest;
                Some(o)
            }
            _ => {
                self.rest = &[];
                None
            }
        }
    }
}

/// A view of an ICMPv6 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    /// Wraps `buffer`, checking the header and, for Neighbor Solicitation and
    /// Advertisement, the target address and every option.
    ///
    /// # Errors
    /// - [`Error::Truncated`]: buffer shorter than 8 bytes; an NS/NA shorter
    ///   than 24 bytes; an NDP option running past the buffer.
    /// - [`Error::BadOption`]: an NDP option with length 0.
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
        if d.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.msg_type().is_neighbor() {
            let mut rest = d.get(field::NDP_OPTIONS).ok_or(Error::Truncated)?;
            while let Some((_, r)) = next_option(rest)? {
                rest = r;
            }
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Always [`HEADER_LEN`]: NDP bodies are part of the payload.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv6Type {
        Icmpv6Type::from(self.buffer.as_ref()[field::TYPE])
    }

    /// Message code.
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum as stored.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The four message bytes after the checksum (Packet Too Big: the MTU;
    /// Parameter Problem: the pointer).
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::REST])
    }

    /// Echo identifier.
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo sequence number.
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// The R/S/O bits (meaningful for a Neighbor Advertisement).
    #[inline]
    pub fn neighbor_flags(&self) -> NdpFlags {
        NdpFlags(self.buffer.as_ref()[field::NDP_FLAGS] & 0xe0)
    }

    /// The target address of a Neighbor Solicitation/Advertisement; `None`
    /// for other types.
    #[inline]
    pub fn target_addr(&self) -> Option<Ipv6Addr> {
        if !self.msg_type().is_neighbor() {
            return None;
        }
        let t = self.buffer.as_ref().get(field::TARGET)?;
        let mut o = [0u8; 16];
        o.copy_from_slice(t);
        Some(Ipv6Addr::from(o))
    }

    /// The options of a Neighbor Solicitation/Advertisement; empty for other
    /// types.
    #[inline]
    pub fn ndp_options(&self) -> NdpOptions<'_> {
        let rest = if self.msg_type().is_neighbor() {
            self.buffer.as_ref().get(field::NDP_OPTIONS).unwrap_or(&[])
        } else {
            &[]
        };
        NdpOptions { rest }
    }

    /// The first Source Link-Layer Address option, if any.
    #[inline]
    pub fn source_lladdr(&self) -> Option<MacAddr> {
        self.ndp_options().find_map(|o| match o {
            NdpOption::SourceLinkLayerAddr(m) => Some(m),
            _ => None,
        })
    }

    /// The first Target Link-Layer Address option, if any.
    #[inline]
    pub fn target_lladdr(&self) -> Option<MacAddr> {
        self.ndp_options().find_map(|o| match o {
            NdpOption::TargetLinkLayerAddr(m) => Some(m),
            _ => None,
        })
    }

    /// Everything after the 8-byte header: echo data, the quoted invoking
    /// packet of an error, or an NDP target and options.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// Does the checksum verify, given the IPv6 addresses?
    #[inline]
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        checksum::verify_l4_v6(src, dst, IpProtocol::Icmpv6, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, v: Icmpv6Type) {
        self.buffer.as_mut()[field::TYPE] = u8::from(v);
    }

    /// Sets the message code.
    #[inline]
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the stored checksum.
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the four message bytes.
    #[inline]
    pub fn set_rest_of_header(&mut self, v: u32) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_IDENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_SEQNO].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the R/S/O bits and clears the reserved bits after them.
    #[inline]
    pub fn set_neighbor_flags(&mut self, v: NdpFlags) {
        self.set_rest_of_header(u32::from(v.0 & 0xe0) << 24);
    }

    /// Sets the NDP target address.
    ///
    /// # Panics
    /// If the buffer is shorter than [`NEIGHBOR_LEN`].
    #[inline]
    pub fn set_target_addr(&mut self, v: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET].copy_from_slice(&v.octets());
    }

    /// Mutable payload (after the 8-byte header).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// Computes and stores the checksum, given the IPv6 addresses.
    #[inline]
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        checksum::fill_l4_v6(
            src,
            dst,
            IpProtocol::Icmpv6,
            self.buffer.as_mut(),
            field::CHECKSUM.start,
        );
    }
}

/// The ICMPv6 messages the router answers or originates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    NeighborSolicit {
        target: Ipv6Addr,
        source_lladdr: Option<MacAddr>,
    },
    NeighborAdvert {
        flags: NdpFlags,
        target: Ipv6Addr,
        target_lladdr: Option<MacAddr>,
    },
    /// `data` is the invoking packet, at most [`MAX_ERROR_QUOTE`] bytes.
    DstUnreachable { code: u8, data: &'a [u8] },
    /// `data` as for `DstUnreachable`.
    PacketTooBig { mtu: u32, data: &'a [u8] },
    /// `data` as for `DstUnreachable`.
    TimeExceeded { code: u8, data: &'a [u8] },
}

impl<'a> Icmpv6Repr<'a> {
    /// Parses a message, verifying its checksum against the IPv6 addresses.
    /// Other NDP options than the link-layer address ones are skipped.
    ///
    /// RFC 4861 §7.1 also requires hop limit 255 on NDP messages: the caller
    /// checks that on the IPv6 header.
    ///
    /// # Errors
    /// - Those of [`Icmpv6Packet::check_len`] (for unchecked views).
    /// - [`Error::BadChecksum`] if the checksum does not verify.
    /// - [`Error::Unsupported`] for other types, echo or NDP with code != 0,
    ///   or an NDP target that is multicast.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        p: &Icmpv6Packet<&'a T>,
    ) -> Result<Self> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        let buf: &'a T = p.buffer;
        let data = &buf.as_ref()[field::DATA];
        let target = || match p.target_addr() {
            Some(t) if !t.is_multicast() => Ok(t),
            _ => Err(Error::Unsupported),
        };
        match (p.msg_type(), p.msg_code()) {
            (Icmpv6Type::EchoRequest, 0) => Ok(Icmpv6Repr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (Icmpv6Type::EchoReply, 0) => Ok(Icmpv6Repr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (Icmpv6Type::NeighborSolicit, 0) => Ok(Icmpv6Repr::NeighborSolicit {
                target: target()?,
                source_lladdr: p.source_lladdr(),
            }),
            (Icmpv6Type::NeighborAdvert, 0) => Ok(Icmpv6Repr::NeighborAdvert {
                flags: p.neighbor_flags(),
                target: target()?,
                target_lladdr: p.target_lladdr(),
            }),
            (Icmpv6Type::DstUnreachable, code) => Ok(Icmpv6Repr::DstUnreachable { code, data }),
            (Icmpv6Type::PacketTooBig, 0) => Ok(Icmpv6Repr::PacketTooBig {
                mtu: p.rest_of_header(),
                data,
            }),
            (Icmpv6Type::TimeExceeded, code) => Ok(Icmpv6Repr::TimeExceeded { code, data }),
            _ => Err(Error::Unsupported),
        }
    }

    /// Bytes `emit` writes: header, body and options.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        match self {
            Icmpv6Repr::EchoRequest { data, .. }
            | Icmpv6Repr::EchoReply { data, .. }
            | Icmpv6Repr::DstUnreachable { data, .. }
            | Icmpv6Repr::PacketTooBig { data, .. }
            | Icmpv6Repr::TimeExceeded { data, .. } => HEADER_LEN + data.len(),
            Icmpv6Repr::NeighborSolicit {
                source_lladdr: lladdr,
                ..
            }
            | Icmpv6Repr::NeighborAdvert {
                target_lladdr: lladdr,
                ..
            } => {
                NEIGHBOR_LEN
                    + if lladdr.is_some() {
                        LLADDR_OPTION_LEN
                    } else {
                        0
                    }
            }
        }
    }

    /// Writes the message and its checksum for the given IPv6 addresses.
    ///
    /// # Panics
    /// If the view's buffer is not exactly [`Icmpv6Repr::buffer_len`] bytes
    /// (the checksum covers the whole buffer).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        p: &mut Icmpv6Packet<T>,
    ) {
        assert_eq!(
            p.buffer.as_ref().len(),
            self.buffer_len(),
            "ICMPv6 buffer must fit the message exactly"
        );
        let echo_rest = |ident: u16, seq_no: u16| (u32::from(ident) << 16) | u32::from(seq_no);
        let write_data = |p: &mut Icmpv6Packet<T>, ty, code, rest, data: &[u8]| {
            p.set_msg_type(ty);
            p.set_msg_code(code);
            p.set_rest_of_header(rest);
            p.payload_mut().copy_from_slice(data);
        };
        match *self {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => write_data(
                p,
                Icmpv6Type::EchoRequest,
                0,
                echo_rest(ident, seq_no),
                data,
            ),
            Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => write_data(p, Icmpv6Type::EchoReply, 0, echo_rest(ident, seq_no), data),
            Icmpv6Repr::DstUnreachable { code, data } => {
                write_data(p, Icmpv6Type::DstUnreachable, code, 0, data)
            }
            Icmpv6Repr::PacketTooBig { mtu, data } => {
                write_data(p, Icmpv6Type::PacketTooBig, 0, mtu, data)
            }
            Icmpv6Repr::TimeExceeded { code, data } => {
                write_data(p, Icmpv6Type::TimeExceeded, code, 0, data)
            }
            Icmpv6Repr::NeighborSolicit {
                target,
                source_lladdr,
            } => {
                p.set_msg_type(Icmpv6Type::NeighborSolicit);
                p.set_msg_code(0);
                p.set_rest_of_header(0);
                p.set_target_addr(target);
                emit_lladdr(p, OPT_SOURCE_LLADDR, source_lladdr);
            }
            Icmpv6Repr::NeighborAdvert {
                flags,
                target,
                target_lladdr,
            } => {
                p.set_msg_type(Icmpv6Type::NeighborAdvert);
                p.set_msg_code(0);
                p.set_neighbor_flags(flags);
                p.set_target_addr(target);
                emit_lladdr(p, OPT_TARGET_LLADDR, target_lladdr);
            }
        }
        p.fill_checksum(src, dst);
    }
}

/// Writes a link-layer address option after the NDP target, if there is one.
#[inline]
fn emit_lladdr<T: AsRef<[u8]> + AsMut<[u8]>>(
    p: &mut Icmpv6Packet<T>,
    kind: u8,
    lladdr: Option<MacAddr>,
) {
    if let Some(m) = lladdr {
        let o = &mut p.buffer.as_mut()[NEIGHBOR_LEN..NEIGHBOR_LEN + LLADDR_OPTION_LEN];
        o[0] = kind;
        o[1] = 1; // in units of 8 bytes
        o[2..].copy_from_slice(&m.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LL_A: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const LL_B: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
    /// Solicited-node multicast address of fe80::2.
    const SNMA_B: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 2);

    #[rustfmt::skip]
    const NS: [u8; 32] = [
        0x87,                               // type 135 neighbor solicitation
        0x00,                               // code 0
        0x00, 0x00,                         // checksum (filled in by the tests)
        0x00, 0x00, 0x00, 0x00,             // reserved
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,       // target fe80::2
        0, 0, 0, 0, 0, 0, 0, 0x02,
        0x01,                               // option source link-layer address
        0x01,                               // length 1 (8 bytes)
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // 02:00:00:00:00:01
    ];

    #[rustfmt::skip]
    const NA: [u8; 40] = [
        0x88,                               // type 136 neighbor advertisement
        0x00,                               // code 0
        0x00, 0x00,                         // checksum (filled in by the tests)
        0xe0, 0x00, 0x00, 0x00,             // flags R, S, O; reserved
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,       // target fe80::2
        0, 0, 0, 0, 0, 0, 0, 0x02,
        0x0e,                               // option type 14 (nonce)
        0x01,                               // length 1 (8 bytes)
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // nonce
        0x02,                               // option target link-layer address
        0x01,                               // length 1 (8 bytes)
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // 02:00:00:00:00:02
    ];

    #[rustfmt::skip]
    const ECHO: [u8; 12] = [
        0x80,                   // type 128 echo request
        0x00,                   // code 0
        0x00, 0x00,             // checksum (filled in by the tests)
        0xbe, 0xef,             // identifier
        0x00, 0x01,             // sequence number 1
        0x70, 0x69, 0x6e, 0x67, // data "ping"
    ];

    fn filled<const N: usize>(b: [u8; N], src: &Ipv6Addr, dst: &Ipv6Addr) -> [u8; N] {
        let mut b = b;
        Icmpv6Packet::new_unchecked(&mut b[..]).fill_checksum(src, dst);
        b
    }

    #[test]
    fn getters_neighbor_solicit() {
        let b = filled(NS, &LL_A, &SNMA_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Type::NeighborSolicit);
        assert_eq!(p.msg_code(), 0);
        assert!(p.verify_checksum(&LL_A, &SNMA_B));
        assert!(!p.verify_checksum(&LL_B, &SNMA_B));
        assert_eq!(p.rest_of_header(), 0);
        assert_eq!(p.target_addr(), Some(LL_B));
        assert_eq!(p.source_lladdr(), Some(MacAddr([2, 0, 0, 0, 0, 1])));
        assert_eq!(p.target_lladdr(), None);
        assert_eq!(p.ndp_options().count(), 1);
        assert_eq!(p.header_len(), 8);
        assert_eq!(p.payload(), &NS[8..]);
    }

    #[test]
    fn getters_neighbor_advert() {
        let b = filled(NA, &LL_B, &LL_A);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Type::NeighborAdvert);
        let f = p.neighbor_flags();
        assert!(f.is_router() && f.is_solicited() && f.is_override());
        assert_eq!(
            f,
            NdpFlags::ROUTER | NdpFlags::SOLICITED | NdpFlags::OVERRIDE
        );
        assert_eq!(p.target_addr(), Some(LL_B));
        let opts: Vec<_> = p.ndp_options().collect();
        assert_eq!(
            opts,
            [
                NdpOption::Unknown {
                    kind: 14,
                    data: &[1, 2, 3, 4, 5, 6]
                },
                NdpOption::TargetLinkLayerAddr(MacAddr([2, 0, 0, 0, 0, 2])),
            ]
        );
        assert_eq!(p.target_lladdr(), Some(MacAddr([2, 0, 0, 0, 0, 2])));
        assert_eq!(p.source_lladdr(), None);
    }

    #[test]
    fn getters_echo() {
        let b = filled(ECHO, &LL_A, &LL_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Type::EchoRequest);
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (0xbeef, 1));
        assert_eq!(p.payload(), b"ping");
        assert_eq!(p.target_addr(), None);
        assert_eq!(p.ndp_options().count(), 0);
        assert!(p.verify_checksum(&LL_A, &LL_B));
    }

    #[test]
    fn truncated_at_every_offset() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                Icmpv6Packet::new_checked(&ECHO[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
        for pkt in [&NS[..], &NA[..]] {
            for n in 0..pkt.len() {
                let r = Icmpv6Packet::new_checked(&pkt[..n]);
                // Cut exactly between options, an NS/NA is well formed (with
                // fewer options); anywhere else it is truncated.
                if n >= NEIGHBOR_LEN && (n - NEIGHBOR_LEN).is_multiple_of(8) {
                    assert!(r.is_ok(), "n={n}");
                } else {
                    assert_eq!(r.unwrap_err(), Error::Truncated, "n={n}");
                }
            }
        }
    }

    #[test]
    fn rejects_zero_length_option() {
        let mut b = NS;
        b[25] = 0;
        assert_eq!(
            Icmpv6Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadOption
        );
        // An unchecked view stops iterating instead of looping forever.
        assert_eq!(Icmpv6Packet::new_unchecked(&b[..]).ndp_options().count(), 0);
    }

    #[test]
    fn rejects_option_running_past_buffer() {
        let mut b = NS;
        b[25] = 2; // 16 bytes where 8 remain
        assert_eq!(
            Icmpv6Packet::new_checked(&b[..]).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn repr_parse_literals() {
        let b = filled(NS, &LL_A, &SNMA_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&LL_A, &SNMA_B, &p).unwrap(),
            Icmpv6Repr::NeighborSolicit {
                target: LL_B,
                source_lladdr: Some(MacAddr([2, 0, 0, 0, 0, 1]))
            }
        );
        assert_eq!(
            Icmpv6Repr::parse(&LL_B, &SNMA_B, &p).unwrap_err(),
            Error::BadChecksum
        );
        let b = filled(NA, &LL_B, &LL_A);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&LL_B, &LL_A, &p).unwrap(),
            Icmpv6Repr::NeighborAdvert {
                flags: NdpFlags(0xe0),
                target: LL_B,
                target_lladdr: Some(MacAddr([2, 0, 0, 0, 0, 2])),
            }
        );
    }

    #[test]
    fn repr_rejects_multicast_target_bad_code_and_unknown_type() {
        let mut b = NS;
        b[8..24].copy_from_slice(&SNMA_B.octets());
        let b = filled(b, &LL_A, &SNMA_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&LL_A, &SNMA_B, &p).unwrap_err(),
            Error::Unsupported
        );
        let mut b = NS;
        b[1] = 1;
        let b = filled(b, &LL_A, &SNMA_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&LL_A, &SNMA_B, &p).unwrap_err(),
            Error::Unsupported
        );
        let mut b = ECHO;
        b[0] = 133; // router solicitation
        let b = filled(b, &LL_A, &LL_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&LL_A, &LL_B, &p).unwrap_err(),
            Error::Unsupported
        );
    }

    #[test]
    fn answer_solicitation_with_advertisement() {
        // The daemon's NDP answer path.
        let b = filled(NS, &LL_A, &SNMA_B);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        let Icmpv6Repr::NeighborSolicit {
            target,
            source_lladdr,
        } = Icmpv6Repr::parse(&LL_A, &SNMA_B, &p).unwrap()
        else {
            panic!("not NS")
        };
        assert_eq!(source_lladdr, Some(MacAddr([2, 0, 0, 0, 0, 1])));
        let na = Icmpv6Repr::NeighborAdvert {
            flags: NdpFlags::ROUTER | NdpFlags::SOLICITED | NdpFlags::OVERRIDE,
            target,
            target_lladdr: Some(MacAddr([2, 0, 0, 0, 0, 2])),
        };
        let mut out = vec![0xffu8; na.buffer_len()];
        na.emit(
            &target,
            &LL_A,
            &mut Icmpv6Packet::new_unchecked(&mut out[..]),
        );
        assert_eq!(out.len(), 32);
        let mut expect = NA[..24].to_vec();
        expect.extend_from_slice(&NA[32..]);
        assert_eq!(&out[4..], &expect[4..]);
        assert!(Icmpv6Packet::new_checked(&out[..])
            .unwrap()
            .verify_checksum(&target, &LL_A));
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 32];
        let mut p = Icmpv6Packet::new_unchecked(&mut b[..]);
        p.set_msg_type(Icmpv6Type::NeighborAdvert);
        p.set_msg_code(0);
        p.set_neighbor_flags(NdpFlags::SOLICITED | NdpFlags(0x1f));
        assert_eq!(p.neighbor_flags(), NdpFlags::SOLICITED);
        assert_eq!(p.rest_of_header(), 0x4000_0000);
        p.set_target_addr(LL_A);
        assert_eq!(p.target_addr(), Some(LL_A));
        p.payload_mut()[16..].copy_from_slice(&[2, 1, 1, 2, 3, 4, 5, 6]);
        assert_eq!(p.target_lladdr(), Some(MacAddr([1, 2, 3, 4, 5, 6])));
        p.set_msg_type(Icmpv6Type::EchoReply);
        p.set_echo_ident(3);
        p.set_echo_seq_no(4);
        assert_eq!(
            (p.msg_type(), p.echo_ident(), p.echo_seq_no()),
            (Icmpv6Type::EchoReply, 3, 4)
        );
        p.set_checksum(0xabcd);
        assert_eq!(p.checksum(), 0xabcd);
        p.set_rest_of_header(1280);
        assert_eq!(p.rest_of_header(), 1280);
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{Icmpv6Type as EpType, PacketBuilder, SlicedPacket, TransportSlice};
        let builder = PacketBuilder::ipv6(LL_A.octets(), LL_B.octets(), 64)
            .icmpv6_echo_request(0x1111, 0x2222);
        let mut pkt = Vec::new();
        builder.write(&mut pkt, b"hello").unwrap();
        let oracle = SlicedPacket::from_ip(&pkt).unwrap();
        let Some(TransportSlice::Icmpv6(o)) = oracle.transport else {
            panic!("not icmpv6")
        };
        let EpType::EchoRequest(echo) = o.icmp_type() else {
            panic!("not echo")
        };
        let p = Icmpv6Packet::new_checked(&pkt[40..]).unwrap();
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (echo.id, echo.seq));
        assert_eq!(p.checksum(), o.checksum());
        assert!(p.verify_checksum(&LL_A, &LL_B));
        assert_eq!(
            Icmpv6Repr::parse(&LL_A, &LL_B, &p).unwrap(),
            Icmpv6Repr::EchoRequest {
                ident: 0x1111,
                seq_no: 0x2222,
                data: b"hello"
            }
        );
    }

    proptest! {
        #[test]
        fn repr_emit_parse(
            kind in 0u8..7, a in any::<u16>(), b in any::<u16>(), code in any::<u8>(),
            mtu in any::<u32>(), target in any::<u128>(), mac in proptest::option::of(any::<[u8; 6]>()),
            flags in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..100),
            src in any::<u128>(), dst in any::<u128>(),
        ) {
            // NDP targets are never multicast (parse rejects them).
            let target = Ipv6Addr::from(target & !(0xff << 120));
            let lladdr = mac.map(MacAddr);
            let r = match kind {
                0 => Icmpv6Repr::EchoRequest { ident: a, seq_no: b, data: &data },
                1 => Icmpv6Repr::EchoReply { ident: a, seq_no: b, data: &data },
                2 => Icmpv6Repr::NeighborSolicit { target, source_lladdr: lladdr },
                3 => Icmpv6Repr::NeighborAdvert { flags: NdpFlags(flags & 0xe0), target, target_lladdr: lladdr },
                4 => Icmpv6Repr::DstUnreachable { code, data: &data },
                5 => Icmpv6Repr::PacketTooBig { mtu, data: &data },
                _ => Icmpv6Repr::TimeExceeded { code, data: &data },
            };
            let (s, d) = (Ipv6Addr::from(src), Ipv6Addr::from(dst));
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&s, &d, &mut Icmpv6Packet::new_unchecked(&mut buf[..]));
            let p = Icmpv6Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Icmpv6Repr::parse(&s, &d, &p).unwrap(), r);
            // etherparse agrees on the checksum.
            let o = etherparse::Icmpv6Slice::from_slice(&buf).unwrap();
            prop_assert!(o.is_checksum_valid(s.octets(), d.octets()));
        }

        #[test]
        fn new_checked_never_panics(buf in proptest::collection::vec(any::<u8>(), 0..64), ty in 133u8..=137) {
            let mut buf = buf;
            if let Some(t) = buf.first_mut() { *t = ty; }
            if let Ok(p) = Icmpv6Packet::new_checked(&buf[..]) {
                let _ = (p.target_addr(), p.source_lladdr(), p.target_lladdr(), p.ndp_options().count());
            }
        }
    }
}
