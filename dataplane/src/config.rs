//! The daemon's TOML configuration: schema, parsing and validation.
//!
//! Every struct rejects unknown keys. Errors — syntax, types, bad values and
//! cross-references alike — carry the file, line, column and the dotted path
//! of the field (`port[1].mac`), so an operator can go straight to the line.
//! `Config::load` is pure: it starts no DPDK, which is what `dataplane check`
//! relies on. Stage sections (`[forward]`, `[acl]`, `[route]`) are validated
//! here too, so that a running daemon never meets a config it cannot build.
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;
use toml::Spanned;

/// A config error with its location.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}:{column}: {field}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        field: String,
        message: String,
    },
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

impl ConfigError {
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } => Some(*line),
            ConfigError::Io { .. } => None,
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { field, .. } => Some(field),
            ConfigError::Io { .. } => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Value types with their own parsing (their errors become serde errors, so
// toml attaches the span of the offending value).

/// An Ethernet address written `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mac(pub [u8; 6]);

impl FromStr for Mac {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut out = [0u8; 6];
        let parts: Vec<&str> = s.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(format!(
                "invalid MAC address `{s}`: expected six hex bytes like 02:00:00:00:00:01"
            ));
        }
        for (o, p) in out.iter_mut().zip(&parts) {
            if p.len() != 2 {
                return Err(format!(
                    "invalid MAC address `{s}`: `{p}` is not two hex digits"
                ));
            }
            *o = u8::from_str_radix(p, 16)
                .map_err(|_| format!("invalid MAC address `{s}`: `{p}` is not hex"))?;
        }
        Ok(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// An IPv4 or IPv6 prefix `addr/len`. `Ipv4Cidr`/`Ipv6Cidr` keep host bits
/// (an interface address `192.0.2.1/24` is both the address and its subnet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    pub addr: Ipv4Addr,
    pub len: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Cidr {
    pub addr: Ipv6Addr,
    pub len: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpCidr {
    V4(Ipv4Cidr),
    V6(Ipv6Cidr),
}

impl Ipv4Cidr {
    /// The prefix with host bits cleared.
    pub fn network(&self) -> Ipv4Addr {
        let mask = if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        };
        Ipv4Addr::from(u32::from(self.addr) & mask)
    }
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let mask = if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        };
        (u32::from(a) & mask) == (u32::from(self.addr) & mask)
    }
}

impl Ipv6Cidr {
    pub fn network(&self) -> Ipv6Addr {
        let mask = if self.len == 0 {
            0
        } else {
            u128::MAX << (128 - self.len)
        };
        Ipv6Addr::from(u128::from(self.addr) & mask)
    }
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        let mask = if self.len == 0 {
            0
        } else {
            u128::MAX << (128 - self.len)
        };
        (u128::from(a) & mask) == (u128::from(self.addr) & mask)
    }
}

impl FromStr for IpCidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s
            .split_once('/')
            .ok_or_else(|| format!("invalid prefix `{s}`: expected ADDRESS/LENGTH"))?;
        let len: u8 = l
            .parse()
            .map_err(|_| format!("invalid prefix `{s}`: length `{l}` is not a number"))?;
        if let Ok(v4) = a.parse::<Ipv4Addr>() {
            if len > 32 {
                return Err(format!("invalid prefix `{s}`: IPv4 length must be 0..=32"));
            }
            return Ok(IpCidr::V4(Ipv4Cidr { addr: v4, len }));
        }
        if let Ok(v6) = a.parse::<Ipv6Addr>() {
            if len > 128 {
                return Err(format!("invalid prefix `{s}`: IPv6 length must be 0..=128"));
            }
            return Ok(IpCidr::V6(Ipv6Cidr { addr: v6, len }));
        }
        Err(format!(
            "invalid prefix `{s}`: `{a}` is not an IPv4 or IPv6 address"
        ))
    }
}

impl FromStr for Ipv4Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<IpCidr>()? {
            IpCidr::V4(c) => Ok(c),
            IpCidr::V6(_) => Err(format!("`{s}` is IPv6 where an IPv4 prefix is expected")),
        }
    }
}

impl FromStr for Ipv6Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<IpCidr>()? {
            IpCidr::V6(c) => Ok(c),
            IpCidr::V4(_) => Err(format!("`{s}` is IPv4 where an IPv6 prefix is expected")),
        }
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpCidr::V4(c) => write!(f, "{}/{}", c.addr, c.len),
            IpCidr::V6(c) => write!(f, "{}/{}", c.addr, c.len),
        }
    }
}

/// Deserializes any `FromStr` type from a TOML string.
macro_rules! deserialize_from_str {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(de::Error::custom)
            }
        }
    )*};
}
deserialize_from_str!(Mac, IpCidr, Ipv4Cidr, Ipv6Cidr);

// ---------------------------------------------------------------------------
// Schema

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Stage names in processing order, e.g. `["acl", "route"]`.
    #[serde(default = "empty_pipeline")]
    pub pipeline: Spanned<Vec<Spanned<StageKind>>>,
    #[serde(default)]
    pub eal: EalConfig,
    #[serde(default)]
    pub daemon: DaemonConfig,
    #[serde(default)]
    pub mempool: MempoolConfig,
    #[serde(rename = "port", default)]
    pub ports: Vec<PortSection>,
    #[serde(rename = "worker", default)]
    pub workers: Vec<WorkerSection>,
    pub forward: Option<Spanned<ForwardConfig>>,
    pub acl: Option<Spanned<AclConfig>>,
    pub route: Option<Spanned<RouteSection>>,

    /// Where the file came from (set by `load`), for error messages.
    #[serde(skip)]
    pub source_name: String,
}

/// The stages a pipeline can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    /// Cross-connect port pairs with MAC rewrite.
    Forward,
    /// Firewall: ordered rules, first match wins.
    Acl,
    /// IPv4/IPv6 routing with ARP/NDP and ICMP.
    Route,
}

impl StageKind {
    pub fn name(&self) -> &'static str {
        match self {
            StageKind::Forward => "forward",
            StageKind::Acl => "acl",
            StageKind::Route => "route",
        }
    }
}

