//! The lane's path through `lb`: plain IPv4 packets to IP-in-IP services
//! over IPv4, a burst at a time, in three passes.
//!
//! 1. *Classify.* For each plain packet still undecided: its VIP, its
//!    service (from the small per-service records, [`Service4`]), and for
//!    a packet this path can finish (IP-in-IP over IPv4, not a fragment
//!    the service drops, not a later fragment, which has no ports to find
//!    its service by; a martian source never takes the lane, see
//!    [`crate::pipeline::Lane::screen`]) the flow hash and ports, kept in the stage's side
//!    arrays ([`Side`]); the connection table's bucket for the hash is
//!    prefetched. Nothing changes state here, so the order of the packets
//!    does not matter yet.
//! 2. *Probe.* For those of a tracking service: the bucket's tags are
//!    read and the way whose tag matches is prefetched
//!    ([`ConnTable::probe`](crate::tables::conntrack::ConnTable::probe)).
//! 3. *Decide,* in slot order over every packet the stage must look at:
//!    those of pass 1 take the connection table's IPv4 lookup from their
//!    probe ([`ConnTable::touch_probed_v4`](crate::tables::conntrack::ConnTable::touch_probed_v4)),
//!    the backend's 32-byte record
//!    ([`Backend4`](crate::tables::lb::Backend4)) and the encapsulation; every other packet (ICMP errors
//!    to a VIP, fragments, DSR, IPv6, anything not plain) goes through the
//!    per-packet code it always went through. One pass in slot order keeps
//!    the connection table's inserts, and so which flows a nearly full
//!    table refuses, exactly as on the stage-by-stage path.
//!
//! An untracked service's packet takes the Maglev choice here (its entry
//! prefetched in pass 1). A new flow, a moved one, a service with no
//! backend left, a packet too big for its backend's path: each leaves the
//! fast code for the general functions (`choose`, `send`), so every counter
//! and verdict is the general path's.
use super::encap::encap_v4_plain;
use super::{tcp_closing, Flow, LbState, PROTO_ICMP, PROTO_TCP};
use crate::burst::{slots, Burst, SlotMask, BURST_SIZE};
use crate::pipeline::{
    DropReason, FlowKeyV4, Lane, Meta, MetaBurst, PacketBuf, StageCtx, Verdict, L3,
};
use crate::tables::conntrack::{ConnKey, Probe};
use crate::tables::lb::{lb_hash_v4, LbTables, Service4, IPPROTO_IPIP};
use std::net::Ipv4Addr;

/// Per-packet state of the pass-1 packets, by slot: the stage's side
/// arrays in the burst scratch (what does not fit, and has no place in,
/// `Meta`). Valid for the burst that wrote them only.
pub(super) struct Side {
    hash: [u32; BURST_SIZE],
    /// Source port | destination port << 16, host order (0 for a
    /// three-tuple service).
    ports: [u32; BURST_SIZE],
    service: [u16; BURST_SIZE],
    /// The connection-table way pass 3 will read first.
    probe: [Probe; BURST_SIZE],
}

impl Default for Side {
    fn default() -> Self {
        Side {
            hash: [0; BURST_SIZE],
            ports: [0; BURST_SIZE],
            service: [0; BURST_SIZE],
            probe: [Probe::NONE; BURST_SIZE],
        }
    }
}

