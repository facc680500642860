//! `lb`: the L4 load balancer (Maglev, as in Eisenbud et al., NSDI 2016,
//! and Katran). A packet to a service — virtual address, protocol,
//! destination port — goes to one backend of the service's pool: the one
//! its connection was tracked to (per worker, [`ConnTable`]), else the one
//! the service's Maglev table gives its flow hash ([`lb_hash_v4`]), which
//! every instance computes alike. Then it is encapsulated IP-in-IP to the
//! backend for `route` to forward ([`encap`]), or sent to the backend's MAC
//! as it is (L2 DSR). Every other packet passes untouched.
//!
//! Connection tracking: a flow's first packet inserts it (the Maglev
//! choice); later packets find it and refresh it; a TCP FIN or RST shortens
//! its idle timeout. Entries name a backend by its stable id, which each
//! snapshot maps back to an index (a reload never makes a worker scan its
//! table): a tracked flow keeps its backend while the backend stays in the
//! pool, drained (weight 0) or not; a removed backend's flows are balanced
//! again (`moved`). A full table is counted and the flow goes untracked to
//! the Maglev choice.
//!
//! ICMP errors to a VIP (destination unreachable, packet too big, time
//! exceeded: what routers send about the backends' replies, which leave
//! with the VIP as source) quote a packet of a flow: they are balanced by
//! that flow's reversed tuple, so they reach the flow's backend. Fragments:
//! per service, dropped (`lb_fragment`), or every packet of the service is
//! hashed without ports (`fragments = "three_tuple"`); a later fragment,
//! which has no ports, belongs to its VIP's one service for its protocol
//! (with several, it is dropped: which one cannot be told). A packet from a
//! source `route` would not forward from is left to `route` to drop.
//!
//! A packet that does not fit the path to its backend once encapsulated is
//! dropped as `too_big`; with DF set (always for IPv6) its buffer becomes an
//! ICMP fragmentation-needed / packet-too-big to the client, from the VIP,
//! rate-limited, which `route` then forwards.
//!
//! On the fast lane a plain IPv4 packet is read from the lane (its key
//! holds the ports) and stays plain after encapsulation: its lane fields
//! become the outer header's, so `route` forwards it on its fast path.
//!
//! Meta: reads `verdict`, `l3`, `l3_off`, `l4_off`, `key`, `flags`; sets
//! `verdict` (DSR: `Tx`, drops), and rewrites the whole `Meta` of a packet
//! it encapsulates (parsed again: the outer header).
mod encap;
pub mod icmp;
mod plain;

use super::parse::{fragment_v4, fragment_v6};
use super::route::martians::{v4_martian, v6_martian, v6_scope_martian, Martians};
use super::tx::FastTx;
use super::{
    DropReason, FlowKeyV4, Lane, Meta, MetaBurst, PacketBuf, StageCounters, StageCtx, StageOps,
    StageSpec, TablesReport, Verdict, L3,
};
use crate::burst::Burst;
use crate::pipeline::local::IcmpLimiter;
use crate::pipeline::meta::flags as meta_flags;
use crate::tables::conntrack::{flags as ct_flags, ConnKey, ConnTable, Timeouts};
use crate::tables::lb::{lb_hash_v4, lb_hash_v6, FragPolicy, LbCounters, LbTables, Method};
use crate::tables::set::TableSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

pub use encap::{encap_v4, encap_v6};

const PROTO_TCP: u8 = 6;
const PROTO_ICMP: u8 = 1;
const PROTO_ICMPV6: u8 = 58;

pub struct LbStage {
    tables: Arc<LbTables>,
    worker: usize,
    /// The TSC rate the table's timeouts were converted with.
    hz: u64,
    /// Connection-table occupancy, published once a burst for the report.
    occupancy: Arc<LbWorkerCounters>,
    /// What deciding a burst changes. Apart from `tables` so that the
    /// per-packet code borrows the tables and its state side by side (no
    /// reference count taken per burst: the tables' count is shared with
    /// every other worker).
    st: LbState,
}

