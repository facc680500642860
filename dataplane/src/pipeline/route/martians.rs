//! RFC 1812 address checks: the martian sources and destinations the route
//! stage drops (or hands to local delivery) before any lookup.
use crate::burst::{SlotMask, BURST_SIZE};
use crate::pipeline::DropReason;
use crate::tables::routing::{subnet_broadcast, PortAddrs};
use std::net::Ipv6Addr;

/// Martian flags (see [`v4_martian`]): by a destination's top byte,
/// [`V4Screen::dst_top`]...
const DST_BAD: u8 = 1;
const DST_LOCAL: u8 = 2;
/// ... by a source's top byte, [`V4Screen::src_top`] ...
const SRC_BAD: u8 = 4;
/// ... and by a hash of the source, [`V4Screen::src_hash`]: the slot of
/// one of the router's addresses (or a subnet broadcast); only an exact
/// compare says whether the source is one.
const SRC_MAYBE_OWN: u8 = 8;

/// RFC 1812's fixed tables: by a destination's top byte (0/8, 127/8:
/// never forwarded; 224/3: local) and by a source's (0/8, 127/8, 224/3).
const fn top_tables() -> ([u8; 256], [u8; 256]) {
    let (mut dst, mut src) = ([0u8; 256], [0u8; 256]);
    let mut i = 0;
    while i < 256 {
        if i == 0 || i == 127 {
            dst[i] = DST_BAD;
            src[i] = SRC_BAD;
        }
        if i >= 224 {
            dst[i] = DST_LOCAL;
            src[i] = SRC_BAD;
        }
        i += 1;
    }
    (dst, src)
}

/// The martian checks' tables: RFC 1812's fixed ones, and the sources no
/// packet the router receives can truly have (RFC 1812 5.3.7, 4.2.2.11):
/// the router's own IPv4 and IPv6 addresses and each connected IPv4
/// subnet's broadcast address. Built with the route tables (an immutable
/// snapshot, rebuilt on reload) from the ports' addresses.
///
/// The data path asks about every packet, so the IPv4 question is three
/// byte loads ORed, branch-free ([`V4Screen::suspect`]): one by the
/// destination's top byte, one by the source's, and one by a hash of the
/// source, which marks the slots of the router's addresses and
/// broadcasts; only a packet whose source shares one of them is compared
/// exactly. The parse sweep asks it of every plain packet, and a suspect
/// takes the general path: so the hash spreads sources over
/// [`SRC_SLOTS`] slots (the low byte alone made every `.1` and `.255`
/// host on any subnet a suspect, a burst in four on a random feed).
///
/// A packet the router built itself (an `lb` encapsulation, whose outer
/// source is a configured address, normally the router's) is checked
/// against [`Martians::none`] instead ([`crate::pipeline::Lane::built`]):
/// RFC 1812's tables without the router's addresses.
#[derive(Debug, Clone)]
pub struct Martians {
    screen: V4Screen,
    /// The IPv4 addresses, sorted.
    v4: Vec<u32>,
    /// The IPv6 addresses, and their last bytes as a 256-bit filter.
    v6: Vec<[u8; 16]>,
    v6_last: [u64; 4],
}

/// The three byte tables of the IPv4 question, apart from the exact
/// lists: what the parse sweep asks of every plain packet
/// ([`crate::pipeline::Lane::screen`]), so that a suspect never takes the
/// lane and the route's fast path needs no pass of its own for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V4Screen {
    /// Flags by a destination's top byte (`DST_BAD`, `DST_LOCAL`).
    dst_top: [u8; 256],
    /// Flags by a source's top byte (`SRC_BAD`).
    src_top: [u8; 256],
    /// `SRC_MAYBE_OWN` in the slots ([`filter_slot`]) of the router's
    /// addresses and its subnets' broadcasts.
    src_hash: [u8; SRC_SLOTS],
}

impl V4Screen {
    /// Nothing suspect: the screen of a pipeline without route tables.
    pub const OPEN: V4Screen = V4Screen {
        dst_top: [0; 256],
        src_top: [0; 256],
        src_hash: [0; SRC_SLOTS],
    };

    /// [`v4_martian`]'s first step, branch-free: 0 for a packet that is
    /// surely not martian, else the flags [`v4_martian`] decides it by (a
    /// source that only shares its hash slot with one of the router's
    /// addresses is suspect here, and not martian there).
    #[inline(always)]
    pub fn suspect(&self, src: u32, dst: u32) -> u8 {
        self.dst_top[(dst >> 24) as usize]
            | self.src_top[(src >> 24) as usize]
            | self.src_hash[filter_slot(src)]
    }
}

