//! The load balancer's tables: its services (virtual address, protocol,
//! port), each with a Maglev table over its backend pool, as one immutable
//! [`LbTables`] in the table snapshot; and the flow hash every instance
//! computes the same way.
//!
//! What stays the same across reloads, so the workers' connection tables
//! (which outlive every snapshot) stay meaningful:
//! * a service's id ([`ServiceKey::id`]), derived from its key alone;
//! * a backend's *stable id* ([`BackendIds`]): a number the control thread
//!   gives each (service, backend identity) the first time it sees it and
//!   never gives to another. Connection entries store it; a snapshot maps
//!   it back to the backend's index in its service (`None`: removed, the
//!   flow is balanced again). So a reload costs the workers no scan of
//!   their tables (see `ConnTable::retain_backends` for why that matters).
use super::maglev::{Backend as MaglevBackend, BackendId, Maglev, MaglevError};
use super::routing::Routing;
use crate::stats::Counter;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// What a service answers to: a virtual address, a protocol and a
/// destination port (0 = every port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceKey {
    pub vip: IpAddr,
    pub proto: u8,
    pub port: u16,
}

impl ServiceKey {
    /// The service's id in connection keys: FNV-1a 32 over the key's bytes
    /// (family, address, protocol, port big endian), the same in every run.
    pub fn id(&self) -> u32 {
        let mut b = Vec::with_capacity(20);
        match self.vip {
            IpAddr::V4(a) => {
                b.push(4);
                b.extend_from_slice(&a.octets());
            }
            IpAddr::V6(a) => {
                b.push(6);
                b.extend_from_slice(&a.octets());
            }
        }
        b.push(self.proto);
        b.extend_from_slice(&self.port.to_be_bytes());
        b.iter().fold(0x811c_9dc5u32, |h, &x| {
            (h ^ u32::from(x)).wrapping_mul(0x0100_0193)
        })
    }
}

impl std::fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let port = if self.port == 0 {
            "*".to_string()
        } else {
            self.port.to_string()
        };
        match self.vip {
            IpAddr::V4(a) => write!(f, "{a}:{port}/{}", self.proto),
            IpAddr::V6(a) => write!(f, "[{a}]:{port}/{}", self.proto),
        }
    }
}

/// How packets reach a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// IP-in-IP from `source` (same family as the VIP) to the backend.
    Ipip { source: IpAddr },
    /// L2 direct server return (the backend's MAC, on its port).
    Dsr,
}

/// The outer IPv4 header's DF bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DfPolicy {
    #[default]
    Inner,
    Set,
    Clear,
}

/// Fragments to a service: dropped, or every packet of the service hashed
/// without ports so that fragments follow their flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FragPolicy {
    #[default]
    Drop,
    ThreeTuple,
}

/// A backend as configured.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BackendSpec {
    pub addr: IpAddr,
    pub name: Option<String>,
    pub weight: u32,
    /// DSR: its MAC and port index.
    pub mac: Option<[u8; 6]>,
    pub port: Option<u16>,
}

impl BackendSpec {
    pub fn id(&self) -> BackendId {
        BackendId {
            addr: self.addr,
            name: self.name.clone(),
        }
    }
}

/// A service as configured (validated by the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    pub name: String,
    pub key: ServiceKey,
    pub method: Method,
    pub table_size: u32,
    pub conntrack: bool,
    pub df: DfPolicy,
    pub fragments: FragPolicy,
    pub backends: Vec<BackendSpec>,
}

/// The whole `[lb]` section as configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LbSpec {
    pub services: Vec<ServiceSpec>,
    /// Connections each worker tracks.
    pub conntrack_capacity: usize,
    /// Idle timeouts, seconds: TCP, UDP and other, closing TCP.
    pub tcp_timeout_s: u32,
    pub udp_timeout_s: u32,
    pub closing_timeout_s: u32,
    /// ICMP errors per second per worker.
    pub icmp_rate: u32,
}

