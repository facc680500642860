//! `route`: IPv4/IPv6 forwarding. One bulk LPM lookup per family per burst;
//! the value is a next hop (or an ECMP group, resolved by the flow hash so a
//! flow keeps its path). Our own addresses are /32 and /128 routes to local
//! next hops and go to [`local`]; ARP is handled before the lookup.
//!
//! RFC 1812 checks (version, IHL, lengths, header checksum), the L2
//! destination and the frame's trimming to its IP length were done by
//! `parse`; here: martian addresses and sources that cannot be true (the
//! router's own addresses, its subnets' broadcasts: `bad_address`, but
//! from packets the router built itself, [`Lane::built`]), unicast IP received
//! as a link-layer broadcast or multicast (`l2_multicast`), subnet and
//! limited broadcasts (`broadcast`: a /32 route to a `Broadcast` next hop
//! for each connected subnet's, so the lookup finds them), IPv6 link-local
//! or unspecified sources and link-local destinations of packets to be
//! forwarded (`bad_address`, RFC 4291 2.5.6; delivered when for us),
//! TTL/hop limit ≤ 1 (`ttl_exceeded`, with a rate-limited ICMP error), no
//! route (`no_route`), output MTU (`too_big`, with a rate-limited ICMP
//! fragmentation needed or ICMPv6 packet too big; IPv4 without DF is not
//! fragmented but dropped as `too_big_no_df`), unresolved neighbour
//! (`neighbor_unresolved`, an ARP request or NS goes out instead).
//! Forwarded packets get TTL − 1 with
//! an RFC 1624 checksum update, destination MAC = next hop, source MAC =
//! output port; VLAN tags are kept as received.
//!
//! Meta: reads `verdict`, `l3`, `l3_off`, `l4_off`, `flags`
//! (L2_MULTICAST), `key`, `hash`, `in_port`; sets `verdict`, `nexthop`.
//!
//! On the fast lane (see [`super::lane`]) a plain IPv4 packet is looked up
//! from the lane's header fields; forwarded to a resolved gateway it then
//! only gets `verdict` and `nexthop` in its `Meta` ([`super::tx::MarkTx`]), or, when
//! `route` is the last stage, in the worker goes straight to its TX buffer
//! with no verdict ([`super::tx::SendTx`]). When the parse sweep runs just
//! before it, the sweep has hinted each plain destination's table line
//! ([`StageOps::v4_prefetch`]).
//!
//! Here: the stage and its passes. Beside it: `lookups` (the burst's
//! lookup queue and bulk lookups), `martians` (RFC 1812 address checks). The
//! TTL/hop-limit rewrite is `wire`'s ([`decrement_ttl_v4`],
//! [`crate::wire::ipv6::decrement_hop_limit`]), shared with the header views.
mod lookups;
pub(crate) mod martians;
#[cfg(test)]
mod pmtu_tests;

pub use crate::wire::ipv4::{decrement_ttl_v4, decrement_ttl_v4_offloaded};

use super::local::{self, IcmpLimiter};
use super::meta::flags;
use super::parse::Parse;
use super::tx::FastTx;
use super::{
    DropReason, Lane, Meta, MetaBurst, PacketBuf, StageCtx, StageOps, StageSpec, TablesReport,
    Verdict,
};
use crate::burst::{mask_below, slots, Burst, SlotMask, BURST_SIZE};
use crate::tables::neighbor::{self, NeighborState};
use crate::tables::route::Fib4Reader;
use crate::tables::routing::{FastPath, NextHop, NhKind, Routing, GROUP_FLAG};
use crate::tables::set::TableSet;
use crate::tables::{raw_value, RouteLookup, MISS};
use crate::wire::ipv6::decrement_hop_limit;
use lookups::Lookups;
use martians::{v4_martian, v6_scope_martian, Martians, V4Screen};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

pub struct RouteStage {
    routing: Arc<Routing>,
    icmp_rate: u32,
    limiter: IcmpLimiter,
}

impl StageOps for RouteStage {
    const SPEC: StageSpec = StageSpec {
        name: "route",
        section: Some("route"),
        forwards: true,
        needs_later_forwarder: false,
        needs_headers: true,
        headerless: false,
        // Learned state, sized once: it outlives every table set.
        restart: crate::pipeline::RestartKeys::Keys(&["neighbor_capacity"]),
    };

    fn build(b: &crate::pipeline::StageBuild) -> Self {
        let routing = b
            .tables
            .routing
            .clone()
            .expect("routes built for a route stage");
        RouteStage::new(routing, b.tables.icmp_rate)
    }

    #[inline(always)]
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        tx: &mut F,
    ) {
        self.process_lane(pkts, meta, lane, ctx, tx);
    }

    fn rebind(&mut self, set: &TableSet, _worker: usize) {
        if let Some(r) = &set.routing {
            self.rebind_routing(r, set.icmp_rate);
        }
    }

    fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        Some(&RouteTablesReport)
    }

    fn lane_screen(&self) -> Option<V4Screen> {
        Some(*self.routing.martians.screen())
    }

    fn v4_prefetch(&self) -> Option<Fib4Reader<'_>> {
        if !self.routing.v4_table_is_large() {
            return None;
        }
        self.routing.v4.reader()
    }
}

/// The route tables' sizes and memory for the report's `tables`.
struct RouteTablesReport;

impl TablesReport for RouteTablesReport {
    fn sizes(&self, set: &TableSet, m: &mut BTreeMap<String, u64>) {
        let Some(r) = &set.routing else {
            return;
        };
        let s = r.stats();
        m.insert("routes_v4".into(), s.routes_v4 as u64);
        m.insert("routes_v6".into(), s.routes_v6 as u64);
        m.insert("nexthops".into(), s.nexthops as u64);
        m.insert("ecmp_groups".into(), s.groups as u64);
        m.insert("neighbors".into(), s.neighbors as u64);
        m.insert("neighbor_learn_failures".into(), s.neighbor_learn_failures);
        m.insert("route_memory_bytes".into(), s.memory_bytes as u64);
    }
}

