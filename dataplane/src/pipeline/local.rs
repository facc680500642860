//! The router's own traffic: ARP and NDP (answering for our addresses,
//! learning neighbours, soliciting unresolved next hops), ICMP/ICMPv6 echo to
//! our addresses, and the ICMP errors about packets it cannot forward (time
//! exceeded; fragmentation needed / packet too big). All of it is slow path and
//! works in place: a reply is written over the packet that caused it (so no
//! allocation), the Ethernet header (and any VLAN tags) kept and its
//! addresses swapped, and sent back out of the input port.
//!
//! Every function returns the packet's verdict.
use super::{DropReason, Event, Meta, PacketBuf, StageCtx, Verdict};
use crate::stats::Originated;
use crate::tables::neighbor::{self, NeighborState};
use crate::tables::routing::{usable_neighbor_mac, Announced, Routing};
use crate::wire::checksum;
use crate::wire::icmpv4::{dst_unreachable, time_exceeded};
use crate::wire::icmpv6::{Icmpv6Packet, Icmpv6Repr, Icmpv6Type, NdpFlags, MAX_ERROR_QUOTE};
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame, EthernetRepr, Icmpv4Packet,
    Icmpv4Repr, Icmpv4Type, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, MacAddr,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Token bucket for ICMP errors (RFC 1812 4.3.2.8: rate-limit them), one
/// per worker.
#[derive(Debug, Clone)]
pub struct IcmpLimiter {
    tokens: f64,
    last: u64,
    /// Errors per second; 0 disables ICMP errors.
    pub rate: u32,
    pub burst: u32,
}

impl IcmpLimiter {
    pub fn new(rate: u32, burst: u32) -> Self {
        IcmpLimiter {
            tokens: burst as f64,
            last: 0,
            rate,
            burst,
        }
    }

