//! An IP prefix (address and length) with its host bits cleared: what routes
//! and ACL rules match on, and what the traffic generator draws addresses
//! from. The config module converts into it; it also parses from `addr/len`
//! (`FromStr`) and prints back the same way. Also the prefix maths
//! ([`mask4`], [`mask6`]) every table, DPDK-backed or not, masks with.
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// `ip` with the bits past `depth` cleared (`depth <= 32`).
#[inline]
pub fn mask4(ip: u32, depth: u8) -> u32 {
    match depth {
        0 => 0,
        d => ip & (u32::MAX << (32 - u32::from(d.min(32)))),
    }
}

/// `ip` with the bits past `depth` cleared (`depth <= 128`).
#[inline]
pub fn mask6(ip: [u8; 16], depth: u8) -> [u8; 16] {
    let v = u128::from_be_bytes(ip);
    let m = match depth {
        0 => 0,
        d => u128::MAX << (128 - u32::from(d.min(128))),
    };
    (v & m).to_be_bytes()
}

/// A prefix length longer than its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("prefix length {len} > {max} for {addr}")]
pub struct PrefixLenError {
    pub addr: IpAddr,
    pub len: u8,
    pub max: u8,
}

/// Why a string is not an `addr/len` prefix. Carries no input, as
/// [`std::net::AddrParseError`] does not: callers that print it name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PrefixParseError {
    #[error("missing `/len`")]
    MissingLen,
    #[error("bad address")]
    Addr,
    #[error("bad prefix length")]
    Len,
    #[error("prefix length too long for the address family")]
    TooLong(PrefixLenError),
}

/// An IPv4 or IPv6 prefix. Host bits are cleared on construction, so
/// `198.18.0.7/24` and `198.18.0.0/24` are the same prefix and both print as
/// the latter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl Prefix {
    /// `addr/len` with the bits past `len` cleared; fails when `len` is
    /// longer than the address.
    pub fn new(addr: IpAddr, len: u8) -> Result<Prefix, PrefixLenError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if len > max {
            return Err(PrefixLenError { addr, len, max });
        }
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(mask4(a.into(), len))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(mask6(a.octets(), len))),
        };
        Ok(Prefix { addr, len })
    }

    pub fn v4(addr: Ipv4Addr, len: u8) -> Result<Prefix, PrefixLenError> {
        Prefix::new(IpAddr::V4(addr), len)
    }

    pub fn v6(addr: Ipv6Addr, len: u8) -> Result<Prefix, PrefixLenError> {
        Prefix::new(IpAddr::V6(addr), len)
    }

    /// The network address (host bits zero).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    pub fn is_ipv4(&self) -> bool {
        self.addr.is_ipv4()
    }

    pub fn is_ipv6(&self) -> bool {
        self.addr.is_ipv6()
    }

    /// The number of host bits: the family's width (32 or 128) less the
    /// prefix length.
    pub fn host_bits(&self) -> u8 {
        let width = if self.is_ipv4() { 32 } else { 128 };
        width - self.len
    }

    /// The address with this prefix's network part and the low
    /// [`host_bits`](Self::host_bits) of `host` as its host part (higher
    /// bits of `host` are ignored).
    pub fn host(&self, host: u128) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => {
                let net = mask4(u32::MAX, self.len);
                // Truncation is the point: only the low host bits count.
                IpAddr::V4(Ipv4Addr::from(u32::from(a) | (host as u32 & !net)))
            }
            IpAddr::V6(a) => {
                let net = u128::from_be_bytes(mask6([0xff; 16], self.len));
                IpAddr::V6(Ipv6Addr::from(u128::from(a) | (host & !net)))
            }
        }
    }

    /// Whether `ip` is of this prefix's family and lies in the prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => mask4(a.into(), self.len) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(a)) => mask6(a.octets(), self.len) == net.octets(),
            _ => false,
        }
    }

    /// The address as 16 bytes, IPv4 in the first four (as in `FlowKey`).
    pub fn key_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        match self.addr {
            IpAddr::V4(a) => b[..4].copy_from_slice(&a.octets()),
            IpAddr::V6(a) => b = a.octets(),
        }
        b
    }

    /// The prefix of every address of a family (`0.0.0.0/0` or `::/0`).
    pub fn any(v6: bool) -> Prefix {
        let addr = if v6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        Prefix { addr, len: 0 }
    }

    /// Whether every address of `other` lies in this prefix (same family,
    /// no longer, and `other`'s network inside it).
    pub fn covers(&self, other: &Prefix) -> bool {
        self.is_ipv6() == other.is_ipv6()
            && self.len <= other.len
            && self.contains_key_bytes(&other.key_bytes())
    }

    /// Whether `addr` (in `FlowKey` layout, of this prefix's family) lies in
    /// the prefix.
    #[inline]
    pub fn contains_key_bytes(&self, addr: &[u8; 16]) -> bool {
        match self.addr {
            IpAddr::V4(a) => {
                let v = u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]);
                mask4(v, self.len) == u32::from(a)
            }
            IpAddr::V6(a) => mask6(*addr, self.len) == a.octets(),
        }
    }
}

