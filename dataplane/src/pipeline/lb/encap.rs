//! IP-in-IP encapsulation in place (RFC 2003 IPv4 in IPv4, RFC 2473 IPv6
//! in IPv6): the packet grows into its headroom, its L2 header moves to the
//! new front, and the outer header goes between it and the inner packet,
//! which is left byte for byte as it came.
use super::super::PacketBuf;
use crate::tables::lb::{Backend4, DfPolicy, OuterV4};
use std::net::Ipv6Addr;

/// IP protocol number of IPv6 in IP.
pub const IPPROTO_IPV6: u8 = 41;

/// What the outer IPv4 header takes from the inner one at `l3` — its TOS,
/// the outer total length, the inner DF bit — with the packet grown by the
/// outer header's 20 bytes at the front (its old bytes where they were).
/// `None`, the packet unchanged, when the inner header is cut short, the
/// outer length would overflow, or the headroom is used up.
#[inline(always)]
fn grow_for_outer_v4<P: PacketBuf>(p: &mut P, l3: usize) -> Option<(u8, u16, u8)> {
    let inner = p.data().get(l3..l3 + 20)?;
    let total = u16::from_be_bytes([inner[2], inner[3]]).checked_add(20)?;
    let fields = (inner[1], total, inner[6] & 0x40);
    p.prepend(20).then_some(fields)
}

/// The outer header's flags byte and checksum: `sum` is the one's-complement
/// sum of the header's fixed part ([`OuterV4::sum`]), to which TOS, length,
/// identification and flags are added (RFC 1071 is linear).
#[inline(always)]
fn outer_flags_checksum(
    sum: u32,
    tos: u8,
    total: u16,
    id: u16,
    df: DfPolicy,
    inner_df: u8,
) -> (u8, u16) {
    let flags = match df {
        DfPolicy::Inner => inner_df,
        DfPolicy::Set => 0x40,
        DfPolicy::Clear => 0,
    };
    let acc = sum + u32::from(tos) + u32::from(total) + u32::from(id) + (u32::from(flags) << 8);
    let acc = (acc & 0xffff) + (acc >> 16);
    (flags, !((acc & 0xffff) + (acc >> 16)) as u16)
}

/// Wraps the IPv4 packet at offset `l3` in `outer`: the inner TOS, DF per
/// `df`, identification `id` (the flow hash's low bits: a fragmented outer
/// packet needs one that differs between flows), length and checksum
/// filled in. False, the packet unchanged, without headroom or with no room
/// for the outer length.
#[inline(always)]
pub fn encap_v4<P: PacketBuf>(
    p: &mut P,
    l3: usize,
    outer: &OuterV4,
    df: DfPolicy,
    id: u16,
) -> bool {
    let Some((tos, total, inner_df)) = grow_for_outer_v4(p, l3) else {
        return false;
    };
    let d = p.data_mut();
    if l3 == 14 {
        // The common untagged frame: a fixed 14-byte move, no memmove call.
        let mut l2 = [0u8; 14];
        l2.copy_from_slice(&d[20..34]);
        d[..14].copy_from_slice(&l2);
    } else {
        d.copy_within(20..20 + l3, 0);
    }
    let (flags, c) = outer_flags_checksum(outer.sum, tos, total, id, df, inner_df);
    let h: &mut [u8; 20] = (&mut d[l3..l3 + 20]).try_into().expect("20 bytes");
    *h = outer.header;
    h[1] = tos;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = flags;
    h[10..12].copy_from_slice(&c.to_be_bytes());
    true
}

