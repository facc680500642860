//! Value types with their own syntax: MAC addresses, IPv4/IPv6 prefixes,
//! L4 port ranges, protocol names, next-hop lists. Their parse errors
//! become serde errors, so toml attaches the span of the offending value.
use crate::tables::prefix::{mask4, mask6};
use crate::tables::Prefix;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An Ethernet address written `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mac(pub [u8; 6]);

impl FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = [0u8; 6];
        let parts: Vec<&str> = s.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(format!(
                "invalid MAC address `{s}`: expected six hex bytes like 02:00:00:00:00:01"
            ));
        }
        for (o, p) in out.iter_mut().zip(&parts) {
            if p.len() != 2 {
                return Err(format!(
                    "invalid MAC address `{s}`: `{p}` is not two hex digits"
                ));
            }
            *o = u8::from_str_radix(p, 16)
                .map_err(|_| format!("invalid MAC address `{s}`: `{p}` is not hex"))?;
        }
        Ok(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// An IPv4 or IPv6 prefix `addr/len` as written. `Ipv4Cidr`/`Ipv6Cidr` keep
/// host bits (an interface address `192.0.2.1/24` is both the address and
/// its subnet); [`IpCidr::prefix`] gives the tables' [`Prefix`], and the
/// mask maths is [`mask4`]/[`mask6`], the tables' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    pub addr: Ipv4Addr,
    pub len: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Cidr {
    pub addr: Ipv6Addr,
    pub len: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpCidr {
    V4(Ipv4Cidr),
    V6(Ipv6Cidr),
}

impl Ipv4Cidr {
    /// The prefix with host bits cleared.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(mask4(u32::from(self.addr), self.len))
    }
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        mask4(u32::from(a), self.len) == mask4(u32::from(self.addr), self.len)
    }
}

impl Ipv6Cidr {
    pub fn network(&self) -> Ipv6Addr {
        Ipv6Addr::from(mask6(self.addr.octets(), self.len))
    }
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        mask6(a.octets(), self.len) == mask6(self.addr.octets(), self.len)
    }
}

impl IpCidr {
    /// The prefix the tables match on ([`Prefix`]: host bits cleared).
    pub fn prefix(&self) -> Prefix {
        let p = match *self {
            IpCidr::V4(c) => Prefix::v4(c.addr, c.len),
            IpCidr::V6(c) => Prefix::v6(c.addr, c.len),
        };
        // `from_str`, the only way a config builds one, refuses longer
        // lengths than the family's.
        p.expect("IpCidr lengths are checked when parsed")
    }
}

impl FromStr for IpCidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s
            .split_once('/')
            .ok_or_else(|| format!("invalid prefix `{s}`: expected ADDRESS/LENGTH"))?;
        let len: u8 = l
            .parse()
            .map_err(|_| format!("invalid prefix `{s}`: length `{l}` is not a number"))?;
        if let Ok(v4) = a.parse::<Ipv4Addr>() {
            if len > 32 {
                return Err(format!("invalid prefix `{s}`: IPv4 length must be 0..=32"));
            }
            return Ok(IpCidr::V4(Ipv4Cidr { addr: v4, len }));
        }
        if let Ok(v6) = a.parse::<Ipv6Addr>() {
            if len > 128 {
                return Err(format!("invalid prefix `{s}`: IPv6 length must be 0..=128"));
            }
            return Ok(IpCidr::V6(Ipv6Cidr { addr: v6, len }));
        }
        Err(format!(
            "invalid prefix `{s}`: `{a}` is not an IPv4 or IPv6 address"
        ))
    }
}

impl FromStr for Ipv4Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<IpCidr>()? {
            IpCidr::V4(c) => Ok(c),
            IpCidr::V6(_) => Err(format!("`{s}` is IPv6 where an IPv4 prefix is expected")),
        }
    }
}

impl FromStr for Ipv6Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<IpCidr>()? {
            IpCidr::V6(c) => Ok(c),
            IpCidr::V4(_) => Err(format!("`{s}` is IPv4 where an IPv6 prefix is expected")),
        }
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpCidr::V4(c) => write!(f, "{}/{}", c.addr, c.len),
            IpCidr::V6(c) => write!(f, "{}/{}", c.addr, c.len),
        }
    }
}

/// Deserializes any `FromStr` type from a TOML string.
macro_rules! deserialize_from_str {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(de::Error::custom)
            }
        }
    )*};
}
deserialize_from_str!(Mac, IpCidr, Ipv4Cidr, Ipv6Cidr);

/// An IP protocol number, written as a name or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proto(pub u8);

impl<'de> Deserialize<'de> for Proto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Proto;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a protocol name (tcp, udp, icmp, icmpv6, sctp) or number 0..=255")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Proto, E> {
                u8::try_from(v)
                    .map(Proto)
                    .map_err(|_| E::custom(format!("protocol {v} is not in 0..=255")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Proto, E> {
                Ok(Proto(match v.to_ascii_lowercase().as_str() {
                    "icmp" => 1,
                    "tcp" => 6,
                    "udp" => 17,
                    "icmpv6" | "ipv6-icmp" => 58,
                    "sctp" => 132,
                    _ => {
                        return Err(E::custom(format!(
                            "unknown protocol `{v}` (tcp, udp, icmp, icmpv6, sctp or a number)"
                        )))
                    }
                }))
            }
        }
        d.deserialize_any(V)
    }
}

/// An inclusive L4 port range, written `80` or `"1024-65535"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange(pub u16, pub u16);

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = PortRange;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a port 0..=65535 or a range \"LOW-HIGH\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortRange, E> {
                let p = u16::try_from(v)
                    .map_err(|_| E::custom(format!("port {v} is not in 0..=65535")))?;
                Ok(PortRange(p, p))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortRange, E> {
                let bad = || {
                    E::custom(format!("invalid port range `{v}`: expected LOW-HIGH with 0 <= LOW <= HIGH <= 65535"))
                };
                let (a, b) = v.split_once('-').unwrap_or((v, v));
                let a: u16 = a.trim().parse().map_err(|_| bad())?;
                let b: u16 = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                Ok(PortRange(a, b))
            }
        }
        d.deserialize_any(V)
    }
}

/// One address or a list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViaList(pub Vec<std::net::IpAddr>);

impl<'de> Deserialize<'de> for ViaList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = ViaList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an IP address or a list of IP addresses")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ViaList, E> {
                v.parse()
                    .map(|a| ViaList(vec![a]))
                    .map_err(|_| E::custom(format!("invalid next-hop address `{v}`")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<ViaList, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s.parse().map_err(|_| {
                        de::Error::custom(format!("invalid next-hop address `{s}`"))
                    })?);
                }
                if out.is_empty() {
                    return Err(de::Error::custom("`via` lists no address"));
                }
                Ok(ViaList(out))
            }
        }
        d.deserialize_any(V)
    }
}