    pub(crate) fn allow(&mut self, now: u64, tsc_hz: u64) -> bool {
        if self.rate == 0 {
            return false;
        }
        if self.last != 0 && tsc_hz != 0 {
            let dt = now.saturating_sub(self.last) as f64 / tsc_hz as f64;
            self.tokens = (self.tokens + dt * self.rate as f64).min(self.burst as f64);
        }
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// How long to wait before soliciting the same neighbour again.
const SOLICIT_INTERVAL_MS: u64 = 200;

fn mac(b: &[u8]) -> [u8; 6] {
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}

/// Swaps the Ethernet addresses to send a reply back: destination = the
/// sender, source = our port's MAC.
fn l2_reply(data: &mut [u8], port_mac: [u8; 6]) {
    let src = mac(&data[6..12]);
    data[..6].copy_from_slice(&src);
    data[6..12].copy_from_slice(&port_mac);
}

/// Learns what an ARP or NDP packet announced (`ip` is at `mac` on
/// `port`); `Err` with the packet's verdict when that cannot be true.
fn learn_announced(
    r: &Routing,
    port: u16,
    ip: IpAddr,
    mac: [u8; 6],
    ctx: &StageCtx,
) -> Result<(), Verdict> {
    match r.learn_from_wire(port, ip, mac) {
        Announced::Learned => {
            ctx.counters.count_event(Event::NeighborLearned);
            Ok(())
        }
        Announced::Ignored => Ok(()),
        Announced::Bogus => Err(Verdict::Drop(DropReason::BadAddress)),
    }
}

/// ARP on `in_port`: learn the sender if on-link; answer requests for our
/// addresses; consume the rest.
pub fn arp<P: PacketBuf>(pkt: &mut P, m: &Meta, r: &Routing, ctx: &StageCtx) -> Verdict {
    let port = m.in_port;
    let Some(pa) = r.ports.get(port as usize) else {
        return Verdict::Drop(DropReason::NoOutput);
    };
    let l3 = m.l3_off as usize;
    // Another format than Ethernet/IPv4 is `unsupported`, one cut short
    // `truncated` (`ArpPacket::check_len`).
    let repr = match ArpRepr::parse(&ArpPacket::new_unchecked(&pkt.data()[l3..])) {
        Ok(r) => r,
        Err(e) => return Verdict::Drop(super::parse::drop_reason(e)),
    };
    // Learn from any ARP whose sender is on the link (gratuitous included);
    // a sender that cannot be a neighbour is not answered either.
    let sender_mac = repr.sender_mac.octets();
    if !usable_neighbor_mac(sender_mac) {
        return Verdict::Drop(DropReason::BadAddress);
    }
    if !repr.sender_ip.is_unspecified() {
        if let Err(v) = learn_announced(r, port, IpAddr::V4(repr.sender_ip), sender_mac, ctx) {
            return v;
        }
    }
    if repr.operation != ArpOperation::Request || !pa.has_v4(repr.target_ip) {
        ctx.counters.count_event(Event::Consumed);
        return Verdict::Consumed;
    }
    let reply = ArpRepr {
        operation: ArpOperation::Reply,
        sender_mac: MacAddr(pa.mac),
        sender_ip: repr.target_ip,
        target_mac: repr.sender_mac,
        target_ip: repr.sender_ip,
    };
    let data = pkt.data_mut();
    l2_reply(data, pa.mac);
    // The request's sender, not the broadcast destination, gets the reply.
    data[..6].copy_from_slice(&repr.sender_mac.octets());
    reply.emit(&mut ArpPacket::new_unchecked(&mut data[l3..]));
    ctx.counters.count_event(Event::ArpReply);
    Verdict::Tx(port)
}

/// An IPv4 packet addressed to us: echo requests are answered, the rest
/// dropped as `local_unhandled`.
pub fn deliver_v4<P: PacketBuf>(pkt: &mut P, m: &Meta, r: &Routing, ctx: &StageCtx) -> Verdict {
    let port = m.in_port;
    let Some(pa) = r.ports.get(port as usize) else {
        return Verdict::Drop(DropReason::LocalUnhandled);
    };
    let l3 = m.l3_off as usize;
    let data = pkt.data_mut();
    let (hl, total) = {
        let ip = Ipv4Packet::new_unchecked(&data[l3..]);
        if ip.protocol() != IpProtocol::Icmp || ip.is_fragment() {
            return Verdict::Drop(DropReason::LocalUnhandled);
        }
        (ip.header_len(), ip.total_len() as usize)
    };
    {
        let icmp_bytes = &data[l3 + hl..l3 + total];
        let Ok(icmp) = Icmpv4Packet::new_checked(icmp_bytes) else {
            return Verdict::Drop(DropReason::Truncated);
        };
        if icmp.msg_type() != Icmpv4Type::EchoRequest || icmp.msg_code() != 0 {
            return Verdict::Drop(DropReason::LocalUnhandled);
        }
        if !icmp.verify_checksum() {
            return Verdict::Drop(DropReason::BadChecksum);
        }
    }
    // No reply to a source that is no host (RFC 1122 3.2.2.6): a broadcast,
    // a group or a connected subnet's broadcast address.
    let src = Ipv4Addr::from(m.key.src_v4());
    if src.is_broadcast() || src.is_multicast() || r.is_broadcast_v4(src) {
        return Verdict::Drop(DropReason::BadAddress);
    }
    // Echo reply in place: swap addresses, type 8 -> 0, fresh TTL and header
    // checksum. The ICMP checksum is recomputed, not patched: ICMPv4 has no
    // pseudo-header, so a reply of all zeros (id, sequence, data) must carry
    // 0xFFFF, where the RFC 1624 update gives 0x0000 (found by fuzzing).
    let mut ip = Ipv4Packet::new_unchecked(&mut data[l3..l3 + total]);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    ip.set_ttl(64);
    ip.fill_checksum();
    let mut icmp = Icmpv4Packet::new_unchecked(&mut data[l3 + hl..l3 + total]);
    icmp.set_msg_type(Icmpv4Type::EchoReply);
    icmp.fill_checksum();
    l2_reply(data, pa.mac);
    ctx.counters.count_event(Event::EchoReply);
    Verdict::Tx(port)
}

/// An IPv6 packet for us (unicast to one of our addresses, or multicast):
/// NDP and echo handled, the rest dropped as `local_unhandled`.
pub fn deliver_v6<P: PacketBuf>(pkt: &mut P, m: &Meta, r: &Routing, ctx: &StageCtx) -> Verdict {
    let port = m.in_port;
    let Some(pa) = r.ports.get(port as usize) else {
        return Verdict::Drop(DropReason::LocalUnhandled);
    };
    if m.key.proto != u8::from(IpProtocol::Icmpv6) || m.l4_off == 0 {
        return Verdict::Drop(DropReason::LocalUnhandled);
    }
    let l3 = m.l3_off as usize;
    let l4 = m.l4_off as usize;
    let (src, dst, hop_limit, end) = {
        let ip = Ipv6Packet::new_unchecked(&pkt.data()[l3..]);
        (
            ip.src_addr(),
            ip.dst_addr(),
            ip.hop_limit(),
            l3 + 40 + ip.payload_len() as usize,
        )
    };
    enum Action {
        Echo,
        Advertise {
            target: Ipv6Addr,
            to: Ipv6Addr,
            to_mac: [u8; 6],
        },
        Consume,
    }
    let action = {
        let data = pkt.data();
        let Ok(icmp) = Icmpv6Packet::new_checked(&data[l4..end]) else {
            return Verdict::Drop(DropReason::Truncated);
        };
        match Icmpv6Repr::parse(&src, &dst, &icmp) {
            Ok(Icmpv6Repr::EchoRequest { .. }) if !dst.is_multicast() => Action::Echo,
            Ok(Icmpv6Repr::NeighborSolicit {
                target,
                source_lladdr,
            }) if hop_limit == 255 => {
                if let Some(ll) = source_lladdr {
                    // RFC 4861 7.1.1: no source link-layer option from ::.
                    if src.is_unspecified() {
                        return Verdict::Drop(DropReason::BadAddress);
                    }
                    if let Err(v) = learn_announced(r, port, IpAddr::V6(src), ll.octets(), ctx) {
                        return v;
                    }
                }
                if !pa.has_v6(target) {
                    return Verdict::Drop(DropReason::LocalUnhandled);
                }
                // Unspecified source (duplicate address detection): answer
                // to all-nodes.
                let (to, to_mac) = if src.is_unspecified() {
                    (
                        Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
                        [0x33, 0x33, 0, 0, 0, 1],
                    )
                } else {
                    (src, mac(&data[6..12]))
                };
                Action::Advertise { target, to, to_mac }
            }
            Ok(Icmpv6Repr::NeighborAdvert {
                target,
                target_lladdr,
                ..
            }) if hop_limit == 255 => {
                if let Some(ll) = target_lladdr {
                    if let Err(v) = learn_announced(r, port, IpAddr::V6(target), ll.octets(), ctx) {
                        return v;
                    }
                }
                Action::Consume
            }
            Err(crate::wire::Error::BadChecksum) => return Verdict::Drop(DropReason::BadChecksum),
            _ => return Verdict::Drop(DropReason::LocalUnhandled),
        }
    };
    match action {
        Action::Consume => {
            ctx.counters.count_event(Event::Consumed);
            Verdict::Consumed
        }
        Action::Echo => {
            let data = pkt.data_mut();
            let mut ip = Ipv6Packet::new_unchecked(&mut data[l3..]);
            ip.set_src_addr(dst);
            ip.set_dst_addr(src);
            ip.set_hop_limit(64);
            // Swapping the addresses leaves the pseudo-header sum unchanged;
            // only the type (128 -> 129) changes.
            let icmp = &mut data[l4..end];
            let old = u16::from_be_bytes([icmp[0], icmp[1]]);
            icmp[0] = u8::from(Icmpv6Type::EchoReply);
            let c = u16::from_be_bytes([icmp[2], icmp[3]]);
            let c = checksum::update_u16(c, old, u16::from_be_bytes([icmp[0], icmp[1]]));
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
            l2_reply(data, pa.mac);
            ctx.counters.count_event(Event::EchoReply);
            Verdict::Tx(port)
        }
        Action::Advertise { target, to, to_mac } => {
            // Solicited answers carry S; one to all-nodes (DAD) must not.
            let flags = if to.is_multicast() {
                NdpFlags::ROUTER | NdpFlags::OVERRIDE
            } else {
                NdpFlags::ROUTER | NdpFlags::SOLICITED | NdpFlags::OVERRIDE
            };
            let na = Icmpv6Repr::NeighborAdvert {
                flags,
                target,
                target_lladdr: Some(MacAddr(pa.mac)),
            };
            let ip = Ipv6Repr {
                src_addr: target,
                dst_addr: to,
                next_header: IpProtocol::Icmpv6,
                payload_len: na.buffer_len(),
                hop_limit: 255,
            };
            if !write_v6(pkt, l3, to_mac, pa.mac, &ip, &na) {
                return Verdict::Drop(DropReason::LocalUnhandled);
            }
            ctx.counters.count_event(Event::NdAdvert);
            Verdict::Tx(port)
        }
    }
}

/// Rewrites the packet as `[L2 of length l2] + IPv6 header + ICMPv6 msg`.
fn write_v6<P: PacketBuf>(
    pkt: &mut P,
    l2: usize,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    ip: &Ipv6Repr,
    icmp: &Icmpv6Repr,
) -> bool {
    let len = l2 + 40 + icmp.buffer_len();
    if !pkt.resize(len.max(60)) {
        return false;
    }
    let data = pkt.data_mut();
    data[..6].copy_from_slice(&dst_mac);
    data[6..12].copy_from_slice(&src_mac);
    data[l2 - 2..l2].copy_from_slice(&u16::from(EtherType::Ipv6).to_be_bytes());
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut data[l2..l2 + 40]));
    icmp.emit(
        &ip.src_addr,
        &ip.dst_addr,
        &mut Icmpv6Packet::new_unchecked(&mut data[l2 + 40..len]),
    );
    // Frames are padded to the Ethernet minimum; the IPv6 length says where
    // the message ends.
    data[len..].fill(0);
    true
}