/// [`encap_v4`] for a plain frame (the untagged IPv4 packet at offset 14,
/// at least 34 bytes: the lane says so), from the backend's words: the
/// same bytes, written as five stores.
#[inline(always)]
pub fn encap_v4_plain<P: PacketBuf>(p: &mut P, be: &Backend4, df: DfPolicy, id: u16) -> bool {
    let Some((tos, total, inner_df)) = grow_for_outer_v4(p, 14) else {
        return false;
    };
    let Some(d) = p.data_mut().get_mut(..54) else {
        return false; // not a plain frame after all (cannot happen)
    };
    let d: &mut [u8; 54] = d.try_into().expect("54 bytes");
    // The Ethernet header to the new front: two overlapping words.
    let a = u64::from_ne_bytes(d[20..28].try_into().expect("8"));
    let b = u64::from_ne_bytes(d[26..34].try_into().expect("8"));
    d[0..8].copy_from_slice(&a.to_ne_bytes());
    d[6..14].copy_from_slice(&b.to_ne_bytes());
    let (flags, c) = outer_flags_checksum(be.sum, tos, total, id, df, inner_df);
    let [c0, c1] = c.to_be_bytes();
    let [l0, l1] = total.to_be_bytes();
    let [i0, i1] = id.to_be_bytes();
    let w0 = u64::from_ne_bytes([0x45, tos, l0, l1, i0, i1, flags, 0]);
    let w1 = be.ttl_proto_src | u64::from_ne_bytes([0, 0, c0, c1, 0, 0, 0, 0]);
    d[14..22].copy_from_slice(&w0.to_ne_bytes());
    d[22..30].copy_from_slice(&w1.to_ne_bytes());
    d[30..34].copy_from_slice(&((be.addrs >> 32) as u32).to_ne_bytes());
    true
}

