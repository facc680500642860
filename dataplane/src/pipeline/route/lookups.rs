//! The route stage's lookup queue: the burst's packets sorted out per family
//! (martians dropped, ARP and IPv6 multicast sent to local delivery) and
//! their destinations gathered for one bulk lookup per family.
use super::martians::{v4_martian, v6_martian, Martians};
use crate::burst::{Burst, SlotMask, BURST_SIZE};
use crate::pipeline::local;
use crate::pipeline::parse::FastV4;
use crate::pipeline::{DropReason, Meta, MetaBurst, PacketBuf, StageCtx, Verdict, L3};
use crate::tables::routing::Routing;
use crate::tables::{raw_value, RouteLookup};
use std::net::Ipv6Addr;

/// The burst's packets waiting for a lookup, per family: IPv4 addresses
/// and slots; IPv6 slots (their addresses are gathered from `Meta` only when
/// there are any, to spare v4-only bursts a 512-byte array).
pub(super) struct Lookups {
    pub(super) a4: [u32; BURST_SIZE],
    pub(super) i4: [u8; BURST_SIZE],
    pub(super) n4: usize,
    i6: [u8; BURST_SIZE],
    n6: usize,
}

impl Lookups {
    #[inline(always)]
    pub(super) fn new() -> Self {
        Lookups {
            a4: [0; BURST_SIZE],
            i4: [0; BURST_SIZE],
            n4: 0,
            i6: [0; BURST_SIZE],
            n6: 0,
        }
    }

    #[inline(always)]
    pub(super) fn push_v4(&mut self, dst: u32, i: usize) {
        // At most one push per slot, so `n4 < BURST_SIZE` here: the mask is
        // a no-op that spares two bounds checks (and the compiler's reload
        // of `n4` between the two stores).
        let n = self.n4 % BURST_SIZE;
        self.a4[n] = dst;
        self.i4[n] = i as u8;
        self.n4 = n + 1;
    }

    /// A plain IPv4 packet (slot `i`, header fields `h`, `Meta` not filled)
    /// queued for the lookup; one the router `built` (its addresses
    /// written after the sweep's martian screen) is first checked by
    /// RFC 1812's tables ([`Martians::none`]) and dropped here if martian.
    /// Its bit in the fast-path mask (0 when dropped).
    #[inline(always)]
    pub(super) fn push_plain_v4(
        &mut self,
        built: bool,
        h: FastV4,
        m: &mut Meta,
        i: usize,
        in_port: u16,
    ) -> SlotMask {
        if built {
            if let Some(reason) = v4_martian(Martians::none(), h.src, h.dst) {
                // Decided here: its `Meta` gets what every decided packet's has.
                m.verdict = Verdict::Drop(reason);
                m.in_port = in_port;
                return 0;
            }
        }
        self.push_v4(h.dst, i);
        1 << i
    }

    /// Sorts out one parsed packet: martians and non-IP are decided here,
    /// ARP and IPv6 multicast go to local delivery, the rest wait for the
    /// lookup.
    #[inline(always)]
    pub(super) fn classify<P: PacketBuf>(
        &mut self,
        r: &Routing,
        own: &Martians,
        pkts: &mut Burst<P>,
        m: &mut Meta,
        i: usize,
        ctx: &StageCtx,
    ) {
        if m.verdict != Verdict::Continue {
            return;
        }
        match m.l3 {
            L3::Ipv4 => {
                let dst = m.key.dst_v4();
                if let Some(reason) = v4_martian(own, m.key.src_v4(), dst) {
                    m.verdict = Verdict::Drop(reason);
                } else {
                    self.push_v4(dst, i);
                }
            }
            L3::Ipv6 => {
                let dst = Ipv6Addr::from(m.key.dst);
                if v6_martian(own, Ipv6Addr::from(m.key.src), dst) {
                    m.verdict = Verdict::Drop(DropReason::BadAddress);
                } else if dst.is_multicast() {
                    // Neighbour discovery to solicited-node groups etc.
                    if let Some(p) = pkts.get_mut(i) {
                        m.verdict = local::deliver_v6(p, m, r, ctx);
                    }
                } else {
                    self.i6[self.n6] = i as u8;
                    self.n6 += 1;
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

    /// One bulk IPv6 lookup; `each(slot, value, meta)` in packet order.
    #[inline(always)]
    pub(super) fn lookup_v6(
        &self,
        r: &Routing,
        meta: &mut MetaBurst,
        mut each: impl FnMut(usize, u32, &mut Meta),
    ) {
        if self.n6 == 0 {
            return;
        }
        let mut a6 = [[0u8; 16]; BURST_SIZE];
        for (a, &i) in a6.iter_mut().zip(&self.i6[..self.n6]) {
            *a = meta[usize::from(i)].key.dst;
        }
        let mut res = [0u64; BURST_SIZE];
        r.v6.lookup_raw(&a6[..self.n6], &mut res);
        for (&i, &raw) in self.i6[..self.n6].iter().zip(&res[..self.n6]) {
            let i = usize::from(i);
            each(i, raw_value(raw), &mut meta[i]);
        }
    }
}