/// The ICMPv4 errors the router sends about a packet it cannot forward.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ErrorV4 {
    /// Time exceeded in transit: the TTL ran out (`ttl_exceeded`).
    TimeExceeded,
    /// Destination unreachable, fragmentation needed and DF set, with the
    /// next-hop MTU (RFC 1191; RFC 1812 4.3.2.4): `too_big`.
    FragNeeded { mtu: u16 },
}

impl ErrorV4 {
    /// The drop the invoking packet is counted as, error sent or not.
    fn reason(self) -> DropReason {
        match self {
            ErrorV4::TimeExceeded => DropReason::TtlExceeded,
            ErrorV4::FragNeeded { .. } => DropReason::TooBig,
        }
    }

    fn originated(self) -> Originated {
        match self {
            ErrorV4::TimeExceeded => Originated::IcmpError,
            ErrorV4::FragNeeded { .. } => Originated::IcmpTooBig,
        }
    }

    fn repr(self, quote: &[u8]) -> Icmpv4Repr<'_> {
        match self {
            ErrorV4::TimeExceeded => Icmpv4Repr::TimeExceeded {
                code: time_exceeded::TTL,
                data: quote,
            },
            ErrorV4::FragNeeded { mtu } => Icmpv4Repr::DstUnreachable {
                code: dst_unreachable::FRAG_NEEDED,
                next_hop_mtu: mtu,
                data: quote,
            },
        }
    }
}

