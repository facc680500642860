//! ICMPv4 (RFC 792): the [`Icmpv4Packet`] view and [`Icmpv4Repr`], used to
//! answer echo requests and to originate Time Exceeded and Destination
//! Unreachable errors.
//!
//! The checksum covers the whole message with no pseudo-header, so the view's
//! buffer must be exactly the ICMP message (the IPv4 payload).

use super::checksum;
use super::{be16, be32, enum_with_unknown, Error, Result};

enum_with_unknown! {
    /// ICMPv4 message type.
    pub enum Icmpv4Type(u8) {
        EchoReply = 0,
        DstUnreachable = 3,
        Redirect = 5,
        EchoRequest = 8,
        TimeExceeded = 11,
        ParamProblem = 12,
    }
}

/// Destination Unreachable codes the router sends.
pub mod dst_unreachable {
    pub const NET: u8 = 0;
    pub const HOST: u8 = 1;
    pub const PROTOCOL: u8 = 2;
    pub const PORT: u8 = 3;
    /// Fragmentation needed and DF set; carries the next-hop MTU (RFC 1191).
    pub const FRAG_NEEDED: u8 = 4;
    pub const ADMIN_PROHIBITED: u8 = 13;
}

/// Time Exceeded codes.
pub mod time_exceeded {
    /// TTL exceeded in transit.
    pub const TTL: u8 = 0;
    pub const REASSEMBLY: u8 = 1;
}

/// The most of the invoking packet an error should quote so that the whole
/// reply stays within 576 bytes (RFC 1812 §4.3.2.3): 576 - 20 - 8.
pub const MAX_ERROR_QUOTE: usize = 548;

mod field {
    use core::ops::{Range, RangeFrom};

    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const NEXT_HOP_MTU: Range<usize> = 6..8;
    pub const DATA: RangeFrom<usize> = 8..;
}

/// Length of the ICMPv4 header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::DATA.start;