/// The stage's state that packets change.
struct LbState {
    counters: Arc<LbCounters>,
    /// This worker's connections: learned state, kept across rebinds.
    conn: ConnTable,
    limiter: IcmpLimiter,
    /// The plain path's per-packet scratch ([`plain::Side`]).
    side: plain::Side,
    /// The route tables' sources that cannot be true, to leave such
    /// packets to `route` ([`martian_source`]).
    own: Arc<Martians>,
}

/// What the stage itself reports (its tables' counters are the snapshot's).
#[derive(Debug, Default)]
pub struct LbWorkerCounters {
    pub conntrack_entries: crate::stats::Counter,
    pub conntrack_capacity: crate::stats::Counter,
}

impl StageCounters for LbWorkerCounters {
    fn report(&self) -> serde_json::Value {
        serde_json::json!({
            "conntrack": {
                "entries": self.conntrack_entries.get(),
                "capacity": self.conntrack_capacity.get(),
            }
        })
    }
}

/// A flow as the balancer sees it.
struct Flow {
    key: ConnKey,
    hash: u32,
    /// FIN/RST seen in this packet ([`ct_flags`]).
    closing: u8,
}

impl LbStage {
    /// Worker `worker`'s stage over `tables`, tracking up to
    /// `tables.spec.conntrack_capacity` connections (allocated here, on the
    /// control thread); `own`: the route tables' sources that cannot be
    /// true ([`crate::tables::routing::Routing::martians`]).
    pub fn new(tables: Arc<LbTables>, own: Arc<Martians>, worker: usize) -> Result<Self, String> {
        let spec = &tables.spec;
        let conn = ConnTable::new(spec.conntrack_capacity, timeouts(spec, 0))
            .map_err(|e| e.to_string())?;
        let occupancy = Arc::new(LbWorkerCounters::default());
        occupancy.conntrack_capacity.set(conn.capacity() as u64);
        Ok(LbStage {
            st: LbState {
                counters: tables.counters_for(worker),
                limiter: IcmpLimiter::new(spec.icmp_rate, spec.icmp_rate.clamp(1, 100)),
                conn,
                side: plain::Side::default(),
                own,
            },
            tables,
            worker,
            hz: 0,
            occupancy,
        })
    }

    /// The connection table (tests).
    pub fn conn(&self) -> &ConnTable {
        &self.st.conn
    }

    /// Takes newly published services (at a burst boundary). The
    /// connection table stays; the timeouts follow the new config.
    pub fn rebind_lb(&mut self, tables: &Arc<LbTables>) {
        if Arc::ptr_eq(&self.tables, tables) {
            return;
        }
        let rate = tables.spec.icmp_rate;
        if rate != self.tables.spec.icmp_rate {
            self.st.limiter = IcmpLimiter::new(rate, rate.clamp(1, 100));
        }
        self.tables = tables.clone();
        self.st.counters = tables.counters_for(self.worker);
        self.hz = 0; // timeouts converted again on the next burst
    }
}

/// The config's timeouts in ticks of a `hz` clock.
fn timeouts(spec: &crate::tables::lb::LbSpec, hz: u64) -> Timeouts {
    Timeouts {
        tcp: u64::from(spec.tcp_timeout_s) * hz,
        udp: u64::from(spec.udp_timeout_s) * hz,
        closing: u64::from(spec.closing_timeout_s) * hz,
    }
}

impl StageOps for LbStage {
    const SPEC: StageSpec = StageSpec {
        name: "lb",
        section: Some("lb"),
        forwards: false,
        needs_later_forwarder: true,
        needs_headers: true,
        headerless: false,
        // Learned state (the connection tables), sized once.
        restart: crate::pipeline::RestartKeys::Keys(&["conntrack_capacity"]),
    };

    fn build(b: &crate::pipeline::StageBuild) -> Self {
        let lb = b
            .tables
            .lb
            .clone()
            .expect("lb tables built for an lb stage");
        // `check` puts `route` after `lb`: its tables are there.
        let own = b
            .tables
            .routing
            .as_ref()
            .map(|r| r.martians.clone())
            .unwrap_or_default();
        LbStage::new(lb, own, b.worker).expect("connection table size checked by the config")
    }

