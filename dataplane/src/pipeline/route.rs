//! `route`: IPv4/IPv6 forwarding. One bulk LPM lookup per family per burst;
//! the value is a next hop (or an ECMP group, resolved by the flow hash so a
//! flow keeps its path). Our own addresses are /32 and /128 routes to local
//! next hops and go to [`local`]; ARP is handled before the lookup.
//!
//! RFC 1812 checks (version, IHL, lengths, header checksum) were done by
//! `parse`; here: martian addresses (`bad_address`), TTL/hop limit ≤ 1
//! (`ttl_exceeded`, with a rate-limited ICMP error), no route (`no_route`),
//! output MTU (`too_big`), unresolved neighbour (`neighbor_unresolved`, an
//! ARP request or NS goes out instead). Forwarded packets get TTL − 1 with
//! an RFC 1624 checksum update, destination MAC = next hop, source MAC =
//! output port; VLAN tags are kept as received.
//!
//! Meta: reads `verdict`, `l3`, `l3_off`, `l4_off`, `key`, `hash`,
//! `in_port`; sets `verdict`, `nexthop`.
use super::local::{self, IcmpLimiter};
use super::{DropReason, Meta, MetaBurst, PacketBuf, StageCtx, Verdict, L3};
use crate::burst::{Burst, BURST_SIZE};
use crate::tables::neighbor::{self, NeighborState};
use crate::tables::routing::{NextHop, NhKind, Routing};
use crate::tables::{RouteTable, MISS};
use crate::wire::checksum;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

pub struct RouteStage {
    routing: Arc<Routing>,
    limiter: IcmpLimiter,
}

/// IPv4 destinations never forwarded: 0/8, 127/8, and (handled as local
/// but not answered) multicast and limited broadcast.
#[inline(always)]
fn v4_dst_check(dst: u32) -> Option<DropReason> {
    let top = dst >> 24;
    if top == 0 || top == 127 {
        Some(DropReason::BadAddress)
    } else if top >= 224 {
        Some(DropReason::LocalUnhandled)
    } else {
        None
    }
}

/// Sources that must not appear on the wire (RFC 1812 5.3.7).
#[inline(always)]
fn v4_src_bad(src: u32) -> bool {
    let top = src >> 24;
    top == 127 || top >= 224
}

impl RouteStage {
    pub fn new(routing: Arc<Routing>, icmp_rate: u32) -> Self {
        RouteStage {
            routing,
            limiter: IcmpLimiter::new(icmp_rate, icmp_rate.clamp(1, 100)),
        }
    }

    #[inline]
    pub fn process<P: PacketBuf>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        ctx: &StageCtx,
    ) {
        let n = pkts.len();
        let RouteStage { routing, limiter } = self;
        let r = &**routing;
        let mut a4 = [0u32; BURST_SIZE];
        let mut i4 = [0u8; BURST_SIZE];
        let mut n4 = 0;
        let mut a6 = [[0u8; 16]; BURST_SIZE];
        let mut i6 = [0u8; BURST_SIZE];
        let mut n6 = 0;
        for (i, m) in meta[..n].iter_mut().enumerate() {
            if m.verdict != Verdict::Continue {
                continue;
            }
            match m.l3 {
                L3::Ipv4 => {
                    let dst = m.key.dst_v4();
                    if let Some(reason) = v4_dst_check(dst) {
                        m.verdict = Verdict::Drop(reason);
                    } else if v4_src_bad(m.key.src_v4()) {
                        m.verdict = Verdict::Drop(DropReason::BadAddress);
                    } else {
                        a4[n4] = dst;
                        i4[n4] = i as u8;
                        n4 += 1;
                    }
                }
                L3::Ipv6 => {
                    let dst = Ipv6Addr::from(m.key.dst);
                    if Ipv6Addr::from(m.key.src).is_multicast()
                        || dst.is_loopback()
                        || dst.is_unspecified()
                    {
                        m.verdict = Verdict::Drop(DropReason::BadAddress);
                    } else if dst.is_multicast() {
                        // Neighbour discovery to solicited-node groups etc.
                        if let Some(p) = pkts.get_mut(i) {
                            m.verdict = local::deliver_v6(p, m, r, ctx);
                        }
                    } else {
                        a6[n6] = m.key.dst;
                        i6[n6] = i as u8;
                        n6 += 1;
                    }
                }
                L3::Arp => {
                    if let Some(p) = pkts.get_mut(i) {
                        m.verdict = local::arp(p, m, r, ctx);
                    }
                }
                _ => m.verdict = Verdict::Drop(DropReason::Unsupported),
            }
        }
        let mut res = [MISS; BURST_SIZE];
        if n4 != 0 {
            r.v4.lookup_bulk(&a4[..n4], &mut res[..n4]);
            for j in 0..n4 {
                let i = i4[j] as usize;
                if let Some(p) = pkts.get_mut(i) {
                    meta[i].verdict = forward(r, limiter, p, &mut meta[i], res[j], false, ctx);
                }
            }
        }
        if n6 != 0 {
            r.v6.lookup_bulk(&a6[..n6], &mut res[..n6]);
            for j in 0..n6 {
                let i = i6[j] as usize;
                if let Some(p) = pkts.get_mut(i) {
                    meta[i].verdict = forward(r, limiter, p, &mut meta[i], res[j], true, ctx);
                }
            }
        }
    }
}

