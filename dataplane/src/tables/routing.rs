//! The router's forwarding state: IPv4/IPv6 LPM tables whose values are
//! next-hop ids (or ECMP group ids), the next-hop table, the neighbour cache
//! and each port's own addresses.
//!
//! Built from the config on the control thread (at start and on every
//! reload) and then shared read-only (`Arc`, inside a
//! [`TableSet`](super::set::TableSet)), except two kinds of slow-path writes
//! that are safe under concurrent readers: neighbour learning (rte_hash or
//! the Rust map, both with lock-free readers) and each gateway next hop's cached MAC (an
//! `AtomicU64`). The neighbour table is not part of the build: it is handed
//! in, outlives every `Routing` built over it, and so keeps what was learned
//! across reloads; a new `Routing` fills its gateways' MACs from it.
//!
//! Every route ends in a next hop: `Gateway` (send to a router's MAC),
//! `Connected` (the destination itself is the neighbour: look it up in the
//! cache), `Local` (one of our addresses: answer it) or `Broadcast` (a
//! connected subnet's broadcast address: dropped). Our own addresses are
//! /32 and /128 routes to `Local` next hops and each connected IPv4
//! subnet's broadcast address (prefixes up to /30; /31 and /32 have none,
//! RFC 3021) a /32 to a `Broadcast` one, so the data path finds them with
//! the same bulk lookup as everything else and the plain lane pays nothing
//! for them (they are not gateways, so they leave its fast path).
use super::martians::Martians;
use super::neighbor::{self, NeighborKey, NeighborState, NeighborTable};
use super::prefix::{mask4, mask6};
use super::route::{Route4, Route6, RouteConfig, RouteTable};
use super::Prefix;
use crate::dpdk::DpdkError;
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// LPM values with this bit set name an ECMP group, not a next hop.
pub const GROUP_FLAG: u32 = 1 << 20;
/// Most next hops (and most groups).
pub const MAX_NEXTHOPS: u32 = GROUP_FLAG - 1;
// Every LPM value (next hop or group) is below a raw lookup's misses.
const _: () = assert!(2 * GROUP_FLAG as u64 <= super::route::RAW_MISS_FLOOR);

const MAC_VALID: u64 = 1 << 63;
/// Set with `MAC_VALID` on a next hop whose `fast_path` is
/// `SoftwareChecksum`: [`NextHop::fast_l2_words`] tests both in one compare.
const MAC_FAST_SOFTWARE: u64 = 1 << 62;

/// A port's link-layer and network identity.
#[derive(Debug, Clone)]
pub struct PortAddrs {
    pub mac: [u8; 6],
    pub v4: Vec<(Ipv4Addr, u8)>,
    pub v6: Vec<(Ipv6Addr, u8)>,
    /// Largest IP packet (L3 bytes) the port sends.
    pub mtu: u16,
    /// The port fills in IPv4 header checksums on transmit (its
    /// `RTE_ETH_TX_OFFLOAD_IPV4_CKSUM` is enabled).
    pub ipv4_checksum_offload: bool,
}

impl PortAddrs {
    pub fn has_v4(&self, a: Ipv4Addr) -> bool {
        self.v4.iter().any(|(x, _)| *x == a)
    }
    pub fn has_v6(&self, a: Ipv6Addr) -> bool {
        self.v6.iter().any(|(x, _)| *x == a)
    }
    /// Whether `a` is the broadcast address of one of the port's IPv4
    /// subnets (prefixes up to /30).
    pub fn is_broadcast_v4(&self, a: Ipv4Addr) -> bool {
        self.v4
            .iter()
            .any(|&(x, l)| subnet_broadcast(x, l) == Some(a))
    }
    /// Whether `a` is inside one of the port's IPv4 subnets.
    pub fn on_link_v4(&self, a: Ipv4Addr) -> bool {
        self.v4
            .iter()
            .any(|&(x, l)| mask4(u32::from(x), l) == mask4(u32::from(a), l))
    }
    pub fn on_link_v6(&self, a: Ipv6Addr) -> bool {
        self.v6
            .iter()
            .any(|&(x, l)| mask6(x.octets(), l) == mask6(a.octets(), l))
    }
    /// The port's first IPv4 address: source of ARP requests and ICMP errors.
    pub fn primary_v4(&self) -> Option<Ipv4Addr> {
        self.v4.first().map(|(a, _)| *a)
    }
    pub fn primary_v6(&self) -> Option<Ipv6Addr> {
        self.v6.first().map(|(a, _)| *a)
    }
}

/// Whether `mac` can be a station's: unicast (group bit clear) and not zero.
pub fn usable_neighbor_mac(mac: [u8; 6]) -> bool {
    mac[0] & 1 == 0 && mac != [0; 6]
}

/// The broadcast address of `addr/len`'s subnet: none for /31 and /32
/// (point-to-point links, RFC 3021).
pub fn subnet_broadcast(addr: Ipv4Addr, len: u8) -> Option<Ipv4Addr> {
    (len <= 30).then(|| Ipv4Addr::from(u32::from(addr) | (u32::MAX >> len)))
}

/// Where a route sends packets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RouteTarget {
    /// Through one or more routers (several = ECMP), each `(address, port)`.
    Via(Vec<(IpAddr, u16)>),
    /// Directly connected on a port.
    Port(u16),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteSpec {
    pub prefix: Prefix,
    pub target: RouteTarget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NhKind {
    Gateway(IpAddr),
    Connected,
    Local,
    /// A connected subnet's broadcast address: never forwarded, answered
    /// or resolved (`broadcast`).
    Broadcast,
}

/// Whether the route stage's lane fast path may forward through a next hop,
/// and how the IPv4 header checksum is kept right there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastPath {
    /// Not a gateway: the general path (neighbour lookup, local delivery).
    No,
    /// A gateway on a port without checksum offload: incremental update.
    SoftwareChecksum,
    /// A gateway on a port that fills in the checksum itself.
    OffloadedChecksum,
}

