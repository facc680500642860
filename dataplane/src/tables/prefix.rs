//! An IP prefix (address and length) with its host bits cleared: what routes
//! and ACL rules match on. The config module converts into it. Also the
//! prefix maths ([`mask4`], [`mask6`]) every table, DPDK-backed or not, masks
//! with.
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

    pub fn is_ipv6(&self) -> bool {
        self.addr.is_ipv6()
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
    fn contains() {
        let p = Prefix::v4(Ipv4Addr::new(192, 168, 0, 0), 23).unwrap();
        let mut k = [0u8; 16];
        k[..4].copy_from_slice(&[192, 168, 1, 255]);
        assert!(p.contains_key_bytes(&k));
        k[2] = 2;
        assert!(!p.contains_key_bytes(&k));
    }
}