/// [`Martians::none`].
static NONE: Martians = Martians {
    screen: V4Screen {
        dst_top: top_tables().0,
        src_top: top_tables().1,
        src_hash: [0; SRC_SLOTS],
    },
    v4: Vec::new(),
    v6: Vec::new(),
    v6_last: [0; 4],
};

impl Default for Martians {
    /// RFC 1812's tables alone: no address of the router's (a pipeline
    /// without route tables).
    fn default() -> Self {
        NONE.clone()
    }
}

/// Slots of [`V4Screen::src_hash`]: a 4 KiB table, which stays in the
/// first-level cache beside the route table's lines.
pub const SRC_SLOTS: usize = 1 << 12;

/// [`V4Screen::src_hash`]'s index for an IPv4 source: a multiplicative
/// (Fibonacci) hash's top 12 bits, so that addresses alike in any byte
/// (`.1` on every subnet, one subnet's hosts) spread over the slots.
#[inline(always)]
fn filter_slot(src: u32) -> usize {
    (src.wrapping_mul(0x9e37_79b1) >> (32 - SRC_SLOTS.trailing_zeros())) as usize
}

impl Martians {
    /// The ports' addresses and their IPv4 subnets' broadcast addresses
    /// (prefixes up to /30, as the `Broadcast` routes).
    pub fn new(ports: &[PortAddrs]) -> Self {
        let mut s = Martians::default();
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for p in ports {
            for &(a, len) in &p.v4 {
                v4.push(u32::from(a));
                v4.extend(subnet_broadcast(a, len).map(u32::from));
            }
            v6.extend(p.v6.iter().map(|&(a, _)| a.octets()));
        }
        v4.sort_unstable();
        v4.dedup();
        v6.sort_unstable();
        v6.dedup();
        for &a in &v4 {
            s.screen.src_hash[filter_slot(a)] |= SRC_MAYBE_OWN;
        }
        for a in &v6 {
            let b = usize::from(a[15]);
            s.v6_last[b / 64] |= 1 << (b % 64);
        }
        s.v4 = v4;
        s.v6 = v6;
        s
    }

    /// RFC 1812's tables without the router's addresses, for packets the
    /// router built itself.
    #[inline(always)]
    pub fn none() -> &'static Martians {
        &NONE
    }

    /// The IPv4 screen: a packet it passes is not martian.
    #[inline(always)]
    pub fn screen(&self) -> &V4Screen {
        &self.screen
    }

    /// `self`, or [`Martians::none`] for slot `i` when its bit in `built`
    /// ([`crate::pipeline::Lane::built`]) is set.
    #[inline(always)]
    pub fn for_slot(&self, built: SlotMask, i: usize) -> &Martians {
        if built & (1 << (i % BURST_SIZE)) != 0 {
            &NONE
        } else {
            self
        }
    }

    /// Whether `src` is one of the router's IPv4 addresses or a connected
    /// subnet's broadcast address (exact; the filter is [`v4_martian`]'s).
    pub fn has_v4(&self, src: u32) -> bool {
        self.v4.binary_search(&src).is_ok()
    }

    /// Whether `src` is one of the router's IPv6 addresses.
    #[inline(always)]
    pub fn has_v6(&self, src: &[u8; 16]) -> bool {
        let b = usize::from(src[15]);
        self.v6_last[b / 64] & (1 << (b % 64)) != 0 && self.has_v6_exact(src)
    }

    #[cold]
    fn has_v6_exact(&self, src: &[u8; 16]) -> bool {
        self.v6.iter().any(|a| a == src)
    }
}

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
    match own.screen.suspect(src, dst) {
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
    use super::{filter_slot, v4_martian, v6_martian, v6_scope_martian, DropReason, Martians};
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
        let slots: Vec<usize> = own.v4.iter().map(|&a| filter_slot(a)).collect();
        let mut shared = 0;
        for a in (ip("11.0.0.0")..).step_by(7919).take(200_000) {
            if slots.contains(&filter_slot(a)) && !own.has_v4(a) {
                shared += 1;
                assert_eq!(v4_martian(&own, a, dst), None, "{}", Ipv4Addr::from(a));
            }
        }
        assert!(shared > 100, "the filter is exercised: {shared}");
        // An empty set marks nothing.
        assert!(Martians::default().screen.src_hash.iter().all(|&f| f == 0));
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