/// Hugepage policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hugepages {
    /// Use hugepages when the machine has free ones mounted, else `--no-huge`.
    #[default]
    Auto,
    /// Require hugepages.
    On,
    /// Always `--no-huge`.
    Off,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EalConfig {
    /// Extra EAL arguments, appended before command-line overrides.
    pub args: Vec<String>,
    pub hugepages: Hugepages,
    /// Memory EAL reserves (`-m`), MiB.
    pub memory_mb: u32,
    /// `--file-prefix`: separates concurrent DPDK processes.
    pub file_prefix: String,
    /// CPU of the main (control/stats) thread.
    pub control_core: u32,
    /// Disable DPDK's telemetry socket (on by default).
    pub no_telemetry: bool,
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            args: Vec::new(),
            hugepages: Hugepages::Auto,
            memory_mb: 512,
            file_prefix: "dataplane".into(),
            control_core: 0,
            no_telemetry: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// Period of the one-line stats summary in the log, ms; 0 disables it.
    pub stats_interval_ms: u64,
    /// Longest time a packet waits in a partly filled TX buffer, µs.
    pub tx_drain_us: u64,
    /// Count TSC cycles per pipeline stage (benchmarks; adds two TSC reads
    /// per stage per burst).
    pub profile_stages: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            stats_interval_ms: 1000,
            tx_drain_us: 100,
            profile_stages: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MempoolConfig {
    /// Mbufs in the pool; 0 sizes it from ports, queues and workers.
    pub mbufs: u32,
    /// Per-lcore cache size.
    pub cache: u32,
    /// Data room per mbuf, bytes (headroom included).
    pub data_room: u16,
}

impl Default for MempoolConfig {
    fn default() -> Self {
        MempoolConfig {
            mbufs: 0,
            cache: 256,
            data_room: 2048 + 128,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    /// Name used by workers and stages.
    pub name: Spanned<String>,
    /// A vdev string (`net_pcap0,rx_pcap=in.pcap`) or a PCI address.
    pub device: Spanned<String>,
    #[serde(default = "one")]
    pub rx_queues: Spanned<u16>,
    /// Defaults to one per worker (each worker transmits on its own queue).
    pub tx_queues: Option<Spanned<u16>>,
    #[serde(default = "default_desc")]
    pub rx_desc: u16,
    #[serde(default = "default_desc")]
    pub tx_desc: u16,
    pub mtu: Option<u16>,
    /// Overrides the device's MAC address.
    pub mac: Option<Mac>,
    /// The MAC of the station on the other end of the link, used as the
    /// destination by the `forward` stage (default `02:00:00:00:00:<port index>`).
    pub peer_mac: Option<Mac>,
    #[serde(default = "yes")]
    pub promiscuous: bool,
    /// Let the device fill in routed IPv4 packets' header checksums when it
    /// offers that offload; `false` keeps the incremental update in software.
    #[serde(default = "yes")]
    pub tx_checksum_offload: bool,
    /// Interface addresses with their subnet, e.g. `192.0.2.1/24`.
    #[serde(default)]
    pub ipv4: Vec<Spanned<Ipv4Cidr>>,
    #[serde(default)]
    pub ipv6: Vec<Spanned<Ipv6Cidr>>,
}

fn empty_pipeline() -> Spanned<Vec<Spanned<StageKind>>> {
    Spanned::new(0..0, Vec::new())
}
fn one() -> Spanned<u16> {
    Spanned::new(0..0, 1)
}
fn default_desc() -> u16 {
    1024
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSection {
    /// CPU the worker is pinned to.
    pub core: Spanned<u32>,
    /// RX queues it polls: `"port"` (queue 0) or `"port:queue"`.
    pub rx: Spanned<Vec<Spanned<String>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardConfig {
    /// Bidirectional cross-connects: `[["p0", "p1"]]`.
    pub pairs: Vec<Spanned<Vec<Spanned<String>>>>,
}

/// What an ACL rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Deny,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclConfig {
    /// Action when no rule matches.
    pub default: Action,
    /// Rules in order; the first match wins.
    #[serde(default)]
    pub rule: Vec<AclRuleConfig>,
    /// Entries of each worker's exact-match flow cache in front of the
    /// classifier (0 turns it off; rounded up to a power of two).
    #[serde(default = "default_acl_flow_cache")]
    pub flow_cache: Spanned<usize>,
}

fn default_acl_flow_cache() -> Spanned<usize> {
    Spanned::new(0..0, AclConfig::DEFAULT_FLOW_CACHE)
}

impl AclConfig {
    /// 16,384 entries (768 KiB per worker): room for about 8,000 active
    /// flows at half load, where an 8-way bucket rarely overflows (at 8,192
    /// entries the bench's 4,000 flows lost 1.7 % of lookups to overflow).
    pub const DEFAULT_FLOW_CACHE: usize = 16384;
    /// 2^24 entries (768 MiB per worker) at most.
    pub const MAX_FLOW_CACHE: usize = 1 << 24;
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclRuleConfig {
    pub action: Action,
    pub src: Option<Spanned<IpCidr>>,
    pub dst: Option<Spanned<IpCidr>>,
    /// Protocol name (`tcp`, `udp`, `icmp`, `icmpv6`, `sctp`) or number.
    pub proto: Option<Proto>,
    /// Port or inclusive range `"1024-65535"`.
    pub sport: Option<Spanned<PortRange>>,
    pub dport: Option<Spanned<PortRange>>,
    /// Outer VLAN id (0 = untagged).
    pub vlan: Option<Spanned<u16>>,
}

/// An IP protocol number, written as a name or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proto(pub u8);

impl<'de> Deserialize<'de> for Proto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Proto;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a protocol name (tcp, udp, icmp, icmpv6, sctp) or number 0..=255")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Proto, E> {
                u8::try_from(v)
                    .map(Proto)
                    .map_err(|_| E::custom(format!("protocol {v} is not in 0..=255")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Proto, E> {
                Ok(Proto(match v.to_ascii_lowercase().as_str() {
                    "icmp" => 1,
                    "tcp" => 6,
                    "udp" => 17,
                    "icmpv6" | "ipv6-icmp" => 58,
                    "sctp" => 132,
                    _ => {
                        return Err(E::custom(format!(
                            "unknown protocol `{v}` (tcp, udp, icmp, icmpv6, sctp or a number)"
                        )))
                    }
                }))
            }
        }
        d.deserialize_any(V)
    }
}

/// An inclusive L4 port range, written `80` or `"1024-65535"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange(pub u16, pub u16);

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = PortRange;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a port 0..=65535 or a range \"LOW-HIGH\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortRange, E> {
                let p = u16::try_from(v)
                    .map_err(|_| E::custom(format!("port {v} is not in 0..=65535")))?;
                Ok(PortRange(p, p))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortRange, E> {
                let bad = || {
                    E::custom(format!("invalid port range `{v}`: expected LOW-HIGH with 0 <= LOW <= HIGH <= 65535"))
                };
                let (a, b) = v.split_once('-').unwrap_or((v, v));
                let a: u16 = a.trim().parse().map_err(|_| bad())?;
                let b: u16 = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                Ok(PortRange(a, b))
            }
        }
        d.deserialize_any(V)
    }
}

/// LPM library behind the route tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// rte_fib / rte_fib6: fast to load (1M routes in well under a second).
    #[default]
    Fib,
    /// rte_lpm / rte_lpm6: slightly faster lookups, slow to load big tables.
    Lpm,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    #[serde(default)]
    pub backend: Backend,
    /// IPv4 route capacity (raised automatically to fit the configured routes).
    #[serde(default = "default_max_routes")]
    pub max_routes: u32,
    /// IPv6 route capacity.
    #[serde(default = "default_max_routes6")]
    pub max_routes6: u32,
    /// Second-level table groups (routes longer than /24 each need one).
    #[serde(default = "default_tbl8")]
    pub tbl8_groups: u32,
    /// ICMP errors (time exceeded) per second per worker; 0 sends none.
    #[serde(default = "default_icmp_rate")]
    pub icmp_rate: u32,
    /// Neighbour cache capacity.
    #[serde(default = "default_neighbors")]
    pub neighbor_capacity: u32,
    /// A file of routes, one per line: `PREFIX VIA[,VIA...]` or `PREFIX dev PORT`
    /// (`#` starts a comment). Relative to the config file.
    pub routes_file: Option<Spanned<String>>,
    /// Static routes.
    #[serde(default, rename = "static")]
    pub statics: Vec<StaticRoute>,
    /// Static neighbours (IP → MAC).
    #[serde(default)]
    pub neighbor: Vec<StaticNeighbor>,
}