    #[inline(always)]
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        _tx: &mut F,
    ) {
        if self.tables.services.is_empty() {
            return;
        }
        if self.hz != ctx.tsc_hz {
            self.hz = ctx.tsc_hz;
            self.st
                .conn
                .set_timeouts(timeouts(&self.tables.spec, ctx.tsc_hz));
        }
        self.st.run_burst(&self.tables, pkts, meta, lane, ctx);
        self.occupancy
            .conntrack_entries
            .set(self.st.conn.occupancy() as u64);
    }

    fn rebind(&mut self, set: &TableSet, _worker: usize) {
        if let Some(t) = &set.lb {
            self.rebind_lb(t);
        }
        if let Some(r) = &set.routing {
            if !Arc::ptr_eq(&self.st.own, &r.martians) {
                self.st.own = r.martians.clone();
            }
        }
    }

    fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        Some(self.occupancy.clone())
    }

    fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        Some(&LbTablesReport)
    }
}

/// The services' counters (they live in the set: new services, new
/// counters) for the report, and the balancer's part of the stats line.
struct LbTablesReport;

impl TablesReport for LbTablesReport {
    fn report(&self, set: &TableSet) -> Option<serde_json::Value> {
        set.lb.as_ref().map(|l| l.report())
    }

    /// Packets balanced, new flows, and tracked connections over all
    /// workers.
    fn stats_line(&self, set: &TableSet, workers: &[Arc<dyn StageCounters>], out: &mut String) {
        use std::fmt::Write;
        let Some(lb) = &set.lb else {
            return;
        };
        let (packets, flows) = lb.totals();
        let entries: u64 = workers
            .iter()
            .map(|c| c.report()["conntrack"]["entries"].as_u64().unwrap_or(0))
            .sum();
        let _ = write!(
            out,
            " lb_packets={packets} lb_new_flows={flows} conntrack={entries}"
        );
    }
}

