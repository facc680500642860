//! Value types of the generator's command line: MAC addresses, frame sizes,
//! the L4 protocol mix and the malformed-frame kinds, plus the parser that
//! reads prefixes into the tables' [`Prefix`] with the generator's error.
//! Each parses from the string a user types (`FromStr`) and prints back the
//! same way (`Display`), so clap defaults and the JSON summary read like the
//! CLI.

use std::fmt;
use std::str::FromStr;

use super::GenError;
use crate::tables::Prefix;

/// Parses a `--dst-prefix`/`--src-prefix` value: the tables' [`Prefix`]
/// syntax (`addr/len`, host bits cleared), its error named with the input.
pub(crate) fn parse_prefix(s: &str) -> Result<Prefix, GenError> {
    s.parse().map_err(|reason| GenError::Cidr {
        input: s.to_owned(),
        reason,
    })
}

/// A MAC address, written `02:00:00:00:00:01` (`-` also accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// Default source MAC of generated frames (locally administered).
    pub const DEFAULT_SRC: Mac = Mac([0x02, 0, 0, 0, 0, 0x01]);
    /// Default destination MAC of generated frames (locally administered).
    pub const DEFAULT_DST: Mac = Mac([0x02, 0, 0, 0, 0, 0x02]);
}

impl FromStr for Mac {
    type Err = GenError;

    fn from_str(s: &str) -> Result<Self, GenError> {
        let bad = || GenError::Mac {
            input: s.to_owned(),
        };
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut out {
            let part = parts.next().ok_or_else(bad)?;
            if part.is_empty() || part.len() > 2 {
                return Err(bad());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// Frame length (without FCS) of generated frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameSize {
    /// Every frame this long (60..=9000). IPv6 frames are never shorter
    /// than [`IPV6_MIN_FRAME`].
    Fixed(u16),
    /// Simple IMIX: 64, 570 and 1518 bytes by count 7:4:1, in the fixed
    /// 12-frame pattern [`IMIX_PATTERN`].
    Imix,
}

/// Smallest accepted fixed frame size (the Ethernet minimum without FCS).
pub const FRAME_MIN: u16 = 60;
/// Largest accepted fixed frame size (jumbo).
pub const FRAME_MAX: u16 = 9000;
/// IPv6 frames are padded up to this length: the RFC 5180 minimum IPv6 test
/// frame, which also holds Ethernet + 802.1Q + IPv6 + TCP headers.
pub const IPV6_MIN_FRAME: u16 = 78;
/// The IMIX size pattern, repeated by frame index: seven 64, four 570 and one
/// 1518 spread out so that any window of 12 frames has the exact mix.
pub const IMIX_PATTERN: [u16; 12] = [64, 570, 64, 64, 570, 64, 1518, 64, 570, 64, 64, 570];

impl FrameSize {
    /// The requested length of frame number `index` (before the IPv6
    /// minimum is applied).
    pub fn for_frame(&self, index: usize) -> u16 {
        match *self {
            FrameSize::Fixed(n) => n,
            FrameSize::Imix => IMIX_PATTERN[index % IMIX_PATTERN.len()],
        }
    }

    pub(crate) fn validate(&self) -> Result<(), GenError> {
        match *self {
            FrameSize::Fixed(n) if !(FRAME_MIN..=FRAME_MAX).contains(&n) => Err(GenError::Size {
                input: n.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

impl FromStr for FrameSize {
    type Err = GenError;

    fn from_str(s: &str) -> Result<Self, GenError> {
        if s.eq_ignore_ascii_case("imix") {
            return Ok(FrameSize::Imix);
        }
        let size = FrameSize::Fixed(s.parse().map_err(|_| GenError::Size {
            input: s.to_owned(),
        })?);
        size.validate()?;
        Ok(size)
    }
}

impl fmt::Display for FrameSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSize::Fixed(n) => write!(f, "{n}"),
            FrameSize::Imix => f.write_str("imix"),
        }
    }
}

/// Which L4 protocol flows carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtoMix {
    /// Every flow is UDP.
    Udp,
    /// Every flow is TCP.
    Tcp,
    /// Alternating UDP and TCP flows within each address family.
    Mix,
}

impl fmt::Display for ProtoMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProtoMix::Udp => "udp",
            ProtoMix::Tcp => "tcp",
            ProtoMix::Mix => "mix",
        })
    }
}

