//! Zero-copy header views (smoltcp style) over packet bytes.
//!
//! `wire` owns the byte layout of every header the dataplane reads or writes:
//! Ethernet (with up to two VLAN tags), ARP, IPv4, IPv6 (with extension header
//! walking), UDP, TCP, ICMPv4, ICMPv6 (with NDP), and the Internet checksum.
//! It knows nothing about mbufs: every view wraps any `T: AsRef<[u8]>`, so the
//! same code runs on an mbuf's data room, a `Vec<u8>` in a test or a slice of
//! a pcap record.
//!
//! Each protocol has two forms:
//! - a *view*, `XxxPacket<T>` (Ethernet: [`EthernetFrame<T>`]), that reads and
//!   writes fields in place. `new_checked` validates lengths and length fields
//!   once; after it returns `Ok`, no getter can panic or read out of bounds, so
//!   the hot path pays for one check per header and nothing per field.
//!   `new_unchecked` skips the check (for buffers the caller has just sized,
//!   e.g. before `emit`). Setters do not re-validate: writing a length field
//!   larger than the buffer and then calling `payload()` may panic.
//! - a *repr*, `XxxRepr`, the parsed high-level form used on the slow path to
//!   answer ARP, ICMP echo and NDP and to build ICMP errors: `parse(&view)`,
//!   `buffer_len()` (the number of bytes `emit` writes; for IPv4, IPv6 and UDP
//!   that is the header only, the payload follows it) and `emit(&mut view)`.
//!
//! Checksums are never checked by `new_checked` (the router forwards without
//! looking at L4 checksums): views offer `verify_checksum*` and
//! `fill_checksum*`, and [`checksum`] has the one's-complement helpers and
//! RFC 1624 incremental updates used when a field is rewritten.
//!
//! Protocol numbers are enums with an `Unknown` arm so that any value read off
//! the wire stays representable and round-trips; always build them with
//! `From<u16>`/`From<u8>` so that known values get their named variant.

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;
pub mod vlan;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use ethernet::{l3_offset, EtherType, EthernetFrame, EthernetRepr, L2Info, MacAddr};
pub use icmpv4::{Icmpv4Packet, Icmpv4Repr, Icmpv4Type};
pub use icmpv6::{Icmpv6Packet, Icmpv6Repr, Icmpv6Type, NdpFlags, NdpOption};
pub use ip::{has_ports, IpProtocol};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{walk_extensions, ExtWalk, Ipv6Packet, Ipv6Repr};
pub use tcp::{TcpFlags, TcpPacket};
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{VlanPacket, VlanRepr};

/// Why a buffer could not be viewed or parsed as a header.
///
/// Small and `Copy` so the hot path can return it by value and count it per
/// variant. Each view's `new_checked` documents which variants it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the fixed part of the header (or, for NDP
    /// options and IPv6 extension headers, before a length it announced).
    #[error("truncated packet")]
    Truncated,
    /// The IP version field is not the one the view expects.
    #[error("wrong IP version")]
    BadVersion,
    /// A header-length field is below its minimum or points past the buffer
    /// (IPv4 IHL, TCP data offset).
    #[error("bad header length field")]
    BadHeaderLen,
    /// A total/payload length field disagrees with the header length or the
    /// buffer (IPv4 total length, IPv6 payload length, UDP length).
    #[error("bad total length field")]
    BadTotalLen,
    /// A checksum did not verify (only returned by `Repr::parse`).
    #[error("bad checksum")]
    BadChecksum,
    /// A TLV option is malformed (an NDP option with length 0).
    #[error("malformed option")]
    BadOption,
    /// Well formed but not handled here: ARP for other than Ethernet/IPv4,
    /// a third VLAN tag, an over-long IPv6 extension chain or one with
    /// Hop-by-Hop anywhere but first (RFC 8200 4.1), a message type a
    /// `Repr` does not model, a fragment where a whole datagram is required.
    #[error("unsupported packet")]
    Unsupported,
}

/// `Result` with [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// Reads a big-endian `u16` from a two-byte slice (a `field` range).
#[inline(always)]
pub(crate) fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Reads a big-endian `u32` from a four-byte slice (a `field` range).
#[inline(always)]
pub(crate) fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Defines a protocol-number enum with named variants and an `Unknown` arm,
/// plus the two `From` conversions.
macro_rules! enum_with_unknown {
    (
        $(#[$attr:meta])*
        pub enum $name:ident($ty:ty) {
            $( $(#[$vattr:meta])* $variant:ident = $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vattr])* $variant, )+
            /// A value without a name here; kept so it round-trips. Build
            /// values with `From`, never `Unknown(known value)`.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            #[inline]
            fn from(value: $ty) -> Self {
                match value {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            #[inline]
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}
pub(crate) use enum_with_unknown;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_small_copy_and_displays() {
        assert_eq!(core::mem::size_of::<Error>(), 1);
        let e = Error::Truncated;
        let f = e; // Copy
        assert_eq!(e, f);
        assert_eq!(Error::BadTotalLen.to_string(), "bad total length field");
    }
}