impl LbState {
    /// A plain IPv4 packet to a VIP that the lane's passes leave to the
    /// general code (an ICMP error, a fragment the service drops, DSR): the
    /// services of range `r`. Out of line, as the rest of the slow path.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn plain_v4<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        r: (usize, usize),
        ctx: &StageCtx,
    ) {
        let k = lane.keys[i];
        let (src, dst) = (lane.src[i], lane.dst[i]);
        if v4_martian(&self.own, src, dst).is_some() {
            return; // `route` drops it (`bad_address`)
        }
        let proto = k.head as u8;
        let sport = u16::from_be((k.head >> 32) as u16);
        let dport = u16::from_be((k.head >> 48) as u16);
        let data = p.data();
        // MF and the offset: a plain frame holds the whole header.
        let frag_bits = u16::from_be_bytes([data[20], data[21]]) & 0x3fff;
        let Some((si, sure)) = t.service_of(r, proto, dport, frag_bits & 0x1fff != 0) else {
            if proto == PROTO_ICMP {
                lane.materialize_meta(p, m, i);
                self.icmp_error(t, p, m, lane, i, ctx);
            }
            return;
        };
        let s = &t.services[si];
        let Some((sport, dport)) = fragment_ports(s.fragments, sure, frag_bits != 0, sport, dport)
        else {
            self.counters.services[si].fragments.add(1);
            lane.decide(m, i, Verdict::Drop(DropReason::LbFragment));
            return;
        };
        let closing = if proto == PROTO_TCP {
            tcp_closing(data.get(14 + 20 + 13).copied().unwrap_or(0))
        } else {
            0
        };
        let flow = Flow {
            key: ConnKey::v4(
                Ipv4Addr::from(src),
                sport,
                Ipv4Addr::from(dst),
                dport,
                proto,
                s.id,
            ),
            hash: lb_hash_v4(src, dst, sport, dport, proto),
            closing,
        };
        let Some(b) = self.choose(t, si, &flow, ctx.now) else {
            lane.decide(m, i, Verdict::Drop(DropReason::LbNoBackend));
            return;
        };
        self.send(t, p, m, lane, i, si, b, &flow, true, ctx);
    }

    /// Any other IPv4 or IPv6 packet (its `Meta` parsed).
    #[inline(never)]
    fn general<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        ctx: &StageCtx,
    ) {
        let v6 = m.l3 == L3::Ipv6;
        let r = if v6 {
            t.vip6_range(u128::from_be_bytes(m.key.dst))
        } else {
            t.vip4_range(m.key.dst_v4())
        };
        let Some(r) = r else { return };
        // What `route` drops: unicast IP in a link-layer broadcast or
        // multicast frame (`l2_multicast`), a martian source (`bad_address`).
        if m.flags & meta_flags::L2_MULTICAST != 0 || martian_source(&self.own, m, v6) {
            return;
        }
        let proto = m.key.proto;
        let nonfirst = m.flags & meta_flags::FRAGMENT != 0;
        let Some((si, sure)) = t.service_of(r, proto, m.key.dport(), nonfirst) else {
            if proto == PROTO_ICMP || proto == PROTO_ICMPV6 {
                self.icmp_error(t, p, m, lane, i, ctx);
            }
            return;
        };
        let s = &t.services[si];
        let frag = nonfirst
            || if v6 {
                fragment_v6(p.data(), m)
            } else {
                fragment_v4(p.data(), m)
            };
        let Some((sport, dport)) =
            fragment_ports(s.fragments, sure, frag, m.key.sport(), m.key.dport())
        else {
            self.counters.services[si].fragments.add(1);
            m.verdict = Verdict::Drop(DropReason::LbFragment);
            return;
        };
        let closing = if proto == PROTO_TCP && m.l4_off != 0 {
            tcp_closing(
                p.data()
                    .get(usize::from(m.l4_off) + 13)
                    .copied()
                    .unwrap_or(0),
            )
        } else {
            0
        };
        let flow = flow_of(&m.key, v6, sport, dport, s.id, closing);
        let Some(b) = self.choose(t, si, &flow, ctx.now) else {
            m.verdict = Verdict::Drop(DropReason::LbNoBackend);
            return;
        };
        self.send(t, p, m, lane, i, si, b, &flow, false, ctx);
    }

    /// An ICMP error to a VIP: balanced as the flow it quotes (reversed).
    #[cold]
    #[inline(never)]
    fn icmp_error<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        ctx: &StageCtx,
    ) {
        let v6 = m.l3 == L3::Ipv6;
        let Some(q) = icmp::quoted_flow(p.data(), m, v6) else {
            return;
        };
        // The quoted packet left the service: VIP and service port as source.
        let r = if v6 {
            t.vip6_range(q.src)
        } else {
            t.vip4_range(q.src as u32)
        };
        let Some(si) = r.and_then(|r| t.service_in(r, q.proto, q.sport)) else {
            return;
        };
        let s = &t.services[si];
        let (cport, vport) = match s.fragments {
            FragPolicy::ThreeTuple => (0, 0),
            FragPolicy::Drop => (q.dport, q.sport),
        };
        let key = if v6 {
            ConnKey::v6(
                Ipv6Addr::from(q.dst),
                cport,
                Ipv6Addr::from(q.src),
                vport,
                q.proto,
                s.id,
            )
        } else {
            ConnKey::v4(
                Ipv4Addr::from(q.dst as u32),
                cport,
                Ipv4Addr::from(q.src as u32),
                vport,
                q.proto,
                s.id,
            )
        };
        let hash = if v6 {
            lb_hash_v6(q.dst, q.src, cport, vport, q.proto)
        } else {
            lb_hash_v4(q.dst as u32, q.src as u32, cport, vport, q.proto)
        };
        // Looked up, never inserted: an error does not start a connection.
        let tracked = if s.conntrack {
            self.conn
                .lookup(&key, hash, ctx.now)
                .and_then(|e| t.slot_of(e.backend))
        } else {
            None
        };
        let Some(b) = tracked.or_else(|| s.maglev.backend(hash)) else {
            return;
        };
        self.counters.services[si].icmp_steered.add(1);
        let flow = Flow {
            key,
            hash,
            closing: 0,
        };
        self.send(t, p, m, lane, i, si, b, &flow, false, ctx);
    }

    /// The backend for `flow` of service `si`: tracked, else Maglev's
    /// (and tracked from now on). `None`: no backend has a weight.
    #[inline(always)]
    fn choose(&mut self, t: &LbTables, si: usize, flow: &Flow, now: u64) -> Option<usize> {
        let s = &t.services[si];
        let c = &*self.counters;
        let sc = &c.services[si];
        if !s.conntrack {
            let b = s.maglev.backend(flow.hash);
            if b.is_none() {
                sc.no_backend.add(1);
            } else {
                sc.untracked.add(1);
            }
            return b;
        }
        if let Some(e) = self.conn.touch(&flow.key, flow.hash, now) {
            if let Some(b) = t.slot_of(e.backend) {
                sc.tracked.add(1);
                if s.backends[b].weight == 0 {
                    sc.drained.add(1);
                }
                if flow.closing != 0 {
                    self.conn
                        .mark_closing(&flow.key, flow.hash, now, flow.closing);
                }
                return Some(b);
            }
            // Its backend left the pool: balanced again below.
            sc.moved.add(1);
        }
        let Some(b) = s.maglev.backend(flow.hash) else {
            sc.no_backend.add(1);
            return None;
        };
        match self
            .conn
            .insert(&flow.key, flow.hash, s.backends[b].stable_id, now)
        {
            Ok(()) => {
                sc.new_flows.add(1);
                c.backend_flows[s.backends[b].stable_id as usize].add(1);
                if flow.closing != 0 {
                    self.conn
                        .mark_closing(&flow.key, flow.hash, now, flow.closing);
                }
            }
            Err(_) => {
                sc.conntrack_full.add(1);
                sc.untracked.add(1);
            }
        }
        Some(b)
    }

    /// Hands the packet to backend `b` of service `si`: encapsulated for
    /// `route`, or (DSR) decided here.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn send<P: PacketBuf>(
        &mut self,
        t: &LbTables,
        p: &mut P,
        m: &mut Meta,
        lane: &mut Lane,
        i: usize,
        si: usize,
        b: usize,
        flow: &Flow,
        plain: bool,
        ctx: &StageCtx,
    ) {
        let s = &t.services[si];
        let be = &s.backends[b];
        let c = &*self.counters;
        let l3 = if plain { 14 } else { usize::from(m.l3_off) };
        let v6 = !plain && m.l3 == L3::Ipv6;
        let data = p.data();
        let Some(len) = l3_len(data, l3, v6) else {
            lane.set_verdict(m, i, Verdict::Drop(DropReason::Truncated));
            return;
        };
        if len > usize::from(be.inner_mtu) {
            c.services[si].too_big.add(1);
            let df = v6 || data[l3 + 6] & 0x40 != 0;
            if plain {
                lane.materialize_meta(p, m, i);
            }
            // Without DF an IPv4 packet would have to be fragmented, which
            // the data path does not do (as `route`: `too_big_no_df`).
            m.verdict = if df {
                icmp::too_big(p, m, lane, be.inner_mtu, &mut self.limiter, ctx)
            } else {
                Verdict::Drop(DropReason::TooBigNoDf)
            };
            return;
        }
        c.backend_packets[be.stable_id as usize].add(1);
        match (s.method, be.addr) {
            (Method::Dsr, _) => {
                let d = p.data_mut();
                d[..12].copy_from_slice(&be.dsr_l2);
                lane.set_verdict(m, i, Verdict::Tx(be.dsr_port));
            }
            (
                Method::Ipip {
                    source: IpAddr::V4(src),
                },
                IpAddr::V4(dst),
            ) => {
                let (src, dst) = (u32::from(src), u32::from(dst));
                if !encap_v4(p, l3, &be.outer_v4, s.df, flow.hash as u16) {
                    lane.set_verdict(m, i, Verdict::Drop(DropReason::TooBig));
                    return;
                }
                // Its outer source is ours to choose (`Lane::built`).
                lane.built |= 1 << i;
                if plain {
                    // Still plain: the outer header is untagged IPv4
                    // without options; the lane holds its fields now.
                    lane.src[i] = src;
                    lane.dst[i] = dst;
                    lane.keys[i] = FlowKeyV4 {
                        head: 4,
                        addrs: u64::from(src.swap_bytes()) | u64::from(dst.swap_bytes()) << 32,
                    };
                } else {
                    reparse(p, m, lane);
                }
            }
            (
                Method::Ipip {
                    source: IpAddr::V6(src),
                },
                IpAddr::V6(dst),
            ) => {
                if !encap_v6(p, l3, src, dst, flow.hash) {
                    lane.set_verdict(m, i, Verdict::Drop(DropReason::TooBig));
                    return;
                }
                lane.built |= 1 << i;
                reparse(p, m, lane);
            }
            // The config refuses mixed families.
            _ => lane.set_verdict(m, i, Verdict::Drop(DropReason::Unsupported)),
        }
    }
}