/// The flow hash of the load balancer: over the 5-tuple (ports 0 for a
/// three-tuple service), from the values, never their memory layout, so
/// that every instance — other machines, other builds — maps a flow to the
/// same Maglev entry: that is what lets several daemons behind ECMP agree
/// on each flow's backend. Each 64-bit word is mixed by a multiply and a
/// rotate, the whole by murmur3's 64-bit finaliser (every input bit
/// reaches every output bit; Maglev reads the high bits, connection tables
/// the low ones).
#[inline(always)]
pub fn lb_hash(words: &[u64]) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0x2545_f491_4f6c_dd1d_u64;
    for &w in words {
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let h = fmix64(h);
    (h >> 32) as u32 ^ h as u32
}

/// The IPv4 flow hash (addresses host order).
#[inline(always)]
pub fn lb_hash_v4(src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> u32 {
    lb_hash(&[
        u64::from(src) << 32 | u64::from(dst),
        u64::from(sport) << 32 | u64::from(dport) << 16 | u64::from(proto) << 8 | 4,
    ])
}

/// The IPv6 flow hash.
#[inline]
pub fn lb_hash_v6(src: u128, dst: u128, sport: u16, dport: u16, proto: u8) -> u32 {
    lb_hash(&[
        (src >> 64) as u64,
        src as u64,
        (dst >> 64) as u64,
        dst as u64,
        u64::from(sport) << 32 | u64::from(dport) << 16 | u64::from(proto) << 8 | 6,
    ])
}

#[inline(always)]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// Stable backend ids (see the module doc): kept by the control thread
/// across reloads, never handing out an id twice.
#[derive(Debug, Default)]
pub struct BackendIds {
    ids: HashMap<(ServiceKey, BackendId), u32>,
}

impl BackendIds {
    /// The id of `backend` in `service`, new if never seen.
    pub fn get(&mut self, service: ServiceKey, backend: BackendId) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry((service, backend)).or_insert(next)
    }

    /// Ids handed out so far (the next one is this).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A backend as the workers read it, in its service's Maglev order.
#[derive(Debug, Clone)]
pub struct BackendEntry {
    pub addr: IpAddr,
    pub weight: u32,
    pub stable_id: u32,
    /// Largest inner packet (L3 bytes) that fits the path to the backend
    /// once encapsulated (IP-in-IP); the path's MTU for DSR.
    pub inner_mtu: u16,
    /// IP-in-IP to an IPv4 backend: the outer header's fixed part.
    pub outer_v4: OuterV4,
    /// DSR: the Ethernet header's first 12 bytes (backend MAC, port MAC)
    /// and the output port.
    pub dsr_l2: [u8; 12],
    pub dsr_port: u16,
    pub label: String,
}

/// A service as the workers read it.
#[derive(Debug)]
pub struct Service {
    pub name: String,
    pub key: ServiceKey,
    /// [`ServiceKey::id`].
    pub id: u32,
    pub method: Method,
    pub conntrack: bool,
    pub df: DfPolicy,
    pub fragments: FragPolicy,
    pub maglev: Maglev,
    /// In Maglev order ([`Maglev::backends`]).
    pub backends: Box<[BackendEntry]>,
}

/// IP protocol number of IPv4 in IP.
pub const IPPROTO_IPIP: u8 = 4;

/// The parts of an outer IPv4 header that stay the same for every packet
/// to one backend: its bytes with TOS, length, identification and flags
/// zero, and their one's-complement sum, so a packet's checksum is that sum
/// plus four words (RFC 1071 is linear) instead of a sum over the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OuterV4 {
    pub header: [u8; 20],
    pub sum: u32,
}

impl OuterV4 {
    /// From `src` to `dst` (host order): version 4, IHL 5, TTL 64,
    /// protocol 4.
    pub fn new(src: u32, dst: u32) -> Self {
        let [s0, s1, s2, s3] = src.to_be_bytes();
        let [d0, d1, d2, d3] = dst.to_be_bytes();
        let header = [
            0x45,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            64,
            IPPROTO_IPIP,
            0,
            0,
            s0,
            s1,
            s2,
            s3,
            d0,
            d1,
            d2,
            d3,
        ];
        OuterV4 {
            header,
            sum: u32::from(crate::wire::checksum::sum(&header)),
        }
    }
}