/// TTL ran out while forwarding: send ICMP time exceeded (rate-limited) back
/// to the source, or drop. The `ttl_exceeded` drop is counted either way.
pub fn time_exceeded_v4<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
) -> Verdict {
    icmp_error_v4(pkt, m, r, limiter, ctx, ErrorV4::TimeExceeded)
}

/// The packet is larger than the output link's `mtu`. With DF set: ICMP
/// fragmentation needed with the next-hop MTU (rate-limited, as time
/// exceeded) back to the source, the packet counted as `too_big` either
/// way. Without DF the router would have to fragment (RFC 791), which needs
/// buffers it does not allocate on the data path: it drops the packet as
/// `too_big_no_df` and sends nothing (the source asked for no path-MTU
/// discovery; README "Path MTU").
#[cold]
#[inline(never)]
pub fn too_big_v4<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    mtu: u16,
    ctx: &StageCtx,
) -> Verdict {
    let df = Ipv4Packet::new_unchecked(&pkt.data()[m.l3_off as usize..]).dont_frag();
    if !df {
        return Verdict::Drop(DropReason::TooBigNoDf);
    }
    icmp_error_v4(pkt, m, r, limiter, ctx, ErrorV4::FragNeeded { mtu })
}

/// Writes ICMP error `kind` over the packet and sends it back out of the
/// input port (from that port's primary address, to the source, quoting the
/// IP header and the first 8 bytes of its payload), or drops the packet
/// when no error may be sent ([`write_error_v4`]). The drop
/// (`kind.reason()`) is counted either way; a sent error is also counted as
/// originated.
#[cold]
#[inline(never)]
fn icmp_error_v4<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
    kind: ErrorV4,
) -> Verdict {
    let port = m.in_port;
    let pa = &r.ports[port as usize];
    let Some(our) = pa.primary_v4() else {
        return Verdict::Drop(kind.reason());
    };
    // A connected subnet's broadcast address is no host to answer (RFC 1812
    // 4.3.2.7; `write_error_v4` refuses the other broadcasts).
    if r.is_broadcast_v4(Ipv4Addr::from(m.key.src_v4())) {
        return Verdict::Drop(kind.reason());
    }
    match write_error_v4(pkt, m, our, Some(pa.mac), limiter, ctx, kind) {
        Ok(()) => Verdict::Tx(port),
        Err(reason) => Verdict::Drop(reason),
    }
}

