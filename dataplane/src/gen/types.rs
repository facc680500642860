//! Value types of the generator's command line: CIDR prefixes, MAC addresses,
//! frame sizes, the L4 protocol mix and the malformed-frame kinds. Each parses
//! from the string a user types (`FromStr`) and prints back the same way
//! (`Display`), so clap defaults and the JSON summary read like the CLI.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use super::GenError;

/// An IP prefix, IPv4 or IPv6. Host bits are cleared on construction, so
/// `198.18.0.7/24` and `198.18.0.0/24` are the same prefix and both print as
/// the latter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl Cidr {
    /// Builds a prefix, clearing the host bits of `addr`.
    pub fn new(addr: IpAddr, prefix_len: u8) -> Result<Self, GenError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix_len > max {
            return Err(GenError::Cidr {
                input: format!("{addr}/{prefix_len}"),
                reason: "prefix length too long for the address family",
            });
        }
        let mut cidr = Cidr {
            addr,
            len: prefix_len,
        };
        cidr.addr = cidr.host(0);
        Ok(cidr)
    }

    /// The network address (host bits zero).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// True for an IPv4 prefix.
    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    /// Number of host bits (32 or 128 minus the prefix length).
    pub fn host_bits(&self) -> u32 {
        self.width() - u32::from(self.len)
    }

    /// True when `ip` is of the same family and inside the prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.is_ipv4() && self.net_mask() & to_u128(ip) == to_u128(self.addr)
    }

    /// The address with this network part and the low `host_bits()` of
    /// `host` as host part.
    pub fn host(&self, host: u128) -> IpAddr {
        let value = (to_u128(self.addr) & self.net_mask()) | (host & !self.net_mask());
        match self.addr {
            IpAddr::V4(_) => IpAddr::from((value as u32).to_be_bytes()),
            IpAddr::V6(_) => IpAddr::from(value.to_be_bytes()),
        }
    }

    fn width(&self) -> u32 {
        if self.is_ipv4() {
            32
        } else {
            128
        }
    }

    /// Mask of the network bits, within the family's width.
    fn net_mask(&self) -> u128 {
        let all = if self.is_ipv4() {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        // A /0 has no network bits; shifting by the full width would overflow.
        match self.host_bits() {
            128 => 0,
            h => all & !((1u128 << h) - 1),
        }
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

impl FromStr for Cidr {
    type Err = GenError;

    fn from_str(s: &str) -> Result<Self, GenError> {
        let bad = |reason| GenError::Cidr {
            input: s.to_owned(),
            reason,
        };
        let (addr, len) = s.split_once('/').ok_or_else(|| bad("missing `/len`"))?;
        let addr: IpAddr = addr.parse().map_err(|_| bad("bad address"))?;
        let len: u8 = len.parse().map_err(|_| bad("bad prefix length"))?;
        Cidr::new(addr, len).map_err(|_| bad("prefix length too long for the address family"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
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
    fn cidr_parses_normalises_and_contains() {
        let c: Cidr = "198.18.0.7/24".parse().unwrap();
        assert_eq!(c.to_string(), "198.18.0.0/24");
        assert_eq!(c.host_bits(), 8);
        assert!(c.contains("198.18.0.255".parse().unwrap()));
        assert!(!c.contains("198.18.1.0".parse().unwrap()));
        assert!(!c.contains("::".parse().unwrap()));
        assert_eq!(c.host(0x1_0203), "198.18.0.3".parse::<IpAddr>().unwrap());

        let c6: Cidr = "2001:db8:1::/64".parse().unwrap();
        assert!(c6.contains("2001:db8:1::ffff:1".parse().unwrap()));
        assert!(!c6.contains("2001:db8:2::1".parse().unwrap()));
        assert!(!c6.contains("198.18.0.1".parse().unwrap()));

        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("255.255.255.255".parse().unwrap()));
        let all6: Cidr = "::/0".parse().unwrap();
        assert!(all6.contains("ffff::1".parse().unwrap()));
        let host: Cidr = "10.1.2.3/32".parse().unwrap();
        assert_eq!(host.host(u128::MAX), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn cidr_rejects_garbage() {
        for s in [
            "198.18.0.0",
            "198.18.0.0/33",
            "2001:db8::/129",
            "x/8",
            "1.2.3.4/-1",
            "/8",
        ] {
            assert!(s.parse::<Cidr>().is_err(), "{s}");
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
