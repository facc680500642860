//! The daemon's TOML configuration: schema, parsing and validation.
//!
//! Every struct rejects unknown keys. Errors — syntax, types, bad values and
//! cross-references alike — carry the file, line, column and the dotted path
//! of the field (`port[1].mac`), so an operator can go straight to the line.
//! `Config::load` is pure: it starts no DPDK, which is what `dataplane check`
//! relies on. Stage sections (`[forward]`, `[acl]`, `[route]`, `[lb]`) and
//! `[distributor]` are validated here too, so that a running daemon never
//! meets a config it cannot build.
//!
//! Layout: [`values`] (addresses, prefixes, ports, protocols: the strings
//! with their own syntax), [`schema`] (the serde structs, one per section),
//! `validate` (cross-checks per section, building [`Resolved`]), `lb` (the
//! `[lb]` section's checks and its services), `host` (the machine's online
//! CPUs, which `check` compares with), `routes_file` (the routes
//! file parser) and `location` (byte spans to file:line:column and a field
//! path, and [`ConfigError`]).
use crate::tables::RouteConfig;
use std::collections::HashMap;
use std::path::Path;

mod host;
mod lb;
mod location;
mod routes_file;
pub mod schema;
mod validate;
pub mod values;

pub use host::{Host, HostMemory};
pub use location::ConfigError;
use location::Locator;
pub use schema::*;
pub use values::*;

// ---------------------------------------------------------------------------
// Resolved, validated view used to build the runtime.

/// A worker's resolved RX queue list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxAssignment {
    pub port: usize,
    pub queue: u16,
}

/// Ring mode (`[distributor]`), resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributorPlan {
    /// CPU of the receiving core.
    pub core: u32,
    /// The RX queues it polls.
    pub rx: Vec<RxAssignment>,
    /// The ports among them, each once, in the order first listed: there is
    /// one ring per (port, fed worker), so a worker knows each packet's
    /// input port from the ring it came through.
    pub ports: Vec<usize>,
    /// The workers it feeds (those without `rx`), by worker index.
    pub workers: Vec<usize>,
    pub ring_size: u32,
    pub hash: DistributorHash,
}

impl DistributorPlan {
    /// Slot of port index `port` in [`DistributorPlan::ports`].
    pub fn port_slot(&self, port: usize) -> Option<usize> {
        self.ports.iter().position(|&p| p == port)
    }

    /// Rings in all: one per (port, fed worker).
    pub fn rings(&self) -> usize {
        self.ports.len() * self.workers.len()
    }
}

/// Everything validation derives once so later stages need not recompute.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub port_index: HashMap<String, usize>,
    /// Per worker, the (port index, queue) pairs it polls (empty for a
    /// worker the distributor feeds).
    pub worker_rx: Vec<Vec<RxAssignment>>,
    /// Ring mode: the distributor and the workers it feeds.
    pub distributor: Option<DistributorPlan>,
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
    /// The load balancer's services (`[lb]`).
    pub lb: Option<crate::tables::lb::LbSpec>,
    /// What is allowed but likely wrong, located like errors (`load` logs
    /// them; `check` and `run` print them as warnings).
    pub warnings: Vec<ConfigError>,
}

/// EAL memory a config needs, estimated from its sizes (MiB, rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// rte_fib/rte_lpm tables of both families.
    pub route_tables_mb: u64,
    /// The mbuf pool.
    pub mempool_mb: u64,
    /// Everything: the above plus [`MemoryEstimate::OTHER_MB`].
    pub total_mb: u64,
}

impl MemoryEstimate {
    /// EAL's own memzones, the neighbour cache, ACL tries and allocator
    /// overhead: what the tables and the pool leave out, sized so that the
    /// shipped router example starts without hugepages at the estimate.
    pub const OTHER_MB: u64 = 80;
}

impl Config {
    /// Reads, parses and validates `path` against this machine
    /// ([`Host::current`]), and logs the warnings.
    pub fn load(path: &Path) -> Result<(Config, Resolved), ConfigError> {
        let (cfg, res) = Config::load_with(path, &Host::current())?;
        for w in &res.warnings {
            tracing::warn!("{w}");
        }
        Ok((cfg, res))
    }