fn default_max_routes() -> u32 {
    65_536
}
fn default_max_routes6() -> u32 {
    16_384
}
fn default_tbl8() -> u32 {
    4_096
}
fn default_icmp_rate() -> u32 {
    100
}
fn default_neighbors() -> u32 {
    65_536
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticRoute {
    pub prefix: Spanned<IpCidr>,
    /// Next-hop router(s); several make an ECMP group.
    pub via: Option<Spanned<ViaList>>,
    /// Output port: for a directly connected prefix, or to pin the via's port.
    pub port: Option<Spanned<String>>,
}

/// One address or a list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViaList(pub Vec<std::net::IpAddr>);

impl<'de> Deserialize<'de> for ViaList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = ViaList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an IP address or a list of IP addresses")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ViaList, E> {
                v.parse()
                    .map(|a| ViaList(vec![a]))
                    .map_err(|_| E::custom(format!("invalid next-hop address `{v}`")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<ViaList, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s.parse().map_err(|_| {
                        de::Error::custom(format!("invalid next-hop address `{s}`"))
                    })?);
                }
                if out.is_empty() {
                    return Err(de::Error::custom("`via` lists no address"));
                }
                Ok(ViaList(out))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticNeighbor {
    pub ip: Spanned<String>,
    pub mac: Mac,
    /// Defaults to the port whose subnet holds `ip`.
    pub port: Option<Spanned<String>>,
}

// ---------------------------------------------------------------------------
// Resolved, validated view used to build the runtime.

/// A worker's resolved RX queue list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxAssignment {
    pub port: usize,
    pub queue: u16,
}

/// Everything validation derives once so later stages need not recompute.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub port_index: HashMap<String, usize>,
    /// Per worker, the (port index, queue) pairs it polls.
    pub worker_rx: Vec<Vec<RxAssignment>>,
    /// Per port, its tx queue count.
    pub tx_queues: Vec<u16>,
    /// For the forward stage: output port index per input port index.
    pub forward_out: Vec<Option<usize>>,
    /// ACL rules in order, and the default action.
    pub acl_rules: Vec<crate::tables::AclRule>,
    pub acl_default: Option<crate::tables::AclAction>,
    /// Entries of each worker's ACL flow cache (0 = none).
    pub acl_flow_cache: usize,
    /// Routes (config `[[route.static]]` then `routes_file`), static neighbours.
    pub routes: Vec<crate::tables::routing::RouteSpec>,
    pub neighbors: Vec<(u16, std::net::IpAddr, [u8; 6])>,
}

impl Config {
    /// Reads, parses and validates `path`.
    pub fn load(path: &Path) -> Result<(Config, Resolved), ConfigError> {
        let src = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
            file: path.display().to_string(),
            message: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Config::parse_in(&src, &path.display().to_string(), &dir)
    }

    /// Parses and validates `src`; `file` names it in errors.
    pub fn parse(src: &str, file: &str) -> Result<(Config, Resolved), ConfigError> {
        Config::parse_in(src, file, Path::new("."))
    }