/// Wraps the IPv6 packet at offset `l3` in an IPv6 header from `src` to
/// `dst`: hop limit 64, the inner traffic class, the flow label from
/// `hash` (RFC 6438: so ECMP and the backend's RSS can spread flows of one
/// tunnel). False, the packet unchanged, as for [`encap_v4`].
pub fn encap_v6<P: PacketBuf>(
    p: &mut P,
    l3: usize,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hash: u32,
) -> bool {
    let Some(inner) = p.data().get(l3..l3 + 40) else {
        return false;
    };
    let Some(payload) = u16::from_be_bytes([inner[4], inner[5]]).checked_add(40) else {
        return false;
    };
    let tc = (inner[0] & 0x0f) << 4 | inner[1] >> 4;
    if !p.prepend(40) {
        return false;
    }
    let d = p.data_mut();
    d.copy_within(40..40 + l3, 0);
    let label = hash & 0x000f_ffff;
    let h = &mut d[l3..l3 + 40];
    h[0] = 0x60 | tc >> 4;
    h[1] = tc << 4 | (label >> 16) as u8;
    h[2] = (label >> 8) as u8;
    h[3] = label as u8;
    h[4..6].copy_from_slice(&payload.to_be_bytes());
    h[6] = IPPROTO_IPV6;
    h[7] = 64;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::VecPacket;
    use crate::tables::lb::{Backend4, OuterV4};
    use etherparse::{NetHeaders, PacketBuilder, PacketHeaders};

    fn v4_frame(df: bool) -> Vec<u8> {
        let mut b = Vec::new();
        let mut ip = etherparse::Ipv4Header::new(
            8,
            63,
            etherparse::IpNumber::UDP,
            [192, 0, 2, 9],
            [198, 18, 0, 10],
        )
        .unwrap();
        ip.dont_fragment = df;
        ip.dscp = etherparse::Ipv4Dscp::try_new(10).unwrap();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ip(etherparse::IpHeaders::Ipv4(ip, Default::default()))
            .udp(1234, 80)
            .write(&mut b, b"payload!")
            .unwrap();
        b
    }

    #[test]
    fn ipv4_in_ipv4_keeps_the_inner_packet_and_gets_lengths_and_checksum_right() {
        let frame = v4_frame(true);
        let mut p = VecPacket::new(frame.clone());
        assert!(encap_v4(
            &mut p,
            14,
            &OuterV4::new(0x0a00_0001, 0x0a01_0002),
            DfPolicy::Inner,
            0x1234
        ));
        let d = &p.bytes;
        assert_eq!(d.len(), frame.len() + 20);
        assert_eq!(&d[..14], &frame[..14], "L2 header moved to the front");
        assert_eq!(&d[34..], &frame[14..], "inner packet unchanged");
        let h = PacketHeaders::from_ethernet_slice(d).unwrap();
        let Some(NetHeaders::Ipv4(outer, _)) = h.net else {
            panic!("not IPv4")
        };
        assert_eq!(outer.protocol, etherparse::IpNumber::IPV4);
        assert_eq!(outer.total_len as usize, d.len() - 14);
        assert_eq!(outer.source, [10, 0, 0, 1]);
        assert_eq!(outer.destination, [10, 1, 0, 2]);
        assert_eq!(outer.time_to_live, 64);
        assert!(outer.dont_fragment, "DF copied from the inner header");
        assert_eq!(outer.dscp.value(), 10);
        assert_eq!(outer.header_checksum, outer.calc_header_checksum());
        assert_eq!(outer.identification, 0x1234);
    }

    #[test]
    fn df_follows_the_policy() {
        for (inner, policy, want) in [
            (false, DfPolicy::Inner, false),
            (false, DfPolicy::Set, true),
            (true, DfPolicy::Clear, false),
        ] {
            let mut p = VecPacket::new(v4_frame(inner));
            assert!(encap_v4(&mut p, 14, &OuterV4::new(1, 2), policy, 0));
            assert_eq!(p.bytes[20] & 0x40 != 0, want, "{policy:?}");
        }
    }

    /// The plain path's word-wise header equals the template's, whatever
    /// the TOS, DF, policy, identification and length.
    #[test]
    fn plain_encapsulation_writes_the_same_bytes() {
        let outer = OuterV4::new(0x0a00_0001, 0xc633_6407);
        let be = Backend4::with_outer(&outer, 1480, false, 0);
        for (k, df) in [(0u16, true), (1, false), (0xfffe, true), (0x8001, false)] {
            for policy in [DfPolicy::Inner, DfPolicy::Set, DfPolicy::Clear] {
                let mut frame = v4_frame(df);
                frame[15] = k as u8; // TOS
                frame.extend_from_slice(&vec![k as u8; usize::from(k % 300)]);
                let total = (frame.len() - 14) as u16;
                frame[16..18].copy_from_slice(&total.to_be_bytes());
                let (mut a, mut b) = (VecPacket::new(frame.clone()), VecPacket::new(frame));
                assert!(encap_v4(&mut a, 14, &outer, policy, k));
                assert!(encap_v4_plain(&mut b, &be, policy, k));
                assert_eq!(a.bytes, b.bytes, "id {k:#x} df {df} {policy:?}");
            }
        }
        // Without headroom, or cut short: nothing changes.
        let mut p = VecPacket::new(v4_frame(true));
        p.headroom = 19;
        assert!(!encap_v4_plain(&mut p, &be, DfPolicy::Inner, 1));
        assert_eq!(p.bytes, v4_frame(true));
        assert!(!encap_v4_plain(
            &mut VecPacket::new(vec![0u8; 30]),
            &be,
            DfPolicy::Inner,
            1
        ));
    }

    #[test]
    fn without_headroom_nothing_changes() {
        let frame = v4_frame(false);
        let mut p = VecPacket::new(frame.clone());
        p.headroom = 10;
        assert!(!encap_v4(
            &mut p,
            14,
            &OuterV4::new(1, 2),
            DfPolicy::Inner,
            0
        ));
        assert_eq!(p.bytes, frame);
        assert!(!encap_v4(
            &mut VecPacket::new(vec![0u8; 20]),
            14,
            &OuterV4::new(1, 2),
            DfPolicy::Inner,
            0
        ));
    }

    #[test]
    fn ipv6_in_ipv6() {
        let mut frame = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv6(
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10],
                60,
            )
            .tcp(1234, 443, 1, 1000)
            .write(&mut frame, b"hello")
            .unwrap();
        let mut p = VecPacket::new(frame.clone());
        let src: Ipv6Addr = "2001:db8:ff::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8:1::7".parse().unwrap();
        assert!(encap_v6(&mut p, 14, src, dst, 0xabcde));
        let d = &p.bytes;
        assert_eq!(&d[..14], &frame[..14]);
        assert_eq!(&d[54..], &frame[14..]);
        let h = PacketHeaders::from_ethernet_slice(d).unwrap();
        let Some(NetHeaders::Ipv6(outer, _)) = h.net else {
            panic!("not IPv6")
        };
        assert_eq!(outer.next_header, etherparse::IpNumber::IPV6);
        assert_eq!(outer.payload_length as usize, d.len() - 54);
        assert_eq!(outer.source, src.octets());
        assert_eq!(outer.destination, dst.octets());
        assert_eq!(outer.flow_label.value(), 0xabcde);
        assert_eq!(outer.hop_limit, 64);
    }
}