/// What the plain IPv4 path (`pipeline::lb`'s lane path) reads of a
/// service, in one small record per service (index as in
/// [`LbTables::services`]): the match and the policy bits, so a packet of
/// a tracked flow reads nothing of the larger [`Service`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service4 {
    pub proto: u8,
    /// 0 = every port.
    pub port: u16,
    /// IP-in-IP over IPv4 (a VIP and backends of that family): the only
    /// method the plain path carries out itself; DSR takes the general one.
    pub ipip4: bool,
    pub conntrack: bool,
    /// [`FragPolicy::ThreeTuple`].
    pub three_tuple: bool,
    pub df: DfPolicy,
    /// [`ServiceKey::id`].
    pub id: u32,
    /// Where its backends start in [`LbTables::maglev4`].
    pub first: u32,
}

/// What the plain IPv4 path reads of a backend: 32 bytes, indexed by the
/// backend's stable id ([`LbTables::backends4`]), the id a connection
/// entry holds, so a tracked packet goes from its entry to its backend in
/// one load.
///
/// The outer header (IP-in-IP to an IPv4 backend) is kept as the words a
/// packet's header is written with: bytes 8..16 (TTL, protocol, a zero
/// checksum, source) and the two addresses, each as the native-endian
/// word of its bytes, so that writing it is three stores and a checksum
/// of four added words ([`OuterV4::sum`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct Backend4 {
    /// Outer header bytes 8..16.
    pub ttl_proto_src: u64,
    /// The outer source's bytes in the low half, the destination's in the
    /// high half (as [`crate::flow::FlowKeyV4::addrs`]).
    pub addrs: u64,
    /// [`OuterV4::sum`].
    pub sum: u32,
    /// [`BackendEntry::inner_mtu`].
    pub inner_mtu: u16,
    /// Weight 0: tracked flows stay, new ones go elsewhere.
    pub drained: bool,
    /// In this snapshot: false for an id whose backend was removed (or
    /// belongs to no service now).
    pub live: bool,
    /// Its index in its service's backends.
    pub index: u16,
    /// Its stable id (where [`LbTables::backends4`] keeps it).
    pub id: u32,
}

impl Backend4 {
    /// The record of an id no backend has in this snapshot.
    const GONE: Backend4 = Backend4 {
        ttl_proto_src: 0,
        addrs: 0,
        sum: 0,
        inner_mtu: 0,
        drained: false,
        live: false,
        index: 0,
        id: 0,
    };

    fn new(b: &BackendEntry, index: usize) -> Self {
        Backend4 {
            id: b.stable_id,
            ..Self::with_outer(&b.outer_v4, b.inner_mtu, b.weight == 0, index as u16)
        }
    }