    /// As `parse`, with relative paths (routes_file) taken from `dir`.
    pub fn parse_in(src: &str, file: &str, dir: &Path) -> Result<(Config, Resolved), ConfigError> {
        let loc = Locator { src, file, dir };
        let mut cfg: Config = toml::from_str(src).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            loc.error(span, None, e.message().to_string())
        })?;
        cfg.source_name = file.to_owned();
        let mut resolved = cfg.validate(&loc)?;
        cfg.resolve_acl(&loc, &mut resolved)?;
        cfg.resolve_routes(&loc, &mut resolved)?;
        Ok((cfg, resolved))
    }

    /// Total mbufs to create when `mempool.mbufs` is 0.
    pub fn mempool_size(&self, resolved: &Resolved) -> u32 {
        if self.mempool.mbufs != 0 {
            return self.mempool.mbufs;
        }
        let mut n: u64 = 0;
        for (i, p) in self.ports.iter().enumerate() {
            n += u64::from(*p.rx_queues.get_ref()) * u64::from(p.rx_desc);
            n += u64::from(resolved.tx_queues[i]) * u64::from(p.tx_desc);
        }
        let workers = self.workers.len().max(1) as u64;
        n += workers * (u64::from(self.mempool.cache) + 4 * 64 * self.ports.len() as u64);
        n += 8192; // pcap replay preload, control traffic, headroom
                   // Mempools are most memory-efficient at 2^k - 1.
        let n = n.next_power_of_two() - 1;
        n.min(u64::from(u32::MAX)) as u32
    }

    fn validate(&self, loc: &Locator) -> Result<Resolved, ConfigError> {
        if self.ports.is_empty() {
            return Err(loc.error(
                0..0,
                Some("port".into()),
                "no [[port]] is configured".into(),
            ));
        }
        if self.workers.is_empty() {
            return Err(loc.error(
                0..0,
                Some("worker".into()),
                "no [[worker]] is configured".into(),
            ));
        }
        let mut port_index = HashMap::new();
        for (i, p) in self.ports.iter().enumerate() {
            let name = p.name.get_ref();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(loc.error(
                    p.name.span(),
                    Some(format!("port[{i}].name")),
                    format!("port name `{name}` must be non-empty letters, digits, '_' or '-'"),
                ));
            }
            if port_index.insert(name.clone(), i).is_some() {
                return Err(loc.error(
                    p.name.span(),
                    Some(format!("port[{i}].name")),
                    format!("duplicate port name `{name}`"),
                ));
            }
            if p.device.get_ref().trim().is_empty() {
                return Err(loc.error(
                    p.device.span(),
                    Some(format!("port[{i}].device")),
                    "device must name a vdev or PCI address".into(),
                ));
            }
            if *p.rx_queues.get_ref() == 0 {
                return Err(loc.error(
                    p.rx_queues.span(),
                    Some(format!("port[{i}].rx_queues")),
                    "rx_queues must be at least 1".into(),
                ));
            }
        }
        let mut devices = HashSet::new();
        for (i, p) in self.ports.iter().enumerate() {
            let dev = device_name(p.device.get_ref());
            if !devices.insert(dev.to_owned()) {
                return Err(loc.error(
                    p.device.span(),
                    Some(format!("port[{i}].device")),
                    format!("device `{dev}` is used by two ports"),
                ));
            }
        }

        let mut cores = HashSet::new();
        let mut polled: HashMap<(usize, u16), usize> = HashMap::new();
        let mut worker_rx = Vec::new();
        for (w, wk) in self.workers.iter().enumerate() {
            if !cores.insert(*wk.core.get_ref()) {
                return Err(loc.error(
                    wk.core.span(),
                    Some(format!("worker[{w}].core")),
                    format!("core {} is used by two workers", wk.core.get_ref()),
                ));
            }
            if wk.rx.get_ref().is_empty() {
                return Err(loc.error(
                    wk.rx.span(),
                    Some(format!("worker[{w}].rx")),
                    "a worker must poll at least one rx queue".into(),
                ));
            }
            let mut list = Vec::new();
            for r in wk.rx.get_ref() {
                let field = Some(format!("worker[{w}].rx"));
                let (pname, q) = match r.get_ref().split_once(':') {
                    Some((p, q)) => {
                        let q: u16 = q.parse().map_err(|_| {
                            loc.error(
                                r.span(),
                                field.clone(),
                                format!("`{}`: queue `{q}` is not a number", r.get_ref()),
                            )
                        })?;
                        (p, q)
                    }
                    None => (r.get_ref().as_str(), 0),
                };
                let Some(&pi) = port_index.get(pname) else {
                    return Err(loc.error(
                        r.span(),
                        field,
                        format!("unknown port `{pname}` (ports: {})", self.port_names()),
                    ));
                };
                let nq = *self.ports[pi].rx_queues.get_ref();
                if q >= nq {
                    return Err(loc.error(
                        r.span(),
                        field,
                        format!("port `{pname}` has {nq} rx queue(s); queue {q} does not exist"),
                    ));
                }
                if let Some(other) = polled.insert((pi, q), w) {
                    return Err(loc.error(
                        r.span(),
                        field,
                        format!("rx queue {pname}:{q} is already polled by worker[{other}]"),
                    ));
                }
                list.push(RxAssignment { port: pi, queue: q });
            }
            worker_rx.push(list);
        }
        for (pi, p) in self.ports.iter().enumerate() {
            for q in 0..*p.rx_queues.get_ref() {
                if !polled.contains_key(&(pi, q)) {
                    return Err(loc.error(
                        p.rx_queues.span().start.max(p.name.span().start)..p.name.span().end,
                        Some(format!("port[{pi}].rx_queues")),
                        format!(
                            "rx queue {}:{q} is polled by no worker (its packets would be lost)",
                            p.name.get_ref()
                        ),
                    ));
                }
            }
        }

        let mut tx_queues = Vec::new();
        for (pi, p) in self.ports.iter().enumerate() {
            let n = match &p.tx_queues {
                Some(t) => {
                    if (*t.get_ref() as usize) < self.workers.len() {
                        return Err(loc.error(
                            t.span(),
                            Some(format!("port[{pi}].tx_queues")),
                            format!(
                                "{} tx queue(s) for {} workers: each worker needs its own",
                                t.get_ref(),
                                self.workers.len()
                            ),
                        ));
                    }
                    *t.get_ref()
                }
                None => self.workers.len() as u16,
            };
            tx_queues.push(n);
        }

        // Pipeline: known stages, each once, each with its section; no
        // orphan sections.
        let stages = self.pipeline.get_ref();
        if stages.is_empty() {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                "the pipeline is empty: list stages, e.g. pipeline = [\"forward\"]".into(),
            ));
        }
        let mut seen = HashSet::new();
        for s in stages {
            if !seen.insert(*s.get_ref()) {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{}` is listed twice", s.get_ref().name()),
                ));
            }
            let has_section = match s.get_ref() {
                StageKind::Forward => self.forward.is_some(),
                StageKind::Acl => self.acl.is_some(),
                StageKind::Route => self.route.is_some(),
            };
            if !has_section {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{0}` needs a [{0}] section", s.get_ref().name()),
                ));
            }
        }
        let mut forward_out = vec![None; self.ports.len()];
        if let Some(fwd) = &self.forward {
            if !seen.contains(&StageKind::Forward) {
                return Err(loc.error(
                    fwd.span(),
                    Some("forward".into()),
                    "[forward] is configured but `forward` is not in the pipeline".into(),
                ));
            }
            for (k, pair) in fwd.get_ref().pairs.iter().enumerate() {
                let field = Some(format!("forward.pairs[{k}]"));
                if pair.get_ref().len() != 2 {
                    return Err(loc.error(
                        pair.span(),
                        field,
                        "a pair names exactly two ports".into(),
                    ));
                }
                let mut idx = [0usize; 2];
                for (j, name) in pair.get_ref().iter().enumerate() {
                    idx[j] = *port_index.get(name.get_ref()).ok_or_else(|| {
                        loc.error(
                            name.span(),
                            field.clone(),
                            format!(
                                "unknown port `{}` (ports: {})",
                                name.get_ref(),
                                self.port_names()
                            ),
                        )
                    })?;
                    if forward_out[idx[j]].is_some() {
                        return Err(loc.error(
                            name.span(),
                            field.clone(),
                            format!("port `{}` is in two pairs", name.get_ref()),
                        ));
                    }
                }
                if idx[0] == idx[1] {
                    // A port paired with itself is a hairpin: allowed.
                    forward_out[idx[0]] = Some(idx[0]);
                } else {
                    forward_out[idx[0]] = Some(idx[1]);
                    forward_out[idx[1]] = Some(idx[0]);
                }
            }
        }

        for (name, present, kind) in [
            ("acl", self.acl.as_ref().map(|a| a.span()), StageKind::Acl),
            (
                "route",
                self.route.as_ref().map(|r| r.span()),
                StageKind::Route,
            ),
        ] {
            if let Some(span) = present {
                if !seen.contains(&kind) {
                    return Err(loc.error(
                        span,
                        Some(name.into()),
                        format!("[{name}] is configured but `{name}` is not in the pipeline"),
                    ));
                }
            }
        }
        if seen.contains(&StageKind::Forward) && seen.len() > 1 {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                "`forward` cross-connects ports and cannot be combined with other stages".into(),
            ));
        }
        if let Some(acl_pos) = stages.iter().position(|s| *s.get_ref() == StageKind::Acl) {
            let route_pos = stages.iter().position(|s| *s.get_ref() == StageKind::Route);
            if route_pos.is_none_or(|r| r < acl_pos) {
                return Err(loc.error(
                    stages[acl_pos].span(),
                    Some("pipeline".into()),
                    "`acl` filters and needs a later stage that forwards: use pipeline = [\"acl\", \"route\"]".into(),
                ));
            }
        }

        Ok(Resolved {
            port_index,
            worker_rx,
            tx_queues,
            forward_out,
            acl_rules: Vec::new(),
            acl_default: None,
            acl_flow_cache: 0,
            routes: Vec::new(),
            neighbors: Vec::new(),
        })
    }

    fn resolve_acl(&self, loc: &Locator, res: &mut Resolved) -> Result<(), ConfigError> {
        use crate::tables::{AclAction, AclRule, Prefix};
        let Some(acl) = &self.acl else { return Ok(()) };
        let acl = acl.get_ref();
        let action = |a: Action| match a {
            Action::Allow => AclAction::Allow,
            Action::Deny => AclAction::Deny,
        };
        let prefix = |c: &IpCidr| match c {
            IpCidr::V4(c) => Prefix::v4(c.addr, c.len).expect("length checked"),
            IpCidr::V6(c) => Prefix::v6(c.addr, c.len).expect("length checked"),
        };
        for (i, r) in acl.rule.iter().enumerate() {
            let field = |f: &str| Some(format!("acl.rule[{i}].{f}"));
            if let (Some(s), Some(d)) = (&r.src, &r.dst) {
                if matches!(s.get_ref(), IpCidr::V4(_)) != matches!(d.get_ref(), IpCidr::V4(_)) {
                    return Err(loc.error(
                        d.span(),
                        field("dst"),
                        "src and dst must be the same address family".into(),
                    ));
                }
            }
            if let Some(v) = &r.vlan {
                if *v.get_ref() > 4095 {
                    return Err(loc.error(
                        v.span(),
                        field("vlan"),
                        format!("VLAN id {} is not in 0..=4095", v.get_ref()),
                    ));
                }
            }
            let range = |p: &Option<Spanned<PortRange>>| {
                p.as_ref()
                    .map_or((0, u16::MAX), |p| (p.get_ref().0, p.get_ref().1))
            };
            res.acl_rules.push(AclRule {
                src: r.src.as_ref().map(|c| prefix(c.get_ref())),
                dst: r.dst.as_ref().map(|c| prefix(c.get_ref())),
                proto: r.proto.map(|p| p.0),
                sport: range(&r.sport),
                dport: range(&r.dport),
                vlan: r.vlan.as_ref().map(|v| *v.get_ref()),
                action: action(r.action),
            });
        }
        let cache = &acl.flow_cache;
        if *cache.get_ref() > AclConfig::MAX_FLOW_CACHE {
            return Err(loc.error(
                cache.span(),
                Some("acl.flow_cache".into()),
                format!(
                    "{} entries is more than the {} allowed",
                    cache.get_ref(),
                    AclConfig::MAX_FLOW_CACHE
                ),
            ));
        }
        res.acl_flow_cache = *cache.get_ref();
        res.acl_default = Some(action(acl.default));
        Ok(())
    }

    /// The port whose subnet holds `ip`, or the named one (checked to hold it).
    fn nexthop_port(
        &self,
        loc: &Locator,
        res: &Resolved,
        ip: std::net::IpAddr,
        port: Option<&Spanned<String>>,
        span: Range<usize>,
        field: &str,
    ) -> Result<u16, ConfigError> {
        let on_link = |p: &PortSection| match ip {
            std::net::IpAddr::V4(a) => p.ipv4.iter().any(|c| c.get_ref().contains(a)),
            std::net::IpAddr::V6(a) => {
                p.ipv6.iter().any(|c| c.get_ref().contains(a)) || a.segments()[0] & 0xffc0 == 0xfe80
            }
        };
        if let Some(pn) = port {
            let Some(&pi) = res.port_index.get(pn.get_ref()) else {
                return Err(loc.error(
                    pn.span(),
                    Some(field.into()),
                    format!(
                        "unknown port `{}` (ports: {})",
                        pn.get_ref(),
                        self.port_names()
                    ),
                ));
            };
            if !on_link(&self.ports[pi]) {
                return Err(loc.error(
                    span,
                    Some(field.into()),
                    format!("{ip} is not on a subnet of port `{}`", pn.get_ref()),
                ));
            }
            return Ok(pi as u16);
        }
        match self.ports.iter().position(on_link) {
            Some(pi) => Ok(pi as u16),
            None => Err(loc.error(
                span,
                Some(field.into()),
                format!("{ip} is on no port's subnet: add the subnet to a port's ipv4/ipv6 or name the port"),
            )),
        }
    }

    fn resolve_routes(&self, loc: &Locator, res: &mut Resolved) -> Result<(), ConfigError> {
        use crate::tables::routing::{RouteSpec, RouteTarget};
        use crate::tables::Prefix;
        let Some(route) = &self.route else {
            return Ok(());
        };
        let route = route.get_ref();
        let to_prefix = |c: &IpCidr| match c {
            IpCidr::V4(c) => Prefix::v4(c.addr, c.len).expect("length checked"),
            IpCidr::V6(c) => Prefix::v6(c.addr, c.len).expect("length checked"),
        };
        for (i, r) in route.statics.iter().enumerate() {
            let field = format!("route.static[{i}]");
            let prefix = to_prefix(r.prefix.get_ref());
            let target = match (&r.via, &r.port) {
                (Some(via), port) => {
                    let mut hops = Vec::new();
                    for ip in &via.get_ref().0 {
                        if ip.is_ipv6() != prefix.is_ipv6() {
                            return Err(loc.error(
                                via.span(),
                                Some(format!("{field}.via")),
                                format!("next hop {ip} is not of the prefix's address family"),
                            ));
                        }
                        let p = self.nexthop_port(
                            loc,
                            res,
                            *ip,
                            port.as_ref(),
                            via.span(),
                            &format!("{field}.via"),
                        )?;
                        hops.push((*ip, p));
                    }
                    RouteTarget::Via(hops)
                }
                (None, Some(pn)) => {
                    let Some(&pi) = res.port_index.get(pn.get_ref()) else {
                        return Err(loc.error(
                            pn.span(),
                            Some(format!("{field}.port")),
                            format!(
                                "unknown port `{}` (ports: {})",
                                pn.get_ref(),
                                self.port_names()
                            ),
                        ));
                    };
                    RouteTarget::Port(pi as u16)
                }
                (None, None) => {
                    return Err(loc.error(
                        r.prefix.span(),
                        Some(field),
                        "a route needs `via` (next hops) or `port` (directly connected)".into(),
                    ));
                }
            };
            res.routes.push(RouteSpec { prefix, target });
        }
        if let Some(file) = &route.routes_file {
            let path = loc.dir.join(file.get_ref());
            let text = std::fs::read_to_string(&path).map_err(|e| {
                loc.error(
                    file.span(),
                    Some("route.routes_file".into()),
                    format!("{}: {e}", path.display()),
                )
            })?;
            self.parse_routes_file(&text, &path, res)?;
        }
        for (i, n) in route.neighbor.iter().enumerate() {
            let field = format!("route.neighbor[{i}].ip");
            let ip: std::net::IpAddr = n.ip.get_ref().parse().map_err(|_| {
                loc.error(
                    n.ip.span(),
                    Some(field.clone()),
                    format!("invalid IP address `{}`", n.ip.get_ref()),
                )
            })?;
            let p = self.nexthop_port(loc, res, ip, n.port.as_ref(), n.ip.span(), &field)?;
            res.neighbors.push((p, ip, n.mac.0));
        }
        Ok(())
    }

    /// Routes file: `PREFIX VIA[,VIA...]` or `PREFIX dev PORT` per line.
    fn parse_routes_file(
        &self,
        text: &str,
        path: &Path,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        use crate::tables::routing::{RouteSpec, RouteTarget};
        use crate::tables::Prefix;
        let file = path.display().to_string();
        let err = |line: usize, field: &str, message: String| ConfigError::Invalid {
            file: file.clone(),
            line,
            column: 1,
            field: field.into(),
            message,
        };
        // Next hops repeat across many routes: resolve each address once.
        let mut port_of: HashMap<std::net::IpAddr, u16> = HashMap::new();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let l = raw.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let mut it = l.split_whitespace();
            let p = it.next().unwrap_or("");
            let cidr: IpCidr = p.parse().map_err(|e: String| err(line, "prefix", e))?;
            let prefix = match cidr {
                IpCidr::V4(c) => Prefix::v4(c.addr, c.len),
                IpCidr::V6(c) => Prefix::v6(c.addr, c.len),
            }
            .map_err(|e| err(line, "prefix", e.to_string()))?;
            let target = match (it.next(), it.next()) {
                (Some("dev"), Some(port)) => match res.port_index.get(port) {
                    Some(&pi) => RouteTarget::Port(pi as u16),
                    None => return Err(err(line, "dev", format!("unknown port `{port}`"))),
                },
                (Some(via), None) => {
                    let mut hops = Vec::new();
                    for v in via.split(',') {
                        let ip: std::net::IpAddr = v.parse().map_err(|_| {
                            err(line, "via", format!("invalid next-hop address `{v}`"))
                        })?;
                        if ip.is_ipv6() != prefix.is_ipv6() {
                            return Err(err(
                                line,
                                "via",
                                format!("next hop {ip} is not of the prefix's address family"),
                            ));
                        }
                        let p = match port_of.get(&ip) {
                            Some(&p) => p,
                            None => {
                                let on = |ps: &PortSection| match ip {
                                    std::net::IpAddr::V4(a) => {
                                        ps.ipv4.iter().any(|c| c.get_ref().contains(a))
                                    }
                                    std::net::IpAddr::V6(a) => {
                                        ps.ipv6.iter().any(|c| c.get_ref().contains(a))
                                    }
                                };
                                let p = self.ports.iter().position(on).ok_or_else(|| {
                                    err(line, "via", format!("{ip} is on no port's subnet"))
                                })? as u16;
                                port_of.insert(ip, p);
                                p
                            }
                        };
                        hops.push((ip, p));
                    }
                    RouteTarget::Via(hops)
                }
                _ => {
                    return Err(err(
                        line,
                        "route",
                        format!("expected `PREFIX VIA[,VIA...]` or `PREFIX dev PORT`, got `{l}`"),
                    ))
                }
            };
            res.routes.push(RouteSpec { prefix, target });
        }
        Ok(())
    }

    fn port_names(&self) -> String {
        self.ports
            .iter()
            .map(|p| p.name.get_ref().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The stage list without spans.
    pub fn stages(&self) -> Vec<StageKind> {
        self.pipeline
            .get_ref()
            .iter()
            .map(|s| *s.get_ref())
            .collect()
    }
}

/// The device name EAL knows a port by: the vdev string up to its first comma.
pub fn device_name(device: &str) -> &str {
    device.split(',').next().unwrap_or(device).trim()
}

/// Whether `device` is a virtual device (passed to EAL with `--vdev`).
pub fn is_vdev(device: &str) -> bool {
    device_name(device).starts_with("net_") || device_name(device).starts_with("eth_")
}

// ---------------------------------------------------------------------------
// Locating errors

/// Turns byte spans into line/column and a dotted field path.
struct Locator<'a> {
    src: &'a str,
    file: &'a str,
    /// Directory of the config file, for relative paths inside it.
    dir: &'a Path,
}

