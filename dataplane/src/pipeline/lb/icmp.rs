//! The load balancer's ICMP: reading the flow an ICMP error to a VIP
//! quotes, and the too-big error it sends a client whose packet no longer
//! fits once encapsulated.
use super::super::local::{write_error_v4, write_error_v6, ErrorV4, ErrorV6, IcmpLimiter};
use super::super::{Lane, Meta, PacketBuf, StageCtx, Verdict, L3};
use super::reparse;
use crate::wire::{walk_extensions, IpProtocol};
use std::net::{Ipv4Addr, Ipv6Addr};

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
        // The quoted packet's extension headers, as far as the quote goes.
        let walk = walk_extensions(IpProtocol::from(h[6]), data.get(inner + 40..)?).ok()?;
        if walk.is_non_first_fragment {
            return None;
        }
        (
            a(8),
            a(24),
            u8::from(walk.protocol),
            inner + 40 + walk.l4_offset,
        )
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
/// largest packet that fits), left at `Continue` for `route` to forward
/// (the router's writers: the same refusals, rate limit and counts).
pub fn too_big<P: PacketBuf>(
    p: &mut P,
    m: &mut Meta,
    lane: &Lane,
    mtu: u16,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
) -> Verdict {
    let l3 = usize::from(m.l3_off);
    let written = if m.l3 == L3::Ipv6 {
        let d = p.data();
        let vip = Ipv6Addr::from(<[u8; 16]>::try_from(&d[l3 + 24..l3 + 40]).expect("16 bytes"));
        // `route` writes the Ethernet addresses: these are placeholders.
        let macs = (mac_at(d, 0), mac_at(d, 6));
        let kind = ErrorV6::PacketTooBig {
            mtu: u32::from(mtu),
        };
        write_error_v6(p, m, vip, macs, limiter, ctx, kind)
    } else {
        let d = p.data();
        let vip = Ipv4Addr::from(<[u8; 4]>::try_from(&d[l3 + 16..l3 + 20]).expect("4 bytes"));
        write_error_v4(p, m, vip, None, limiter, ctx, ErrorV4::FragNeeded { mtu })
    };
    if let Err(reason) = written {
        return Verdict::Drop(reason);
    }
    m.verdict = Verdict::Continue;
    reparse(p, m, lane);
    m.verdict
}

fn mac_at(d: &[u8], at: usize) -> [u8; 6] {
    <[u8; 6]>::try_from(&d[at..at + 6]).expect("6 bytes")
}