    /// The record of a live backend whose outer header is `outer` (its
    /// `id` left 0: [`Backend4::new`] sets it).
    pub fn with_outer(outer: &OuterV4, inner_mtu: u16, drained: bool, index: u16) -> Self {
        let h = &outer.header;
        let word = |at: usize| u32::from_ne_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        Backend4 {
            ttl_proto_src: u64::from_ne_bytes([
                h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15],
            ]),
            addrs: u64::from(word(12)) | u64::from(word(16)) << 32,
            sum: outer.sum,
            inner_mtu,
            drained,
            live: true,
            index,
            id: 0,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Backend4>() == 32);

/// Marks an unused [`LbTables::slot_of`] entry.
const NO_SLOT: u32 = u32::MAX;

/// One worker's counters of one service.
#[derive(Debug, Default)]
pub struct ServiceCounters {
    /// Packets of a tracked connection.
    pub tracked: Counter,
    /// Connections started tracking.
    pub new_flows: Counter,
    /// Packets balanced by Maglev alone (tracking off, or the table full).
    pub untracked: Counter,
    /// Inserts that found the connection table full.
    pub conntrack_full: Counter,
    /// Packets dropped: no backend with a weight.
    pub no_backend: Counter,
    /// Packets of tracked connections to a drained backend (weight 0).
    pub drained: Counter,
    /// Tracked connections whose backend was removed, balanced again.
    pub moved: Counter,
    /// ICMP errors about a flow of the service, sent to that flow's backend.
    pub icmp_steered: Counter,
    /// Fragments dropped (`fragments = "drop"`).
    pub fragments: Counter,
    /// Packets too big once encapsulated.
    pub too_big: Counter,
}

impl ServiceCounters {
    fn report(&self) -> serde_json::Value {
        serde_json::json!({
            "tracked": self.tracked.get(),
            "new_flows": self.new_flows.get(),
            "untracked": self.untracked.get(),
            "conntrack_full": self.conntrack_full.get(),
            "no_backend": self.no_backend.get(),
            "drained": self.drained.get(),
            "moved": self.moved.get(),
            "icmp_steered": self.icmp_steered.get(),
            "fragments": self.fragments.get(),
            "too_big": self.too_big.get(),
        })
    }
}

/// One worker's load-balancer counters for one snapshot's services.
#[derive(Debug)]
pub struct LbCounters {
    pub services: Box<[ServiceCounters]>,
    /// By backend stable id: packets and new flows.
    pub backend_packets: Box<[Counter]>,
    pub backend_flows: Box<[Counter]>,
}

impl LbCounters {
    fn new(services: usize, backends: usize) -> Self {
        let zero = |n| (0..n).map(|_| Counter::default()).collect();
        LbCounters {
            services: (0..services).map(|_| ServiceCounters::default()).collect(),
            backend_packets: zero(backends),
            backend_flows: zero(backends),
        }
    }
}

/// Why the load balancer's tables were not built.
#[derive(Debug, thiserror::Error)]
pub enum LbError {
    #[error("lb service {service}: {source}")]
    Maglev {
        service: String,
        #[source]
        source: MaglevError,
    },
}

/// Every service, published in the table snapshot (immutable).
#[derive(Debug)]
pub struct LbTables {
    pub services: Box<[Service]>,
    /// IPv4 VIPs: open addressing on the address (0 = free), each slot the
    /// address and the range of `services` with that VIP (sorted so that a
    /// service with a port comes before the VIP's every-port one).
    vip4: Box<[(u32, u16, u16)]>,
    vip4_mask: usize,
    /// IPv6 VIPs (few, and IPv6 is off the fast lane): address and range.
    vip6: Box<[(u128, u16, u16)]>,
    /// Stable backend id -> its index in its service, or [`NO_SLOT`].
    slot_of: Box<[u32]>,
    /// [`Service4`] of each service (as `services`).
    pub services4: Box<[Service4]>,
    /// [`Backend4`] of every backend of every service, by stable id.
    pub backends4: Box<[Backend4]>,
    /// The same records by service, each in Maglev order from its
    /// [`Service4::first`]: an untracked packet goes from its Maglev entry
    /// to its record in one load.
    maglev4: Box<[Backend4]>,
    /// Per worker.
    pub counters: Vec<Arc<LbCounters>>,
    pub spec: LbSpec,
}

impl LbTables {
    /// Builds the services of `spec` for `workers` workers; `routing` gives
    /// the paths' MTUs and the ports' MACs; `ids` the stable backend ids.
    pub fn build(
        spec: &LbSpec,
        routing: &Routing,
        ids: &mut BackendIds,
        workers: usize,
    ) -> Result<LbTables, LbError> {
        let mut specs: Vec<&ServiceSpec> = spec.services.iter().collect();
        // By VIP, a service with a port before the every-port one.
        specs.sort_by_key(|s| (s.key.vip, s.key.proto, s.key.port == 0, s.key.port));
        let mut services = Vec::with_capacity(specs.len());
        for s in specs {
            let maglev = Maglev::new(
                s.table_size,
                s.backends.iter().map(|b| MaglevBackend {
                    id: b.id(),
                    weight: b.weight,
                }),
            )
            .map_err(|source| LbError::Maglev {
                service: s.name.clone(),
                source,
            })?;
            let by_id: HashMap<BackendId, &BackendSpec> =
                s.backends.iter().map(|b| (b.id(), b)).collect();
            let backends: Box<[BackendEntry]> = maglev
                .backends()
                .iter()
                .map(|mb| {
                    let b = by_id[&mb.id];
                    let path_mtu = routing.path_mtu(b.addr).unwrap_or(1500);
                    let overhead = match (s.method, b.addr) {
                        (Method::Dsr, _) => 0,
                        (Method::Ipip { .. }, IpAddr::V4(_)) => 20,
                        (Method::Ipip { .. }, IpAddr::V6(_)) => 40,
                    };
                    let mut dsr_l2 = [0u8; 12];
                    let mut dsr_port = 0;
                    if let (Some(mac), Some(port)) = (b.mac, b.port) {
                        dsr_l2[..6].copy_from_slice(&mac);
                        if let Some(p) = routing.ports.get(usize::from(port)) {
                            dsr_l2[6..].copy_from_slice(&p.mac);
                        }
                        dsr_port = port;
                    }
                    let dsr_mtu = b
                        .port
                        .and_then(|p| routing.ports.get(usize::from(p)))
                        .map(|p| p.mtu);
                    let outer_v4 = match (s.method, b.addr) {
                        (
                            Method::Ipip {
                                source: IpAddr::V4(src),
                            },
                            IpAddr::V4(dst),
                        ) => OuterV4::new(u32::from(src), u32::from(dst)),
                        _ => OuterV4::new(0, 0),
                    };
                    BackendEntry {
                        outer_v4,
                        addr: b.addr,
                        weight: b.weight,
                        stable_id: ids.get(s.key, b.id()),
                        inner_mtu: match s.method {
                            Method::Dsr => dsr_mtu.unwrap_or(path_mtu),
                            Method::Ipip { .. } => path_mtu.saturating_sub(overhead),
                        },
                        dsr_l2,
                        dsr_port,
                        label: mb.id.to_string(),
                    }
                })
                .collect();
            services.push(Service {
                name: s.name.clone(),
                key: s.key,
                id: s.key.id(),
                method: s.method,
                conntrack: s.conntrack,
                df: s.df,
                fragments: s.fragments,
                maglev,
                backends,
            });
        }
        let mut slot_of = vec![NO_SLOT; ids.len()];
        let mut backends4 = vec![Backend4::GONE; ids.len()];
        let mut maglev4 = Vec::new();
        let mut firsts = Vec::with_capacity(services.len());
        for s in &services {
            firsts.push(maglev4.len() as u32);
            for (i, b) in s.backends.iter().enumerate() {
                let record = Backend4::new(b, i);
                slot_of[b.stable_id as usize] = i as u32;
                backends4[b.stable_id as usize] = record;
                maglev4.push(record);
            }
        }
        let services4 = services
            .iter()
            .zip(firsts)
            .map(|(s, first)| Service4 {
                proto: s.key.proto,
                port: s.key.port,
                ipip4: matches!(
                    (s.method, s.key.vip),
                    (
                        Method::Ipip {
                            source: IpAddr::V4(_)
                        },
                        IpAddr::V4(_)
                    )
                ),
                conntrack: s.conntrack,
                three_tuple: s.fragments == FragPolicy::ThreeTuple,
                df: s.df,
                id: s.id,
                first,
            })
            .collect();
        // VIP ranges.
        let mut ranges: Vec<(IpAddr, u16, u16)> = Vec::new();
        for (i, s) in services.iter().enumerate() {
            match ranges.last_mut() {
                Some((vip, _, count)) if *vip == s.key.vip => *count += 1,
                _ => ranges.push((s.key.vip, i as u16, 1)),
            }
        }
        let n4 = ranges.iter().filter(|r| r.0.is_ipv4()).count();
        // At most a quarter full: a lookup rarely probes a second slot.
        let size = (n4 * 4).next_power_of_two().max(8);
        let mut vip4 = vec![(0u32, 0u16, 0u16); size];
        let mut vip6 = Vec::new();
        for (vip, first, count) in ranges {
            match vip {
                IpAddr::V4(a) => {
                    let a = u32::from(a);
                    let mut h = vip4_slot(a, size - 1);
                    while vip4[h].0 != 0 {
                        h = (h + 1) & (size - 1);
                    }
                    vip4[h] = (a, first, count);
                }
                IpAddr::V6(a) => vip6.push((u128::from(a), first, count)),
            }
        }
        Ok(LbTables {
            services: services.into_boxed_slice(),
            vip4: vip4.into_boxed_slice(),
            vip4_mask: size - 1,
            vip6: vip6.into_boxed_slice(),
            slot_of: slot_of.into_boxed_slice(),
            services4,
            backends4: backends4.into_boxed_slice(),
            maglev4: maglev4.into_boxed_slice(),
            counters: (0..workers.max(1))
                .map(|_| Arc::new(LbCounters::new(spec.services.len(), ids.len())))
                .collect(),
            spec: spec.clone(),
        })
    }

