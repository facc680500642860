//! RFC 1812 address checks: the martian sources and destinations the route
//! stage drops (or hands to local delivery) before any lookup.
use crate::pipeline::DropReason;
use std::net::Ipv6Addr;

/// Martian flags per top address byte (see [`v4_martian`]).
const DST_BAD: u8 = 1;
const DST_LOCAL: u8 = 2;
const SRC_BAD: u8 = 4;
static V4_TOP: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        if i == 0 || i == 127 {
            t[i] |= DST_BAD;
        }
        if i >= 224 {
            t[i] |= DST_LOCAL | SRC_BAD;
        }
        if i == 127 {
            t[i] |= SRC_BAD;
        }
        i += 1;
    }
    t
};

/// RFC 1812 address checks on an IPv4 packet: destinations never forwarded
/// (0/8, 127/8: `bad_address`; multicast and limited broadcast, handled as
/// local but not answered: `local_unhandled`), then sources that must not
/// appear on the wire (127/8, 224/3: `bad_address`, 5.3.7). One table load
/// per address: every forwarded packet passes here.
#[inline(always)]
pub(super) fn v4_martian(src: u32, dst: u32) -> Option<DropReason> {
    let f = (V4_TOP[(dst >> 24) as usize] & (DST_BAD | DST_LOCAL))
        | (V4_TOP[(src >> 24) as usize] & SRC_BAD);
    if f == 0 {
        None
    } else if f & DST_LOCAL != 0 && f & DST_BAD == 0 {
        Some(DropReason::LocalUnhandled)
    } else {
        Some(DropReason::BadAddress)
    }
}

/// The IPv6 counterpart of [`v4_martian`]'s `bad_address` cases: a multicast
/// source, or a loopback or unspecified destination.
#[inline(always)]
pub(super) fn v6_martian(src: Ipv6Addr, dst: Ipv6Addr) -> bool {
    src.is_multicast() || dst.is_loopback() || dst.is_unspecified()
}

#[cfg(test)]
mod tests {
    use super::{v4_martian, DropReason};

    /// The martian table gives what the RFC 1812 compare chain gives, for
    /// every pair of top bytes.
    #[test]
    fn martian_table_matches_compares() {
        for d in 0..=255u32 {
            for s in 0..=255u32 {
                let want = if d == 0 || d == 127 {
                    Some(DropReason::BadAddress)
                } else if d >= 224 {
                    Some(DropReason::LocalUnhandled)
                } else if s == 127 || s >= 224 {
                    Some(DropReason::BadAddress)
                } else {
                    None
                };
                assert_eq!(
                    v4_martian((s << 24) | 1, (d << 24) | 2),
                    want,
                    "src {s} dst {d}"
                );
            }
        }
    }
}