/// The ways a generated frame can be broken. Each kind breaks exactly one
/// rule and keeps everything else (notably the IPv4 header checksum) valid,
/// so a dataplane's drop counter for that rule is what moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum MalformedKind {
    /// Frame shorter than an Ethernet header (1..=13 bytes).
    TruncatedEth,
    /// EtherType IPv4 but the frame ends inside the 20-byte IPv4 header.
    TruncatedIp,
    /// IPv4 frame whose version nibble is not 4.
    BadVersion,
    /// IPv4 header with IHL < 5.
    BadIhl,
    /// IPv4 total length larger than the bytes the frame holds.
    BadTotalLen,
    /// IPv4 header checksum wrong.
    BadChecksum,
    /// UDP length field disagreeing with the IP payload length (IPv4: the
    /// UDP checksum is zeroed, i.e. absent, so only the length is wrong).
    BadUdpLen,
    /// EtherType IPv6 but the frame ends inside the 40-byte IPv6 header.
    TruncatedIpv6,
}

impl MalformedKind {
    /// Every kind, in the order they are cycled through.
    pub const ALL: [MalformedKind; 8] = [
        MalformedKind::TruncatedEth,
        MalformedKind::TruncatedIp,
        MalformedKind::BadVersion,
        MalformedKind::BadIhl,
        MalformedKind::BadTotalLen,
        MalformedKind::BadChecksum,
        MalformedKind::BadUdpLen,
        MalformedKind::TruncatedIpv6,
    ];

    /// The CLI name, e.g. `bad-ihl`.
    pub fn name(self) -> &'static str {
        match self {
            MalformedKind::TruncatedEth => "truncated-eth",
            MalformedKind::TruncatedIp => "truncated-ip",
            MalformedKind::BadVersion => "bad-version",
            MalformedKind::BadIhl => "bad-ihl",
            MalformedKind::BadTotalLen => "bad-total-len",
            MalformedKind::BadChecksum => "bad-checksum",
            MalformedKind::BadUdpLen => "bad-udp-len",
            MalformedKind::TruncatedIpv6 => "truncated-ipv6",
        }
    }
}

impl fmt::Display for MalformedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn prefix_errors_name_the_input() {
        assert_eq!(
            parse_prefix("198.18.0.7/24").unwrap().to_string(),
            "198.18.0.0/24"
        );
        for (s, reason) in [
            ("198.18.0.0", "missing `/len`"),
            (
                "198.18.0.0/33",
                "prefix length too long for the address family",
            ),
            (
                "2001:db8::/129",
                "prefix length too long for the address family",
            ),
            ("x/8", "bad address"),
            ("1.2.3.4/-1", "bad prefix length"),
            ("/8", "bad address"),
        ] {
            let e = parse_prefix(s).unwrap_err();
            assert!(matches!(e, GenError::Cidr { .. }), "{s}");
            assert_eq!(e.to_string(), format!("invalid CIDR `{s}`: {reason}"));
        }
    }

    #[test]
    fn mac_round_trips_and_rejects_garbage() {
        let m: Mac = "02:00:00:00:00:01".parse().unwrap();
        assert_eq!(m, Mac::DEFAULT_SRC);
        assert_eq!(m.to_string(), "02:00:00:00:00:01");
        assert_eq!(
            "AA-bb-0c-0-1-2".parse::<Mac>().unwrap().0,
            [0xaa, 0xbb, 0x0c, 0, 1, 2]
        );
        for s in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "02:00:00:00:00:100",
            "0g:00:00:00:00:00",
        ] {
            assert!(s.parse::<Mac>().is_err(), "{s}");
        }
    }

    #[test]
    fn frame_size_parses_bounds() {
        assert_eq!("64".parse::<FrameSize>().unwrap(), FrameSize::Fixed(64));
        assert_eq!("60".parse::<FrameSize>().unwrap(), FrameSize::Fixed(60));
        assert_eq!("9000".parse::<FrameSize>().unwrap(), FrameSize::Fixed(9000));
        assert_eq!("IMIX".parse::<FrameSize>().unwrap(), FrameSize::Imix);
        for s in ["59", "9001", "", "big", "-64"] {
            assert!(s.parse::<FrameSize>().is_err(), "{s}");
        }
        assert_eq!(IMIX_PATTERN.iter().filter(|&&s| s == 64).count(), 7);
        assert_eq!(IMIX_PATTERN.iter().filter(|&&s| s == 570).count(), 4);
        assert_eq!(IMIX_PATTERN.iter().filter(|&&s| s == 1518).count(), 1);
    }

    #[test]
    fn malformed_names_match_clap() {
        for kind in MalformedKind::ALL {
            let pv = kind.to_possible_value().unwrap();
            assert_eq!(pv.get_name(), kind.name());
        }
        assert_eq!(
            MalformedKind::value_variants().len(),
            MalformedKind::ALL.len()
        );
    }
}