    /// The services with IPv4 VIP `dst` (host order), as an index range.
    #[inline(always)]
    pub fn vip4_range(&self, dst: u32) -> Option<(usize, usize)> {
        if dst == 0 {
            return None;
        }
        let mut h = vip4_slot(dst, self.vip4_mask);
        loop {
            let (a, first, count) = self.vip4[h];
            if a == dst {
                return Some((usize::from(first), usize::from(count)));
            }
            if a == 0 {
                return None;
            }
            h = (h + 1) & self.vip4_mask;
        }
    }

    /// The services with IPv6 VIP `dst`.
    #[inline]
    pub fn vip6_range(&self, dst: u128) -> Option<(usize, usize)> {
        self.vip6
            .iter()
            .find(|v| v.0 == dst)
            .map(|&(_, f, c)| (usize::from(f), usize::from(c)))
    }

    /// The service of range `r` for `proto` and destination port `dport`.
    #[inline(always)]
    pub fn service_in(&self, r: (usize, usize), proto: u8, dport: u16) -> Option<usize> {
        let (first, count) = r;
        (first..first + count).find(|&i| {
            let k = &self.services[i].key;
            k.proto == proto && (k.port == dport || k.port == 0)
        })
    }

    /// The service of range `r` for a packet of `proto` to `dport`, and
    /// whether it is certain. A non-first fragment (`nonfirst`) carries no
    /// ports: it belongs to the VIP's one service for `proto` (certain), or
    /// to one of several, which cannot be told (the first, uncertain).
    #[inline]
    pub fn service_of(
        &self,
        r: (usize, usize),
        proto: u8,
        dport: u16,
        nonfirst: bool,
    ) -> Option<(usize, bool)> {
        if !nonfirst {
            return self.service_in(r, proto, dport).map(|s| (s, true));
        }
        let (first, count) = r;
        let mut of_proto = (first..first + count).filter(|&i| self.services[i].key.proto == proto);
        let s = of_proto.next()?;
        Some((s, of_proto.next().is_none()))
    }