impl LbState {
    /// Decides every packet of the burst (see the module doc).
    #[inline(always)]
    pub(super) fn run_burst<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
    ) {
        let n = pkts.len();
        let (fast, tracked, work) = self.classify(t, pkts, meta, lane, n);
        // The tag lines fetched in pass 1 are read now, and the way each
        // packet will compare fetched in turn: pass 3's loads are then
        // hits, as long as a burst's worth of flows fits the cache.
        for i in slots(tracked) {
            self.side.probe[i] = self.conn.probe(self.side.hash[i]);
        }
        for i in slots(work | fast) {
            let m = &mut meta[i];
            let Some(p) = pkts.get_mut(i) else { continue };
            if fast & (1 << i) != 0 {
                self.finish_v4(t, p, m, lane, i, ctx);
            } else if lane.is_plain(i) {
                if let Some(r) = t.vip4_range(lane.dst[i]) {
                    self.plain_v4(t, p, m, lane, i, r, ctx);
                }
            } else {
                self.general(t, p, m, lane, i, ctx);
            }
        }
    }

    /// Pass 1: returns the slots pass 3 finishes here (`fast`), those of
    /// them whose service tracks connections, and the other slots it must
    /// look at.
    #[inline(always)]
    fn classify<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        pkts: &Burst<P>,
        meta: &MetaBurst,
        lane: &Lane,
        n: usize,
    ) -> (SlotMask, SlotMask, SlotMask) {
        let (mut fast, mut tracked, mut others): (SlotMask, SlotMask, SlotMask) = (0, 0, 0);
        for (i, m) in meta[..n].iter().enumerate() {
            let bit: SlotMask = 1 << i;
            // A plain packet is undecided (see `lane`); the others say so
            // in their `Meta`.
            if lane.plain & bit == 0 {
                if m.verdict == Verdict::Continue && matches!(m.l3, L3::Ipv4 | L3::Ipv6) {
                    others |= bit;
                }
                continue;
            }
            let dst = lane.dst[i];
            let Some((first, count)) = t.vip4_range(dst) else {
                continue;
            };
            let Some(p) = pkts.get(i) else { continue };
            // MF and the fragment offset (a plain frame holds the header).
            let frag_bits = p
                .data()
                .get(20..22)
                .map_or(0x3fff, |f| u16::from_be_bytes([f[0], f[1]]) & 0x3fff);
            // A later fragment has no ports to find its service by: the
            // general code. (A martian source is not on the lane: the
            // sweep screened it off with the route's tables, this stage's.)
            if frag_bits & 0x1fff != 0 {
                others |= bit;
                continue;
            }
            let head = lane.keys[i].head;
            let proto = head as u8;
            let dport = u16::from_be((head >> 48) as u16);
            let Some(si) = t.service4_in(first, count, proto, dport) else {
                if proto == PROTO_ICMP {
                    others |= bit; // an error about a flow, perhaps
                }
                continue;
            };
            let s: Service4 = t.services4[si];
            if !s.ipip4 || (frag_bits != 0 && !s.three_tuple) {
                others |= bit;
                continue;
            }
            let (sport, dport) = if s.three_tuple {
                (0, 0)
            } else {
                (u16::from_be((head >> 32) as u16), dport)
            };
            let hash = lb_hash_v4(lane.src[i], dst, sport, dport, proto);
            self.side.hash[i] = hash;
            self.side.ports[i] = u32::from(sport) | u32::from(dport) << 16;
            self.side.service[i] = si as u16;
            if s.conntrack {
                self.conn.prefetch(hash);
                tracked |= bit;
            } else {
                t.prefetch_maglev(si, hash);
            }
            fast |= bit;
        }
        (fast, tracked, others)
    }

    /// Pass 3 for a packet of pass 1: its backend, then the outer header.
    #[inline(always)]
    fn finish_v4<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        ctx: &StageCtx,
    ) {
        let i = i % BURST_SIZE;
        let si = usize::from(self.side.service[i]);
        let hash = self.side.hash[i];
        let ports = self.side.ports[i];
        let proto = lane.keys[i].head as u8;
        let Some(&s) = t.services4.get(si) else {
            return;
        };
        let closing = if proto == PROTO_TCP {
            tcp_closing(p.data().get(14 + 20 + 13).copied().unwrap_or(0))
        } else {
            0
        };
        let key = ConnKey::v4(
            Ipv4Addr::from(lane.src[i]),
            ports as u16,
            Ipv4Addr::from(lane.dst[i]),
            (ports >> 16) as u16,
            proto,
            s.id,
        );
        let tracked = if s.conntrack {
            self.conn
                .touch_probed_v4(self.side.probe[i], &key, hash, ctx.now)
                .and_then(|e| t.backend4(e.backend).map(|b| (e.backend, b)))
        } else {
            None
        };
        let (id, be) = match tracked {
            Some((id, be)) => {
                let c = &self.counters.services[si];
                c.tracked.add(1);
                if be.drained {
                    c.drained.add(1);
                }
                if closing != 0 {
                    self.conn.mark_closing(&key, hash, ctx.now, closing);
                }
                (id, be)
            }
            // Untracked: the Maglev choice, as `choose` makes it.
            None if !s.conntrack => {
                match t.maglev4(si, hash) {
                    Some(be) => {
                        self.counters.services[si].untracked.add(1);
                        (be.id, be)
                    }
                    // No backend with a weight: the general path counts it.
                    None => {
                        let _ = self.choose_flow(t, si, key, hash, closing, ctx.now);
                        lane.set_verdict(m, i, Verdict::Drop(DropReason::LbNoBackend));
                        return;
                    }
                }
            }
            // New or moved: the general choice and its counters.
            None => {
                let chosen = self.choose_flow(t, si, key, hash, closing, ctx.now);
                match chosen.and_then(|id| t.backend4(id).map(|b| (id, b))) {
                    Some(c) => c,
                    None => {
                        lane.set_verdict(m, i, Verdict::Drop(DropReason::LbNoBackend));
                        return;
                    }
                }
            }
        };
        let fits = p
            .data()
            .get(16..18)
            .is_some_and(|l| u16::from_be_bytes([l[0], l[1]]) <= be.inner_mtu);
        if !fits {
            let b = usize::from(be.index);
            self.too_big(t, p, m, lane, i, si, b, key, hash, ctx);
            return;
        }
        self.counters.backend_packets[id as usize].add(1);
        if !encap_v4_plain(p, be, s.df, hash as u16) {
            lane.set_verdict(m, i, Verdict::Drop(DropReason::TooBig));
            return;
        }
        // Still plain: the outer header is untagged IPv4 without options;
        // the lane holds its fields now, and its source is ours to choose
        // (`Lane::built`).
        lane.built |= 1 << i;
        lane.src[i] = u32::from_be(be.addrs as u32);
        lane.dst[i] = u32::from_be((be.addrs >> 32) as u32);
        lane.keys[i] = FlowKeyV4 {
            head: u64::from(IPPROTO_IPIP),
            addrs: be.addrs,
        };
    }

    /// [`LbState::choose`] for a flow the fast lookup did not settle: the
    /// chosen backend's stable id.
    #[cold]
    #[inline(never)]
    fn choose_flow(
        &mut self,
        t: &LbTables,
        si: usize,
        key: ConnKey,
        hash: u32,
        closing: u8,
        now: u64,
    ) -> Option<u32> {
        let flow = Flow { key, hash, closing };
        let b = self.choose(t, si, &flow, now)?;
        Some(t.services[si].backends[b].stable_id)
    }

    /// A packet too big for its backend's path (or too short to say):
    /// [`LbState::send`]'s verdict and ICMP error.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn too_big<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        si: usize,
        b: usize,
        key: ConnKey,
        hash: u32,
        ctx: &StageCtx,
    ) {
        let flow = Flow {
            key,
            hash,
            closing: 0,
        };
        self.send(t, p, m, lane, i, si, b, &flow, true, ctx);
    }
}