/// ICMP error `kind` from `from` to the packet's source, written over the
/// packet (quoting its IP header and first 8 bytes); with `reply_mac`, the
/// Ethernet addresses swapped for a reply from that MAC. Refused (the drop
/// reason returned) about an ICMP error, a non-first fragment or a
/// broadcast/multicast source (RFC 1812 4.3.2.7), and over the rate limit.
/// Counts the drop and, when written, the error as originated.
pub(crate) fn write_error_v4<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    from: Ipv4Addr,
    reply_mac: Option<[u8; 6]>,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
    kind: ErrorV4,
) -> Result<(), DropReason> {
    let reason = kind.reason();
    let l3 = m.l3_off as usize;
    // Never answer an ICMP error with one, nor a fragment or a broadcast.
    {
        let data = pkt.data();
        let ip = Ipv4Packet::new_unchecked(&data[l3..]);
        if ip.is_non_first_fragment()
            || ip.src_addr().is_broadcast()
            || ip.src_addr().is_multicast()
        {
            return Err(reason);
        }
        if ip.protocol() == IpProtocol::Icmp {
            let t = data.get(l3 + ip.header_len()).copied().unwrap_or(0);
            if !matches!(
                Icmpv4Type::from(t),
                Icmpv4Type::EchoRequest | Icmpv4Type::EchoReply
            ) {
                return Err(reason);
            }
        }
    }
    if !limiter.allow(ctx.now, ctx.tsc_hz) {
        ctx.counters.count_event(Event::IcmpRateLimited);
        return Err(reason);
    }
    // Quote the original IP header and the first 8 bytes of its payload.
    let mut quote = [0u8; 60 + 8];
    let (qlen, src) = {
        let data = pkt.data();
        let ip = Ipv4Packet::new_unchecked(&data[l3..]);
        let n = (ip.header_len() + 8).min(ip.total_len() as usize);
        quote[..n].copy_from_slice(&data[l3..l3 + n]);
        (n, ip.src_addr())
    };
    let icmp = kind.repr(&quote[..qlen]);
    let ip = Ipv4Repr {
        src_addr: from,
        dst_addr: src,
        protocol: IpProtocol::Icmp,
        payload_len: icmp.buffer_len(),
        ttl: 64,
    };
    let len = l3 + 20 + icmp.buffer_len();
    if !pkt.resize(len.max(60)) {
        return Err(reason);
    }
    let data = pkt.data_mut();
    if let Some(mac) = reply_mac {
        l2_reply(data, mac);
    }
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut data[l3..l3 + 20]));
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut data[l3 + 20..len]));
    data[len..].fill(0);
    ctx.counters.count_drop(reason, 1);
    ctx.counters.count_event(Event::IcmpError);
    ctx.counters.count_originated(kind.originated());
    Ok(())
}

/// The ICMPv6 errors the router sends about a packet it cannot forward.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ErrorV6 {
    /// Time exceeded: the hop limit ran out (`ttl_exceeded`).
    TimeExceeded,
    /// Packet too big, with the next-hop MTU (RFC 4443 3.2, RFC 8201):
    /// `too_big`.
    PacketTooBig { mtu: u32 },
}