    /// As `load`, checked against `host`; warnings are left in `Resolved`.
    pub fn load_with(path: &Path, host: &Host) -> Result<(Config, Resolved), ConfigError> {
        let src = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
            file: path.display().to_string(),
            message: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Config::parse_with(&src, &path.display().to_string(), &dir, host)
    }

    /// Parses and validates `src`; `file` names it in errors. Host facts
    /// (online CPUs) are not checked.
    pub fn parse(src: &str, file: &str) -> Result<(Config, Resolved), ConfigError> {
        Config::parse_in(src, file, Path::new("."))
    }

    /// As `parse`, with relative paths (routes_file) taken from `dir`.
    pub fn parse_in(src: &str, file: &str, dir: &Path) -> Result<(Config, Resolved), ConfigError> {
        Config::parse_with(src, file, dir, &Host::unknown())
    }

    /// As `parse_in`, also checked against `host`.
    pub fn parse_with(
        src: &str,
        file: &str,
        dir: &Path,
        host: &Host,
    ) -> Result<(Config, Resolved), ConfigError> {
        let loc = Locator { src, file, dir };
        let mut cfg: Config = toml::from_str(src).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            // One line (the parser's message may take several), and a
            // syntax error outside any key is named as one.
            let message: Vec<&str> = e
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let err = loc.error(span.clone(), None, message.join(": "));
            match err {
                ConfigError::Invalid { ref field, .. } if field.is_empty() => {
                    loc.error(span, Some("syntax".into()), message.join(": "))
                }
                e => e,
            }
        })?;
        cfg.source_name = file.to_owned();
        cfg.source = src.to_owned();
        let mut resolved = cfg.validate(&loc)?;
        cfg.resolve_acl(&loc, &mut resolved)?;
        cfg.resolve_routes(&loc, &mut resolved)?;
        cfg.resolve_lb(&loc, &mut resolved)?;
        cfg.check_cores(&loc, host, &mut resolved)?;
        cfg.check_distributor_core(&loc, host, &mut resolved)?;
        cfg.check_port_files(&loc, host)?;
        cfg.check_mempool(&loc)?;
        cfg.check_memory(&loc, host, &mut resolved)?;
        Ok((cfg, resolved))
    }

    /// Total mbufs to create when `mempool.mbufs` is 0.
    pub fn mempool_size(&self, resolved: &Resolved) -> u32 {
        if *self.mempool.mbufs.get_ref() != 0 {
            return *self.mempool.mbufs.get_ref();
        }
        let mut n: u64 = 0;
        for (i, p) in self.ports.iter().enumerate() {
            n += u64::from(*p.rx_queues.get_ref()) * u64::from(p.rx_desc);
            n += u64::from(resolved.tx_queues[i]) * u64::from(p.tx_desc);
        }
        // The distributor's lcore has a pool cache too, and its rings hold
        // mbufs: room for every ring full at once.
        let lcores = (self.workers.len() + usize::from(resolved.distributor.is_some())).max(1);
        let workers = lcores as u64;
        n +=
            workers * (u64::from(*self.mempool.cache.get_ref()) + 4 * 64 * self.ports.len() as u64);
        if let Some(d) = &resolved.distributor {
            n += d.rings() as u64 * u64::from(d.ring_size - 1);
        }
        n += 8192; // pcap replay preload, control traffic, headroom
                   // Mempools are most memory-efficient at 2^k - 1.
        let n = n.next_power_of_two() - 1;
        n.min(u64::from(u32::MAX)) as u32
    }

    /// Bytes per mbuf (headroom included): `mempool.data_room`, or, unset,
    /// the room the largest port MTU needs (MTU + 14 Ethernet + 8 for two
    /// VLAN tags + the 128-byte headroom), at least DPDK's default 2176.
    /// So a jumbo MTU gets jumbo mbufs, and every frame a port accepts is
    /// one segment (`check` refuses a `data_room` set too small).
    pub fn data_room(&self) -> u16 {
        if let Some(r) = &self.mempool.data_room {
            return *r.get_ref();
        }
        let need = self
            .ports
            .iter()
            .map(|p| validate::data_room_for(p.mtu.as_ref().map_or(1500, |m| *m.get_ref())))
            .max()
            .unwrap_or(0);
        need.clamp(validate::DEFAULT_DATA_ROOM, u32::from(u16::MAX)) as u16
    }

    /// EAL memory this config needs (see [`MemoryEstimate`]).
    pub fn memory_estimate(&self, res: &Resolved) -> MemoryEstimate {
        const MB: u64 = 1 << 20;
        let route_bytes = self.route.as_ref().map_or(0, |sec| {
            let (c4, c6) = route_configs(sec.get_ref(), res, self);
            c4.estimated_bytes(false) + c6.estimated_bytes(true)
        });
        // struct rte_mbuf (128 B) and the mempool's object header and
        // private area (64 B) come on top of each data room.
        let per_mbuf = u64::from(self.data_room()) + 192;
        let pool_bytes = u64::from(self.mempool_size(res)) * per_mbuf;
        let route_tables_mb = route_bytes.div_ceil(MB);
        let mempool_mb = pool_bytes.div_ceil(MB);
        MemoryEstimate {
            route_tables_mb,
            mempool_mb,
            total_mb: route_tables_mb + mempool_mb + MemoryEstimate::OTHER_MB,
        }
    }

    pub(super) fn port_names(&self) -> String {
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

/// Capacity settings for the route tables, raised to fit what the config holds.
pub fn route_configs(
    sec: &RouteSection,
    res: &Resolved,
    cfg: &Config,
) -> (RouteConfig, RouteConfig) {
    let backend = sec.backend;
    let addrs: usize = cfg
        .ports
        .iter()
        // Connected and own-address routes, and an IPv4 subnet's broadcast.
        .map(|p| 3 * p.ipv4.len() + 2 * p.ipv6.len())
        .sum();
    let v4: Vec<_> = res.routes.iter().filter(|r| !r.prefix.is_ipv6()).collect();
    let n6 = res.routes.len() - v4.len();
    // Each /24 holding a longer prefix needs one second-level group.
    let long: std::collections::HashSet<u32> = v4
        .iter()
        .filter(|r| r.prefix.prefix_len() > 24)
        .filter_map(|r| match r.prefix.addr() {
            std::net::IpAddr::V4(a) => Some(u32::from(a) >> 8),
            _ => None,
        })
        .collect();
    let cfg4 = RouteConfig {
        backend,
        max_routes: sec.max_routes.max((v4.len() + addrs + 16) as u32),
        num_tbl8: sec.tbl8_groups.max(long.len() as u32 + addrs as u32 + 256),
    };
    let cfg6 = RouteConfig {
        backend,
        max_routes: sec.max_routes6.max((n6 + addrs + 16) as u32),
        num_tbl8: sec.tbl8_groups.max(((n6 + addrs) * 4) as u32 + 256),
    };
    (cfg4, cfg6)
}

/// The device name EAL knows a port by: the vdev string up to its first comma.
pub fn device_name(device: &str) -> &str {
    device.split(',').next().unwrap_or(device).trim()
}

/// Why `prefix` cannot be an EAL `--file-prefix`, if it cannot. EAL makes
/// it a directory name under its runtime directory and the start of its
/// hugepage files' names, and accepts a path (`..` included) that puts
/// them anywhere; its own limit is a length error with the usage text. So:
/// 1 to 64 letters, digits, `_`, `-` and `.`, not starting with a `.`.
pub fn check_file_prefix(prefix: &str) -> Result<(), String> {
    const MAX: usize = 64;
    if prefix.is_empty() || prefix.len() > MAX {
        return Err(format!(
            "a file prefix of {} characters: it must have 1 to {MAX}",
            prefix.len()
        ));
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if prefix.starts_with('.') || !prefix.chars().all(ok) {
        return Err(format!(
            "`{prefix}` as a file prefix: use letters, digits, `_`, `-` and `.` (not first); \
             EAL makes it a file and directory name"
        ));
    }
    Ok(())
}

/// Whether `device` is a virtual device (passed to EAL with `--vdev`).
pub fn is_vdev(device: &str) -> bool {
    device_name(device).starts_with("net_") || device_name(device).starts_with("eth_")
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_lb;
