//! Validation: every cross-reference and limit checked, section by section,
//! into [`Resolved`]. Errors name file, line, column and field. One file per
//! section: [`eal`] (file prefixes, mempool, memory), [`ports`] (ports and
//! their devices), [`workers`] (workers, the distributor, their CPUs),
//! [`pipeline`] (stages, their order and sections, `[forward]`), [`acl`] and
//! [`route`]; the load balancer's is `config/lb.rs`.
use super::location::Locator;
use super::*;

mod acl;
mod eal;
mod eal_args;
mod pipeline;
mod ports;
pub(in crate::config) mod route;
mod workers;

pub(super) use eal::{data_room_for, DEFAULT_DATA_ROOM};
#[cfg(test)]
pub(super) use ports::{check_device, pcap_tx_files};

impl Config {
    /// The checks that need no host facts and build no table, in the order
    /// their errors are reported.
    pub(super) fn validate(&self, loc: &Locator) -> Result<Resolved, ConfigError> {
        self.check_file_prefix(loc)?;
        self.check_mtus(loc)?;
        self.check_eal_args(loc)?;
        self.check_port_count(loc)?;
        self.check_worker_count(loc)?;
        let port_index = self.check_ports(loc)?;
        let (worker_rx, distributor) = self.resolve_workers(loc, &port_index)?;
        let tx_queues = self.resolve_tx_queues(loc)?;
        let (forward_out, forwarder) = self.check_pipeline(loc, &port_index)?;
        Ok(Resolved {
            port_index,
            worker_rx,
            distributor,
            tx_queues,
            forward_out,
            acl_rules: Vec::new(),
            acl_default: None,
            acl_flow_cache: 0,
            routes: Vec::new(),
            neighbors: Vec::new(),
            lb: None,
            // Valid (a counting sink), but rarely what was meant.
            warnings: match forwarder {
                Some(_) => Vec::new(),
                None => vec![loc.error(
                    self.pipeline.span(),
                    Some("pipeline".into()),
                    "no stage forwards (`forward` or `route`): every packet is dropped \
                     as `no_output`"
                        .into(),
                )],
            },
        })
    }
}

/// Who polls an RX queue (for "already polled by ..." errors).
#[derive(Debug, Clone, Copy)]
enum Poller {
    Worker(usize),
    Distributor,
}

impl std::fmt::Display for Poller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Poller::Worker(w) => write!(f, "worker[{w}]"),
            Poller::Distributor => f.write_str("the distributor"),
        }
    }
}