impl ErrorV6 {
    fn reason(self) -> DropReason {
        match self {
            ErrorV6::TimeExceeded => DropReason::TtlExceeded,
            ErrorV6::PacketTooBig { .. } => DropReason::TooBig,
        }
    }

    fn originated(self) -> Originated {
        match self {
            ErrorV6::TimeExceeded => Originated::IcmpError,
            ErrorV6::PacketTooBig { .. } => Originated::IcmpTooBig,
        }
    }

    fn repr(self, quote: &[u8]) -> Icmpv6Repr<'_> {
        match self {
            ErrorV6::TimeExceeded => Icmpv6Repr::TimeExceeded {
                code: 0,
                data: quote,
            },
            ErrorV6::PacketTooBig { mtu } => Icmpv6Repr::PacketTooBig { mtu, data: quote },
        }
    }
}

/// IPv6 hop limit ran out: ICMPv6 time exceeded (rate-limited) or drop.
pub fn time_exceeded_v6<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
) -> Verdict {
    icmp_error_v6(pkt, m, r, limiter, ctx, ErrorV6::TimeExceeded)
}

/// The IPv6 packet is larger than the output link's `mtu` (IPv6 routers
/// never fragment): ICMPv6 packet too big with that MTU (rate-limited, as
/// time exceeded) back to the source; `too_big` either way.
#[cold]
#[inline(never)]
pub fn too_big_v6<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    mtu: u16,
    ctx: &StageCtx,
) -> Verdict {
    let mtu = u32::from(mtu);
    icmp_error_v6(pkt, m, r, limiter, ctx, ErrorV6::PacketTooBig { mtu })
}

/// Writes ICMPv6 error `kind` over the packet and sends it back out of the
/// input port (from that port's primary address, to the source), or drops
/// the packet when no error may be sent ([`write_error_v6`]). The drop is
/// counted either way; a sent error is also counted as originated.
#[cold]
#[inline(never)]
fn icmp_error_v6<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    r: &Routing,
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
    kind: ErrorV6,
) -> Verdict {
    let port = m.in_port;
    let pa = &r.ports[port as usize];
    let Some(our) = pa.primary_v6() else {
        return Verdict::Drop(kind.reason());
    };
    let dst_mac = mac(&pkt.data()[6..12]);
    match write_error_v6(pkt, m, our, (dst_mac, pa.mac), limiter, ctx, kind) {
        Ok(()) => Verdict::Tx(port),
        Err(reason) => Verdict::Drop(reason),
    }
}

/// ICMPv6 error `kind` from `from` to the packet's source, written over the
/// packet with Ethernet addresses `macs` (destination, source). Refused
/// (the drop reason returned) to a multicast or unspecified source, about
/// an ICMPv6 error (RFC 4443 2.4 (e)), and over the rate limit. Counts the
/// drop and, when written, the error as originated.
pub(crate) fn write_error_v6<P: PacketBuf>(
    pkt: &mut P,
    m: &Meta,
    from: Ipv6Addr,
    macs: ([u8; 6], [u8; 6]),
    limiter: &mut IcmpLimiter,
    ctx: &StageCtx,
    kind: ErrorV6,
) -> Result<(), DropReason> {
    let reason = kind.reason();
    let l3 = m.l3_off as usize;
    let (src, end) = {
        let ip = Ipv6Packet::new_unchecked(&pkt.data()[l3..]);
        (ip.src_addr(), l3 + 40 + ip.payload_len() as usize)
    };
    if src.is_multicast() || src.is_unspecified() {
        return Err(reason);
    }
    if m.key.proto == u8::from(IpProtocol::Icmpv6) && m.l4_off != 0 {
        let t = pkt.data().get(m.l4_off as usize).copied().unwrap_or(0);
        if t < 128 {
            return Err(reason); // an ICMPv6 error
        }
    }
    if !limiter.allow(ctx.now, ctx.tsc_hz) {
        ctx.counters.count_event(Event::IcmpRateLimited);
        return Err(reason);
    }
    let mut quote = [0u8; MAX_ERROR_QUOTE];
    // As much as fits a minimum-MTU (1280-byte) reply, as RFC 4443 2.4 (c)
    // asks (a host matching it to a socket may need what follows extension
    // headers).
    let qlen = (end - l3).min(MAX_ERROR_QUOTE);
    quote[..qlen].copy_from_slice(&pkt.data()[l3..l3 + qlen]);
    let icmp = kind.repr(&quote[..qlen]);
    let ip = Ipv6Repr {
        src_addr: from,
        dst_addr: src,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
    };
    if !write_v6(pkt, l3, macs.0, macs.1, &ip, &icmp) {
        return Err(reason);
    }
    ctx.counters.count_drop(reason, 1);
    ctx.counters.count_event(Event::IcmpError);
    ctx.counters.count_originated(kind.originated());
    Ok(())
}

