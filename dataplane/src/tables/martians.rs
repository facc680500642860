//! The tables of RFC 1812's address checks: the martian sources and
//! destinations by top byte, and the router's own addresses, built with the
//! route tables. The checks that read them (and the drop reasons they give)
//! are the route stage's: `pipeline::route::martians`.
use super::routing::{subnet_broadcast, PortAddrs};
use crate::burst::{SlotMask, BURST_SIZE};

/// Martian flags (see `pipeline::route::martians::v4_martian`): by a destination's top byte,
/// [`V4Screen::dst_top`]...
pub(crate) const DST_BAD: u8 = 1;
pub(crate) const DST_LOCAL: u8 = 2;
/// ... by a source's top byte, [`V4Screen::src_top`] ...
pub(crate) const SRC_BAD: u8 = 4;
/// ... and by a hash of the source, [`V4Screen::src_hash`]: the slot of
/// one of the router's addresses (or a subnet broadcast); only an exact
/// compare says whether the source is one.
pub(crate) const SRC_MAYBE_OWN: u8 = 8;

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

    /// `pipeline::route::martians::v4_martian`'s first step, branch-free: 0 for a packet that is
    /// surely not martian, else the flags `pipeline::route::martians::v4_martian` decides it by (a
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
pub(crate) fn filter_slot(src: u32) -> usize {
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

    /// The IPv4 addresses, sorted: the router's and its subnets' broadcasts.
    pub fn v4_addrs(&self) -> &[u32] {
        &self.v4
    }

    /// Whether `src` is one of the router's IPv4 addresses or a connected
    /// subnet's broadcast address (exact; the screen is the filter).
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

#[cfg(test)]
mod tests {
    use super::Martians;

    /// A router without addresses marks no source in the screen's hash.
    #[test]
    fn an_empty_set_marks_nothing() {
        assert!(Martians::default()
            .screen()
            .src_hash
            .iter()
            .all(|&f| f == 0));
    }
}