/// Decides one looked-up packet.
#[inline(always)]
fn forward<P: PacketBuf>(
    r: &Routing,
    limiter: &mut IcmpLimiter,
    pkt: &mut P,
    m: &mut Meta,
    val: u32,
    v6: bool,
    ctx: &StageCtx,
) -> Verdict {
    if val == MISS {
        return Verdict::Drop(DropReason::NoRoute);
    }
    let id = r.nexthop_id(val, m.hash);
    m.nexthop = id;
    let nh = r.nexthop(id);
    if nh.kind == NhKind::Local {
        return if v6 {
            local::deliver_v6(pkt, m, r, ctx)
        } else {
            local::deliver_v4(pkt, m, r, ctx)
        };
    }
    let l3 = m.l3_off as usize;
    let ttl_at = l3 + if v6 { 7 } else { 8 };
    if pkt.data()[ttl_at] <= 1 {
        return if v6 {
            local::time_exceeded_v6(pkt, m, r, limiter, ctx)
        } else {
            local::time_exceeded_v4(pkt, m, r, limiter, ctx)
        };
    }
    let Some(dst_mac) = neighbor_mac(r, nh, m, v6) else {
        let target = match nh.kind {
            NhKind::Gateway(ip) => ip,
            _ if v6 => IpAddr::V6(m.key.dst.into()),
            _ => IpAddr::V4(m.key.dst_v4().into()),
        };
        return local::solicit(pkt, nh.port, target, r, ctx);
    };
    let port = &r.ports[nh.port as usize];
    let data = pkt.data_mut();
    let l3_len = if v6 {
        40 + u16::from_be_bytes([data[l3 + 4], data[l3 + 5]]) as usize
    } else {
        u16::from_be_bytes([data[l3 + 2], data[l3 + 3]]) as usize
    };
    if l3_len > port.mtu as usize {
        return Verdict::Drop(DropReason::TooBig);
    }
    if v6 {
        data[ttl_at] -= 1;
    } else {
        // TTL is the high byte of the 16-bit word at offset 8.
        let old = u16::from_be_bytes([data[ttl_at], data[ttl_at + 1]]);
        data[ttl_at] -= 1;
        let new = old - 0x0100;
        let c = u16::from_be_bytes([data[l3 + 10], data[l3 + 11]]);
        data[l3 + 10..l3 + 12].copy_from_slice(&checksum::update_u16(c, old, new).to_be_bytes());
    }
    data[..6].copy_from_slice(&dst_mac);
    data[6..12].copy_from_slice(&port.mac);
    Verdict::Tx(nh.port)
}

#[inline(always)]
fn neighbor_mac(r: &Routing, nh: &NextHop, m: &Meta, v6: bool) -> Option<[u8; 6]> {
    match nh.kind {
        NhKind::Gateway(_) => nh.mac(),
        _ => {
            let k = if v6 {
                neighbor::key_v6(nh.port, m.key.dst)
            } else {
                neighbor::key_v4(nh.port, m.key.dst_v4())
            };
            match r.neighbors.get(&k) {
                NeighborState::Resolved(mac) => Some(mac),
                _ => None,
            }
        }
    }
}