/// The next hop's MAC is unknown: turn this packet into an ARP request (or
/// neighbour solicitation) for `target` on `out_port`, at most once per
/// neighbour per SOLICIT_INTERVAL_MS; the packet itself is dropped as
/// `neighbor_unresolved` (counted here when its buffer carries the request).
pub fn solicit<P: PacketBuf>(
    pkt: &mut P,
    out_port: u16,
    target: IpAddr,
    r: &Routing,
    ctx: &StageCtx,
) -> Verdict {
    let Some(pa) = r.ports.get(out_port as usize) else {
        return Verdict::Drop(DropReason::NeighborUnresolved);
    };
    let key = neighbor::key(out_port, target);
    if let NeighborState::Pending(t) = r.neighbors.get(&key) {
        let wait = ctx.tsc_hz / 1000 * SOLICIT_INTERVAL_MS;
        if ctx.now.saturating_sub(t) < wait {
            return Verdict::Drop(DropReason::NeighborUnresolved);
        }
    }
    let ok = match target {
        IpAddr::V4(t) => match pa.primary_v4() {
            Some(our) => write_arp_request(pkt, pa.mac, our, t),
            None => false,
        },
        IpAddr::V6(t) => match pa.primary_v6() {
            Some(our) => write_ns(pkt, pa.mac, our, t),
            None => false,
        },
    };
    if !ok {
        return Verdict::Drop(DropReason::NeighborUnresolved);
    }
    r.neighbors.mark_pending(&key, ctx.now.max(1));
    ctx.counters.count_drop(DropReason::NeighborUnresolved, 1);
    ctx.counters.count_event(if target.is_ipv4() {
        Event::ArpRequest
    } else {
        Event::NdSolicit
    });
    ctx.counters.count_originated(if target.is_ipv4() {
        Originated::ArpRequest
    } else {
        Originated::NdSolicit
    });
    Verdict::Tx(out_port)
}

fn write_arp_request<P: PacketBuf>(
    pkt: &mut P,
    our_mac: [u8; 6],
    our: Ipv4Addr,
    target: Ipv4Addr,
) -> bool {
    if !pkt.resize(60) {
        return false;
    }
    let data = pkt.data_mut();
    EthernetRepr {
        src_addr: MacAddr(our_mac),
        dst_addr: MacAddr::BROADCAST,
        ethertype: EtherType::Arp,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut data[..]));
    ArpRepr {
        operation: ArpOperation::Request,
        sender_mac: MacAddr(our_mac),
        sender_ip: our,
        target_mac: MacAddr::ZERO,
        target_ip: target,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut data[14..42]));
    data[42..].fill(0);
    true
}

fn write_ns<P: PacketBuf>(pkt: &mut P, our_mac: [u8; 6], our: Ipv6Addr, target: Ipv6Addr) -> bool {
    // Solicited-node multicast ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX.
    let t = target.octets();
    let dst = Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(t[13]),
        u16::from_be_bytes([t[14], t[15]]),
    );
    let dst_mac = [0x33, 0x33, 0xff, t[13], t[14], t[15]];
    let ns = Icmpv6Repr::NeighborSolicit {
        target,
        source_lladdr: Some(MacAddr(our_mac)),
    };
    let ip = Ipv6Repr {
        src_addr: our,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: ns.buffer_len(),
        hop_limit: 255,
    };
    // A fresh untagged Ethernet header (write_v6 sets the EtherType).
    write_v6(pkt, 14, dst_mac, our_mac, &ip, &ns)
}
