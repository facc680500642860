//! RFC 1812 address checks: the martian sources and destinations the route
//! stage drops (or hands to local delivery) before any lookup, read from the
//! tables `tables::martians` builds with the routes.
use crate::pipeline::DropReason;
pub use crate::tables::martians::{Martians, V4Screen};
use crate::tables::martians::{DST_BAD, DST_LOCAL, SRC_BAD};
use std::net::Ipv6Addr;

/// RFC 1812 address checks on an IPv4 packet: destinations never forwarded
/// (0/8, 127/8: `bad_address`; the limited broadcast 255.255.255.255:
/// `broadcast`; the rest of 224/3, multicast and reserved, handled as local
/// but not answered: `local_unhandled`), then sources that must not appear
/// on the wire (0/8, 127/8, 224/3, and the router's own addresses and its
/// subnets' broadcasts in `own`: `bad_address`, 5.3.7): the screen's
/// three loads, then the exact compare for a suspect. (Subnet broadcasts
/// as destinations are found by the lookup: see the stage's doc.)
#[inline(always)]
pub(crate) fn v4_martian(own: &Martians, src: u32, dst: u32) -> Option<DropReason> {
    match own.screen().suspect(src, dst) {
        0 => None,
        f => v4_martian_reason(own, f, src, dst),
    }
}

#[cold]
fn v4_martian_reason(own: &Martians, f: u8, src: u32, dst: u32) -> Option<DropReason> {
    if f & DST_LOCAL != 0 && f & DST_BAD == 0 {
        Some(if dst == u32::MAX {
            DropReason::Broadcast
        } else {
            DropReason::LocalUnhandled
        })
    } else if f & (DST_BAD | SRC_BAD) != 0 || own.has_v4(src) {
        Some(DropReason::BadAddress)
    } else {
        None // a filter hit only
    }
}

/// The IPv6 counterpart of [`v4_martian`]'s `bad_address` cases: a multicast
/// or loopback source (RFC 4291 2.5.3: never sent outside a node) or one
/// of the router's own addresses (`own`), or a loopback or unspecified
/// destination.
#[inline(always)]
pub(crate) fn v6_martian(own: &Martians, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
    src.is_multicast()
        || src.is_loopback()
        || dst.is_loopback()
        || dst.is_unspecified()
        || own.has_v6(&src.octets())
}

/// What must not be forwarded off its link (RFC 4291 2.5.2, 2.5.6), checked
/// once the lookup found the packet is not for us (a miss included): an unspecified or
/// link-local (fe80::/10) source, or a link-local destination. (Packets to
/// us may come from link-local and unspecified sources: NDP, DAD.)
#[inline(always)]
pub(crate) fn v6_scope_martian(src: &[u8; 16], dst: &[u8; 16]) -> bool {
    let link_local = |a: &[u8; 16]| a[0] == 0xfe && a[1] & 0xc0 == 0x80;
    link_local(src) || link_local(dst) || *src == [0; 16]
}

#[cfg(test)]
mod tests {
    use super::{v4_martian, v6_martian, v6_scope_martian, DropReason, Martians};
    use crate::tables::martians::filter_slot;
    use crate::tables::routing::PortAddrs;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// The martian table gives what the RFC 1812 compare chain gives, for
    /// every pair of top bytes.
    #[test]
    fn martian_table_matches_compares() {
        let none = &Martians::default();
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
                    v4_martian(none, (s << 24) | 1, (d << 24) | 2),
                    want,
                    "src {s} dst {d}"
                );
            }
        }
        // The limited broadcast is a broadcast, the rest of 255/8 not.
        assert_eq!(
            v4_martian(none, 0x0a00_0001, u32::MAX),
            Some(DropReason::Broadcast)
        );
        assert_eq!(
            v4_martian(none, 0x0a00_0001, u32::MAX - 1),
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

    fn own() -> Martians {
        let port = |v4: &[(&str, u8)], v6: &[&str]| PortAddrs {
            mac: [2, 0, 0, 0, 0, 1],
            v4: v4.iter().map(|&(a, l)| (a.parse().unwrap(), l)).collect(),
            v6: v6.iter().map(|a| (a.parse().unwrap(), 64)).collect(),
            mtu: 1500,
            ipv4_checksum_offload: false,
        };
        Martians::new(&[
            port(
                &[("10.0.1.1", 24), ("192.0.2.9", 31)],
                &["2001:db8:1::1", "fe80::1"],
            ),
            port(
                &[("10.0.2.1", 16), ("198.51.100.7", 32)],
                &["2001:db8:2::1"],
            ),
        ])
    }

    /// RFC 1812 5.3.7 / 4.2.2.11: the router's own addresses and its
    /// subnets' broadcasts (none for /31 and /32) are `bad_address` as
    /// sources, whatever their filter slot; every other source, those that
    /// share a slot with them included, is not; a martian destination
    /// keeps its own reason.
    #[test]
    fn own_addresses_and_broadcasts_are_no_sources() {
        let own = own();
        let ip = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        let dst = ip("198.18.0.1");
        for bad in [
            "10.0.1.1",
            "10.0.1.255",
            "10.0.2.1",
            "10.0.255.255",
            "192.0.2.9",
            "198.51.100.7",
        ] {
            assert_eq!(
                v4_martian(&own, ip(bad), dst),
                Some(DropReason::BadAddress),
                "{bad}"
            );
            assert_eq!(
                v4_martian(&own, ip(bad), ip("224.0.0.5")),
                Some(DropReason::LocalUnhandled),
                "{bad} to a group"
            );
        }
        for ok in [
            "10.0.1.2",
            "10.0.1.254",
            "192.0.2.8",
            "192.0.2.255",
            "10.0.3.255",
        ] {
            assert_eq!(v4_martian(&own, ip(ok), dst), None, "{ok}");
        }
        // Sources that share a filter slot with an own address are
        // compared exactly and pass.
        let slots: Vec<usize> = own.v4_addrs().iter().map(|&a| filter_slot(a)).collect();
        let mut shared = 0;
        for a in (ip("11.0.0.0")..).step_by(7919).take(200_000) {
            if slots.contains(&filter_slot(a)) && !own.has_v4(a) {
                shared += 1;
                assert_eq!(v4_martian(&own, a, dst), None, "{}", Ipv4Addr::from(a));
            }
        }
        assert!(shared > 100, "the filter is exercised: {shared}");
    }

    /// The IPv6 own addresses, link-local included, are `bad_address` as
    /// sources; others (a neighbour with the same last byte) are not.
    #[test]
    fn own_v6_addresses_are_no_sources() {
        let own = own();
        let a = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let dst = a("2001:db8:100::1");
        for bad in ["2001:db8:1::1", "fe80::1", "2001:db8:2::1"] {
            assert!(v6_martian(&own, a(bad), dst), "{bad}");
            assert!(
                !v6_martian(&Martians::default(), a(bad), dst),
                "{bad} without tables"
            );
        }
        for ok in ["2001:db8:1::2", "2001:db8:3::1", "fe80::101"] {
            assert!(!v6_martian(&own, a(ok), dst), "{ok}");
        }
    }
}