    /// The backend index in its service of stable id `id`, if the service
    /// still has it.
    #[inline(always)]
    pub fn slot_of(&self, id: u32) -> Option<usize> {
        match self.slot_of.get(id as usize) {
            Some(&s) if s != NO_SLOT => Some(s as usize),
            _ => None,
        }
    }

    /// The plain path's record of service `si`'s Maglev choice for `hash`
    /// (`None`: no backend has a weight).
    #[inline(always)]
    pub fn maglev4(&self, si: usize, hash: u32) -> Option<&Backend4> {
        let b = self.services.get(si)?.maglev.backend(hash)?;
        let first = self.services4.get(si)?.first as usize;
        self.maglev4.get(first + b)
    }

    /// Hints the CPU to load what [`LbTables::maglev4`] reads first.
    #[inline(always)]
    pub fn prefetch_maglev(&self, si: usize, hash: u32) {
        if let Some(s) = self.services.get(si) {
            s.maglev.prefetch(hash);
        }
    }

    /// The plain path's record of the backend with stable id `id`, if a
    /// service still has it.
    #[inline(always)]
    pub fn backend4(&self, id: u32) -> Option<&Backend4> {
        self.backends4.get(id as usize).filter(|b| b.live)
    }

    /// The first of the services `first..first + count` (a VIP's range)
    /// that takes `proto` to port `dport`, on the plain path's records.
    #[inline(always)]
    pub fn service4_in(&self, first: usize, count: usize, proto: u8, dport: u16) -> Option<usize> {
        let s = self.services4.get(first..first + count)?;
        s.iter()
            .position(|k| k.proto == proto && (k.port == dport || k.port == 0))
            .map(|i| first + i)
    }

