//! The daemon's TOML configuration: schema, parsing and validation.
//!
//! Every struct rejects unknown keys. Errors — syntax, types, bad values and
//! cross-references alike — carry the file, line, column and the dotted path
//! of the field (`port[1].mac`), so an operator can go straight to the line.
//! `Config::load` is pure: it starts no DPDK, which is what `dataplane check`
//! relies on. Stage sections (`[forward]`, `[acl]`, `[route]`) are validated
//! here too, so that a running daemon never meets a config it cannot build.
//!
//! Layout: [`values`] (addresses, prefixes, ports, protocols: the strings
//! with their own syntax), [`schema`] (the serde structs, one per section),
//! `validate` (cross-checks per section, building [`Resolved`]),
//! `routes_file` (the routes file parser) and `location` (byte spans to
//! file:line:column and a field path, and [`ConfigError`]).
use std::collections::HashMap;
use std::path::Path;

mod location;
mod routes_file;
pub mod schema;
mod validate;
pub mod values;

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

#[cfg(test)]
mod tests;