impl Locator<'_> {
    fn error(&self, span: Range<usize>, field: Option<String>, message: String) -> ConfigError {
        let start = span.start.min(self.src.len());
        let before = &self.src[..start];
        let line = before.matches('\n').count() + 1;
        let column = start - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        let field = field.unwrap_or_else(|| self.field_at(start, line));
        ConfigError::Invalid {
            file: self.file.to_owned(),
            line,
            column,
            field,
            message,
        }
    }

    /// The dotted path of the key on `line`, from the table headers above it
    /// (`[[port]]` counted so the path reads `port[1].mac`).
    fn field_at(&self, offset: usize, line: usize) -> String {
        let mut table = String::new();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for l in self.src.lines().take(line.saturating_sub(1)) {
            let t = l.trim();
            if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
                let name = name.trim().to_owned();
                let c = counts
                    .entry(name.clone())
                    .and_modify(|c| *c += 1)
                    .or_insert(0);
                table = format!("{name}[{c}]");
            } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
                table = name.trim().to_owned();
            }
        }
        let text = self.src.lines().nth(line - 1).unwrap_or("");
        let t = text.trim();
        let key = if t.starts_with('[') {
            // The header line itself (e.g. an unknown [section]).
            return t.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
        } else if let Some((k, _)) = t.split_once('=') {
            k.trim().trim_matches('"').to_owned()
        } else {
            let _ = offset;
            String::new()
        };
        match (table.is_empty(), key.is_empty()) {
            (true, _) => key,
            (false, true) => table,
            (false, false) => format!("{table}.{key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const GOOD: &str = r#"pipeline = ["forward"]

[eal]
file_prefix = "t"
memory_mb = 256
hugepages = "off"
args = ["--log-level=lib.eal:debug"]

[[port]]
name = "p0"
device = "net_pcap0,rx_pcap=a.pcap"
mac = "02:00:00:00:00:aa"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8::1/64"]

[[port]]
name = "p1"
device = "net_pcap1,rx_pcap=b.pcap"
rx_queues = 2

[[worker]]
core = 1
rx = ["p0:0", "p1:0"]

[[worker]]
core = 2
rx = ["p1:1"]

[forward]
pairs = [["p0", "p1"]]
"#;

    fn err(src: &str) -> (usize, String, String) {
        match Config::parse(src, "test.toml") {
            Ok(_) => panic!("config should have failed:\n{src}"),
            Err(ConfigError::Invalid {
                file,
                line,
                field,
                message,
                ..
            }) => {
                assert_eq!(file, "test.toml");
                (line, field, message)
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    /// Replaces the first occurrence of `from` in GOOD.
    fn bad(from: &str, to: &str) -> String {
        assert!(GOOD.contains(from), "{from}");
        GOOD.replacen(from, to, 1)
    }

    #[test]
    fn good_file_parses_and_resolves() {
        let (cfg, res) = Config::parse(GOOD, "good.toml").unwrap();
        assert_eq!(cfg.ports.len(), 2);
        assert_eq!(cfg.ports[0].mac, Some(Mac([2, 0, 0, 0, 0, 0xaa])));
        assert_eq!(cfg.ports[0].ipv4[0].get_ref().len, 24);
        assert!(cfg.ports[0].tx_checksum_offload, "on unless turned off");
        assert_eq!(cfg.stages(), vec![StageKind::Forward]);
        assert_eq!(res.worker_rx[1], vec![RxAssignment { port: 1, queue: 1 }]);
        assert_eq!(res.tx_queues, vec![2, 2]);
        assert_eq!(res.forward_out, vec![Some(1), Some(0)]);
        assert_eq!(cfg.eal.hugepages, Hugepages::Off);
        assert!(cfg.mempool_size(&res) >= 4 * 1024);
    }

    #[test]
    fn checksum_offload_can_be_turned_off() {
        let src = bad(
            "rx_queues = 2",
            "rx_queues = 2\ntx_checksum_offload = false",
        );
        let (cfg, _) = Config::parse(&src, "t.toml").unwrap();
        assert!(cfg.ports[0].tx_checksum_offload);
        assert!(!cfg.ports[1].tx_checksum_offload);
        let (line, field, _) = err(&bad(
            "rx_queues = 2",
            "rx_queues = 2\ntx_checksum_offload = 1",
        ));
        assert_eq!((line, field.as_str()), (20, "port[1].tx_checksum_offload"));
    }

    #[test]
    fn shipped_configs_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                Config::load(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n > 0, "no configs found in {}", dir.display());
    }

    #[test]
    fn unknown_key_names_line_and_field() {
        let (line, field, msg) = err(&bad("memory_mb = 256", "memory_mb = 256\nmemroy = 3"));
        assert_eq!(line, 6);
        assert_eq!(field, "eal.memroy");
        assert!(msg.contains("unknown field `memroy`"), "{msg}");
    }

    #[test]
    fn unknown_section_is_rejected() {
        let (line, field, msg) = err(&format!("{GOOD}\n[bogus]\nx = 1\n"));
        assert_eq!(line, 32);
        assert_eq!(field, "bogus");
        assert!(msg.contains("unknown field `bogus`"), "{msg}");
    }

    #[test]
    fn bad_mac_names_line_and_field() {
        let (line, field, msg) = err(&bad("02:00:00:00:00:aa", "02:00:00:00:zz:aa"));
        assert_eq!(line, 12);
        assert_eq!(field, "port[0].mac");
        assert!(msg.contains("invalid MAC address"), "{msg}");
    }

    #[test]
    fn bad_cidr_names_line_and_field() {
        let (line, field, msg) = err(&bad("192.0.2.1/24", "192.0.2.1/33"));
        assert_eq!((line, field.as_str()), (13, "port[0].ipv4"));
        assert!(msg.contains("0..=32"), "{msg}");
        let (line, field, msg) = err(&bad("2001:db8::1/64", "2001:db8::g/64"));
        assert_eq!((line, field.as_str()), (14, "port[0].ipv6"));
        assert!(msg.contains("not an IPv4 or IPv6 address"), "{msg}");
        let (_, _, msg) = err(&bad("192.0.2.1/24", "192.0.2.1"));
        assert!(msg.contains("ADDRESS/LENGTH"), "{msg}");
    }

    #[test]
    fn unknown_port_in_worker() {
        let (line, field, msg) = err(&bad(r#"rx = ["p0:0", "p1:0"]"#, r#"rx = ["p0:0", "p9:0"]"#));
        assert_eq!((line, field.as_str()), (23, "worker[0].rx"));
        assert!(msg.contains("unknown port `p9`"), "{msg}");
    }

    #[test]
    fn missing_queue_and_double_polling() {
        let (line, _, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p1:5"]"#));
        assert_eq!(line, 27);
        assert!(msg.contains("queue 5 does not exist"), "{msg}");
        let (line, _, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p1:1", "p0:0"]"#));
        assert_eq!(line, 27);
        assert!(msg.contains("already polled by worker[0]"), "{msg}");
        let (_, field, msg) = err(&bad(r#"rx = ["p1:1"]"#, r#"rx = ["p0"]"#));
        assert!(msg.contains("already polled"), "{msg} {field}");
    }

    #[test]
    fn unpolled_queue_is_an_error() {
        let (_, field, msg) = err(&bad("rx_queues = 2", "rx_queues = 3"));
        assert_eq!(field, "port[1].rx_queues");
        assert!(msg.contains("p1:2 is polled by no worker"), "{msg}");
    }

    #[test]
    fn duplicate_core() {
        let (line, field, msg) = err(&bad("core = 2", "core = 1"));
        assert_eq!((line, field.as_str()), (26, "worker[1].core"));
        assert!(msg.contains("core 1 is used by two workers"), "{msg}");
    }

    #[test]
    fn stage_referencing_missing_port() {
        let (line, field, msg) = err(&bad(
            r#"pairs = [["p0", "p1"]]"#,
            r#"pairs = [["p0", "nope"]]"#,
        ));
        assert_eq!((line, field.as_str()), (30, "forward.pairs[0]"));
        assert!(msg.contains("unknown port `nope`"), "{msg}");
    }

    #[test]
    fn pipeline_errors() {
        let (line, field, msg) = err(&bad(
            r#"pipeline = ["forward"]"#,
            r#"pipeline = ["teleport"]"#,
        ));
        assert_eq!((line, field.as_str()), (1, "pipeline"));
        assert!(msg.contains("unknown variant `teleport`"), "{msg}");
        let (_, _, msg) = err(&bad(r#"pipeline = ["forward"]"#, r#"pipeline = []"#));
        assert!(
            msg.contains("pipeline is empty") || msg.contains("not in the pipeline"),
            "{msg}"
        );
        let (_, _, msg) = err(&bad(
            r#"pipeline = ["forward"]"#,
            r#"pipeline = ["forward", "forward"]"#,
        ));
        assert!(msg.contains("listed twice"), "{msg}");
        let no_section = GOOD.split("[forward]").next().unwrap();
        let (_, _, msg) = err(no_section);
        assert!(msg.contains("needs a [forward] section"), "{msg}");
    }

    #[test]
    fn duplicate_port_name_and_device() {
        let (line, field, msg) = err(&bad(r#"name = "p1""#, r#"name = "p0""#));
        assert_eq!((line, field.as_str()), (17, "port[1].name"));
        assert!(msg.contains("duplicate port name"), "{msg}");
        let (_, field, msg) = err(&bad("net_pcap1,rx_pcap=b.pcap", "net_pcap0,rx_pcap=b.pcap"));
        assert_eq!(field, "port[1].device");
        assert!(msg.contains("used by two ports"), "{msg}");
    }

    #[test]
    fn wrong_types_and_syntax() {
        let (line, field, msg) = err(&bad("memory_mb = 256", "memory_mb = \"lots\""));
        assert_eq!((line, field.as_str()), (5, "eal.memory_mb"));
        assert!(msg.contains("invalid type"), "{msg}");
        let (line, _, _) = err(&bad("memory_mb = 256", "memory_mb = = 3"));
        assert_eq!(line, 5);
        let (_, field, msg) = err(&bad(r#"hugepages = "off""#, r#"hugepages = "maybe""#));
        assert_eq!(field, "eal.hugepages");
        assert!(msg.contains("unknown variant"), "{msg}");
    }

    #[test]
    fn too_few_tx_queues() {
        let (_, field, msg) = err(&bad("rx_queues = 2", "rx_queues = 2\ntx_queues = 1"));
        assert_eq!(field, "port[1].tx_queues");
        assert!(msg.contains("each worker needs its own"), "{msg}");
    }

    #[test]
    fn error_display_has_file_line_field() {
        let e = Config::parse(&bad("02:00:00:00:00:aa", "nonsense"), "x/y.toml").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("x/y.toml:12:"), "{s}");
        assert!(s.contains("port[0].mac"), "{s}");
    }

    #[test]
    fn cidr_helpers() {
        let c: Ipv4Cidr = "10.1.2.3/8".parse().unwrap();
        assert_eq!(c.network(), Ipv4Addr::new(10, 0, 0, 0));
        assert!(c.contains(Ipv4Addr::new(10, 200, 0, 1)));
        assert!(!c.contains(Ipv4Addr::new(11, 0, 0, 1)));
        let z: Ipv4Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(z.contains(Ipv4Addr::new(1, 2, 3, 4)));
        let c6: Ipv6Cidr = "2001:db8::5/64".parse().unwrap();
        assert!(c6.contains("2001:db8::ffff".parse().unwrap()));
        assert_eq!(c6.network(), "2001:db8::".parse::<Ipv6Addr>().unwrap());
        assert!("2001:db8::/64".parse::<Ipv4Cidr>().is_err());
    }

    const ROUTER: &str = r#"pipeline = ["acl", "route"]

[[port]]
name = "lan"
device = "net_null0"
ipv4 = ["10.0.1.1/24"]
ipv6 = ["2001:db8:1::1/64"]

[[port]]
name = "wan"
device = "net_null1"
ipv4 = ["10.0.2.1/24"]

[[worker]]
core = 1
rx = ["lan", "wan"]

[acl]
default = "allow"

[[acl.rule]]
action = "deny"
src = "10.9.0.0/16"
proto = "tcp"
dport = "22-23"

[route]
[[route.static]]
prefix = "198.18.0.0/24"
via = ["10.0.1.2", "10.0.2.2"]

[[route.static]]
prefix = "192.0.2.0/24"
port = "wan"

[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:00:01"
"#;

    fn router_bad(from: &str, to: &str) -> String {
        assert!(ROUTER.contains(from), "{from}");
        ROUTER.replacen(from, to, 1)
    }

    #[test]
    fn router_config_resolves() {
        use crate::tables::routing::RouteTarget;
        let (cfg, res) = Config::parse(ROUTER, "r.toml").unwrap();
        assert_eq!(cfg.stages(), vec![StageKind::Acl, StageKind::Route]);
        assert_eq!(res.acl_rules.len(), 1);
        assert_eq!(res.acl_rules[0].dport, (22, 23));
        assert_eq!(res.acl_rules[0].proto, Some(6));
        assert_eq!(res.routes.len(), 2);
        match &res.routes[0].target {
            RouteTarget::Via(h) => {
                assert_eq!(h.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0, 1])
            }
            t => panic!("{t:?}"),
        }
        assert_eq!(res.routes[1].target, RouteTarget::Port(1));
        assert_eq!(
            res.neighbors,
            vec![(0, "10.0.1.2".parse().unwrap(), [2, 0, 0, 0, 0, 1])]
        );
    }

    #[test]
    fn acl_flow_cache_size() {
        let (_, res) = Config::parse(ROUTER, "r.toml").unwrap();
        assert_eq!(res.acl_flow_cache, AclConfig::DEFAULT_FLOW_CACHE);
        let off = router_bad(
            r#"default = "allow""#,
            "default = \"allow\"\nflow_cache = 0",
        );
        assert_eq!(Config::parse(&off, "r.toml").unwrap().1.acl_flow_cache, 0);
        let big = router_bad(
            r#"default = "allow""#,
            "default = \"allow\"\nflow_cache = 99999999",
        );
        let (line, field, msg) = err(&big);
        assert_eq!((line, field.as_str()), (20, "acl.flow_cache"));
        assert!(msg.contains("99999999 entries"), "{msg}");
    }

    #[test]
    fn router_config_errors_name_line_and_field() {
        let (line, field, msg) = err(&router_bad(r#"proto = "tcp""#, r#"proto = "tpc""#));
        assert_eq!((line, field.as_str()), (24, "acl.rule[0].proto"));
        assert!(msg.contains("unknown protocol `tpc`"), "{msg}");
        let (line, field, msg) = err(&router_bad(r#"dport = "22-23""#, r#"dport = "23-22""#));
        assert_eq!((line, field.as_str()), (25, "acl.rule[0].dport"));
        assert!(msg.contains("invalid port range"), "{msg}");
        let (line, field, msg) = err(&router_bad(
            r#"via = ["10.0.1.2", "10.0.2.2"]"#,
            r#"via = ["10.0.1.2", "10.7.7.7"]"#,
        ));
        assert_eq!((line, field.as_str()), (30, "route.static[0].via"));
        assert!(msg.contains("10.7.7.7 is on no port's subnet"), "{msg}");
        let (_, field, msg) = err(&router_bad(
            r#"via = ["10.0.1.2", "10.0.2.2"]"#,
            r#"via = "2001:db8:1::9""#,
        ));
        assert_eq!(field, "route.static[0].via");
        assert!(msg.contains("address family"), "{msg}");
        let (line, field, msg) = err(&router_bad(r#"port = "wan""#, r#"port = "dmz""#));
        assert_eq!((line, field.as_str()), (34, "route.static[1].port"));
        assert!(msg.contains("unknown port `dmz`"), "{msg}");
        let (_, field, msg) = err(&router_bad(r#"ip = "10.0.1.2""#, r#"ip = "10.0.3.2""#));
        assert_eq!(field, "route.neighbor[0].ip");
        assert!(msg.contains("on no port's subnet"), "{msg}");
        let (_, field, msg) = err(&router_bad(
            r#"src = "10.9.0.0/16""#,
            r#"src = "2001:db8::/32"
dst = "10.0.0.0/8""#,
        ));
        assert_eq!(field, "acl.rule[0].dst");
        assert!(msg.contains("same address family"), "{msg}");
        let (_, _, msg) = err(&router_bad(
            r#"pipeline = ["acl", "route"]"#,
            r#"pipeline = ["route", "acl"]"#,
        ));
        assert!(msg.contains("acl"), "{msg}");
        let (_, _, msg) = err(&router_bad(
            r#"pipeline = ["acl", "route"]"#,
            r#"pipeline = ["route"]"#,
        ));
        assert!(
            msg.contains("[acl] is configured but `acl` is not in the pipeline"),
            "{msg}"
        );
    }

    #[test]
    fn routes_file_errors_name_its_line() {
        let dir = tempfile_dir();
        std::fs::write(
            dir.join("r.txt"),
            "# comment\n198.18.0.0/24 10.0.1.2\n\n198.18.1.0/33 10.0.1.2\n",
        )
        .unwrap();
        let src = ROUTER.replacen("[route]", "[route]\nroutes_file = \"r.txt\"", 1);
        let e = Config::parse_in(&src, "r.toml", &dir).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("r.txt:4:"), "{s}");
        assert!(s.contains("0..=32"), "{s}");
        std::fs::write(
            dir.join("r.txt"),
            "198.18.0.0/24 10.0.1.2,10.0.2.2\n203.0.113.0/24 dev wan\n",
        )
        .unwrap();
        let (_, res) = Config::parse_in(&src, "r.toml", &dir).unwrap();
        assert_eq!(res.routes.len(), 4);
        std::fs::write(dir.join("r.txt"), "198.18.0.0/24 via 10.0.1.2\n").unwrap();
        let s = Config::parse_in(&src, "r.toml", &dir)
            .unwrap_err()
            .to_string();
        assert!(
            s.contains("r.txt:1:") && s.contains("expected `PREFIX VIA"),
            "{s}"
        );
        let missing = ROUTER.replacen("[route]", "[route]\nroutes_file = \"nope.txt\"", 1);
        let s = Config::parse_in(&missing, "r.toml", &dir)
            .unwrap_err()
            .to_string();
        assert!(
            s.contains("route.routes_file") && s.contains("nope.txt"),
            "{s}"
        );
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("dp-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