/// A view of an ICMPv4 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wraps `buffer` without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv4Packet { buffer }
    }

    /// Wraps `buffer`, checking that it holds the 8-byte header.
    ///
    /// # Errors
    /// [`Error::Truncated`]: buffer shorter than 8 bytes.
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

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv4Type {
        Icmpv4Type::from(self.buffer.as_ref()[field::TYPE])
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

    /// The four type-specific bytes after the checksum.
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::REST])
    }

    /// Echo identifier (echo request/reply).
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo sequence number (echo request/reply).
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Next-hop MTU (Destination Unreachable, code 4).
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::NEXT_HOP_MTU])
    }

    /// Everything after the 8-byte header: echo data, or the quoted invoking
    /// packet of an error.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// Does the checksum over the whole buffer verify?
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.buffer.as_ref()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, v: Icmpv4Type) {
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

    /// Sets the four type-specific bytes.
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

    /// Sets the next-hop MTU.
    #[inline]
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        self.buffer.as_mut()[field::NEXT_HOP_MTU].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable payload.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// Computes and stores the checksum over the whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet_checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// The ICMPv4 messages the router answers or originates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Repr<'a> {
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
    /// `data` is the invoking packet's IP header and leading payload bytes
    /// (at least 8; at most [`MAX_ERROR_QUOTE`]). `next_hop_mtu` is used with
    /// code [`dst_unreachable::FRAG_NEEDED`] and is 0 otherwise.
    DstUnreachable {
        code: u8,
        next_hop_mtu: u16,
        data: &'a [u8],
    },
    /// `data` as for `DstUnreachable`.
    TimeExceeded { code: u8, data: &'a [u8] },
}

impl<'a> Icmpv4Repr<'a> {
    /// Parses a message, verifying its checksum.
    ///
    /// # Errors
    /// - [`Error::Truncated`] for an unchecked view under 8 bytes.
    /// - [`Error::BadChecksum`] if the checksum does not verify.
    /// - [`Error::Unsupported`] for any other type, or echo with code != 0.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Icmpv4Packet<&'a T>) -> Result<Self> {
        p.check_len()?;
        if !p.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        let buf: &'a T = p.buffer;
        let data = &buf.as_ref()[field::DATA];
        match (p.msg_type(), p.msg_code()) {
            (Icmpv4Type::EchoRequest, 0) => Ok(Icmpv4Repr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (Icmpv4Type::EchoReply, 0) => Ok(Icmpv4Repr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (Icmpv4Type::DstUnreachable, code) => {
                let next_hop_mtu = if code == dst_unreachable::FRAG_NEEDED {
                    p.next_hop_mtu()
                } else {
                    0
                };
                Ok(Icmpv4Repr::DstUnreachable {
                    code,
                    next_hop_mtu,
                    data,
                })
            }
            (Icmpv4Type::TimeExceeded, code) => Ok(Icmpv4Repr::TimeExceeded { code, data }),
            _ => Err(Error::Unsupported),
        }
    }

    /// Bytes `emit` writes: header and data.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        let data = match self {
            Icmpv4Repr::EchoRequest { data, .. }
            | Icmpv4Repr::EchoReply { data, .. }
            | Icmpv4Repr::DstUnreachable { data, .. }
            | Icmpv4Repr::TimeExceeded { data, .. } => data,
        };
        HEADER_LEN + data.len()
    }

    /// Writes the message and its checksum.
    ///
    /// # Panics
    /// If the view's buffer is not exactly [`Icmpv4Repr::buffer_len`] bytes
    /// (the checksum covers the whole buffer, so a longer one would be
    /// summed wrongly).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Icmpv4Packet<T>) {
        assert_eq!(
            p.buffer.as_ref().len(),
            self.buffer_len(),
            "ICMPv4 buffer must fit the message exactly"
        );
        let (ty, code, rest, data) = match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => (
                Icmpv4Type::EchoRequest,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
                data,
            ),
            Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => (
                Icmpv4Type::EchoReply,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
                data,
            ),
            Icmpv4Repr::DstUnreachable {
                code,
                next_hop_mtu,
                data,
            } => (
                Icmpv4Type::DstUnreachable,
                code,
                u32::from(next_hop_mtu),
                data,
            ),
            Icmpv4Repr::TimeExceeded { code, data } => (Icmpv4Type::TimeExceeded, code, 0, data),
        };
        p.set_msg_type(ty);
        p.set_msg_code(code);
        p.set_rest_of_header(rest);
        p.payload_mut().copy_from_slice(data);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    const ECHO: [u8; 12] = [
        0x08,                   // type echo request
        0x00,                   // code 0
        0x00, 0x00,             // checksum (filled in by the tests)
        0x12, 0x34,             // identifier
        0x00, 0x07,             // sequence number 7
        0x61, 0x62, 0x63, 0x64, // data "abcd"
    ];

    #[rustfmt::skip]
    const TIME_EXCEEDED: [u8; 36] = [
        0x0b,                   // type time exceeded
        0x00,                   // code 0 (TTL)
        0x00, 0x00,             // checksum (filled in by the tests)
        0x00, 0x00, 0x00, 0x00, // unused
        // invoking IPv4 header
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x00,
        0x01, 0x11, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x01,
        0x0a, 0x00, 0x00, 0x02,
        // first 8 bytes of its payload (UDP header)
        0x30, 0x39, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00,
    ];

    fn filled<const N: usize>(b: [u8; N]) -> [u8; N] {
        let mut b = b;
        Icmpv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        b
    }

    #[test]
    fn getters() {
        let b = filled(ECHO);
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.msg_type(), Icmpv4Type::EchoRequest);
        assert_eq!(p.msg_code(), 0);
        assert_ne!(p.checksum(), 0);
        assert_eq!(p.echo_ident(), 0x1234);
        assert_eq!(p.echo_seq_no(), 7);
        assert_eq!(p.rest_of_header(), 0x1234_0007);
        assert_eq!(p.header_len(), 8);
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum());
        let b = filled(TIME_EXCEEDED);
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.msg_type(), p.msg_code(), p.rest_of_header()),
            (Icmpv4Type::TimeExceeded, 0, 0)
        );
        assert_eq!(p.payload(), &TIME_EXCEEDED[8..]);
    }

    #[test]
    fn truncated_at_every_offset() {
        for pkt in [&ECHO[..], &TIME_EXCEEDED[..]] {
            for n in 0..HEADER_LEN {
                assert_eq!(
                    Icmpv4Packet::new_checked(&pkt[..n]).unwrap_err(),
                    Error::Truncated,
                    "n={n}"
                );
            }
        }
        // Past the header every length is a valid (if short) message; the
        // checksum then fails, and Repr::parse reports it.
        let b = filled(ECHO);
        for n in HEADER_LEN..ECHO.len() {
            let p = Icmpv4Packet::new_checked(&b[..n]).unwrap();
            assert_eq!(
                Icmpv4Repr::parse(&p).unwrap_err(),
                Error::BadChecksum,
                "n={n}"
            );
        }
    }

    #[test]
    fn repr_parse_literals() {
        let b = filled(ECHO);
        let r = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Icmpv4Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 7,
                data: b"abcd"
            }
        );
        let b = filled(TIME_EXCEEDED);
        let r = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Icmpv4Repr::TimeExceeded {
                code: time_exceeded::TTL,
                data: &TIME_EXCEEDED[8..]
            }
        );
    }

    #[test]
    fn repr_rejects_bad_checksum_and_unknown_type() {
        let mut b = filled(ECHO);
        b[8] ^= 0xff;
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::BadChecksum
        );
        let mut b = ECHO;
        b[0] = 13; // timestamp
        let b = filled(b);
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::Unsupported
        );
    }

    #[test]
    fn echo_reply_from_request() {
        // The daemon's answer path: parse the request, emit the reply.
        let b = filled(ECHO);
        let Icmpv4Repr::EchoRequest {
            ident,
            seq_no,
            data,
        } = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap()
        else {
            panic!("not an echo request")
        };
        let reply = Icmpv4Repr::EchoReply {
            ident,
            seq_no,
            data,
        };
        let mut out = vec![0u8; reply.buffer_len()];
        reply.emit(&mut Icmpv4Packet::new_unchecked(&mut out[..]));
        assert_eq!(out[0], 0);
        assert_eq!(&out[4..], &ECHO[4..]);
        assert!(Icmpv4Packet::new_checked(&out[..])
            .unwrap()
            .verify_checksum());
    }

    #[test]
    fn setters_round_trip() {
        let mut b = [0u8; 10];
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        p.set_msg_type(Icmpv4Type::Unknown(42));
        p.set_msg_code(9);
        p.set_echo_ident(0xaaaa);
        p.set_echo_seq_no(0xbbbb);
        p.payload_mut().copy_from_slice(&[1, 2]);
        p.fill_checksum();
        assert_eq!((p.msg_type(), p.msg_code()), (Icmpv4Type::Unknown(42), 9));
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (0xaaaa, 0xbbbb));
        p.set_next_hop_mtu(1400);
        assert_eq!(p.next_hop_mtu(), 1400);
        p.set_rest_of_header(0x0102_0304);
        assert_eq!(p.rest_of_header(), 0x0102_0304);
        p.set_checksum(1);
        assert_eq!(p.checksum(), 1);
    }

    #[test]
    fn cross_check_with_etherparse() {
        use etherparse::{Icmpv4Type as EpType, PacketBuilder, SlicedPacket, TransportSlice};
        let builder =
            PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).icmpv4_echo_request(0x4242, 9);
        let mut pkt = Vec::new();
        builder.write(&mut pkt, b"ping").unwrap();
        let oracle = SlicedPacket::from_ip(&pkt).unwrap();
        let Some(TransportSlice::Icmpv4(o)) = oracle.transport else {
            panic!("not icmpv4")
        };
        let p = Icmpv4Packet::new_checked(&pkt[20..]).unwrap();
        let EpType::EchoRequest(echo) = o.icmp_type() else {
            panic!("not echo")
        };
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (echo.id, echo.seq));
        assert_eq!(p.checksum(), o.checksum());
        assert!(p.verify_checksum());
        assert_eq!(
            Icmpv4Repr::parse(&p).unwrap(),
            Icmpv4Repr::EchoRequest {
                ident: 0x4242,
                seq_no: 9,
                data: b"ping"
            }
        );
    }

    proptest! {
        #[test]
        fn repr_emit_parse(
            kind in 0u8..4, a in any::<u16>(), b in any::<u16>(), code in any::<u8>(),
            data in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let r = match kind {
                0 => Icmpv4Repr::EchoRequest { ident: a, seq_no: b, data: &data },
                1 => Icmpv4Repr::EchoReply { ident: a, seq_no: b, data: &data },
                2 => Icmpv4Repr::DstUnreachable {
                    code,
                    next_hop_mtu: if code == dst_unreachable::FRAG_NEEDED { a } else { 0 },
                    data: &data,
                },
                _ => Icmpv4Repr::TimeExceeded { code, data: &data },
            };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
            let p = Icmpv4Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Icmpv4Repr::parse(&p).unwrap(), r);
            // etherparse agrees on the checksum.
            let (h, payload) = etherparse::Icmpv4Header::from_slice(&buf).unwrap();
            prop_assert_eq!(h.checksum, h.icmp_type.calc_checksum(payload));
        }
    }
}