impl RouteStage {
    pub fn new(routing: Arc<Routing>, icmp_rate: u32) -> Self {
        RouteStage {
            routing,
            icmp_rate,
            limiter: IcmpLimiter::new(icmp_rate, icmp_rate.clamp(1, 100)),
        }
    }

    /// Takes newly published tables (at a burst boundary); the ICMP token
    /// bucket restarts only when its rate changed.
    pub fn rebind_routing(&mut self, routing: &Arc<Routing>, icmp_rate: u32) {
        if !Arc::ptr_eq(&self.routing, routing) {
            self.routing = routing.clone();
        }
        if icmp_rate != self.icmp_rate {
            *self = RouteStage::new(routing.clone(), icmp_rate);
        }
    }

    /// The burst's lookups and forwarding. Plain packets (on the lane) are
    /// checked and queued for the lookup from their header fields and, when
    /// their route is one resolved gateway and TTL and MTU allow, rewritten
    /// and handed to `fast_tx` without their `Meta` ever being filled.
    /// Everything else — and a plain packet at whatever point it stops
    /// being plain — gets the full parse and the general code, so verdicts,
    /// output bytes and counters are those of the stage-by-stage path
    /// (test `dataplane/tests/lane.rs`).
    #[inline(always)]
    fn process_lane<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        fast_tx: &mut F,
    ) {
        let r = &*self.routing;
        let n = pkts.len();
        let plain = lane.plain;
        let mut look = Lookups::new();
        let mut fast: SlotMask = 0;
        // A packet still on the lane is undecided (a stage that decided
        // one took it off: see `lane`).
        lane.debug_check_undecided(meta);
        // Plain packets passed the martian screen in the sweep (the
        // pipeline gives the lane this stage's: `lane_screen`); only those
        // the router built (`lb`'s, whose addresses it wrote after the
        // sweep, from its own by design) are checked here, without the
        // router's addresses ([`Martians::none`]).
        debug_assert!(plain == 0 || lane.screen == *r.martians.screen());
        let built = lane.built & plain;
        if plain == mask_below(n) && (built == 0 || built_martians(lane, built) == 0) {
            // Every packet plain and none martian (the common burst, also
            // after an ACL that let it all through): the lane's
            // destinations are the lookup's addresses as they stand, in
            // slot order.
            lane.plain = 0;
            let parse = lane.parse;
            let q = V4Queue::AllPlain(&lane.dst[..n]);
            self.forward_fused(&parse, pkts, meta, q, &look, lane.in_port, ctx, fast_tx);
            return;
        }
        for (i, m) in meta[..n].iter_mut().enumerate() {
            let bit = 1 << i;
            if plain & bit == 0 {
                let own = r.martians.for_slot(lane.built, i);
                look.classify(r, own, pkts, m, i, ctx);
            } else {
                fast |= look.push_plain_v4(built & bit != 0, lane.v4(i), m, i, lane.in_port);
            }
        }
        // From here every packet's verdict is in its `Meta` (stages after
        // this one read them there).
        lane.plain = 0;
        let parse = lane.parse;
        let q = V4Queue::Queued { look: &look, fast };
        self.forward_fused(&parse, pkts, meta, q, &look, lane.in_port, ctx, fast_tx);
    }

    /// The lookups and forwarding: `fast` marks the plain IPv4 packets
    /// whose `Meta` was not filled (not even its `verdict` and `in_port`:
    /// a packet forwarded here never gets them, [`forward_v4_general`]
    /// writes them for the others).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn forward_fused<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        parse: &Parse,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        v4: V4Queue<'_>,
        look: &Lookups,
        in_port: u16,
        ctx: &StageCtx,
        fast_tx: &mut F,
    ) {
        let r = &*self.routing;
        let n = pkts.len();
        let slots = pkts.slots_mut();
        let limiter = &mut self.limiter;
        // The loops over the IPv4 results are written out here (not through
        // `lookup_v4`'s callback) so that the fast path stays in them and
        // everything else is one out-of-line call: as a callback, the whole
        // of `forward` was inlined into it and the callback itself was not
        // inlined, a call with six register saves per packet.
        let mut res = [0u64; BURST_SIZE];
        let addrs = match v4 {
            V4Queue::AllPlain(dst) => dst,
            V4Queue::Queued { look, .. } => &look.a4[..look.n4],
        };
        if !addrs.is_empty() {
            r.v4.lookup_raw(addrs, &mut res);
        }
        let mut general = |p: &mut P, m: &mut Meta, raw: u64, plain: bool| {
            if plain {
                m.verdict = Verdict::Continue;
                m.in_port = in_port;
            }
            forward_v4_general(r, limiter, parse, p, m, raw_value(raw), plain, ctx)
        };
        // Read once: the loops' packet writes would make the compiler reload
        // the table's pointer and length through `r` for every packet.
        let nexthops = r.nexthops();
        // Every packet plain and queued in slot order (also the common burst
        // after an ACL that let all of it through): slot k's result is the
        // k-th, so the loop reads no slot indices and no mask.
        let all_plain = match v4 {
            V4Queue::AllPlain(_) => true,
            V4Queue::Queued { look: q, fast } => q.n4 == n && fast == mask_below(n),
        };
        if all_plain {
            for (k, (slot, &raw)) in slots[..n].iter_mut().zip(&res[..n]).enumerate() {
                let Some(p) = slot.as_mut() else { continue };
                let m = &mut meta[k];
                if let Some(port) = forward_plain_v4(nexthops, p, raw) {
                    fast_tx.forwarded(slot, m, port, move |m| m.nexthop = raw as u32);
                    continue;
                }
                m.verdict = general(p, m, raw, true);
            }
            return;
        }
        if let V4Queue::Queued { look: q, fast } = v4 {
            for (&i, &raw) in q.i4[..q.n4].iter().zip(&res[..q.n4]) {
                let i = usize::from(i) % BURST_SIZE;
                let m = &mut meta[i];
                let Some(p) = slots[i].as_mut() else { continue };
                let plain = fast & (1 << i) != 0;
                if plain {
                    if let Some(port) = forward_plain_v4(nexthops, p, raw) {
                        fast_tx.forwarded(&mut slots[i], m, port, move |m| m.nexthop = raw as u32);
                        continue;
                    }
                }
                m.verdict = general(p, m, raw, plain);
            }
        }
        look.lookup_v6(r, meta, |i, val, m| {
            if let Some(p) = slots[i].as_mut() {
                m.verdict = forward(r, limiter, p, m, val, true, ctx);
            }
        });
    }
}