/// One next hop. `mac` caches a gateway's resolved MAC (bit 63 = valid).
#[derive(Debug)]
pub struct NextHop {
    pub port: u16,
    pub kind: NhKind,
    /// The output port's MAC and MTU, copied here so forwarding reads one
    /// record per packet.
    pub port_mac: [u8; 6],
    pub mtu: u16,
    /// The output port computes IPv4 header checksums: forwarding leaves the
    /// field to it (`PacketBuf::request_ipv4_checksum`).
    pub ipv4_checksum_offload: bool,
    /// `kind` and `ipv4_checksum_offload` as the lane fast path reads
    /// them: one byte compare per packet instead of two tests.
    pub fast_path: FastPath,
    /// The gateway's MAC, bytes in wire order from the low byte up, and
    /// `MAC_VALID` once resolved.
    mac: AtomicU64,
    /// `port_mac`'s first two bytes at bytes 6 and 7 (wire order from the low
    /// byte), and its last four: with the gateway's MAC, an Ethernet
    /// header's first 12 bytes as two stores ([`NextHop::l2_words`]).
    src_head: u64,
    src_tail: u32,
}

impl NextHop {
    /// The gateway's MAC when resolved.
    #[inline(always)]
    pub fn mac(&self) -> Option<[u8; 6]> {
        let v = self.mac.load(Ordering::Relaxed);
        (v & MAC_VALID != 0).then(|| {
            let b = v.to_le_bytes();
            [b[0], b[1], b[2], b[3], b[4], b[5]]
        })
    }

    /// When the gateway's MAC is known, the first 12 bytes of the Ethernet
    /// header toward it (destination = gateway, source = port) as
    /// little-endian words for bytes 0..8 and 8..12: the fast path's two
    /// stores instead of twelve byte moves.
    #[inline(always)]
    pub fn l2_words(&self) -> Option<(u64, u32)> {
        let v = self.mac.load(Ordering::Relaxed);
        (v & MAC_VALID != 0).then(|| self.l2_words_of(v))
    }

    /// [`NextHop::l2_words`] when this next hop is a resolved gateway on a
    /// port without IPv4 checksum offload (`FastPath::SoftwareChecksum`),
    /// else `None`: the lane fast path's one load and one compare.
    #[inline(always)]
    pub fn fast_l2_words(&self) -> Option<(u64, u32)> {
        let v = self.mac.load(Ordering::Relaxed);
        (v >> 62 == (MAC_VALID | MAC_FAST_SOFTWARE) >> 62).then(|| self.l2_words_of(v))
    }

    /// The two words of [`NextHop::l2_words`] from a value of `mac`.
    #[inline(always)]
    fn l2_words_of(&self, mac: u64) -> (u64, u32) {
        ((mac & 0xffff_ffff_ffff) | self.src_head, self.src_tail)
    }

    fn set_mac(&self, m: [u8; 6]) {
        let v = u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
        let fast = if self.fast_path == FastPath::SoftwareChecksum {
            MAC_FAST_SOFTWARE
        } else {
            0
        };
        self.mac.store(v | MAC_VALID | fast, Ordering::Relaxed);
    }
}

/// Table sizes for stats.
#[derive(Debug, Clone, Default)]
pub struct RoutingStats {
    pub routes_v4: usize,
    pub routes_v6: usize,
    pub nexthops: usize,
    pub groups: usize,
    pub neighbors: usize,
    /// Neighbours not learned because the cache was full.
    pub neighbor_learn_failures: u64,
    pub memory_bytes: usize,
}

pub struct Routing {
    pub v4: Route4,
    pub v6: Route6,
    nexthops: Vec<NextHop>,
    groups: Vec<Box<[u32]>>,
    /// Learned state, shared with every other `Routing` built over it.
    pub neighbors: Arc<NeighborTable>,
    pub ports: Vec<PortAddrs>,
    /// Next hops that use a neighbour as their gateway: learning one MAC
    /// updates them all.
    gateways: HashMap<NeighborKey, Vec<u32>>,
    /// The config's static neighbours: what ARP and NDP say never replaces
    /// them (as Linux's permanent entries).
    static_neighbors: HashSet<NeighborKey>,
    /// The martian checks' tables: RFC 1812's, and the sources no received
    /// packet can truly have (our addresses, our subnets' broadcasts),
    /// built from `ports`. The route stage drops such packets, and `lb`
    /// leaves them to it.
    pub martians: Arc<Martians>,
    /// The IPv4 table's DIR-24-8 lines (64 bytes, 16 `tbl24` entries) its
    /// routes cover, summed over the routes (overlapping ones count
    /// twice) and capped at the whole `tbl24`: at most how many distinct
    /// lines lookups can touch.
    v4_lines: u32,
}

/// `tbl24` lines of 64 bytes: 16 four-byte entries, 2^20 in all.
const TBL24_LINES: u32 = 1 << 20;

/// From this many lines ([`Routing::v4_table_is_large`]) a lookup's line is
/// likely far from the core: 4 MiB of `tbl24`, past a core's L2. Below it
/// the lines that traffic touches stay cached, and a hint ahead of the
/// lookup is only work.
const LARGE_V4_LINES: u32 = 1 << 16;

/// The `tbl24` lines an IPv4 prefix of `len` bits covers.
fn tbl24_lines(len: u8) -> u32 {
    // A /20 spans 16 /24s, one line; longer ones live in one line too.
    1 << 20u8.saturating_sub(len)
}

/// What [`Routing::learn_from_wire`] made of a neighbour an ARP or NDP
/// packet announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announced {
    /// Recorded.
    Learned,
    /// Not recorded: off-link, a static neighbour, or the cache full.
    Ignored,
    /// Impossible for a neighbour: a group, zero or our own MAC, or one of
    /// our own addresses. The packet is not answered either.
    Bogus,
}

#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    #[error(transparent)]
    Dpdk(#[from] DpdkError),
    #[error("{0}")]
    Invalid(String),
    /// The build was abandoned: its stop flag was raised
    /// ([`Routing::build_until`]).
    #[error("abandoned: stop requested")]
    Stopped,
}

