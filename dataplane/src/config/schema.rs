//! The config file's schema: one serde struct per section, with defaults
//! and doc comments. Every struct rejects unknown keys.
use super::values::*;
use crate::tables::RouteBackend;
use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
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
    /// Ring mode: one receiving core that spreads its ports' packets by
    /// flow over the workers that have no `rx` of their own.
    pub distributor: Option<Spanned<DistributorSection>>,
    pub forward: Option<Spanned<ForwardConfig>>,
    pub acl: Option<Spanned<AclConfig>>,
    pub route: Option<Spanned<RouteSection>>,
    /// Not `Spanned`: toml cannot give a span to a table that only
    /// `[[lb.service]]` headers create.
    pub lb: Option<LbSection>,

    /// Where the file came from (set by `load`), for error messages.
    #[serde(skip)]
    pub source_name: String,
    /// The text this config was parsed from: what a reload compares the
    /// new file with (read once, so an edit during start-up is not missed).
    #[serde(skip)]
    pub source: String,
}

pub use crate::pipeline::StageKind;

/// What the config's ordering rules need to know of each stage: what the
/// stage declares in its own file ([`crate::pipeline::StageSpec`], through
/// `StageKind::spec`, made from the pipeline's registration list).
impl StageKind {
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// It sends packets to an output port (at most one such per pipeline).
    pub fn forwards(&self) -> bool {
        self.spec().forwards
    }

    /// It only filters and needs a later stage that forwards.
    pub fn needs_later_forwarder(&self) -> bool {
        self.spec().needs_later_forwarder
    }

    /// It reads packet headers (the `parse` sweep runs before the first
    /// such stage).
    pub fn needs_headers(&self) -> bool {
        self.spec().needs_headers
    }

    /// It sends frames on unread: no header-reading stage beside it.
    pub fn headerless(&self) -> bool {
        self.spec().headerless
    }

    /// Its config section, if it has one.
    pub fn section(&self) -> Option<&'static str> {
        self.spec().section
    }
}

impl Config {
    /// The stages' sections this config has, by name, with their spans.
    pub fn stage_sections(&self) -> Vec<(&'static str, std::ops::Range<usize>)> {
        [
            ("forward", self.forward.as_ref().map(|s| s.span())),
            ("acl", self.acl.as_ref().map(|s| s.span())),
            ("route", self.route.as_ref().map(|s| s.span())),
            ("lb", self.lb.as_ref().map(|s| s.span())),
        ]
        .into_iter()
        .filter_map(|(name, span)| Some((name, span?)))
        .collect()
    }
}

pub use crate::dpdk::port::RxChecksumOffload;

