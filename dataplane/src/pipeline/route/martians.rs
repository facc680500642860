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
        if i == 0 || i == 127 {
            t[i] |= SRC_BAD;
        }
        i += 1;
    }
    t
};

/// RFC 1812 address checks on an IPv4 packet: destinations never forwarded
/// (0/8, 127/8: `bad_address`; the limited broadcast 255.255.255.255:
/// `broadcast`; the rest of 224/3, multicast and reserved, handled as local
/// but not answered: `local_unhandled`), then sources that must not appear
/// on the wire (0/8, 127/8, 224/3: `bad_address`, 5.3.7). One table load per
/// address: every forwarded packet passes here. (Subnet broadcasts are
/// found by the lookup: see the stage's doc.)
#[inline(always)]
pub(crate) fn v4_martian(src: u32, dst: u32) -> Option<DropReason> {
    let f = (V4_TOP[(dst >> 24) as usize] & (DST_BAD | DST_LOCAL))
        | (V4_TOP[(src >> 24) as usize] & SRC_BAD);
    if f == 0 {
        None
    } else {
        Some(v4_martian_reason(f, dst))
    }
}

#[cold]
fn v4_martian_reason(f: u8, dst: u32) -> DropReason {
    if f & DST_LOCAL != 0 && f & DST_BAD == 0 {
        if dst == u32::MAX {
            DropReason::Broadcast
        } else {
            DropReason::LocalUnhandled
        }
    } else {
        DropReason::BadAddress
    }
}

/// The IPv6 counterpart of [`v4_martian`]'s `bad_address` cases: a multicast
/// or loopback source (RFC 4291 2.5.3: never sent outside a node), or a
/// loopback or unspecified destination.
#[inline(always)]
pub(crate) fn v6_martian(src: Ipv6Addr, dst: Ipv6Addr) -> bool {
    src.is_multicast() || src.is_loopback() || dst.is_loopback() || dst.is_unspecified()
}

/// What must not be forwarded off its link (RFC 4291 2.5.2, 2.5.6), checked
/// once the lookup found the packet is not for us: an unspecified or
/// link-local (fe80::/10) source, or a link-local destination. (Packets to
/// us may come from link-local and unspecified sources: NDP, DAD.)
#[inline(always)]
pub(crate) fn v6_scope_martian(src: &[u8; 16], dst: &[u8; 16]) -> bool {
    let link_local = |a: &[u8; 16]| a[0] == 0xfe && a[1] & 0xc0 == 0x80;
    link_local(src) || link_local(dst) || *src == [0; 16]
}

#[cfg(test)]
mod tests {
    use super::{v4_martian, v6_scope_martian, DropReason};
    use std::net::Ipv6Addr;

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
                } else if s == 0 || s == 127 || s >= 224 {
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
        // The limited broadcast is a broadcast, the rest of 255/8 not.
        assert_eq!(
            v4_martian(0x0a00_0001, u32::MAX),
            Some(DropReason::Broadcast)
        );
        assert_eq!(
            v4_martian(0x0a00_0001, u32::MAX - 1),
            Some(DropReason::LocalUnhandled)
        );
    }

    /// Link-local (fe80::/10) sources and destinations and unspecified
    /// sources are not forwarded; their neighbours (fec0::/10, global) are.
    #[test]
    fn v6_scope() {
        let a = |s: &str| s.parse::<Ipv6Addr>().unwrap().octets();
        let global = a("2001:db8::1");
        for bad in ["fe80::1", "febf:ffff::1"] {
            assert!(v6_scope_martian(&a(bad), &global), "src {bad}");
            assert!(v6_scope_martian(&global, &a(bad)), "dst {bad}");
        }
        assert!(v6_scope_martian(&a("::"), &global), "unspecified source");
        for ok in ["fec0::1", "fe7f::1", "2001:db8:1::2"] {
            assert!(!v6_scope_martian(&a(ok), &global), "src {ok}");
            assert!(!v6_scope_martian(&global, &a(ok)), "dst {ok}");
        }
    }
}