impl RoutingError {
    /// Whether creating one of the route tables failed. Their big arrays
    /// come from EAL memory, and rte_fib6 reports running out of it as
    /// EINVAL, so any failed create is taken as too little EAL memory.
    pub fn is_table_allocation(&self) -> bool {
        matches!(
            self,
            RoutingError::Dpdk(DpdkError::Call {
                call: "rte_fib_create" | "rte_fib6_create" | "rte_lpm_create" | "rte_lpm6_create",
                ..
            })
        )
    }
}

/// Routes added between two looks at [`Routing::build_until`]'s stop flag
/// (a few milliseconds' worth).
pub const STOP_CHECK_ROUTES: usize = 1024;

/// Builds next hops and groups, deduplicated.
#[derive(Default)]
struct Builder {
    /// Per port: MAC, MTU, IPv4 checksum offload.
    port_info: Vec<([u8; 6], u16, bool)>,
    nexthops: Vec<NextHop>,
    nh_index: HashMap<(u16, Option<IpAddr>, u8), u32>,
    groups: Vec<Box<[u32]>>,
    group_index: HashMap<Vec<u32>, u32>,
    gateways: HashMap<NeighborKey, Vec<u32>>,
}

impl Builder {
    fn nexthop(&mut self, port: u16, kind: NhKind) -> Result<u32, RoutingError> {
        let key = match kind {
            NhKind::Gateway(ip) => (port, Some(ip), 0),
            NhKind::Connected => (port, None, 1),
            NhKind::Local => (port, None, 2),
            NhKind::Broadcast => (port, None, 3),
        };
        if let Some(&id) = self.nh_index.get(&key) {
            return Ok(id);
        }
        let id = self.nexthops.len() as u32;
        if id >= MAX_NEXTHOPS {
            return Err(RoutingError::Invalid(format!(
                "more than {MAX_NEXTHOPS} next hops"
            )));
        }
        let (port_mac, mtu, ipv4_checksum_offload) = self
            .port_info
            .get(port as usize)
            .copied()
            .unwrap_or(([0; 6], 1500, false));
        self.nexthops.push(NextHop {
            port,
            kind,
            port_mac,
            mtu,
            ipv4_checksum_offload,
            fast_path: match kind {
                NhKind::Gateway(_) if ipv4_checksum_offload => FastPath::OffloadedChecksum,
                NhKind::Gateway(_) => FastPath::SoftwareChecksum,
                _ => FastPath::No,
            },
            mac: AtomicU64::new(0),
            src_head: u64::from(u16::from_le_bytes([port_mac[0], port_mac[1]])) << 48,
            src_tail: u32::from_le_bytes([port_mac[2], port_mac[3], port_mac[4], port_mac[5]]),
        });
        self.nh_index.insert(key, id);
        if let NhKind::Gateway(ip) = kind {
            self.gateways
                .entry(neighbor::key(port, ip))
                .or_default()
                .push(id);
        }
        Ok(id)
    }

    /// The LPM value for a route target.
    fn value(&mut self, t: &RouteTarget) -> Result<u32, RoutingError> {
        match t {
            RouteTarget::Port(p) => self.nexthop(*p, NhKind::Connected),
            RouteTarget::Via(hops) if hops.len() == 1 => {
                self.nexthop(hops[0].1, NhKind::Gateway(hops[0].0))
            }
            RouteTarget::Via(hops) => {
                let mut ids = hops
                    .iter()
                    .map(|(ip, p)| self.nexthop(*p, NhKind::Gateway(*ip)))
                    .collect::<Result<Vec<_>, _>>()?;
                ids.sort_unstable();
                ids.dedup();
                if ids.is_empty() {
                    return Err(RoutingError::Invalid("route with no next hop".into()));
                }
                if let Some(&g) = self.group_index.get(&ids) {
                    return Ok(g | GROUP_FLAG);
                }
                let g = self.groups.len() as u32;
                self.groups.push(ids.clone().into_boxed_slice());
                self.group_index.insert(ids, g);
                Ok(g | GROUP_FLAG)
            }
        }
    }
}

fn v6_bytes(a: Ipv6Addr) -> [u8; 16] {
    a.octets()
}

impl Routing {
    /// Builds the tables: connected subnets and own addresses of every port,
    /// then `routes` (later routes for the same prefix replace earlier
    /// ones), then static neighbours (`static_neighbors`, recorded in
    /// `neighbors`); gateway next hops start with the MACs `neighbors`
    /// already knows.
    pub fn build(
        ports: Vec<PortAddrs>,
        routes: &[RouteSpec],
        static_neighbors: &[(u16, IpAddr, [u8; 6])],
        cfg4: RouteConfig,
        cfg6: RouteConfig,
        neighbors: Arc<NeighborTable>,
    ) -> Result<Routing, RoutingError> {
        let never = AtomicBool::new(false);
        Self::build_until(
            ports,
            routes,
            static_neighbors,
            cfg4,
            cfg6,
            neighbors,
            &never,
        )
    }

