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

#[cfg(test)]
mod tests {
    use super::*;

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