/// Parses an encapsulated packet again: its `Meta` describes the outer
/// header from now on (verdict and input port kept).
fn reparse<P: PacketBuf>(p: &P, m: &mut Meta, lane: &Lane) {
    let (verdict, in_port) = (m.verdict, m.in_port);
    let r = lane.parse.parse_one(p.data(), m);
    m.in_port = in_port;
    m.verdict = match r {
        Ok(()) => verdict,
        Err(reason) => Verdict::Drop(reason),
    };
}

/// The L3 length of the packet at `l3` (IPv4 total length, IPv6 40 +
/// payload length).
#[inline(always)]
fn l3_len(data: &[u8], l3: usize, v6: bool) -> Option<usize> {
    if v6 {
        let h = data.get(l3 + 4..l3 + 6)?;
        Some(40 + usize::from(u16::from_be_bytes([h[0], h[1]])))
    } else {
        let h = data.get(l3 + 2..l3 + 4)?;
        Some(usize::from(u16::from_be_bytes([h[0], h[1]])))
    }
}

/// A TCP flags byte's FIN/RST as connection-table flags.
#[inline(always)]
fn tcp_closing(flags: u8) -> u8 {
    (if flags & 0x01 != 0 { ct_flags::FIN } else { 0 })
        | (if flags & 0x04 != 0 { ct_flags::RST } else { 0 })
}