    /// [`Routing::build`], abandoned with [`RoutingError::Stopped`] once
    /// `stop` is raised: adding a million routes takes seconds, and a
    /// daemon asked to stop in the middle of a reload must not wait for
    /// tables it will never use. Checked every [`STOP_CHECK_ROUTES`]
    /// routes; what was built so far is freed on the way out.
    pub fn build_until(
        ports: Vec<PortAddrs>,
        routes: &[RouteSpec],
        static_neighbors: &[(u16, IpAddr, [u8; 6])],
        cfg4: RouteConfig,
        cfg6: RouteConfig,
        neighbors: Arc<NeighborTable>,
        stop: &AtomicBool,
    ) -> Result<Routing, RoutingError> {
        if stop.load(Ordering::Relaxed) {
            return Err(RoutingError::Stopped);
        }
        let mut b = Builder {
            port_info: ports
                .iter()
                .map(|p| (p.mac, p.mtu, p.ipv4_checksum_offload))
                .collect(),
            ..Builder::default()
        };
        let mut v4 = Route4::new(cfg4)?;
        let mut v6 = Route6::new(cfg6)?;
        for (pi, p) in ports.iter().enumerate() {
            let pi = pi as u16;
            for &(a, len) in &p.v4 {
                let c = b.nexthop(pi, NhKind::Connected)?;
                v4.add(u32::from(a), len, c)?;
            }
            for &(a, len) in &p.v6 {
                let c = b.nexthop(pi, NhKind::Connected)?;
                v6.add(v6_bytes(a), len, c)?;
            }
        }
        // Shortest prefixes first, then by address: each longer route only
        // writes its own range, and neighbouring routes touch neighbouring
        // table memory (about 2x faster than random order at 1M routes). The
        // sort keeps the file's order among equal keys (the index is the
        // last key): of two routes for one prefix the later still wins.
        // Keys computed once and sorted unstably: a million routes sort in
        // a fraction of the time `sort_by_key` over the prefixes took.
        let mut order: Vec<(u8, u128, u32)> = routes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let key = u128::from_be_bytes(r.prefix.key_bytes());
                (r.prefix.prefix_len(), key, i as u32)
            })
            .collect();
        order.sort_unstable();
        for (k, &(_, _, i)) in order.iter().enumerate() {
            if k % STOP_CHECK_ROUTES == 0 && stop.load(Ordering::Relaxed) {
                return Err(RoutingError::Stopped);
            }
            let r = &routes[i as usize];
            let val = b.value(&r.target)?;
            match r.prefix.addr() {
                IpAddr::V4(a) => v4.add(u32::from(a), r.prefix.prefix_len(), val)?,
                IpAddr::V6(a) => v6.add(v6_bytes(a), r.prefix.prefix_len(), val)?,
            }
        }
        // Subnet broadcasts, then own addresses, last so that no configured
        // route can shadow them (an own address wins over a broadcast one).
        for (pi, p) in ports.iter().enumerate() {
            for &(a, len) in &p.v4 {
                if let Some(bc) = subnet_broadcast(a, len) {
                    let nh = b.nexthop(pi as u16, NhKind::Broadcast)?;
                    v4.add(u32::from(bc), 32, nh)?;
                }
            }
        }
        for (pi, p) in ports.iter().enumerate() {
            let pi = pi as u16;
            for &(a, _) in &p.v4 {
                let l = b.nexthop(pi, NhKind::Local)?;
                v4.add(u32::from(a), 32, l)?;
            }
            for &(a, _) in &p.v6 {
                let l = b.nexthop(pi, NhKind::Local)?;
                v6.add(v6_bytes(a), 128, l)?;
            }
        }
        let v4_lines = ports
            .iter()
            .flat_map(|p| p.v4.iter().map(|&(_, len)| len))
            .chain(
                routes
                    .iter()
                    .filter(|r| r.prefix.addr().is_ipv4())
                    .map(|r| r.prefix.prefix_len()),
            )
            .fold(0u32, |n, len| n.saturating_add(tbl24_lines(len)))
            .min(TBL24_LINES);
        let routing = Routing {
            martians: Arc::new(Martians::new(&ports)),
            v4_lines,
            v4,
            v6,
            nexthops: b.nexthops,
            groups: b.groups,
            neighbors,
            ports,
            gateways: b.gateways,
            static_neighbors: static_neighbors
                .iter()
                .map(|&(port, ip, _)| neighbor::key(port, ip))
                .collect(),
        };
        for &(port, ip, mac) in static_neighbors {
            routing.learn(port, ip, mac);
        }
        // A static neighbour the tables in force have and these do not
        // still holds its configured MAC until `install_statics`: not
        // copied into these next hops.
        let removed: HashSet<NeighborKey> = routing
            .neighbors
            .installed_statics()
            .difference(&routing.static_neighbors)
            .copied()
            .collect();
        routing.sync_gateway_macs_except(&removed);
        Ok(routing)
    }

    /// Makes this table's static neighbours the ones in force, forgetting
    /// those a reload removed ([`NeighborTable::install_statics`]); once
    /// the whole set built, before it is published. Returns how many were
    /// forgotten.
    pub fn install_statics(&self) -> usize {
        self.neighbors.install_statics(&self.static_neighbors)
    }

    /// Copies every resolved gateway MAC the neighbour table holds into the
    /// next hops (a fresh build; again after a reload, for what workers
    /// learned while it was built).
    pub fn sync_gateway_macs(&self) {
        self.sync_gateway_macs_except(&HashSet::new());
    }

    fn sync_gateway_macs_except(&self, skip: &HashSet<NeighborKey>) {
        for (k, ids) in &self.gateways {
            if skip.contains(k) {
                continue;
            }
            if let NeighborState::Resolved(mac) = self.neighbors.get(k) {
                for &id in ids {
                    self.nexthops[id as usize].set_mac(mac);
                }
            }
        }
    }

    /// A gateway next hop's MAC from the neighbour table when the next hop
    /// has none cached (learned by another table set while this one was
    /// being built), cached on the way. Slow path only.
    #[cold]
    pub fn gateway_mac_from_neighbors(&self, nh: &NextHop) -> Option<[u8; 6]> {
        let NhKind::Gateway(ip) = nh.kind else {
            return None;
        };
        match self.neighbors.get(&neighbor::key(nh.port, ip)) {
            NeighborState::Resolved(mac) => {
                nh.set_mac(mac);
                Some(mac)
            }
            _ => None,
        }
    }

    /// The next hop for an LPM value; ECMP groups pick a member by `hash`.
    #[inline(always)]
    pub fn nexthop_id(&self, value: u32, hash: u32) -> u32 {
        if value & GROUP_FLAG == 0 {
            return value;
        }
        let g = &self.groups[(value & !GROUP_FLAG) as usize];
        // Multiply-shift maps the hash onto 0..len without a division.
        g[((u64::from(hash) * g.len() as u64) >> 32) as usize]
    }

    #[inline(always)]
    pub fn nexthop(&self, id: u32) -> &NextHop {
        &self.nexthops[id as usize]
    }

    /// Whether the IPv4 table covers so many lines ([`LARGE_V4_LINES`]) that
    /// a lookup's line is likely not cached: the parse sweep then hints each
    /// plain packet's line ahead of the lookup (`StageOps::v4_prefetch`).
    pub fn v4_table_is_large(&self) -> bool {
        self.v4_lines >= LARGE_V4_LINES
    }

    pub fn nexthops(&self) -> &[NextHop] {
        &self.nexthops
    }

    pub fn group(&self, value: u32) -> Option<&[u32]> {
        (value & GROUP_FLAG != 0).then(|| &*self.groups[(value & !GROUP_FLAG) as usize])
    }

    /// The MTU of the path to `addr` (the smallest of an ECMP group's
    /// ports), or `None` without a route: what the load balancer checks an
    /// encapsulated packet against.
    pub fn path_mtu(&self, addr: IpAddr) -> Option<u16> {
        let value = match addr {
            IpAddr::V4(a) => self.v4.lookup(u32::from(a))?,
            IpAddr::V6(a) => self.v6.lookup(a.octets())?,
        };
        match self.group(value) {
            Some(g) => g.iter().map(|&id| self.nexthop(id).mtu).min(),
            None => Some(self.nexthop(value).mtu),
        }
    }

    /// Whether `a` is the broadcast address of any port's IPv4 subnet.
    pub fn is_broadcast_v4(&self, a: Ipv4Addr) -> bool {
        self.ports.iter().any(|p| p.is_broadcast_v4(a))
    }

    /// Records `ip → mac` on `port` if `ip` is on one of the port's subnets
    /// (never from off-link senders); updates gateway next hops using it.
    pub fn learn(&self, port: u16, ip: IpAddr, mac: [u8; 6]) -> bool {
        let Some(p) = self.ports.get(port as usize) else {
            return false;
        };
        let on_link = match ip {
            // A subnet's broadcast address is no neighbour.
            IpAddr::V4(a) => p.on_link_v4(a) && !p.is_broadcast_v4(a),
            IpAddr::V6(a) => p.on_link_v6(a) || a.is_unicast_link_local(),
        };
        if !on_link {
            return false;
        }
        let k = neighbor::key(port, ip);
        if !self.neighbors.learn(&k, mac) {
            return false;
        }
        if let Some(ids) = self.gateways.get(&k) {
            for &id in ids {
                self.nexthops[id as usize].set_mac(mac);
            }
        }
        true
    }

    /// Records what an ARP or NDP packet on `port` says (`ip` is at
    /// `mac`) where that can be true: `mac` unicast, not zero and none of
    /// our ports' (else a poisoned entry would send routed traffic to a
    /// group or back to us), `ip` none of our addresses, and not a static
    /// neighbour's.
    pub fn learn_from_wire(&self, port: u16, ip: IpAddr, mac: [u8; 6]) -> Announced {
        let ours = match ip {
            IpAddr::V4(a) => self.ports.iter().any(|p| p.has_v4(a)),
            IpAddr::V6(a) => self.ports.iter().any(|p| p.has_v6(a)),
        };
        if ours || !usable_neighbor_mac(mac) || self.ports.iter().any(|p| p.mac == mac) {
            return Announced::Bogus;
        }
        if self.static_neighbors.contains(&neighbor::key(port, ip)) {
            return Announced::Ignored;
        }
        if self.learn(port, ip, mac) {
            Announced::Learned
        } else {
            Announced::Ignored
        }
    }

    pub fn stats(&self) -> RoutingStats {
        RoutingStats {
            routes_v4: self.v4.len(),
            routes_v6: self.v6.len(),
            nexthops: self.nexthops.len(),
            groups: self.groups.len(),
            neighbors: self.neighbors.len(),
            neighbor_learn_failures: self.neighbors.learn_failures(),
            memory_bytes: self.v4.memory_bytes()
                + self.v6.memory_bytes()
                + self.neighbors.memory_bytes()
                + self.nexthops.len() * std::mem::size_of::<NextHop>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports() -> Vec<PortAddrs> {
        vec![
            PortAddrs {
                mac: [2, 0, 0, 0, 0, 1],
                v4: vec![("10.0.1.1".parse().unwrap(), 24)],
                v6: vec![("2001:db8:1::1".parse().unwrap(), 64)],
                mtu: 1500,
                ipv4_checksum_offload: false,
            },
            PortAddrs {
                mac: [2, 0, 0, 0, 0, 2],
                v4: vec![("10.0.2.1".parse().unwrap(), 24)],
                v6: vec![],
                mtu: 1500,
                ipv4_checksum_offload: true,
            },
        ]
    }

    use crate::tables::neighbor::NeighborBackend;
    use crate::tables::RouteBackend;

    /// A Rust neighbour table: with [`small`]'s linear route tables, these
    /// tests need no EAL (what they test is the next-hop logic above the
    /// tables, which the backends' own tests cover).
    fn neighbors(capacity: u32) -> Arc<NeighborTable> {
        Arc::new(NeighborTable::with_backend(NeighborBackend::Rust, capacity).unwrap())
    }

    fn small() -> RouteConfig {
        RouteConfig {
            backend: RouteBackend::Linear,
            max_routes: 1024,
            num_tbl8: 256,
        }
    }

    /// Reloads over one neighbour table: a neighbour learned from the wire
    /// resolves the next set's gateways too; a static neighbour the new
    /// config drops is not copied into the new set and, once the set is
    /// installed, is unresolved (the next packet solicits it) and the wire
    /// may answer for it, instead of its configured MAC living on.
    #[test]
    fn reloads_keep_learned_neighbours_and_forget_removed_statics() {
        let learned: IpAddr = "10.0.1.9".parse().unwrap();
        let fixed: IpAddr = "10.0.2.254".parse().unwrap();
        let configured = [2, 0, 0, 0, 9, 9];
        let routes = [
            RouteSpec {
                prefix: Prefix::new("198.18.0.0".parse().unwrap(), 24).unwrap(),
                target: RouteTarget::Via(vec![(learned, 0)]),
            },
            RouteSpec {
                prefix: Prefix::new("198.18.1.0".parse().unwrap(), 24).unwrap(),
                target: RouteTarget::Via(vec![(fixed, 1)]),
            },
        ];
        let table = neighbors(64);
        let build = |statics: &[(u16, IpAddr, [u8; 6])]| {
            let r = Routing::build(ports(), &routes, statics, small(), small(), table.clone());
            r.unwrap()
        };
        let mac_of = |r: &Routing, gw: IpAddr| {
            r.nexthops()
                .iter()
                .find(|n| n.kind == NhKind::Gateway(gw))
                .unwrap()
                .mac()
        };
        let first = build(&[(1, fixed, configured)]);
        assert_eq!(first.install_statics(), 0);
        assert_eq!(mac_of(&first, fixed), Some(configured));
        let wire = [2, 0, 0, 0, 7, 7];
        assert_eq!(first.learn_from_wire(0, learned, wire), Announced::Learned);
        assert_eq!(first.learn_from_wire(1, fixed, wire), Announced::Ignored);

        // The same statics: both gateways resolved in the new set.
        let same = build(&[(1, fixed, configured)]);
        assert_eq!(same.install_statics(), 0);
        assert_eq!(mac_of(&same, learned), Some(wire));
        assert_eq!(mac_of(&same, fixed), Some(configured));

        // The static removed: built without its MAC while the old set is
        // still in force (which keeps it), forgotten once installed.
        let without = build(&[]);
        assert_eq!(mac_of(&without, learned), Some(wire));
        assert_eq!(mac_of(&without, fixed), None);
        let key = neighbor::key(1, fixed);
        assert_eq!(table.get(&key), NeighborState::Resolved(configured));
        assert_eq!(without.install_statics(), 1);
        assert!(matches!(table.get(&key), NeighborState::Pending(0)));
        without.sync_gateway_macs();
        assert_eq!(mac_of(&without, fixed), None);
        // No longer static: the wire's answer is learned.
        let moved = [2, 0, 0, 0, 8, 8];
        assert_eq!(without.learn_from_wire(1, fixed, moved), Announced::Learned);
        assert_eq!(mac_of(&without, fixed), Some(moved));
        assert_eq!(table.installed_statics().len(), 0);
        crate::tables::testing::assert_no_eal();
    }

    /// ARP and NDP are believed only where they can be true: never a group,
    /// zero or our own MAC, never for our own address, and never over a
    /// static neighbour.
    #[test]
    fn wire_announcements_that_cannot_be_true_are_refused() {
        let gw: IpAddr = "10.0.2.254".parse().unwrap();
        let configured = [2, 0, 0, 0, 9, 9];
        let r = Routing::build(
            ports(),
            &[],
            &[(1, gw, configured)],
            small(),
            small(),
            neighbors(64),
        )
        .unwrap();
        let host: IpAddr = "10.0.1.77".parse().unwrap();
        let host6: IpAddr = "2001:db8:1::77".parse().unwrap();
        for bad in [
            [0x01, 0, 0x5e, 0, 0, 1],
            [0x33, 0x33, 0, 0, 0, 1],
            [0xff; 6],
            [0; 6],
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
        ] {
            assert_eq!(r.learn_from_wire(0, host, bad), Announced::Bogus, "{bad:?}");
            assert_eq!(
                r.learn_from_wire(0, host6, bad),
                Announced::Bogus,
                "{bad:?}"
            );
        }
        for own in ["10.0.1.1", "10.0.2.1", "2001:db8:1::1"] {
            let own: IpAddr = own.parse().unwrap();
            assert_eq!(
                r.learn_from_wire(0, own, [2, 0, 0, 0, 7, 7]),
                Announced::Bogus
            );
        }
        assert_eq!(
            r.learn_from_wire(1, gw, [2, 0, 0, 0, 6, 6]),
            Announced::Ignored
        );
        let k = neighbor::key(1, gw);
        assert_eq!(r.neighbors.get(&k), NeighborState::Resolved(configured));
        assert_eq!(
            r.learn_from_wire(0, host, [2, 0, 0, 0, 7, 7]),
            Announced::Learned
        );
        assert_eq!(
            r.neighbors.get(&neighbor::key(0, host)),
            NeighborState::Resolved([2, 0, 0, 0, 7, 7])
        );
    }

    /// A table is large by the lines its IPv4 routes cover, not by their
    /// count: a default route covers every line; a thousand /24s few.
    #[test]
    fn large_v4_tables_by_the_lines_they_cover() {
        let gw: IpAddr = "10.0.1.254".parse().unwrap();
        let via = |a: u32, len: u8| RouteSpec {
            prefix: Prefix::new(IpAddr::V4(a.into()), len).unwrap(),
            target: RouteTarget::Via(vec![(gw, 0)]),
        };
        let build = |routes: &[RouteSpec]| {
            let cfg = RouteConfig {
                max_routes: 1 << 17,
                ..small()
            };
            Routing::build(ports(), routes, &[], cfg, small(), neighbors(64)).unwrap()
        };
        let slash24s: Vec<RouteSpec> = (0..1000).map(|k| via(0xc612_0000 + (k << 8), 24)).collect();
        assert_eq!(tbl24_lines(24), 1);
        assert_eq!(tbl24_lines(20), 1);
        assert_eq!(tbl24_lines(16), 16);
        assert_eq!(tbl24_lines(0), TBL24_LINES);
        assert!(!build(&[]).v4_table_is_large());
        assert!(!build(&slash24s).v4_table_is_large());
        assert!(build(&[via(0, 0)]).v4_table_is_large());
        // 4096 /16s: 65,536 lines.
        let slash16s: Vec<RouteSpec> = (0..4096).map(|k| via(k << 16, 16)).collect();
        assert!(build(&slash16s).v4_table_is_large());
        assert!(!build(&slash16s[1..]).v4_table_is_large());
    }

    #[test]
    fn connected_local_gateway_and_ecmp() {
        let gw1: IpAddr = "10.0.1.254".parse().unwrap();
        let gw2: IpAddr = "10.0.2.254".parse().unwrap();
        let routes = vec![
            RouteSpec {
                prefix: Prefix::new("198.18.0.0".parse().unwrap(), 16).unwrap(),
                target: RouteTarget::Via(vec![(gw1, 0)]),
            },
            RouteSpec {
                prefix: Prefix::new("203.0.113.0".parse().unwrap(), 24).unwrap(),
                target: RouteTarget::Via(vec![(gw1, 0), (gw2, 1)]),
            },
        ];
        let r = Routing::build(
            ports(),
            &routes,
            &[(1, gw2, [2, 0, 0, 0, 9, 9])],
            small(),
            small(),
            neighbors(64),
        )
        .unwrap();
        let lookup = |a: &str| {
            r.v4.lookup(u32::from(a.parse::<Ipv4Addr>().unwrap()))
                .unwrap()
        };
        let local = r.nexthop(lookup("10.0.1.1"));
        assert_eq!((local.port, local.kind), (0, NhKind::Local));
        let conn = r.nexthop(lookup("10.0.2.77"));
        assert_eq!((conn.port, conn.kind), (1, NhKind::Connected));
        let gw = r.nexthop(lookup("198.18.3.4"));
        assert_eq!(gw.kind, NhKind::Gateway(gw1));
        assert_eq!(gw.mac(), None);
        assert_eq!(gw.l2_words(), None);
        assert_eq!(gw.fast_l2_words(), None);
        assert!(r.learn(0, gw1, [2, 0, 0, 0, 7, 7]));
        assert_eq!(gw.mac(), Some([2, 0, 0, 0, 7, 7]));
        assert_eq!(gw.fast_l2_words(), gw.l2_words());
        // The fast path's two words are the gateway's MAC, then the port's.
        let (head, tail) = gw.l2_words().unwrap();
        let mut l2 = head.to_le_bytes().to_vec();
        l2.extend_from_slice(&tail.to_le_bytes());
        let mut want = vec![2, 0, 0, 0, 7, 7];
        want.extend_from_slice(&gw.port_mac);
        assert_eq!(l2, want);
        // Off-link senders are not learned.
        assert!(!r.learn(0, "192.168.9.9".parse().unwrap(), [2, 0, 0, 0, 7, 8]));
        // ECMP: both members used, each flow sticks to one.
        let v = lookup("203.0.113.9");
        assert!(r.group(v).is_some());
        let mut seen = std::collections::HashSet::new();
        for h in 0..1000u32 {
            let h = h.wrapping_mul(2_654_435_761);
            let id = r.nexthop_id(v, h);
            assert_eq!(id, r.nexthop_id(v, h));
            seen.insert(r.nexthop(id).port);
        }
        assert_eq!(seen.len(), 2);
        // The static neighbour resolved the gateway on port 1.
        let g2 = r
            .nexthops()
            .iter()
            .find(|n| n.kind == NhKind::Gateway(gw2))
            .unwrap();
        assert_eq!(g2.mac(), Some([2, 0, 0, 0, 9, 9]));
        // The fast path takes gateways only, each with its port's checksum
        // handling (port 1 has the offload).
        assert_eq!(local.fast_path, FastPath::No);
        assert_eq!(conn.fast_path, FastPath::No);
        assert_eq!(gw.fast_path, FastPath::SoftwareChecksum);
        assert_eq!(g2.fast_path, FastPath::OffloadedChecksum);
        // The one-compare test admits the software-checksum gateway alone.
        assert!(g2.l2_words().is_some());
        assert_eq!(g2.fast_l2_words(), None);
        assert_eq!(local.fast_l2_words(), None);
        assert_eq!(conn.fast_l2_words(), None);
        let v6 =
            r.v6.lookup("2001:db8:1::1".parse::<Ipv6Addr>().unwrap().octets())
                .unwrap();
        assert_eq!(r.nexthop(v6).kind, NhKind::Local);
        assert!(r
            .v6
            .lookup("2001:db8:2::1".parse::<Ipv6Addr>().unwrap().octets())
            .is_none());
        let st = r.stats();
        assert_eq!(st.groups, 1);
        assert!(st.memory_bytes > 0);
        crate::tables::testing::assert_no_eal();
    }

    /// Routes go in shortest prefix first, but of two routes for one
    /// prefix the later in the list wins, wherever the two sit among
    /// routes of other lengths and families; a raised stop flag abandons
    /// the build.
    #[test]
    fn later_route_for_a_prefix_wins_and_a_stop_abandons_the_build() {
        let gw = |last: u8| RouteTarget::Via(vec![(IpAddr::V4(Ipv4Addr::new(10, 0, 1, last)), 0)]);
        let route = |p: &str, len: u8, t: RouteTarget| RouteSpec {
            prefix: Prefix::new(p.parse().unwrap(), len).unwrap(),
            target: t,
        };
        let routes = vec![
            route("198.18.0.0", 24, gw(7)),
            route("198.18.0.0", 16, gw(5)),
            route("2001:db8:9::", 48, gw(6)),
            route("198.18.0.0", 24, gw(8)),
            route("198.18.0.128", 25, gw(9)),
            route("198.18.0.0", 16, gw(4)),
        ];
        let r = Routing::build(ports(), &routes, &[], small(), small(), neighbors(64)).unwrap();
        let via = |a: &str| match r
            .nexthop(
                r.v4.lookup(u32::from(a.parse::<Ipv4Addr>().unwrap()))
                    .unwrap(),
            )
            .kind
        {
            NhKind::Gateway(IpAddr::V4(g)) => g.octets()[3],
            k => panic!("{a}: {k:?}"),
        };
        assert_eq!(via("198.18.0.1"), 8);
        assert_eq!(via("198.18.0.200"), 9);
        assert_eq!(via("198.18.1.1"), 4);
        let stop = AtomicBool::new(true);
        let e = Routing::build_until(
            ports(),
            &routes,
            &[],
            small(),
            small(),
            neighbors(64),
            &stop,
        )
        .map(|_| ())
        .unwrap_err();
        assert!(matches!(e, RoutingError::Stopped), "{e}");
        let stop = AtomicBool::new(false);
        assert!(Routing::build_until(
            ports(),
            &routes,
            &[],
            small(),
            small(),
            neighbors(64),
            &stop
        )
        .is_ok());
        crate::tables::testing::assert_no_eal();
    }

    /// Each connected IPv4 subnet's broadcast address is a /32 to a
    /// `Broadcast` next hop (none for /31 and /32), found from any port,
    /// never learned as a neighbour; an own address on it wins.
    #[test]
    fn subnet_broadcasts() {
        let mut ports = ports();
        ports[1].v4.push(("192.0.2.0".parse().unwrap(), 31));
        ports[1].v4.push(("192.0.2.9".parse().unwrap(), 32));
        let r = Routing::build(ports, &[], &[], small(), small(), neighbors(64)).unwrap();
        let kind = |a: &str| {
            r.v4.lookup(u32::from(a.parse::<Ipv4Addr>().unwrap()))
                .map(|v| r.nexthop(v).kind)
        };
        assert_eq!(kind("10.0.1.255"), Some(NhKind::Broadcast));
        assert_eq!(kind("10.0.2.255"), Some(NhKind::Broadcast));
        assert_eq!(kind("10.0.1.254"), Some(NhKind::Connected));
        assert_eq!(
            kind("192.0.2.1"),
            Some(NhKind::Connected),
            "/31: no broadcast"
        );
        assert_eq!(kind("192.0.2.9"), Some(NhKind::Local));
        assert!(r.is_broadcast_v4("10.0.2.255".parse().unwrap()));
        assert!(!r.is_broadcast_v4("10.0.2.254".parse().unwrap()));
        assert_eq!(
            subnet_broadcast("10.0.0.1".parse().unwrap(), 30),
            Some("10.0.0.3".parse().unwrap())
        );
        assert_eq!(
            subnet_broadcast("10.0.0.1".parse().unwrap(), 0),
            Some(Ipv4Addr::BROADCAST)
        );
        assert_eq!(subnet_broadcast("10.0.0.1".parse().unwrap(), 31), None);
        // Not a neighbour, whatever ARP says.
        assert!(!r.learn(0, "10.0.1.255".parse().unwrap(), [2, 0, 0, 0, 7, 7]));
        assert!(r.learn(0, "10.0.1.254".parse().unwrap(), [2, 0, 0, 0, 7, 7]));
        crate::tables::testing::assert_no_eal();
    }

    /// On the daemon's backends (rte_fib, rte_hash) and on the Rust ones.
    #[test]
    fn a_full_neighbour_cache_counts_what_it_could_not_learn() {
        let _e = crate::tables::testing::test_lock();
        let fib = RouteConfig {
            backend: RouteBackend::Fib,
            ..small()
        };
        let rte_hash = Arc::new(NeighborTable::new(8).unwrap());
        full_cache_counts(fib, rte_hash);
        full_cache_counts(small(), neighbors(8));
    }

    fn full_cache_counts(cfg: RouteConfig, neighbors: Arc<NeighborTable>) {
        let mut ports = ports();
        ports[0].v4 = vec![("10.0.0.1".parse().unwrap(), 16)];
        let r = Routing::build(ports, &[], &[], cfg, cfg, neighbors).unwrap();
        let mut learned = 0;
        for k in 0..2000u32 {
            let ip = IpAddr::V4(Ipv4Addr::from(0x0a00_0100 + k));
            if r.learn(0, ip, [2, 0, 0, 0, (k >> 8) as u8, k as u8]) {
                learned += 1;
            }
        }
        let st = r.stats();
        assert!(st.neighbor_learn_failures > 0, "cache never filled");
        assert_eq!(st.neighbors, learned);
        assert_eq!(learned as u64 + st.neighbor_learn_failures, 2000);
    }

    proptest::proptest! {
        // Linear tables, no EAL: cases are cheap.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            crate::tables::testing::proptest_cases(64)
        ))]

        /// ECMP: a flow (its hash) always maps to the same member, the member
        /// is in the group, and every member of a group gets flows.
        #[test]
        fn ecmp_choice_is_stable_per_flow(members in 2usize..6, hashes in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..64)) {
            let mut ports = ports();
            ports[0].v4 = vec![("10.0.0.1".parse().unwrap(), 16)];
            let hops: Vec<(IpAddr, u16)> = (0..members)
                .map(|i| (IpAddr::V4(Ipv4Addr::new(10, 0, 9, 1 + i as u8)), 0))
                .collect();
            let routes = vec![RouteSpec {
                prefix: Prefix::new("203.0.113.0".parse().unwrap(), 24).unwrap(),
                target: RouteTarget::Via(hops),
            }];
            let r = Routing::build(ports, &routes, &[], small(), small(), neighbors(64)).unwrap();
            let v = r.v4.lookup(u32::from(Ipv4Addr::new(203, 0, 113, 7))).unwrap();
            let group = r.group(v).unwrap().to_vec();
            proptest::prop_assert_eq!(group.len(), members);
            for h in &hashes {
                let a = r.nexthop_id(v, *h);
                proptest::prop_assert_eq!(a, r.nexthop_id(v, *h));
                proptest::prop_assert!(group.contains(&a));
            }
            // Evenly spaced hashes reach every member.
            let mut seen = std::collections::HashSet::new();
            for k in 0..members as u64 * 4 {
                seen.insert(r.nexthop_id(v, ((k << 32) / (members as u64 * 4)) as u32));
            }
            proptest::prop_assert_eq!(seen.len(), members);
        }
    }
}