    /// Worker `w`'s counters (the last worker's when out of range).
    pub fn counters_for(&self, w: usize) -> Arc<LbCounters> {
        self.counters[w.min(self.counters.len() - 1)].clone()
    }

    /// The report: per service its counters and its backends' packets and
    /// new flows, summed over workers.
    pub fn report(&self) -> serde_json::Value {
        let sum =
            |f: &dyn Fn(&LbCounters) -> u64| -> u64 { self.counters.iter().map(|c| f(c)).sum() };
        let services: Vec<serde_json::Value> = self
            .services
            .iter()
            .enumerate()
            .map(|(si, s)| {
                let parts: Vec<serde_json::Value> = self
                    .counters
                    .iter()
                    .map(|c| c.services[si].report())
                    .collect();
                let backends: Vec<serde_json::Value> = s
                    .backends
                    .iter()
                    .map(|b| {
                        let k = b.stable_id as usize;
                        serde_json::json!({
                            "backend": b.label,
                            "weight": b.weight,
                            "packets": sum(&|c| c.backend_packets[k].get()),
                            "flows": sum(&|c| c.backend_flows[k].get()),
                        })
                    })
                    .collect();
                let mut counters = crate::stats::sum_reports(&parts);
                // Balanced packets: what its backends got (one count a packet).
                let packets: u64 = s
                    .backends
                    .iter()
                    .map(|b| sum(&|c| c.backend_packets[b.stable_id as usize].get()))
                    .sum();
                counters["packets"] = packets.into();
                serde_json::json!({
                    "name": s.name,
                    "service": s.key.to_string(),
                    "table_size": s.maglev.size(),
                    "fingerprint": format!("{:016x}", s.maglev.fingerprint()),
                    "counters": counters,
                    "backends": backends,
                })
            })
            .collect();
        serde_json::json!({ "services": services })
    }

    /// Packets balanced and new flows, summed over services and workers
    /// (the stats line).
    pub fn totals(&self) -> (u64, u64) {
        let mut t = (0, 0);
        for c in &self.counters {
            t.0 += c.backend_packets.iter().map(Counter::get).sum::<u64>();
            t.1 += c.services.iter().map(|s| s.new_flows.get()).sum::<u64>();
        }
        t
    }
}

#[inline(always)]
fn vip4_slot(a: u32, mask: usize) -> usize {
    ((u64::from(a).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fixed_by_the_values() {
        // Pinned: a change here changes every instance's backend choices.
        assert_eq!(
            lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 6),
            lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 6)
        );
        assert_ne!(
            lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 6),
            lb_hash_v4(0x0a00_0001, 0xc612_000a, 1235, 80, 6)
        );
        assert_eq!(lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 6), GOLDEN_V4);
    }

    /// `lb_hash_v4` of the tuple above, as every build must compute it.
    const GOLDEN_V4: u32 = 2_362_595_016;

    #[test]
    fn service_ids_and_backend_ids_are_stable() {
        let k = ServiceKey {
            vip: "198.18.0.10".parse().unwrap(),
            proto: 6,
            port: 80,
        };
        assert_eq!(k.id(), k.id());
        let mut ids = BackendIds::default();
        let a = ids.get(k, BackendId::new("10.0.0.1".parse().unwrap()));
        let b = ids.get(k, BackendId::new("10.0.0.2".parse().unwrap()));
        assert_ne!(a, b);
        assert_eq!(ids.get(k, BackendId::new("10.0.0.1".parse().unwrap())), a);
    }
}
