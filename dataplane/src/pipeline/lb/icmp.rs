//! The load balancer's ICMP: reading the flow an ICMP error to a VIP
//! quotes, and the too-big error it sends a client whose packet no longer
//! fits once encapsulated.
use super::super::local::{write_v6, IcmpLimiter};
use super::super::{DropReason, Event, Lane, Meta, PacketBuf, StageCtx, Verdict};
use super::reparse;
use crate::stats::Originated;
use crate::wire::icmpv4::dst_unreachable;
use crate::wire::icmpv6::Icmpv6Repr;
use crate::wire::{Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Repr};
use std::net::Ipv6Addr;

/// The packet an ICMP error quotes, as it was sent (IPv4 addresses in the
/// low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quoted {
    pub src: u128,
    pub dst: u128,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

/// The flow quoted by the ICMP error of `m` (destination unreachable,
/// packet too big, time exceeded, parameter problem), `None` for any other
/// message or a quote too short to name one.
pub fn quoted_flow(data: &[u8], m: &Meta, v6: bool) -> Option<Quoted> {
    let l4 = usize::from(m.l4_off);
    if l4 == 0 {
        return None;
    }
    let ty = *data.get(l4)?;
    let inner = l4 + 8;
    let (src, dst, proto, ports_at) = if v6 {
        if !(1..=4).contains(&ty) {
            return None;
        }
        let h = data.get(inner..inner + 40)?;
        if h[0] >> 4 != 6 {
            return None;
        }
        let a = |at: usize| u128::from_be_bytes(h[at..at + 16].try_into().expect("16 bytes"));
        (a(8), a(24), h[6], inner + 40)
    } else {
        if !matches!(ty, 3 | 11 | 12) {
            return None;
        }
        let h = data.get(inner..inner + 20)?;
        let ihl = usize::from(h[0] & 0x0f) * 4;
        if h[0] >> 4 != 4 || ihl < 20 {
            return None;
        }
        let a = |at: usize| {
            u128::from(u32::from_be_bytes(
                h[at..at + 4].try_into().expect("4 bytes"),
            ))
        };
        (a(12), a(16), h[9], inner + ihl)
    };
    let (sport, dport) = match proto {
        6 | 17 | 132 => {
            let p = data.get(ports_at..ports_at + 4)?;
            (
                u16::from_be_bytes([p[0], p[1]]),
                u16::from_be_bytes([p[2], p[3]]),
            )
        }
        _ => (0, 0),
    };
    Some(Quoted {
        src,
        dst,
        sport,
        dport,
        proto,
    })
}

/// The packet (its `Meta` parsed) does not fit its backend's path once
/// encapsulated: its buffer becomes an ICMP fragmentation-needed (IPv4) or
/// packet-too-big (IPv6) from the VIP to the client, announcing `mtu` (the
/// largest packet that fits), left at `Continue` for `route` to forward.
/// Rate-limited; never about an ICMP error, a non-first fragment or a
/// multicast source. The `too_big` drop is counted either way.
pub fn too_big<P: PacketBuf>(
    p: &mut P,
    m: &mut Meta,
    lane: &Lane,
    mtu: u16,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
) -> Verdict {
    let v6 = m.l3 == super::L3::Ipv6;
    let l3 = usize::from(m.l3_off);
    if !answerable(p.data(), m, v6) {
        return Verdict::Drop(DropReason::TooBig);
    }
    if !limiter.allow(ctx.now, ctx.tsc_hz) {
        ctx.counters.count_event(Event::IcmpRateLimited);
        return Verdict::Drop(DropReason::TooBig);
    }
    let written = if v6 {
        write_ptb(p, l3, mtu)
    } else {
        write_frag_needed(p, l3, mtu)
    };
    if !written {
        return Verdict::Drop(DropReason::TooBig);
    }
    ctx.counters.count_drop(DropReason::TooBig, 1);
    ctx.counters.count_event(Event::IcmpError);
    ctx.counters.count_originated(Originated::IcmpError);
    m.verdict = Verdict::Continue;
    reparse(p, m, lane);
    m.verdict
}

/// Whether an error may be sent about this packet (RFC 1812 4.3.2.7,
/// RFC 4443 2.4(e)).
fn answerable(data: &[u8], m: &Meta, v6: bool) -> bool {
    let l3 = usize::from(m.l3_off);
    let l4 = usize::from(m.l4_off);
    if v6 {
        let src = &data[l3 + 8..l3 + 24];
        if src[0] == 0xff || src.iter().all(|&b| b == 0) {
            return false;
        }
        // An ICMPv6 error (type < 128) is never answered with one.
        !(m.key.proto == 58 && l4 != 0 && data.get(l4).is_some_and(|&t| t < 128))
    } else {
        let ip = Ipv4Packet::new_unchecked(&data[l3..]);
        if ip.is_non_first_fragment()
            || ip.src_addr().is_broadcast()
            || ip.src_addr().is_multicast()
        {
            return false;
        }
        !(ip.protocol() == IpProtocol::Icmp
            && l4 != 0
            && !matches!(data.get(l4), Some(0) | Some(8)))
    }
}

fn write_frag_needed<P: PacketBuf>(p: &mut P, l3: usize, mtu: u16) -> bool {
    let mut quote = [0u8; 60 + 8];
    let (qlen, client, vip) = {
        let d = p.data();
        let ip = Ipv4Packet::new_unchecked(&d[l3..]);
        let n = (ip.header_len() + 8).min(usize::from(ip.total_len()));
        quote[..n].copy_from_slice(&d[l3..l3 + n]);
        (n, ip.src_addr(), ip.dst_addr())
    };
    let icmp = Icmpv4Repr::DstUnreachable {
        code: dst_unreachable::FRAG_NEEDED,
        next_hop_mtu: mtu,
        data: &quote[..qlen],
    };
    let ip = Ipv4Repr {
        src_addr: vip,
        dst_addr: client,
        protocol: IpProtocol::Icmp,
        payload_len: icmp.buffer_len(),
        ttl: 64,
    };
    let len = l3 + 20 + icmp.buffer_len();
    if !p.resize(len.max(60)) {
        return false;
    }
    let d = p.data_mut();
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut d[l3..l3 + 20]));
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut d[l3 + 20..len]));
    d[len..].fill(0);
    true
}

fn write_ptb<P: PacketBuf>(p: &mut P, l3: usize, mtu: u16) -> bool {
    // As much of the packet as a minimum-MTU (1280) reply holds.
    let mut quote = [0u8; 1280 - 48];
    let (qlen, client, vip, macs) = {
        let d = p.data();
        let end = (l3 + 40 + usize::from(u16::from_be_bytes([d[l3 + 4], d[l3 + 5]]))).min(d.len());
        let n = (end - l3).min(quote.len());
        quote[..n].copy_from_slice(&d[l3..l3 + n]);
        let a =
            |at: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&d[at..at + 16]).expect("16 bytes"));
        let mut macs = [[0u8; 6]; 2];
        macs[0].copy_from_slice(&d[..6]);
        macs[1].copy_from_slice(&d[6..12]);
        (n, a(l3 + 8), a(l3 + 24), macs)
    };
    let icmp = Icmpv6Repr::PacketTooBig {
        mtu: u32::from(mtu),
        data: &quote[..qlen],
    };
    let ip = Ipv6Repr {
        src_addr: vip,
        dst_addr: client,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
    };
    // `route` writes the Ethernet addresses; these are placeholders.
    write_v6(p, l3, macs[0], macs[1], &ip, &icmp)
}