/// The ports a packet of a service with fragment policy `policy` is
/// balanced by, or `None` when it is dropped as `lb_fragment`: with
/// `three_tuple` every packet by none (so a datagram's fragments follow
/// its flow), unless it is a non-first fragment whose service is not
/// `sure` (`LbTables::service_of`); with `drop` every fragment, first or
/// later, is dropped.
#[inline(always)]
fn fragment_ports(
    policy: FragPolicy,
    sure: bool,
    fragment: bool,
    sport: u16,
    dport: u16,
) -> Option<(u16, u16)> {
    match policy {
        FragPolicy::ThreeTuple if sure => Some((0, 0)),
        _ if fragment => None,
        _ => Some((sport, dport)),
    }
}

/// A source `route` would refuse to forward from (`bad_address`; `own`:
/// the route tables' sources that cannot be true): the lb leaves such a
/// packet to it rather than hand it to a backend.
fn martian_source(own: &Martians, m: &Meta, v6: bool) -> bool {
    if v6 {
        v6_martian(own, Ipv6Addr::from(m.key.src), Ipv6Addr::from(m.key.dst))
            || v6_scope_martian(&m.key.src, &m.key.dst)
    } else {
        v4_martian(own, m.key.src_v4(), m.key.dst_v4()).is_some()
    }
}

fn flow_of(
    k: &crate::flow::FlowKey,
    v6: bool,
    sport: u16,
    dport: u16,
    service: u32,
    closing: u8,
) -> Flow {
    if v6 {
        let (s, d) = (u128::from_be_bytes(k.src), u128::from_be_bytes(k.dst));
        Flow {
            key: ConnKey::v6(
                Ipv6Addr::from(s),
                sport,
                Ipv6Addr::from(d),
                dport,
                k.proto,
                service,
            ),
            hash: lb_hash_v6(s, d, sport, dport, k.proto),
            closing,
        }
    } else {
        let (s, d) = (k.src_v4(), k.dst_v4());
        Flow {
            key: ConnKey::v4(
                Ipv4Addr::from(s),
                sport,
                Ipv4Addr::from(d),
                dport,
                k.proto,
                service,
            ),
            hash: lb_hash_v4(s, d, sport, dport, k.proto),
            closing,
        }
    }
}