/// `addr/len`, IPv4 or IPv6; host bits are cleared, not refused.
impl FromStr for Prefix {
    type Err = PrefixParseError;

    fn from_str(s: &str) -> Result<Prefix, PrefixParseError> {
        let (addr, len) = s.split_once('/').ok_or(PrefixParseError::MissingLen)?;
        let addr: IpAddr = addr.parse().map_err(|_| PrefixParseError::Addr)?;
        let len: u8 = len.parse().map_err(|_| PrefixParseError::Len)?;
        Prefix::new(addr, len).map_err(PrefixParseError::TooLong)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_host_bits() {
        let p = Prefix::v4(Ipv4Addr::new(10, 1, 2, 3), 16).unwrap();
        assert_eq!(p.addr(), IpAddr::V4(Ipv4Addr::new(10, 1, 0, 0)));
        assert_eq!(p.to_string(), "10.1.0.0/16");
        let p = Prefix::v6("2001:db8::1".parse().unwrap(), 0).unwrap();
        assert_eq!(p.to_string(), "::/0");
    }

    #[test]
    fn refuses_long_lengths() {
        assert_eq!(
            Prefix::v4(Ipv4Addr::LOCALHOST, 33).unwrap_err().to_string(),
            "prefix length 33 > 32 for 127.0.0.1"
        );
        assert!(Prefix::v6(Ipv6Addr::LOCALHOST, 129).is_err());
        assert!(Prefix::v6(Ipv6Addr::LOCALHOST, 128).is_ok());
    }

    #[test]
    fn contains_key_bytes() {
        let p = Prefix::v4(Ipv4Addr::new(192, 168, 0, 0), 23).unwrap();
        let mut k = [0u8; 16];
        k[..4].copy_from_slice(&[192, 168, 1, 255]);
        assert!(p.contains_key_bytes(&k));
        k[2] = 2;
        assert!(!p.contains_key_bytes(&k));
    }

    #[test]
    fn parses_normalises_and_contains() {
        let c: Prefix = "198.18.0.7/24".parse().unwrap();
        assert_eq!(c.to_string(), "198.18.0.0/24");
        assert!(c.is_ipv4() && !c.is_ipv6());
        assert_eq!(c.host_bits(), 8);
        assert!(c.contains("198.18.0.255".parse().unwrap()));
        assert!(!c.contains("198.18.1.0".parse().unwrap()));
        assert!(!c.contains("::".parse().unwrap()));
        assert_eq!(c.host(0x1_0203), "198.18.0.3".parse::<IpAddr>().unwrap());

        let c6: Prefix = "2001:db8:1::/64".parse().unwrap();
        assert!(c6.is_ipv6() && !c6.is_ipv4());
        assert_eq!(c6.host_bits(), 64);
        assert!(c6.contains("2001:db8:1::ffff:1".parse().unwrap()));
        assert!(!c6.contains("2001:db8:2::1".parse().unwrap()));
        assert!(!c6.contains("198.18.0.1".parse().unwrap()));
        assert_eq!(
            c6.host(u128::MAX << 64 | 0x5),
            "2001:db8:1::5".parse::<IpAddr>().unwrap()
        );

        let all: Prefix = "0.0.0.0/0".parse().unwrap();
        assert_eq!(all, Prefix::any(false));
        assert_eq!(all.host_bits(), 32);
        assert!(all.contains("255.255.255.255".parse().unwrap()));
        assert_eq!(all.host(u128::MAX), IpAddr::V4(Ipv4Addr::BROADCAST));
        let all6: Prefix = "::/0".parse().unwrap();
        assert_eq!(all6, Prefix::any(true));
        assert_eq!(all6.host_bits(), 128);
        assert!(all6.contains("ffff::1".parse().unwrap()));
        let host: Prefix = "10.1.2.3/32".parse().unwrap();
        assert_eq!(host.host_bits(), 0);
        assert_eq!(host.host(u128::MAX), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn parse_rejects_garbage() {
        use PrefixParseError::*;
        for (s, want) in [
            ("198.18.0.0", MissingLen),
            ("x/8", Addr),
            ("/8", Addr),
            ("1.2.3.4/-1", Len),
            ("1.2.3.4/", Len),
            ("1.2.3.4/256", Len),
        ] {
            assert_eq!(s.parse::<Prefix>(), Err(want), "{s}");
        }
        for s in ["198.18.0.0/33", "2001:db8::/129"] {
            assert!(matches!(s.parse::<Prefix>(), Err(TooLong(_))), "{s}");
        }
        assert_eq!(
            "198.18.0.0/33".parse::<Prefix>().unwrap_err().to_string(),
            "prefix length too long for the address family"
        );
    }
}
