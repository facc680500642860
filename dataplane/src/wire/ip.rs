//! IP protocol numbers, shared by the IPv4 `protocol` and IPv6 `next_header`
//! fields (IANA "Assigned Internet Protocol Numbers").

use super::enum_with_unknown;

enum_with_unknown! {
    /// An IPv4 protocol / IPv6 next-header number.
    pub enum IpProtocol(u8) {
        /// IPv6 Hop-by-Hop Options.
        HopByHop = 0,
        Icmp = 1,
        Tcp = 6,
        Udp = 17,
        /// IPv6 Routing header.
        Ipv6Route = 43,
        /// IPv6 Fragment header.
        Ipv6Frag = 44,
        Esp = 50,
        Ah = 51,
        Icmpv6 = 58,
        /// IPv6 "no next header".
        Ipv6NoNxt = 59,
        /// IPv6 Destination Options.
        Ipv6Opts = 60,
    }
}

/// Protocols whose first four L4 bytes are source and destination ports:
/// TCP, UDP, SCTP (what the parse reads into a flow key and what an ACL
/// rule's port ranges can match). Compared as numbers: going through
/// `IpProtocol::from` builds the enum first, which the fast path cannot
/// afford.
#[inline(always)]
pub fn has_ports(proto: u8) -> bool {
    const TCP: u8 = 6;
    const UDP: u8 = 17;
    const SCTP: u8 = 132;
    matches!(proto, TCP | UDP | SCTP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_ports_matches_the_protocol_names() {
        for p in 0..=255u8 {
            let named = matches!(IpProtocol::from(p), IpProtocol::Tcp | IpProtocol::Udp);
            assert_eq!(has_ports(p), named || p == 132, "protocol {p}");
        }
    }

    #[test]
    fn round_trips_every_value() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(IpProtocol::from(v)), v);
        }
        assert_eq!(IpProtocol::from(17), IpProtocol::Udp);
        assert_eq!(IpProtocol::from(58), IpProtocol::Icmpv6);
        assert_eq!(IpProtocol::from(99), IpProtocol::Unknown(99));
    }
}