/// A port's `rx_checksum_offload`: `"auto"`, `"on"` or `"off"`, or a
/// boolean (`true` is `on`), as `tx_checksum_offload` takes one.
impl<'de> Deserialize<'de> for RxChecksumOffload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RxChecksumOffload;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"auto\", \"on\", \"off\" or a boolean")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<Self::Value, E> {
                Ok(if on {
                    RxChecksumOffload::On
                } else {
                    RxChecksumOffload::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
                match s {
                    "auto" => Ok(RxChecksumOffload::Auto),
                    "on" => Ok(RxChecksumOffload::On),
                    "off" => Ok(RxChecksumOffload::Off),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(s), &self)),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Hugepage policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hugepages {
    /// Use hugepages when the machine has enough free ones mounted (as many
    /// as `memory_mb`, which EAL reserves at start), else `--no-huge`.
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
    /// Extra EAL arguments, appended before command-line overrides
    /// ([`EalConfig::arg_strings`]; checked by `check`: `validate::eal_args`).
    pub args: Vec<Spanned<String>>,
    pub hugepages: Hugepages,
    /// Memory EAL reserves (`-m`), MiB.
    pub memory_mb: Spanned<u32>,
    /// `--file-prefix`: separates concurrent DPDK processes (checked by
    /// [`super::check_file_prefix`]).
    pub file_prefix: Spanned<String>,
    /// CPU of the main (control/stats) thread.
    pub control_core: Spanned<u32>,
    /// Disable DPDK's telemetry socket (on by default).
    pub no_telemetry: bool,
}

impl EalConfig {
    /// `args` as EAL takes them.
    pub fn arg_strings(&self) -> Vec<String> {
        self.args.iter().map(|a| a.get_ref().clone()).collect()
    }
}

impl Default for EalConfig {
    fn default() -> Self {
        EalConfig {
            args: Vec::new(),
            hugepages: Hugepages::Auto,
            memory_mb: Spanned::new(0..0, 512),
            file_prefix: Spanned::new(0..0, "dataplane".into()),
            control_core: Spanned::new(0..0, 0),
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
    pub mbufs: Spanned<u32>,
    /// Per-lcore cache size.
    pub cache: Spanned<u32>,
    /// Data room per mbuf, bytes (headroom included). Unset: sized from
    /// the largest port MTU ([`super::Config::data_room`]), so that every
    /// frame a port accepts fits one mbuf.
    pub data_room: Option<Spanned<u16>>,
}

impl Default for MempoolConfig {
    fn default() -> Self {
        MempoolConfig {
            mbufs: Spanned::new(0..0, 0),
            cache: Spanned::new(0..0, 256),
            data_room: None,
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
    pub mtu: Option<Spanned<u16>>,
    /// Overrides the device's MAC address.
    pub mac: Option<Spanned<Mac>>,
    /// The MAC of the station on the other end of the link, used as the
    /// destination by the `forward` stage (default `02:00:00:00:00:<port index>`).
    pub peer_mac: Option<Mac>,
    #[serde(default = "yes")]
    pub promiscuous: bool,
    /// Let the device fill in routed IPv4 packets' header checksums when it
    /// offers that offload; `false` keeps the incremental update in software.
    #[serde(default = "yes")]
    pub tx_checksum_offload: bool,
    /// Whether the device verifies received IPv4 header checksums
    /// ([`RxChecksumOffload`]).
    #[serde(default)]
    pub rx_checksum_offload: RxChecksumOffload,
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
    /// RX queues it polls: `"port"` (queue 0) or `"port:queue"`. Omitted:
    /// the `[distributor]` feeds it through rings.
    pub rx: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[distributor]` (ring mode): one core receives from `rx`, hashes each
/// packet's flow and hands it, zero-copy through a single-producer/
/// single-consumer `rte_ring` per (input port, worker), to one of the
/// workers that have no `rx` of their own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistributorSection {
    /// CPU of the receiving core.
    pub core: Spanned<u32>,
    /// RX queues it polls: `"port"` (queue 0) or `"port:queue"`.
    pub rx: Spanned<Vec<Spanned<String>>>,
    /// Slots of each ring: a power of two, 64..=65536; a ring holds
    /// `ring_size - 1` packets.
    #[serde(default = "default_ring_size")]
    pub ring_size: Spanned<u32>,
    /// What the flow hash covers.
    #[serde(default)]
    pub hash: DistributorHash,
}

impl DistributorSection {
    pub const DEFAULT_RING_SIZE: u32 = 1024;
    pub const MIN_RING_SIZE: u32 = 64;
    pub const MAX_RING_SIZE: u32 = 65536;
}

fn default_ring_size() -> Spanned<u32> {
    Spanned::new(0..0, DistributorSection::DEFAULT_RING_SIZE)
}

/// The fields of a packet the distributor's flow hash covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistributorHash {
    /// Addresses, protocol and L4 ports; IP fragments (the first one
    /// included) by addresses and protocol, so a datagram's fragments stay
    /// together.
    #[default]
    FiveTuple,
    /// Addresses and protocol only: every packet between two hosts, whole
    /// or fragmented, reaches the same worker (coarser spread).
    ThreeTuple,
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
    pub rule: Vec<Spanned<AclRuleConfig>>,
    /// Entries per address family of each worker's exact-match flow cache
    /// in front of the classifier (0 turns it off; rounded up to a power
    /// of two of buckets).
    #[serde(default = "default_acl_flow_cache")]
    pub flow_cache: Spanned<usize>,
}

fn default_acl_flow_cache() -> Spanned<usize> {
    Spanned::new(0..0, AclConfig::DEFAULT_FLOW_CACHE)
}

impl AclConfig {
    /// 16,384 entries per family (about 1.1 MiB per worker for both): room for about 8,000 active
    /// flows at half load, where an 8-way bucket rarely overflows (at 8,192
    /// the bench's 4,000 flows lost lookups to bucket overflow).
    pub const DEFAULT_FLOW_CACHE: usize = 16384;
    /// 2^24 entries per family (about 1.1 GiB per worker) at most.
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    /// `fib` (rte_fib/rte_fib6, the default), `lpm` (rte_lpm/rte_lpm6) or
    /// `linear` (pure Rust, no EAL: tests, the fuzzer, small tables).
    #[serde(default)]
    pub backend: RouteBackend,
    /// IPv4 route capacity (raised automatically to fit the configured routes).
    #[serde(default = "default_max_routes")]
    pub max_routes: u32,
    /// IPv6 route capacity.
    #[serde(default = "default_max_routes6")]
    pub max_routes6: u32,
    /// Second-level table groups (routes longer than /24 each need one).
    #[serde(default = "default_tbl8")]
    pub tbl8_groups: u32,
    /// ICMP errors (time exceeded, fragmentation needed, packet too big; one
    /// bucket) per second per worker; 0 sends none.
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticNeighbor {
    pub ip: Spanned<String>,
    pub mac: Mac,
    /// Defaults to the port whose subnet holds `ip`.
    pub port: Option<Spanned<String>>,
}

/// `[lb]`: the load balancer's services and each worker's connection table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbSection {
    /// Tracked connections per worker (the table is allocated at start:
    /// changing it needs a restart).
    #[serde(default = "default_conntrack_capacity")]
    pub conntrack_capacity: Spanned<usize>,
    /// Idle timeout of a tracked TCP connection, seconds.
    #[serde(default = "default_tcp_timeout")]
    pub tcp_timeout_s: Spanned<u32>,
    /// Idle timeout of a tracked UDP (or other) flow, seconds.
    #[serde(default = "default_udp_timeout")]
    pub udp_timeout_s: Spanned<u32>,
    /// Idle timeout of a TCP connection once a FIN or RST was seen, seconds.
    #[serde(default = "default_closing_timeout")]
    pub closing_timeout_s: Spanned<u32>,
    /// ICMP errors (fragmentation needed / packet too big) per second per
    /// worker; 0 sends none.
    #[serde(default = "default_icmp_rate")]
    pub icmp_rate: u32,
    #[serde(default, rename = "service")]
    pub services: Vec<LbServiceConfig>,
}

impl LbSection {
    pub const DEFAULT_CONNTRACK: usize = 65_536;

    /// Where the section shows in the file: its first service, else its
    /// first field.
    pub fn span(&self) -> std::ops::Range<usize> {
        self.services
            .first()
            .map(|s| s.vip.span())
            .unwrap_or_else(|| self.conntrack_capacity.span())
    }
}

fn default_conntrack_capacity() -> Spanned<usize> {
    Spanned::new(0..0, LbSection::DEFAULT_CONNTRACK)
}
fn default_tcp_timeout() -> Spanned<u32> {
    Spanned::new(0..0, 300)
}
fn default_udp_timeout() -> Spanned<u32> {
    Spanned::new(0..0, 30)
}
fn default_closing_timeout() -> Spanned<u32> {
    Spanned::new(0..0, 10)
}

/// How the load balancer hands a packet to its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LbMethod {
    /// IP-in-IP (IPv4 in IPv4, IPv6 in IPv6) to the backend's address; the
    /// outer packet is routed.
    #[default]
    Ipip,
    /// L2 direct server return: the destination MAC becomes the backend's,
    /// the packet leaves on the backend's port otherwise unchanged.
    Dsr,
}

/// The outer IPv4 header's DF bit (IP-in-IP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LbDf {
    /// Copied from the inner header.
    #[default]
    Inner,
    Set,
    Clear,
}

/// What the load balancer does with IP fragments to a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LbFragments {
    /// Drop every fragment (`lb_fragment`): only a first fragment has ports.
    #[default]
    Drop,
    /// Hash every packet of the service by source, destination and protocol
    /// only (ports left out), so a flow's fragments and whole packets reach
    /// the same backend.
    ThreeTuple,
}

/// `[[lb.service]]`: one virtual address (and protocol, port) and its pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbServiceConfig {
    /// For the report and the logs (default: `vip:port/proto`).
    pub name: Option<String>,
    pub vip: Spanned<String>,
    /// Protocol name (`tcp`, `udp`, `sctp`, ...) or number.
    pub proto: Spanned<Proto>,
    /// Destination port; omitted: every port.
    pub port: Option<Spanned<u16>>,
    #[serde(default)]
    pub method: LbMethod,
    /// Maglev table entries (a prime; > 100 x backends for <= 1 % imbalance).
    #[serde(default = "default_table_size")]
    pub table_size: Spanned<u32>,
    /// Track connections (per worker) so a flow keeps its backend when the
    /// pool changes.
    #[serde(default = "yes")]
    pub conntrack: bool,
    /// IP-in-IP: the outer source address (same family as the VIP).
    pub source: Option<Spanned<String>>,
    #[serde(default)]
    pub df: LbDf,
    #[serde(default)]
    pub fragments: LbFragments,
    #[serde(default, rename = "backend")]
    pub backends: Vec<LbBackendConfig>,
}

fn default_table_size() -> Spanned<u32> {
    Spanned::new(0..0, crate::tables::maglev::DEFAULT_SIZE)
}

/// `[[lb.service.backend]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbBackendConfig {
    pub address: Spanned<String>,
    /// Share of new flows; 0 drains (tracked flows stay).
    #[serde(default = "one_u32")]
    pub weight: Spanned<u32>,
    /// Identity beside the address (two backends on one host).
    pub name: Option<String>,
    /// DSR: the backend's MAC.
    pub mac: Option<Mac>,
    /// DSR: the port it is reached on (default: the port whose subnet
    /// holds its address).
    pub port: Option<Spanned<String>>,
}

fn one_u32() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registration maps each name the config reads to the stage that
    /// declares that name, and the ordering rules read those declarations.
    #[test]
    fn each_kind_is_registered_under_its_config_name() {
        for name in ["forward", "acl", "route", "lb", "count"] {
            let k: StageKind = toml::Value::String(name.into()).try_into().unwrap();
            assert_eq!(k.name(), name);
            assert_eq!(k.section(), (name != "count").then_some(name));
        }
        let forwarders: Vec<_> = [StageKind::Forward, StageKind::Route, StageKind::Acl]
            .iter()
            .map(StageKind::forwards)
            .collect();
        assert_eq!(forwarders, [true, true, false]);
        assert!(StageKind::Lb.needs_later_forwarder() && !StageKind::Count.needs_headers());
    }
}
