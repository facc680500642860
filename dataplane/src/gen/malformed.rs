//! Malformed frames. A malformed frame starts as a good frame of a flow that
//! fits the kind (IPv4 for the IPv4 header kinds, UDP for `bad-udp-len`,
//! IPv6 for `truncated-ipv6`) and then breaks exactly one rule: where a
//! header field is changed the IPv4 header checksum is recomputed, so the
//! frame fails on that field and nothing earlier.

use rand::Rng;

use super::build::{ETH_LEN, IPV4_LEN, IPV6_LEN};
use super::types::MalformedKind;
use crate::wire::ipv4::header_checksum;

/// What a kind needs of the good frame it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Need {
    /// Any frame.
    Any,
    /// An IPv4 frame.
    Ipv4,
    /// An IPv6 frame.
    Ipv6,
    /// A UDP frame of either family.
    Udp,
}

impl MalformedKind {
    pub(crate) fn need(self) -> Need {
        match self {
            MalformedKind::TruncatedEth => Need::Any,
            MalformedKind::TruncatedIp
            | MalformedKind::BadVersion
            | MalformedKind::BadIhl
            | MalformedKind::BadTotalLen
            | MalformedKind::BadChecksum => Need::Ipv4,
            MalformedKind::BadUdpLen => Need::Udp,
            MalformedKind::TruncatedIpv6 => Need::Ipv6,
        }
    }
}

/// Version nibbles `bad-version` picks from: anything but 4, including 6
/// (an IPv6 version under the IPv4 EtherType).
const BAD_VERSIONS: [u8; 8] = [0, 1, 2, 3, 5, 6, 7, 15];

/// Breaks `frame` (a good frame whose IP header starts at `l3` and L4 header
/// at `l4`, as [`MalformedKind::need`] requires) the way `kind` says.
pub(crate) fn corrupt<R: Rng>(
    kind: MalformedKind,
    frame: &mut Vec<u8>,
    l3: usize,
    l4: usize,
    rng: &mut R,
) {
    match kind {
        MalformedKind::TruncatedEth => frame.truncate(rng.gen_range(1..ETH_LEN)),
        MalformedKind::TruncatedIp => frame.truncate(l3 + rng.gen_range(1..IPV4_LEN)),
        MalformedKind::TruncatedIpv6 => frame.truncate(l3 + rng.gen_range(1..IPV6_LEN)),
        MalformedKind::BadVersion => {
            let version = BAD_VERSIONS[rng.gen_range(0..BAD_VERSIONS.len())];
            frame[l3] = (version << 4) | (frame[l3] & 0x0f);
            fix_ipv4_checksum(frame, l3);
        }
        MalformedKind::BadIhl => {
            frame[l3] = 0x40 | rng.gen_range(0..5u8);
            fix_ipv4_checksum(frame, l3);
        }
        MalformedKind::BadTotalLen => {
            let held = frame.len() - l3;
            let claimed = (held + rng.gen_range(1..=1500)).min(usize::from(u16::MAX)) as u16;
            debug_assert!(usize::from(claimed) > held);
            frame[l3 + 2..l3 + 4].copy_from_slice(&claimed.to_be_bytes());
            fix_ipv4_checksum(frame, l3);
        }
        MalformedKind::BadChecksum => {
            let good = header_checksum(&frame[l3..l3 + IPV4_LEN]);
            let mut bad = good ^ rng.gen_range(1..=u16::MAX);
            // 0x0000 and 0xffff are the same ones'-complement number: a
            // receiver summing the header would accept the swap.
            if matches!((good, bad), (0, 0xffff) | (0xffff, 0)) {
                bad = good ^ 0x0001;
            }
            frame[l3 + 10..l3 + 12].copy_from_slice(&bad.to_be_bytes());
        }
        MalformedKind::BadUdpLen => {
            let actual = frame.len() - l4;
            let claimed = if rng.gen_bool(0.5) {
                // Shorter than the UDP header itself.
                rng.gen_range(0..8u16)
            } else {
                (actual + rng.gen_range(1..=64)).min(usize::from(u16::MAX)) as u16
            };
            debug_assert_ne!(usize::from(claimed), actual);
            frame[l4 + 4..l4 + 6].copy_from_slice(&claimed.to_be_bytes());
            if frame[l3] >> 4 == 4 {
                // IPv4 allows "no checksum": zero it so the length is the
                // only thing wrong. IPv6 forbids that; its checksum is left
                // as computed for the true length.
                frame[l4 + 6..l4 + 8].copy_from_slice(&[0, 0]);
            }
        }
    }
}

fn fix_ipv4_checksum(frame: &mut [u8], l3: usize) {
    let sum = header_checksum(&frame[l3..l3 + IPV4_LEN]);
    frame[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
}