/// The IPv4 packets a burst looks up: every packet plain, in slot order
/// (their destinations as the lane holds them), or the lookup queue with
/// `fast` marking the plain packets among them.
#[derive(Clone, Copy)]
enum V4Queue<'a> {
    AllPlain(&'a [u32]),
    Queued { look: &'a Lookups, fast: SlotMask },
}

/// The IPv4 packets off the fast path: `plain` ones (whose
/// `Meta` was not filled) are parsed in full first — `fast_v4` accepted the
/// frame, so this parse does too — then all go the unfused way.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn forward_v4_general<P: PacketBuf>(
    r: &Routing,
    limiter: &mut IcmpLimiter,
    parse: &Parse,
    p: &mut P,
    m: &mut Meta,
    val: u32,
    plain: bool,
    ctx: &StageCtx,
) -> Verdict {
    if plain {
        if let Err(reason) = parse.parse_one(p.data(), m) {
            return Verdict::Drop(reason);
        }
    }
    forward(r, limiter, p, m, val, false, ctx)
}

/// The slots of `built` (plain packets the router built, see
/// [`Lane::built`]) whose addresses are martian ([`v4_martian`] without the
/// router's own addresses: [`Martians::none`]).
#[cold]
#[inline(never)]
fn built_martians(lane: &Lane, built: SlotMask) -> SlotMask {
    let mut martians = 0;
    for i in slots(built) {
        let bad = v4_martian(Martians::none(), lane.src[i], lane.dst[i]).is_some();
        martians |= SlotMask::from(bad) << i;
    }
    martians
}

/// The fused fast path's forwarding of a plain IPv4 packet (14-byte L2,
/// 20-byte header): `Some(port)` when `raw` (a raw lookup entry) is a
/// single gateway next hop with a known MAC and the packet's TTL and length
/// allow it — then the packet is rewritten exactly as [`forward`] does;
/// `None` (packet untouched) for everything else, which goes the general way.
#[inline(always)]
fn forward_plain_v4<P: PacketBuf>(nexthops: &[NextHop], pkt: &mut P, raw: u64) -> Option<u16> {
    if raw >= u64::from(GROUP_FLAG) {
        return None; // a group or a miss
    }
    let nh = nexthops.get(raw as usize)?;
    // One compare for the common case (a resolved gateway on a port
    // without checksum offload); a port with checksum offload takes its
    // own (out-of-line) copy of the rewrite.
    let Some((l2_head, l2_tail)) = nh.fast_l2_words() else {
        return match nh.fast_path {
            FastPath::OffloadedChecksum => forward_plain_v4_offloaded(nh, pkt),
            FastPath::SoftwareChecksum | FastPath::No => None,
        };
    };
    let frame = plain_v4_frame(pkt.data_mut(), nh.mtu)?;
    decrement_ttl_v4(&mut frame[14..34]);
    frame[..8].copy_from_slice(&l2_head.to_le_bytes());
    frame[8..12].copy_from_slice(&l2_tail.to_le_bytes());
    Some(nh.port)
}

/// [`forward_plain_v4`] to a gateway on a port with IPv4 checksum offload.
#[inline(never)]
fn forward_plain_v4_offloaded<P: PacketBuf>(nh: &NextHop, pkt: &mut P) -> Option<u16> {
    let (l2_head, l2_tail) = nh.l2_words()?;
    let frame = plain_v4_frame(pkt.data_mut(), nh.mtu)?;
    decrement_ttl_v4_offloaded(&mut frame[14..34]);
    frame[..8].copy_from_slice(&l2_head.to_le_bytes());
    frame[8..12].copy_from_slice(&l2_tail.to_le_bytes());
    pkt.request_ipv4_checksum(14, 20);
    Some(nh.port)
}

/// A plain IPv4 frame's first 34 bytes when its TTL and length let it be
/// forwarded on a link with `mtu`.
#[inline(always)]
fn plain_v4_frame(data: &mut [u8], mtu: u16) -> Option<&mut [u8; 34]> {
    let frame: &mut [u8; 34] = data.get_mut(..34)?.try_into().ok()?;
    let ip = &frame[14..34];
    if ip[8] <= 1 || u16::from_be_bytes([ip[2], ip[3]]) > mtu {
        return None;
    }
    Some(frame)
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
    if m.flags & flags::L2_MULTICAST != 0 {
        return l2_multicast(r, val);
    }
    if val == MISS {
        // Not for us, so an IPv6 address that must stay on its link is
        // the reason, whether or not a route would have taken it off.
        return Verdict::Drop(if v6 && v6_scope_martian(&m.key.src, &m.key.dst) {
            DropReason::BadAddress
        } else {
            DropReason::NoRoute
        });
    }
    let id = r.nexthop_id(val, m.hash);
    m.nexthop = id;
    let nh = r.nexthop(id);
    match nh.kind {
        NhKind::Local => {
            return if v6 {
                local::deliver_v6(pkt, m, r, ctx)
            } else {
                local::deliver_v4(pkt, m, r, ctx)
            };
        }
        NhKind::Broadcast => return Verdict::Drop(DropReason::Broadcast),
        _ => {}
    }
    if v6 && v6_scope_martian(&m.key.src, &m.key.dst) {
        return Verdict::Drop(DropReason::BadAddress);
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
    // Over the output MTU: an ICMP error back (DF set, or IPv6), checked
    // before the neighbour is resolved, as Linux does, so that the source
    // hears of it at once. `parse` checked the lengths against the frame.
    let len = {
        let ip = &pkt.data()[l3..];
        if v6 {
            40 + u32::from(u16::from_be_bytes([ip[4], ip[5]]))
        } else {
            u32::from(u16::from_be_bytes([ip[2], ip[3]]))
        }
    };
    if len > u32::from(nh.mtu) {
        return if v6 {
            local::too_big_v6(pkt, m, r, limiter, nh.mtu, ctx)
        } else {
            local::too_big_v4(pkt, m, r, limiter, nh.mtu, ctx)
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
    let data = pkt.data_mut();
    if v6 {
        let Some(ip) = data.get_mut(l3..l3 + 40) else {
            return Verdict::Drop(DropReason::Truncated);
        };
        decrement_hop_limit(ip);
    } else {
        let Some(ip) = data.get_mut(l3..l3 + 20) else {
            return Verdict::Drop(DropReason::Truncated);
        };
        if nh.ipv4_checksum_offload {
            decrement_ttl_v4_offloaded(ip);
        } else {
            decrement_ttl_v4(ip);
        }
    }
    let mut l2 = [0u8; 12];
    l2[..6].copy_from_slice(&dst_mac);
    l2[6..].copy_from_slice(&nh.port_mac);
    data[..12].copy_from_slice(&l2);
    if !v6 && nh.ipv4_checksum_offload {
        // The parse checked IHL against the frame: 20..=60 bytes.
        let ihl = (data[l3] & 0x0f) * 4;
        pkt.request_ipv4_checksum(m.l3_off as u8, ihl);
    }
    Verdict::Tx(nh.port)
}

/// An IP packet received as a link-layer broadcast or multicast with a
/// destination the lookup gave `val` for: RFC 1812 5.3.4, only IP
/// broadcasts and multicasts may come that way (multicasts never reach
/// the lookup; a subnet broadcast is `broadcast`), everything else is not
/// routed (nor answered): `l2_multicast`. The lane's plain packets are
/// never such frames (they are addressed to the port's own MAC).
#[cold]
fn l2_multicast(r: &Routing, val: u32) -> Verdict {
    let broadcast = val != MISS && r.nexthop(r.nexthop_id(val, 0)).kind == NhKind::Broadcast;
    Verdict::Drop(if broadcast {
        DropReason::Broadcast
    } else {
        DropReason::L2Multicast
    })
}

#[inline(always)]
fn neighbor_mac(r: &Routing, nh: &NextHop, m: &Meta, v6: bool) -> Option<[u8; 6]> {
    match nh.kind {
        NhKind::Gateway(_) => nh.mac().or_else(|| r.gateway_mac_from_neighbors(nh)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::count::CountStage;
    use crate::pipeline::{dispatch, new_meta_burst, Collect, Pipeline, Stage, VecPacket};
    use crate::stats::WorkerCounters;
    use crate::tables::neighbor::{NeighborBackend, NeighborTable};
    use crate::tables::routing::{PortAddrs, RouteSpec, RouteTarget};
    use crate::tables::{Prefix, RouteBackend, RouteConfig};
    use etherparse::PacketBuilder;
    use std::net::{IpAddr, Ipv4Addr};

    const GW_MAC: [u8; 6] = [2, 0, 0, 0, 2, 2];

    /// Two ports; 198.18.1.0/24 via a gateway with a static neighbour,
    /// 198.18.2.0/24 via one nobody has resolved.
    fn routing() -> Arc<Routing> {
        let port = |i: u8| PortAddrs {
            mac: [2, 0, 0, 0, i, 1],
            v4: vec![(Ipv4Addr::new(10, 0, i, 1), 24)],
            v6: vec![],
            mtu: 1500,
            ipv4_checksum_offload: false,
        };
        let via = |net: u8, gw: u8| RouteSpec {
            prefix: Prefix::v4(Ipv4Addr::new(198, 18, net, 0), 24).unwrap(),
            target: RouteTarget::Via(vec![(IpAddr::V4(Ipv4Addr::new(10, 0, 2, gw)), 1)]),
        };
        let cfg = RouteConfig {
            backend: RouteBackend::Linear,
            max_routes: 64,
            num_tbl8: 1,
        };
        let neighbors = NeighborTable::with_backend(NeighborBackend::Rust, 64).unwrap();
        let gw = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));
        let r = Routing::build(
            vec![port(1), port(2)],
            &[via(1, 2), via(2, 3)],
            &[(1, gw, GW_MAC)],
            cfg,
            cfg,
            Arc::new(neighbors),
        )
        .unwrap();
        Arc::new(r)
    }

    fn udp4(dst: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 1, 1])
            .ipv4([10, 0, 1, 5], dst, ttl)
            .udp(4000, 53)
            .write(&mut v, &[7u8; 18])
            .unwrap();
        v
    }

    /// Forwarded to the resolved gateway (TTL − 1, its MAC), no route, an
    /// unresolved gateway (the packet becomes an ARP request): the same on
    /// the lane and stage by stage, and `count` after `route` sees what
    /// was sent.
    #[test]
    fn routes_without_eal() {
        let frames = [
            udp4([198, 18, 1, 7], 64),
            udp4([203, 0, 113, 1], 64),
            udp4([198, 18, 2, 7], 64),
        ];
        let mut outs = Vec::new();
        for lane in [true, false] {
            let mut p = Pipeline::new(vec![
                Stage::Parse(Parse::default()),
                Stage::Route(Box::new(RouteStage::new(routing(), 10))),
                Stage::Count(CountStage::new(2)),
            ]);
            p.set_port_macs(&[[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 2, 1]]);
            p.set_lane(lane);
            let mut burst = Burst::<VecPacket>::new();
            for f in &frames {
                assert!(burst.push(VecPacket::new(f.clone())).is_ok());
            }
            let c = WorkerCounters::default();
            let mut meta = new_meta_burst();
            p.run(&mut burst, &mut meta, 0, &StageCtx::test(&c));
            let verdicts: Vec<Verdict> = meta[..3].iter().map(|m| m.verdict).collect();
            let mut out = Collect::default();
            dispatch(&mut burst, &meta, &mut out);
            let count = p
                .counters()
                .into_iter()
                .find(|(name, _)| *name == "count")
                .map(|(_, c)| c.report())
                .unwrap();
            assert_eq!(count["tx_packets"][1], 2, "count saw both sent packets");
            let sent: Vec<(u16, Vec<u8>)> =
                out.sent.into_iter().map(|(p, v)| (p, v.bytes)).collect();
            let dropped: Vec<DropReason> = out.dropped.into_iter().map(|(r, _)| r).collect();
            outs.push((verdicts, sent, dropped));
        }
        assert_eq!(outs[0], outs[1], "the lane and stage by stage differ");
        let (verdicts, sent, dropped) = &outs[0];
        assert_eq!(
            verdicts[..2],
            [Verdict::Tx(1), Verdict::Drop(DropReason::NoRoute)]
        );
        assert_eq!(dropped, &[DropReason::NoRoute]);
        let (port, f) = &sent[0];
        assert_eq!(*port, 1);
        assert_eq!((&f[..6], &f[6..12]), (&GW_MAC[..], &[2, 0, 0, 0, 2, 1][..]));
        assert_eq!(f[22], 63, "TTL decremented");
        let (port, arp) = &sent[1];
        assert_eq!(
            (*port, &arp[12..14]),
            (1, &[0x08, 0x06][..]),
            "an ARP request"
        );
        assert_eq!(arp[38..42], [10, 0, 2, 3], "for the unresolved gateway");
        crate::tables::testing::assert_no_eal();
    }
}

#[cfg(test)]
mod address_tests {
    //! The route's address rules on literal packets, through a parse +
    //! route pipeline, on the lane and stage by stage alike. On the
    //! `linear` route backend and the Rust neighbour map: no EAL.
    use crate::burst::Burst;
    use crate::pipeline::packet::NicPacket;
    use crate::pipeline::parse::Parse;
    use crate::pipeline::{
        dispatch, new_meta_burst, Collect, DropReason, Event, Pipeline, Stage, StageCtx, VecPacket,
        Verdict,
    };
    use crate::stats::WorkerCounters;
    use crate::tables::neighbor::{NeighborBackend, NeighborTable};
    use crate::tables::routing::{PortAddrs, RouteSpec, RouteTarget, Routing};
    use crate::tables::{Prefix, RouteBackend, RouteConfig};
    use etherparse::PacketBuilder;
    use std::net::IpAddr;
    use std::sync::Arc;

    const LAN: [u8; 6] = [2, 0, 0, 0, 1, 1];
    const WAN: [u8; 6] = [2, 0, 0, 0, 2, 1];
    const HOST: [u8; 6] = [2, 0, 0, 0, 1, 0x50];

    fn v6(s: &str) -> [u8; 16] {
        s.parse::<std::net::Ipv6Addr>().unwrap().octets()
    }

    /// lan 10.0.1.1/24, 2001:db8:1::1/64, fe80::1/64; wan 10.0.2.1/24,
    /// 2001:db8:2::1/64; 198.18.1.0/24 and 2001:db8:100::/48 via resolved
    /// gateways on wan.
    fn pipelines() -> [Pipeline; 2] {
        let ports = vec![
            PortAddrs {
                mac: LAN,
                v4: vec![("10.0.1.1".parse().unwrap(), 24)],
                v6: vec![
                    ("2001:db8:1::1".parse().unwrap(), 64),
                    ("fe80::1".parse().unwrap(), 64),
                ],
                mtu: 1500,
                ipv4_checksum_offload: false,
            },
            PortAddrs {
                mac: WAN,
                v4: vec![("10.0.2.1".parse().unwrap(), 24)],
                v6: vec![("2001:db8:2::1".parse().unwrap(), 64)],
                mtu: 1500,
                ipv4_checksum_offload: false,
            },
        ];
        let gw4: IpAddr = "10.0.2.2".parse().unwrap();
        let gw6: IpAddr = "2001:db8:2::2".parse().unwrap();
        let routes = vec![
            RouteSpec {
                prefix: Prefix::new("198.18.1.0".parse().unwrap(), 24).unwrap(),
                target: RouteTarget::Via(vec![(gw4, 1)]),
            },
            RouteSpec {
                prefix: Prefix::new("2001:db8:100::".parse().unwrap(), 48).unwrap(),
                target: RouteTarget::Via(vec![(gw6, 1)]),
            },
        ];
        let small = RouteConfig {
            backend: RouteBackend::Linear,
            max_routes: 1024,
            num_tbl8: 1,
        };
        // Each its own tables: the neighbour cache remembers solicitations.
        [true, false].map(|lane| {
            let r = Routing::build(
                ports.clone(),
                &routes,
                &[(1, gw4, [2, 0, 0, 0, 2, 2]), (1, gw6, [2, 0, 0, 0, 2, 2])],
                small,
                small,
                Arc::new(NeighborTable::with_backend(NeighborBackend::Rust, 64).unwrap()),
            )
            .unwrap();
            assert_eq!(r.v4.backend(), RouteBackend::Linear);
            assert_eq!(r.v6.backend(), RouteBackend::Linear);
            assert_eq!(r.neighbors.backend(), NeighborBackend::Rust);
            let mut p = Pipeline::new(vec![
                Stage::Parse(Parse::default()),
                Stage::Route(Box::new(super::RouteStage::new(Arc::new(r), 100))),
            ]);
            p.set_port_macs(&[LAN, WAN]);
            p.set_lane(lane);
            p
        })
    }

    /// Each frame's verdict (entering on lan), the same on the lane and
    /// stage by stage, and the ARP requests sent.
    fn verdicts(frames: &[Vec<u8>]) -> (Vec<Verdict>, u64) {
        let mut seen = Vec::new();
        for mut p in pipelines() {
            let mut burst = Burst::<VecPacket>::new();
            for f in frames {
                assert!(burst.push(VecPacket::new(f.clone())).is_ok());
            }
            let n = burst.len();
            let c = WorkerCounters::default();
            let mut meta = new_meta_burst();
            p.run(&mut burst, &mut meta, 0, &StageCtx::test(&c));
            let v: Vec<Verdict> = meta[..n].iter().map(|m| m.verdict).collect();
            dispatch(&mut burst, &meta, &mut Collect::default());
            seen.push((v, c.events[Event::ArpRequest as usize].get()));
        }
        assert_eq!(seen[0], seen[1], "lane and stage by stage differ");
        crate::tables::testing::assert_no_eal();
        seen.remove(0)
    }

    fn udp4(dst_mac: [u8; 6], dst: [u8; 4]) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(HOST, dst_mac)
            .ipv4([10, 0, 1, 50], dst, 64)
            .udp(4000, 5000)
            .write(&mut v, &[0xab; 18])
            .unwrap();
        v
    }

    fn udp6(dst_mac: [u8; 6], src: &str, dst: &str) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(HOST, dst_mac)
            .ipv6(v6(src), v6(dst), 64)
            .udp(4000, 5000)
            .write(&mut v, &[0xcd; 16])
            .unwrap();
        v
    }

    /// A port whose device verifies IPv4 header checksums
    /// (`Pipeline::set_rx_checksum_ports`): a burst whose every frame it
    /// marked good is routed without a software sum (here a frame with a
    /// wrong checksum, to show it); the same frame is dropped as
    /// `bad_checksum` in a burst with a frame the device did not mark, and
    /// by a pipeline whose port has no such device.
    #[test]
    fn a_device_verified_checksum_is_trusted_on_its_port_only() {
        let good = udp4(LAN, [198, 18, 1, 5]);
        let mut bad = good.clone();
        bad[24] ^= 0x55; // the IPv4 header checksum's first byte
        let marked = |frame: &Vec<u8>, good| NicPacket {
            pkt: VecPacket::new(frame.clone()),
            good,
        };
        let dropped = Verdict::Drop(DropReason::BadChecksum);
        let cases = [
            (
                true,
                vec![marked(&bad, true), marked(&good, true)],
                Verdict::Tx(1),
            ),
            (
                true,
                vec![marked(&bad, true), marked(&good, false)],
                dropped,
            ),
            (
                false,
                vec![marked(&bad, true), marked(&good, true)],
                dropped,
            ),
        ];
        for (nic, frames, want) in cases {
            let [mut p, _] = pipelines();
            if nic {
                p.set_rx_checksum_ports(&[true, false]);
            }
            let mut burst = Burst::<NicPacket>::new();
            for f in frames {
                assert!(burst.push(f).is_ok());
            }
            let c = WorkerCounters::default();
            let mut meta = new_meta_burst();
            p.run(&mut burst, &mut meta, 0, &StageCtx::test(&c));
            assert_eq!(meta[0].verdict, want, "nic {nic}");
            assert_eq!(meta[1].verdict, Verdict::Tx(1), "nic {nic}");
        }
    }

    /// RFC 1812 5.3.4: unicast IP in a link-layer broadcast or multicast
    /// frame is not routed (nor answered, to our own address); IP
    /// broadcasts in them are `broadcast`; the same unicast frames to our
    /// MAC are routed.
    #[test]
    fn unicast_ip_in_a_link_group_frame_is_not_routed() {
        let bcast = [0xff; 6];
        let (v, _) = verdicts(&[
            udp4(bcast, [198, 18, 1, 5]),
            udp4([0x01, 0, 0x5e, 0, 0, 1], [198, 18, 1, 5]),
            udp4(bcast, [10, 0, 1, 1]),
            udp6(
                [0x33, 0x33, 0, 0, 0, 1],
                "2001:db8:1::50",
                "2001:db8:100::1",
            ),
            udp4(bcast, [10, 0, 1, 255]),
            udp4(bcast, [255, 255, 255, 255]),
            udp4(LAN, [198, 18, 1, 5]),
            udp6(LAN, "2001:db8:1::50", "2001:db8:100::1"),
        ]);
        use DropReason::*;
        assert_eq!(
            v,
            [
                Verdict::Drop(L2Multicast),
                Verdict::Drop(L2Multicast),
                Verdict::Drop(L2Multicast),
                Verdict::Drop(L2Multicast),
                Verdict::Drop(Broadcast),
                Verdict::Drop(Broadcast),
                Verdict::Tx(1),
                Verdict::Tx(1),
            ]
        );
    }

    /// A connected subnet's broadcast address, from the subnet or directed
    /// from another, is `broadcast` and never ARPed for; the host beside
    /// it is (it is unresolved).
    #[test]
    fn subnet_broadcasts_are_not_forwarded_or_resolved() {
        let (v, arp) = verdicts(&[udp4(LAN, [10, 0, 1, 255]), udp4(LAN, [10, 0, 2, 255])]);
        assert_eq!(v, [Verdict::Drop(DropReason::Broadcast); 2]);
        assert_eq!(arp, 0);
        let (v, arp) = verdicts(&[udp4(LAN, [10, 0, 2, 254])]);
        assert_eq!(v, [Verdict::Tx(1)], "its buffer carries the ARP request");
        assert_eq!(arp, 1);
    }

    fn udp4_from(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(HOST, LAN)
            .ipv4(src, dst, ttl)
            .udp(4000, 5000)
            .write(&mut v, &[0xab; 18])
            .unwrap();
        v
    }

    fn arp_request(sender_mac: [u8; 6], sender_ip: [u8; 4], target_ip: [u8; 4]) -> Vec<u8> {
        let mut v = vec![0xff; 6];
        v.extend_from_slice(&HOST);
        v.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        v.extend_from_slice(&sender_mac);
        v.extend_from_slice(&sender_ip);
        v.extend_from_slice(&[0; 6]);
        v.extend_from_slice(&target_ip);
        v.resize(60, 0);
        v
    }

    /// RFC 1812 5.3.7 / RFC 4291 2.5.3: sources on network 0 and the IPv6
    /// loopback are not forwarded (nor answered).
    #[test]
    fn invalid_sources_are_not_forwarded() {
        let (v, _) = verdicts(&[
            udp4_from([0, 0, 0, 0], [198, 18, 1, 5], 64),
            udp4_from([0, 1, 2, 3], [198, 18, 1, 5], 64),
            udp6(LAN, "::1", "2001:db8:100::1"),
            udp4_from([10, 0, 1, 50], [198, 18, 1, 5], 64),
        ]);
        use DropReason::BadAddress;
        assert_eq!(
            v,
            [
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Tx(1),
            ]
        );
    }

    /// RFC 1812 5.3.7 / 4.2.2.11: sources that cannot be true — a
    /// connected subnet's broadcast address (the input port's or another
    /// port's), one of the router's own addresses (IPv4 or IPv6, link-local
    /// included) — are `bad_address`, forwarded or to the router, on the
    /// lane (plain packets, in all-plain and mixed bursts) and stage by
    /// stage alike; the hosts beside them are forwarded.
    #[test]
    fn sources_that_cannot_be_true_are_not_forwarded() {
        let bad = [
            udp4_from([10, 0, 1, 255], [198, 18, 1, 5], 64),
            udp4_from([10, 0, 2, 255], [198, 18, 1, 5], 64),
            udp4_from([10, 0, 1, 1], [198, 18, 1, 5], 64),
            udp4_from([10, 0, 2, 1], [198, 18, 1, 5], 64),
            udp4_from([10, 0, 2, 1], [10, 0, 1, 1], 64),
            udp6(LAN, "2001:db8:1::1", "2001:db8:100::1"),
            udp6(LAN, "2001:db8:2::1", "2001:db8:1::1"),
            udp6(LAN, "fe80::1", "2001:db8:100::1"),
        ];
        let good = [
            udp4_from([10, 0, 1, 254], [198, 18, 1, 5], 64),
            udp4_from([10, 0, 1, 2], [198, 18, 1, 5], 64),
            udp6(LAN, "2001:db8:1::2", "2001:db8:100::1"),
        ];
        let (v, _) = verdicts(&[&bad[..], &good[..]].concat());
        let mut want = vec![Verdict::Drop(DropReason::BadAddress); bad.len()];
        want.extend([Verdict::Tx(1); 3]);
        assert_eq!(v, want);
        // Alone in a burst of plain packets (the lane's all-plain pass).
        for f in &bad[..5] {
            let mut burst = vec![good[0].clone(); 31];
            burst.insert(7, f.clone());
            let (v, _) = verdicts(&burst);
            assert_eq!(v[7], Verdict::Drop(DropReason::BadAddress));
            assert!(v.iter().filter(|v| **v == Verdict::Tx(1)).count() == 31);
        }
    }

    /// A connected subnet's broadcast address is no host: no time exceeded
    /// and no echo reply goes to it (RFC 1812 4.3.2.7, RFC 1122 3.2.2.6),
    /// nor anything else (it is `bad_address` as a source); a host beside
    /// it gets both.
    #[test]
    fn no_icmp_to_a_subnet_broadcast_source() {
        let echo = |src: [u8; 4]| {
            let mut v = Vec::new();
            PacketBuilder::ethernet2(HOST, LAN)
                .ipv4(src, [10, 0, 1, 1], 64)
                .icmpv4_echo_request(7, 1)
                .write(&mut v, b"ping")
                .unwrap();
            v
        };
        let (v, _) = verdicts(&[
            udp4_from([10, 0, 1, 255], [198, 18, 1, 5], 1),
            echo([10, 0, 1, 255]),
            udp4_from([10, 0, 1, 50], [198, 18, 1, 5], 1),
            echo([10, 0, 1, 50]),
        ]);
        assert_eq!(
            v,
            [
                Verdict::Drop(DropReason::BadAddress),
                Verdict::Drop(DropReason::BadAddress),
                Verdict::Tx(0),
                Verdict::Tx(0),
            ]
        );
    }

    /// ARP in a format other than Ethernet/IPv4 (hardware type, protocol
    /// type, address lengths) is `unsupported`, whatever its length; a
    /// real Ethernet/IPv4 ARP cut short is `truncated`.
    #[test]
    fn arp_of_other_formats_is_unsupported() {
        let good = arp_request(HOST, [10, 0, 1, 50], [10, 0, 1, 1]);
        let with = |at: usize, v: &[u8]| {
            let mut f = good.clone();
            f[14 + at..14 + at + v.len()].copy_from_slice(v);
            f
        };
        let mut short = with(0, &[0, 6]);
        short.truncate(14 + 20);
        let mut cut = good.clone();
        cut.truncate(14 + 27);
        let (v, _) = verdicts(&[
            with(0, &[0, 6]),
            with(2, &[0x86, 0xdd]),
            with(4, &[8]),
            with(5, &[16]),
            short,
            cut,
            good,
        ]);
        use DropReason::{Truncated, Unsupported};
        assert_eq!(
            v,
            [
                Verdict::Drop(Unsupported),
                Verdict::Drop(Unsupported),
                Verdict::Drop(Unsupported),
                Verdict::Drop(Unsupported),
                Verdict::Drop(Unsupported),
                Verdict::Drop(Truncated),
                Verdict::Tx(0),
            ]
        );
    }

    /// ARP from a sender that cannot be a neighbour (a group, zero or our
    /// own MAC; our own address) is neither learned nor answered.
    #[test]
    fn arp_from_impossible_senders_is_dropped() {
        let us = [10, 0, 1, 1];
        let host = [10, 0, 1, 50];
        let (v, _) = verdicts(&[
            arp_request([0x01, 0, 0x5e, 0, 0, 1], host, us),
            arp_request([0xff; 6], host, us),
            arp_request([0; 6], host, us),
            arp_request(LAN, host, us),
            arp_request(HOST, us, us),
            arp_request(HOST, host, us),
        ]);
        use DropReason::BadAddress;
        assert_eq!(
            v,
            [
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Tx(0),
            ]
        );
    }

    /// A neighbour solicitation from `src` for `target` (to its
    /// solicited-node group), with `lladdr` as its source link-layer option.
    fn ns(src: &str, target: &str, lladdr: Option<[u8; 6]>) -> Vec<u8> {
        use crate::wire::{Icmpv6Packet, Icmpv6Repr, MacAddr};
        let (src, target): (std::net::Ipv6Addr, std::net::Ipv6Addr) =
            (src.parse().unwrap(), target.parse().unwrap());
        let t = target.octets();
        let dst = std::net::Ipv6Addr::new(
            0xff02,
            0,
            0,
            0,
            0,
            1,
            0xff00 | u16::from(t[13]),
            u16::from_be_bytes([t[14], t[15]]),
        );
        let repr = Icmpv6Repr::NeighborSolicit {
            target,
            source_lladdr: lladdr.map(MacAddr),
        };
        let n = repr.buffer_len();
        let mut v = vec![0x33, 0x33, 0xff, t[13], t[14], t[15]];
        v.extend_from_slice(&HOST);
        v.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        v.extend_from_slice(&(n as u16).to_be_bytes());
        v.extend_from_slice(&[58, 255]);
        v.extend_from_slice(&src.octets());
        v.extend_from_slice(&dst.octets());
        let at = v.len();
        v.resize(at + n, 0);
        repr.emit(&src, &dst, &mut Icmpv6Packet::new_unchecked(&mut v[at..]));
        v
    }

    /// NDP is believed as ARP is (`arp_from_impossible_senders_is_dropped`),
    /// and a solicitation from the unspecified address (duplicate address
    /// detection) must carry no source link-layer option (RFC 4861 7.1.1).
    #[test]
    fn neighbor_solicitations_from_impossible_senders_are_dropped() {
        let us = "2001:db8:1::1";
        let (v, _) = verdicts(&[
            ns("::", us, Some(HOST)),
            ns("2001:db8:1::50", us, Some([0x33, 0x33, 0, 0, 0, 1])),
            ns("2001:db8:1::50", us, Some(LAN)),
            ns("::", us, None),
            ns("2001:db8:1::50", us, Some(HOST)),
        ]);
        use DropReason::BadAddress;
        assert_eq!(
            v,
            [
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Tx(0),
                Verdict::Tx(0),
            ]
        );
    }

    /// RFC 4291 2.5.6: link-local and unspecified sources and link-local
    /// destinations (fe80::/64 is a connected route on lan here) are not
    /// forwarded; global ones are.
    /// `frame` (from [`udp6`]) with the IPv6 extension headers `kinds`
    /// (each 8 bytes: its next header, then a PadN option) before its UDP.
    fn with_extensions(frame: &[u8], kinds: &[u8]) -> Vec<u8> {
        let mut v = frame[..54].to_vec();
        let body = &frame[54..];
        v[20] = kinds[0];
        let len = u16::from_be_bytes([v[18], v[19]]) + 8 * kinds.len() as u16;
        v[18..20].copy_from_slice(&len.to_be_bytes());
        for (k, _) in kinds.iter().enumerate() {
            let next = kinds.get(k + 1).copied().unwrap_or(17);
            v.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]);
        }
        v.extend_from_slice(body);
        v
    }

    /// Hop-by-Hop options come first or not at all (RFC 8200 4.1): a
    /// packet with one after another extension header is `unsupported`,
    /// the same headers in order are routed.
    #[test]
    fn hop_by_hop_after_another_extension_is_not_routed() {
        let (hbh, dst_opts) = (0u8, 60u8);
        let udp = udp6(LAN, "2001:db8:1::50", "2001:db8:100::1");
        let (v, _) = verdicts(&[
            with_extensions(&udp, &[hbh, dst_opts]),
            with_extensions(&udp, &[dst_opts, hbh]),
            with_extensions(&udp, &[hbh, hbh]),
        ]);
        assert_eq!(
            v,
            [
                Verdict::Tx(1),
                Verdict::Drop(DropReason::Unsupported),
                Verdict::Drop(DropReason::Unsupported),
            ]
        );
    }

    #[test]
    fn ipv6_link_local_and_unspecified_are_not_forwarded() {
        let (v, _) = verdicts(&[
            udp6(LAN, "fe80::50", "2001:db8:100::1"),
            udp6(LAN, "::", "2001:db8:100::1"),
            udp6(LAN, "2001:db8:1::50", "fe80::99"),
            udp6(LAN, "2001:db8:1::50", "2001:db8:100::1"),
            // No route either (2001:db8:999::/48 and fe80::/10 beyond lan's
            // /64): the scope is still the reason; a routable source with
            // no route is `no_route`.
            udp6(LAN, "fe80::50", "2001:db8:999::1"),
            udp6(LAN, "::", "2001:db8:999::1"),
            udp6(LAN, "2001:db8:1::50", "fe80:0:0:1::99"),
            udp6(LAN, "2001:db8:1::50", "2001:db8:999::1"),
        ]);
        use DropReason::{BadAddress, NoRoute};
        assert_eq!(
            v,
            [
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Tx(1),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(BadAddress),
                Verdict::Drop(NoRoute),
            ]
        );
    }
}
