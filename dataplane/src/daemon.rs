//! Daemon lifecycle: config → EAL → mempool → ports → workers on their lcores
//! → control loop (stats, stop conditions) → orderly shutdown with a final
//! report. Shutdown order matters: workers stop and flush, ports stop and
//! close (returning RX-ring mbufs), then the mempool is checked for leaks.
use crate::config::{self, Config, Hugepages, Resolved, StageKind};
use crate::control::reload::Reloader;
use crate::control::socket::{Answer, ControlSocket, Request};
use crate::distributor::{Distributor, DoneFlag, Steering};
use crate::dpdk::port::PortConfig;
use crate::dpdk::ring::Ring;
use crate::dpdk::tap_signals::SignalSink;
use crate::dpdk::{Eal, LcoreId, Mempool, Port, QueueId};
use crate::pipeline::parse::Parse;
use crate::pipeline::report::StageReports;
use crate::pipeline::{Pipeline, Stage, StageBuild, StageOps};
use crate::stats::{
    self, DistributorCounters, DistributorReport, DistributorStats, FeedReport, FinalReport,
    MempoolReport, Originated, PortReport, WorkerReport, WorkerSnapshot, WorkerStats,
};
use crate::tables::lb::{BackendIds, LbTables};
use crate::tables::neighbor::{NeighborBackend, NeighborTable};
use crate::tables::routing::{PortAddrs, RouteTarget, Routing};
use crate::tables::set::{AclSnapshot, ParseNeeds, Published, TableSet};
use crate::tables::AclTable;
use crate::worker::Worker;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the daemon was asked to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// EAL arguments appended after the config's (command line after `--`).
    pub eal_overrides: Vec<String>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop once no packet arrived for this long (finite pcap input).
    pub stop_when_idle: Option<Duration>,
    /// The config file, re-read by a reload.
    pub config_path: Option<PathBuf>,
    /// Raised by SIGHUP: reload the config file.
    pub reload: Arc<AtomicBool>,
}

/// The EAL command line for `cfg`: lcore map (control lcore 0, worker i on
/// lcore i+1 pinned to its core, the distributor on the lcore after the
/// last worker's), memory, file prefix, devices, extras.
pub fn eal_args(cfg: &Config, overrides: &[String]) -> Result<(Vec<String>, bool)> {
    let mut args = vec!["dataplane".to_owned()];
    let mut lcores = vec![format!("0@{}", cfg.eal.control_core.get_ref())];
    for (i, w) in cfg.workers.iter().enumerate() {
        lcores.push(format!("{}@{}", i + 1, w.core.get_ref()));
    }
    if let Some(d) = &cfg.distributor {
        lcores.push(format!(
            "{}@{}",
            distributor_lcore(cfg).0,
            d.get_ref().core.get_ref()
        ));
    }
    args.push(format!("--lcores={}", lcores.join(",")));
    args.push("--main-lcore=0".into());
    // EAL reserves all of `-m` at start: hugepages only when that many are
    // free (`check` refuses "on" without them on this machine). A
    // `--no-huge` in eal.args or after `--` wins over the config.
    let no_huge_arg = cfg
        .eal
        .arg_strings()
        .iter()
        .chain(overrides)
        .any(|a| a == "--no-huge");
    let memory_mb = u64::from(*cfg.eal.memory_mb.get_ref());
    let fit = config::HostMemory::read().is_some_and(|m| m.hugepages_fit(memory_mb));
    let huge = !no_huge_arg
        && match cfg.eal.hugepages {
            Hugepages::Off => false,
            Hugepages::On => {
                if !fit {
                    bail!(
                        "eal.hugepages = \"on\" but fewer than eal.memory_mb = {memory_mb} MB of \
                         hugepages are free or none are mounted (run scripts/setup.sh)"
                    );
                }
                true
            }
            Hugepages::Auto => {
                if !fit {
                    tracing::info!(
                        memory_mb,
                        "hugepages = \"auto\": fewer free hugepages than memory_mb; running without"
                    );
                }
                fit
            }
        };
    if !huge && !no_huge_arg {
        args.push("--no-huge".into());
    }
    args.push("-m".into());
    args.push(cfg.eal.memory_mb.get_ref().to_string());
    args.push(format!("--file-prefix={}", cfg.eal.file_prefix.get_ref()));
    if cfg.eal.no_telemetry {
        args.push("--no-telemetry".into());
    }
    let mut any_pci = false;
    for p in &cfg.ports {
        let dev = p.device.get_ref();
        if config::is_vdev(dev) {
            args.push(format!("--vdev={dev}"));
        } else {
            any_pci = true;
            args.push(format!("--allow={dev}"));
        }
    }
    if !any_pci {
        args.push("--no-pci".into());
    }
    args.extend(cfg.eal.arg_strings());
    args.extend(overrides.iter().cloned());
    // `check` saw the config's prefixes; this is the one EAL will use.
    config::check_file_prefix(&crate::dpdk::eal::file_prefix_of(&args))
        .map_err(|e| anyhow::anyhow!("--file-prefix: {e}"))?;
    Ok((args, huge))
}

/// The distributor's lcore id: the one after the last worker's.
pub fn distributor_lcore(cfg: &Config) -> LcoreId {
    LcoreId(cfg.workers.len() as u32 + 1)
}

/// Default link-peer MAC for port index `i`, like l2fwd's `02:00:00:00:00:<i>`.
pub fn default_peer_mac(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, i as u8]
}

/// The tables every worker's pipeline reads (see [`crate::tables::set`]).
pub type SharedTables = TableSet;

/// What table builds need from the running ports rather than the config.
#[derive(Debug, Clone)]
pub struct PortFacts {
    pub macs: Vec<[u8; 6]>,
    /// Port `i` fills in IPv4 header checksums on transmit (missing = no).
    pub checksum_offload: Vec<bool>,
}

/// Parts of the previous set a rebuild may keep as they are (their inputs
/// did not change): the same `Arc`, so workers keep their flow caches and
/// counters, and nothing is built twice.
#[derive(Default, Clone)]
pub struct Reuse {
    pub routing: Option<Arc<Routing>>,
    pub acl: Option<AclSnapshot>,
    pub lb: Option<Arc<LbTables>>,
}

/// Learned state the table sets refer to and every reload keeps: the
/// neighbour table, and the stable backend ids the connection tables
/// name backends by.
pub struct Learned<'a> {
    pub neighbors: &'a Arc<NeighborTable>,
    pub lb_ids: &'a mut BackendIds,
}

/// The owner of the [`Learned`] state (the control thread's reloader).
pub struct LearnedState {
    pub neighbors: Arc<NeighborTable>,
    pub lb_ids: BackendIds,
}

impl LearnedState {
    pub fn learned(&mut self) -> Learned<'_> {
        Learned {
            neighbors: &self.neighbors,
            lb_ids: &mut self.lb_ids,
        }
    }
}

/// Builds the route and ACL tables the pipeline needs, over a fresh
/// neighbour table, for one worker: tests, benches, the fuzzer. EAL must be
/// up for an ACL and for the `fib` and `lpm` route backends; a config with
/// `route.backend = "linear"` and no ACL builds without it.
/// `checksum_offload[i]`: port `i` fills in IPv4 header checksums on
/// transmit (missing = no).
pub fn build_tables(
    cfg: &Config,
    res: &Resolved,
    port_macs: &[[u8; 6]],
    checksum_offload: &[bool],
) -> Result<SharedTables> {
    let facts = PortFacts {
        macs: port_macs.to_vec(),
        checksum_offload: checksum_offload.to_vec(),
    };
    let neighbors = new_neighbor_table(cfg)?;
    let learned = Learned {
        neighbors: &neighbors,
        lb_ids: &mut BackendIds::default(),
    };
    let never = AtomicBool::new(false);
    build_table_set(cfg, res, &facts, learned, 0, 1, Reuse::default(), &never)
}

/// The long-lived neighbour table of a config's route section (a small one
/// when there is none: nothing learns then), on the backend
/// [`NeighborBackend::for_routes`] picks for the route backend: rte_hash for
/// rte_fib and rte_lpm, the Rust map for `linear` and without a route
/// section, so that those build without EAL.
pub fn new_neighbor_table(cfg: &Config) -> Result<Arc<NeighborTable>> {
    let sec = cfg.route.as_ref().map(|r| r.get_ref());
    let cap = sec.map_or(64, |r| r.neighbor_capacity);
    let backend = NeighborBackend::for_routes(sec.map(|r| r.backend));
    Ok(Arc::new(
        NeighborTable::with_backend(backend, cap).context("creating the neighbour table")?,
    ))
}

/// What the route stage's tables are built from (equal inputs give equal
/// tables: a reload keeps the old ones).
pub fn route_inputs_equal(a: (&Config, &Resolved), b: (&Config, &Resolved)) -> bool {
    // Port addresses and MTUs feed the tables too, but a port change needs a
    // restart (a reload refuses it), so only the route section can differ.
    let sec = |c: &Config| {
        c.route.as_ref().map(|r| {
            let r = r.get_ref();
            (r.backend, r.max_routes, r.max_routes6, r.tbl8_groups)
        })
    };
    sec(a.0) == sec(b.0) && a.1.routes == b.1.routes && a.1.neighbors == b.1.neighbors
}

/// What the ACL stage's table is built from.
pub fn acl_inputs_equal(a: &Resolved, b: &Resolved) -> bool {
    a.acl_rules == b.acl_rules
        && a.acl_default == b.acl_default
        && a.acl_flow_cache == b.acl_flow_cache
}

/// Builds table set `generation` for `workers` workers, keeping what
/// `reuse` holds instead of building it again. A raised `stop` abandons
/// the route build (a reload interrupted by a stop request: see
/// [`Routing::build_until`]); the error then says so.
#[allow(clippy::too_many_arguments)]
pub fn build_table_set(
    cfg: &Config,
    res: &Resolved,
    facts: &PortFacts,
    learned: Learned,
    generation: u64,
    workers: usize,
    reuse: Reuse,
    stop: &AtomicBool,
) -> Result<TableSet> {
    let neighbors = learned.neighbors;
    let mut t = TableSet {
        generation,
        parse: parse_needs(res),
        icmp_rate: cfg.route.as_ref().map_or(0, |r| r.get_ref().icmp_rate),
        ..TableSet::empty()
    };
    if let Some(sec) = &cfg.route {
        if let Some(r) = reuse.routing {
            t.routing = Some(r);
        } else {
            t.routing = Some(Arc::new(build_routing(
                cfg,
                res,
                sec.get_ref(),
                facts,
                neighbors,
                stop,
            )?));
        }
    }
    if let Some(default) = res.acl_default {
        if let Some(a) = reuse.acl {
            t.acl = Some(a);
        } else {
            let t0 = Instant::now();
            let acl =
                AclTable::build(res.acl_rules.clone(), default).context("building the ACL")?;
            tracing::info!(
                rules = res.acl_rules.len(),
                build_ms = t0.elapsed().as_millis() as u64,
                "ACL ready"
            );
            t.acl = Some(AclSnapshot::new(Arc::new(acl), res.acl_flow_cache, workers));
        }
    }
    if let Some(spec) = &res.lb {
        if let Some(l) = reuse.lb {
            t.lb = Some(l);
        } else {
            let routing = t.routing.as_ref().context("the lb stage needs [route]")?;
            let t0 = Instant::now();
            let lb = LbTables::build(spec, routing, learned.lb_ids, workers)
                .context("building the load balancer's tables")?;
            for s in lb.services.iter() {
                tracing::info!(
                    service = %s.name,
                    backends = s.backends.len(),
                    table_size = s.maglev.size(),
                    fingerprint = format_args!("{:016x}", s.maglev.fingerprint()),
                    "lb service ready"
                );
            }
            tracing::info!(
                services = lb.services.len(),
                build_ms = t0.elapsed().as_millis() as u64,
                "lb tables ready"
            );
            t.lb = Some(Arc::new(lb));
        }
    }
    // The whole set built: its static neighbours become the ones in force
    // (a reload's removed ones are forgotten; a reused routing's are the
    // same, so nothing changes).
    if let Some(r) = &t.routing {
        let forgotten = r.install_statics();
        if forgotten != 0 {
            tracing::info!(
                forgotten,
                "static neighbours removed: unresolved until heard again"
            );
        }
    }
    Ok(t)
}

/// What parsing must extract for these tables: L4 ports for ECMP hashing
/// and ACL port rules, the flow hash for ECMP.
fn parse_needs(res: &Resolved) -> ParseNeeds {
    let ecmp = res
        .routes
        .iter()
        .any(|r| matches!(&r.target, RouteTarget::Via(v) if v.len() > 1));
    let acl_ports = res
        .acl_rules
        .iter()
        .any(|r| r.sport != (0, u16::MAX) || r.dport != (0, u16::MAX));
    // The load balancer matches services by port and hashes flows by them.
    let lb = res.lb.as_ref().is_some_and(|l| !l.services.is_empty());
    ParseNeeds {
        l4: ecmp || acl_ports || lb,
        hash: ecmp,
    }
}

fn build_routing(
    cfg: &Config,
    res: &Resolved,
    sec: &config::RouteSection,
    facts: &PortFacts,
    neighbors: &Arc<NeighborTable>,
    stop: &AtomicBool,
) -> Result<Routing> {
    let ports = cfg
        .ports
        .iter()
        .zip(&facts.macs)
        .enumerate()
        .map(|(i, (p, mac))| PortAddrs {
            mac: *mac,
            v4: p
                .ipv4
                .iter()
                .map(|c| (c.get_ref().addr, c.get_ref().len))
                .collect(),
            v6: p
                .ipv6
                .iter()
                .map(|c| (c.get_ref().addr, c.get_ref().len))
                .collect(),
            mtu: p.mtu.as_ref().map_or(1500, |m| *m.get_ref()),
            ipv4_checksum_offload: facts.checksum_offload.get(i).copied().unwrap_or(false),
        })
        .collect();
    let (c4, c6) = config::route_configs(sec, res, cfg);
    let t0 = Instant::now();
    let routing = Routing::build_until(
        ports,
        &res.routes,
        &res.neighbors,
        c4,
        c6,
        neighbors.clone(),
        stop,
    )
    .map_err(|e| {
        if !e.is_table_allocation() {
            return anyhow::Error::new(e).context("building the route tables");
        }
        let est = cfg.memory_estimate(res);
        anyhow::anyhow!(
            "not enough EAL memory: raise eal.memory_mb (route tables need about {} MB, \
             this config about {} MB in all, and a reload needs room for a second set \
             of route tables while it swaps; eal.memory_mb = {}) [{e}]",
            est.route_tables_mb,
            est.total_mb,
            cfg.eal.memory_mb.get_ref()
        )
    })?;
    let st = routing.stats();
    tracing::info!(
        routes_v4 = st.routes_v4,
        routes_v6 = st.routes_v6,
        nexthops = st.nexthops,
        ecmp_groups = st.groups,
        memory_mb = st.memory_bytes / (1 << 20),
        load_ms = t0.elapsed().as_millis() as u64,
        "route tables ready"
    );
    Ok(routing)
}

/// A pipeline over `tables` with worker 0's counters (tests, benches, the
/// fuzzer; its stages' counters through [`Pipeline::counters`]).
pub fn build_pipeline(
    cfg: &Config,
    res: &Resolved,
    tables: &SharedTables,
    port_macs: &[[u8; 6]],
    peer_macs: &[[u8; 6]],
) -> Pipeline {
    build_worker_pipeline(cfg, res, tables, port_macs, peer_macs, 0)
}

/// Worker `worker`'s pipeline over `tables`.
pub fn build_worker_pipeline(
    cfg: &Config,
    res: &Resolved,
    tables: &TableSet,
    port_macs: &[[u8; 6]],
    peer_macs: &[[u8; 6]],
    worker: usize,
) -> Pipeline {
    let forward_out: Vec<Option<u16>> = res
        .forward_out
        .iter()
        .map(|o| o.map(|i| i as u16))
        .collect();
    let b = StageBuild {
        tables,
        worker,
        ports: cfg.ports.len(),
        forward_out: &forward_out,
        port_macs,
        peer_macs,
    };
    let kinds = cfg.stages();
    let mut stages = Vec::new();
    if kinds.iter().any(StageKind::needs_headers) {
        stages.push(Stage::Parse(Parse::build(&b)));
    }
    stages.extend(kinds.into_iter().map(|kind| Stage::build(kind, &b)));
    let mut p = Pipeline::new(stages);
    p.set_port_macs(port_macs);
    p
}

/// Stops the workers when dropped, also when the control thread unwinds from
/// a panic: ports and EAL must never be torn down under a running worker.
struct WorkerGuard<'a> {
    eal: &'a Eal,
    flag: Arc<AtomicBool>,
    lcores: Vec<LcoreId>,
}

impl WorkerGuard<'_> {
    /// Raises the stop flag and waits for every worker to leave its loop.
    fn stop(&mut self) {
        self.flag.store(true, Ordering::Relaxed);
        for l in self.lcores.drain(..) {
            let rc = self.eal.wait(l);
            if rc != 0 {
                tracing::error!(lcore = l.0, rc, "worker exited with an error");
            }
        }
    }
}

impl Drop for WorkerGuard<'_> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Nice value of the control thread (see `dpdk::sched`).
const CONTROL_NICE: i32 = -10;

/// Runs the daemon until a signal, `duration` or idleness stops it.
pub fn run(
    cfg: &Config,
    res: &Resolved,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
) -> Result<FinalReport> {
    let (args, huge) = eal_args(cfg, &opts.eal_overrides)?;
    tracing::info!(args = %args.join(" "), "starting EAL");
    // The tap PMD signals the process for every frame it receives; keep
    // those signals off this (the control) thread and off every thread EAL
    // creates: block them here, before EAL, and let one thread of ours take
    // them (`dpdk::tap_signals`).
    SignalSink::block_here();
    let eal = Eal::init(&args).context("EAL init")?;
    let signal_sink = SignalSink::spawn().context("starting the tap signal thread")?;
    let tsc_hz = eal.tsc_hz();
    if huge {
        if let Err(e) = eal.enable_pdump() {
            tracing::warn!("packet capture (dpdk-dumpcap) unavailable: {e}");
        }
    }

    let n_mbufs = cfg.mempool_size(res);
    let pool = Arc::new(
        Mempool::new_pktmbuf("dp_pool", n_mbufs, *cfg.mempool.cache.get_ref(), cfg.data_room(), 0)
            .with_context(|| format!("creating the mbuf pool ({n_mbufs} mbufs); raise eal.memory_mb or lower mempool.mbufs"))?,
    );
    tracing::info!(mbufs = n_mbufs, hugepages = huge, "mempool ready");

    let mut ports = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        let dev = config::device_name(p.device.get_ref());
        let pc = PortConfig {
            rx_queues: *p.rx_queues.get_ref(),
            tx_queues: res.tx_queues[i],
            rx_desc: p.rx_desc,
            tx_desc: p.tx_desc,
            mtu: p.mtu.as_ref().map(|m| *m.get_ref()),
            promiscuous: p.promiscuous,
            mac: p.mac.as_ref().map(|m| m.get_ref().0),
            ipv4_checksum_offload: p.tx_checksum_offload,
            rx_ipv4_checksum_offload: p.rx_checksum_offload,
        };
        let port = Port::configure(dev, &pc, pool.clone())
            .with_context(|| format!("port `{}` ({dev})", p.name.get_ref()))?;
        tracing::info!(port = %p.name.get_ref(), device = dev, driver = %port.info().driver,
            mac = %config::Mac(port.mac()), rx_queues = pc.rx_queues, tx_queues = pc.tx_queues,
            rx_offloads = %port.rx_offload_names().join(","),
            tx_offloads = %port.tx_offload_names().join(","), "port configured");
        ports.push(port);
    }
    let port_macs: Vec<[u8; 6]> = ports.iter().map(Port::mac).collect();
    let rx_checksum_ports: Vec<bool> = ports.iter().map(Port::rx_ipv4_checksum_offload).collect();
    let peer_macs: Vec<[u8; 6]> = cfg
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            p.peer_mac
                .map(|m| m.0)
                .unwrap_or_else(|| default_peer_mac(i))
        })
        .collect();

    let facts = PortFacts {
        macs: port_macs.clone(),
        checksum_offload: ports.iter().map(Port::ipv4_checksum_offload).collect(),
    };
    let mut learned = LearnedState {
        neighbors: new_neighbor_table(cfg)?,
        lb_ids: BackendIds::default(),
    };
    let workers = cfg.workers.len();
    // Start-up builds to the end: a stop request during it is seen by the
    // control loop's first tick.
    let first = build_table_set(
        cfg,
        res,
        &facts,
        learned.learned(),
        0,
        workers,
        Reuse::default(),
        &AtomicBool::new(false),
    )?;
    let tables = Arc::new(Published::new(Arc::new(first)));

    for (p, port) in cfg.ports.iter().zip(ports.iter_mut()) {
        port.start()
            .with_context(|| format!("starting port `{}`", p.name.get_ref()))?;
    }

    // Ring mode: one SPSC ring per (input port, fed worker), created here
    // and freed here after the lcores stopped (the handles), the two ends
    // handed to the distributor and the worker.
    let plan = res.distributor.as_ref();
    let mut ring_handles: Vec<Arc<Ring>> = Vec::new();
    let mut producers: Vec<Vec<_>> = Vec::new();
    let mut consumers: Vec<Vec<_>> = Vec::new(); // [fed worker][slot]
    let feeder_done = Arc::new(AtomicBool::new(false));
    if let Some(d) = plan {
        consumers = d.workers.iter().map(|_| Vec::new()).collect();
        for (slot, &port) in d.ports.iter().enumerate() {
            let mut row = Vec::new();
            for (k, &w) in d.workers.iter().enumerate() {
                let name = format!("dp_ring_{slot}_{k}");
                let (h, prod, cons) = Ring::spsc(&name, d.ring_size, -1).with_context(|| {
                    format!(
                        "creating the ring from port `{}` to worker {w} ({} slots); raise \
                         eal.memory_mb or lower distributor.ring_size",
                        cfg.ports[port].name.get_ref(),
                        d.ring_size
                    )
                })?;
                ring_handles.push(h);
                row.push(prod);
                consumers[k].push((port as u16, cons));
            }
            producers.push(row);
        }
        tracing::info!(
            rings = ring_handles.len(),
            ring_size = d.ring_size,
            workers = d.workers.len(),
            "distributor rings ready"
        );
    }
    let mut consumers: Vec<Option<Vec<_>>> = consumers.into_iter().map(Some).collect();
    let dist_stats: Option<Arc<DistributorStats>> = plan.map(|d| {
        Arc::new(crossbeam_utils::CachePadded::new(DistributorCounters::new(
            d.ports.len(),
            d.workers.len(),
        )))
    });

    // Hand each worker its queues and a pipeline of its own.
    let worker_flag = Arc::new(AtomicBool::new(false));
    let lcores = eal.worker_lcores();
    let mut worker_stats = Vec::new();
    let mut stage_names = Vec::new();
    let mut stage_reports = StageReports::default();
    let mut guard = WorkerGuard {
        eal: &eal,
        flag: worker_flag.clone(),
        lcores: Vec::new(),
    };
    // The distributor's done flag, raised when this drops: if start-up
    // fails before the distributor runs, the fed workers already launched
    // still see it and stop (declared after `guard`, so it drops first).
    let mut pending_done = plan.map(|_| DoneFlag(feeder_done.clone()));
    for (w, wk) in cfg.workers.iter().enumerate() {
        let rx = res.worker_rx[w]
            .iter()
            .map(|a| {
                let q = ports[a.port]
                    .take_rx_queue(QueueId(a.queue))
                    .expect("rx queue assigned once");
                (a.port as u16, q)
            })
            .collect();
        let tx = ports
            .iter_mut()
            .map(|p| {
                p.take_tx_queue(QueueId(w as u16))
                    .expect("one tx queue per worker")
            })
            .collect();
        let st = Arc::new(WorkerStats::default());
        worker_stats.push(st.clone());
        let mut pipeline =
            build_worker_pipeline(cfg, res, &tables.load(), &port_macs, &peer_macs, w);
        pipeline.set_rx_checksum_ports(&rx_checksum_ports);
        if w == 0 {
            stage_names = pipeline.stage_names();
        }
        stage_reports.add(&pipeline);
        let fed = plan.and_then(|d| d.workers.iter().position(|&x| x == w));
        let rings = fed.and_then(|k| consumers[k].take()).unwrap_or_default();
        let worker = Worker {
            rx,
            rings,
            feeder_done: fed.map(|_| feeder_done.clone()),
            tx,
            pipeline,
            index: w,
            tables: tables.clone(),
            stats: st,
            stop: worker_flag.clone(),
            drain_tsc: tsc_hz / 1_000_000 * cfg.daemon.tx_drain_us.max(1),
            tsc_hz,
            profile: cfg.daemon.profile_stages,
            dispatch_slot: crate::pipeline::MAX_STAGES,
        };
        let lcore = LcoreId(w as u32 + 1);
        if !lcores.contains(&lcore) {
            bail!("lcore {} for worker {w} is not enabled", lcore.0);
        }
        eal.launch(lcore, move || worker.run())
            .with_context(|| format!("launching worker {w} on core {}", wk.core.get_ref()))?;
        tracing::info!(
            worker = w,
            core = *wk.core.get_ref(),
            cpu = eal.lcore_cpu(lcore),
            "worker started"
        );
        guard.lcores.push(lcore);
    }
    if let (Some(d), Some(st)) = (plan, &dist_stats) {
        let rx =
            d.rx.iter()
                .map(|a| {
                    let q = ports[a.port]
                        .take_rx_queue(QueueId(a.queue))
                        .expect("rx queue assigned once");
                    (d.port_slot(a.port).expect("a polled port has a slot"), q)
                })
                .collect();
        let dist = Distributor {
            rx,
            rings: std::mem::take(&mut producers),
            steering: Steering::new(d.workers.len(), d.hash),
            stats: st.clone(),
            stop: worker_flag.clone(),
            done: pending_done.take().expect("a done flag per distributor"),
        };
        let lcore = distributor_lcore(cfg);
        if !lcores.contains(&lcore) {
            // `dist` drops here and raises its done flag: the workers stop.
            bail!("lcore {} for the distributor is not enabled", lcore.0);
        }
        // A failed launch drops the job, which raises the done flag too.
        eal.launch(lcore, move || dist.run())
            .with_context(|| format!("launching the distributor on core {}", d.core))?;
        tracing::info!(
            core = d.core,
            cpu = eal.lcore_cpu(lcore),
            workers = d.workers.len(),
            "distributor started"
        );
        guard.lcores.push(lcore);
    }

    // The operator's side: SIGHUP and the control socket reload; the
    // socket also answers `stats`.
    let mut reloader = Reloader::new(
        cfg,
        res,
        opts.config_path.clone(),
        Arc::clone(&tables),
        facts,
        learned,
        worker_stats.clone(),
        Arc::clone(&stop),
    );
    register_telemetry(&reloader, &worker_stats, dist_stats.clone());
    let mut control = match eal.runtime_dir() {
        Some(dir) => match ControlSocket::bind(Path::new(&dir)) {
            Ok(s) => {
                tracing::info!(path = %s.path().display(), "control socket ready");
                Some(s)
            }
            Err(e) => {
                tracing::warn!("control socket unavailable ({dir}): {e}");
                None
            }
        },
        None => None,
    };

    // This thread runs the control loop and the shutdown: give it the
    // larger share of the control core when it has work (`dpdk::sched`).
    // Set last: threads the setup started (EAL's, a PMD's, the signal
    // sink) keep the default; only threads started from here would inherit.
    match crate::dpdk::sched::set_thread_nice(CONTROL_NICE) {
        Ok(()) => tracing::debug!(nice = CONTROL_NICE, "control thread priority raised"),
        Err(e) => tracing::info!("control thread keeps its priority (nice {CONTROL_NICE}: {e})"),
    }

    // Control loop, on absolute deadlines: it wakes at every multiple of
    // `tick` after the start (a late wake-up shortens the next sleep
    // instead of pushing every later one back), checks the stop flag each
    // time, and prints the stats line on its own schedule. Nothing in it
    // blocks for long: snapshots are relaxed loads, port counters and the
    // kernel's are reads, a control-socket client is dropped after
    // `CLIENT_TIMEOUT`; only a reload's table build takes longer.
    let started = Instant::now();
    let tick = Duration::from_millis(20);
    let interval = Duration::from_millis(cfg.daemon.stats_interval_ms);
    let mut next_tick = started + tick;
    let mut next_print = started + interval;
    let mut last_rx = 0u64;
    let mut last_rx_change = started;
    let mut prev_snapshot = (0u64, 0u64, started);
    let mut stop_seen = None;
    // The reload being built on the reloader's helper thread, with the
    // client that asked for it (`None`: SIGHUP).
    let mut reload_client: Option<Option<Request>> = None;
    loop {
        let now = Instant::now();
        if next_tick > now {
            std::thread::sleep(next_tick - now);
        }
        next_tick += tick;
        let now = Instant::now();
        if next_tick <= now {
            // Behind by more than a tick (a reload, a starved CPU): resume
            // from now rather than run the missed ticks back to back.
            next_tick = now + tick;
        }
        if stop.load(Ordering::Relaxed) {
            stop_seen = Some(now);
            tracing::info!("stop requested");
            break;
        }
        if let Some(mut a) = reloader.poll() {
            // The reload being built is done (its tables published and
            // acknowledged, or refused): its client, if any, gets the
            // answer with the port and drop counters as of the
            // acknowledgement (whatever a port sends or a stage drops from
            // here on was decided by the new set).
            if let Some(Some(req)) = reload_client.take() {
                let all = all_snapshots(&worker_stats, dist_stats.as_deref());
                a.data = Some(serde_json::json!({
                    "ports": cfg.ports.iter().zip(&ports)
                        .map(|(p, port)| port_report(p, port)).collect::<Vec<_>>(),
                    "drops": stats::totals(&all).2,
                }));
                req.answer(&a);
            }
        }
        if opts.reload.swap(false, Ordering::Relaxed) {
            tracing::info!("SIGHUP: reloading the config");
            // Refused at once (logged, counted) while another is built.
            if reloader.start(None).is_none() {
                reload_client = Some(None);
            }
        }
        while let Some(req) = control.as_mut().and_then(ControlSocket::poll) {
            let answer = match req.line.split_once(' ').unwrap_or((&req.line, "")) {
                ("reload", path) => {
                    let path = (!path.trim().is_empty()).then(|| PathBuf::from(path.trim()));
                    match reloader.start(path) {
                        Some(refused) => refused,
                        None => {
                            // Answered when the build is done (above).
                            reload_client = Some(Some(req));
                            continue;
                        }
                    }
                }
                ("stats", "") => Answer {
                    ok: true,
                    message: "stats".into(),
                    generation: reloader.generation(),
                    data: Some(live_stats(
                        cfg,
                        &ports,
                        &worker_stats,
                        plan.zip(dist_stats.as_deref()),
                        &reloader,
                        &stage_reports.report(&tables.load()),
                    )),
                },
                _ => Answer {
                    ok: false,
                    message: format!(
                        "unknown request `{}` (requests: `reload [PATH]`, `stats`)",
                        req.line
                    ),
                    generation: reloader.generation(),
                    data: None,
                },
            };
            req.answer(&answer);
        }
        let now = Instant::now();
        if let Some(d) = opts.duration {
            if now.duration_since(started) >= d {
                tracing::info!("duration reached");
                break;
            }
        }
        let rx: u64 = worker_stats.iter().map(|s| s.rx.get()).sum::<u64>()
            + dist_stats.as_ref().map_or(0, |d| d.base.rx.get());
        if rx != last_rx {
            last_rx = rx;
            last_rx_change = now;
        } else if let Some(idle) = opts.stop_when_idle {
            if now.duration_since(last_rx_change) >= idle {
                tracing::info!(idle_ms = idle.as_millis() as u64, "input idle, stopping");
                break;
            }
        }
        if !interval.is_zero() && now >= next_print {
            // The next line one interval on from this one's slot; a slot
            // missed entirely is skipped, not printed late twice.
            next_print += interval;
            if next_print <= now {
                next_print = now + interval;
            }
            let snaps = all_snapshots(&worker_stats, dist_stats.as_deref());
            let (rx, tx, drops) = stats::totals(&snaps);
            let dt = now.duration_since(prev_snapshot.2).as_secs_f64();
            let rx_mpps = (rx - prev_snapshot.0) as f64 / dt / 1e6;
            let tx_mpps = (tx - prev_snapshot.1) as f64 / dt / 1e6;
            prev_snapshot = (rx, tx, now);
            let dropped: u64 = drops.values().sum();
            let bal = stats::Balance::of(&snaps);
            // The workers', then (ring mode) the distributor's as `rx:N%`.
            let busy: Vec<String> = snaps
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "{}{:.0}%",
                        if i < worker_stats.len() { "" } else { "rx:" },
                        100.0 * s.busy_cycles as f64 / s.total_cycles.max(1) as f64
                    )
                })
                .collect();
            let by_stage = stage_reports.stats_line(&tables.load());
            tracing::info!(
                "stats rx={rx} tx={tx} dropped={dropped} originated={} consumed={} rx_mpps={rx_mpps:.2} tx_mpps={tx_mpps:.2} busy=[{}] generation={} reloads={} refused={}{by_stage} drops={:?} originated_by={:?}",
                bal.originated,
                bal.consumed,
                busy.join(","),
                reloader.generation(),
                reloader.counters.reloads.get(),
                reloader.counters.refusals.get(),
                drops,
                stats::originated_totals(&snaps)
            );
        }
    }
    drop(control);

    // A reload still being built gives up (the flag is raised for the
    // duration and idle stops too) and its client hears why.
    stop.store(true, Ordering::Relaxed);
    if let (Some(refused), Some(Some(req))) = (reloader.finish(), reload_client.take()) {
        req.answer(&refused);
    }
    // Shutdown: workers drain and exit, then ports stop and close.
    let t_stop = stop_seen.unwrap_or_else(Instant::now);
    guard.stop();
    drop(guard);
    let t_workers = Instant::now();
    let elapsed = started.elapsed().as_secs_f64();
    let mut port_reports = Vec::new();
    for (p, port) in cfg.ports.iter().zip(ports.iter_mut()) {
        // Read counters before stopping: some PMDs (memif) clear them on stop.
        port_reports.push(port_report(p, port));
        let _ = port.stop();
    }
    drop(ports); // closes: RX rings and PMD caches give their mbufs back
    let t_ports = Instant::now();
    let current = tables.load();
    // The workers emptied their rings before they stopped.
    for (i, r) in ring_handles.iter().enumerate() {
        let left = r.count();
        if left != 0 {
            tracing::warn!(
                ring = i,
                left,
                "a ring still holds packets after the workers stopped"
            );
        }
    }
    let all = all_snapshots(&worker_stats, dist_stats.as_deref());
    let (rx, tx, drops) = stats::totals(&all);
    let balance = stats::Balance::of(&all);
    let snaps: Vec<_> = worker_stats.iter().map(|s| s.snapshot()).collect();
    if !balance.holds() {
        // Every path that frees, sends or reuses a buffer counts it once:
        // a packet that slipped through is a bug, say so.
        tracing::warn!(
            ?balance,
            "accounting: rx + originated != tx + dropped + consumed"
        );
    }
    let report = FinalReport {
        duration_s: elapsed,
        rx,
        tx,
        dropped: drops.values().sum(),
        drops,
        originated: stats::originated_totals(&all),
        originated_total: balance.originated,
        consumed: balance.consumed,
        events: stats::event_totals(&all),
        stages: stage_reports.report(&current),
        tables: stage_reports.sizes(&current),
        reloads: reloader.counters.report(),
        cycles_per_packet: if cfg.daemon.profile_stages {
            cycles_per_packet(&stage_names, &snaps, rx)
        } else {
            Default::default()
        },
        rx_mpps: rx as f64 / elapsed.max(1e-9) / 1e6,
        ports: port_reports,
        workers: cfg
            .workers
            .iter()
            .zip(snaps)
            .map(|(w, s)| WorkerReport {
                core: *w.core.get_ref(),
                counters: s,
            })
            .collect(),
        distributor: plan
            .zip(dist_stats.as_deref())
            .map(|(d, st)| distributor_report(cfg, d, st)),
        mempool: MempoolReport {
            size: pool.size(),
            in_use: pool.in_use_count(),
        },
        hugepages: huge,
    };
    // Table memory goes back on this thread, before the pool and EAL; so
    // do the rings (their ends went with the lcores' jobs).
    drop(ring_handles);
    drop(reloader);
    drop(current);
    drop(tables);
    drop(pool);
    drop(eal);
    drop(signal_sink);
    let ms = |a: Instant, b: Instant| b.duration_since(a).as_secs_f64() * 1e3;
    tracing::info!(
        workers_ms = format_args!("{:.1}", ms(t_stop, t_workers)),
        ports_ms = format_args!("{:.1}", ms(t_workers, t_ports)),
        cleanup_ms = format_args!("{:.1}", ms(t_ports, Instant::now())),
        "stopped"
    );
    Ok(report)
}

/// The workers' snapshots, then (ring mode) the distributor's: what the
/// totals and the books are summed over (the distributor's `rx` is where
/// ring-fed packets entered; its drops are `ring_full`).
fn all_snapshots(
    workers: &[Arc<WorkerStats>],
    distributor: Option<&DistributorStats>,
) -> Vec<WorkerSnapshot> {
    workers
        .iter()
        .map(|s| s.snapshot())
        .chain(distributor.map(|d| d.base.snapshot()))
        .collect()
}

/// The distributor's part of the report.
fn distributor_report(
    cfg: &Config,
    plan: &config::DistributorPlan,
    st: &DistributorCounters,
) -> DistributorReport {
    let base = st.base.snapshot();
    DistributorReport {
        core: plan.core,
        ring_size: plan.ring_size,
        hash: match plan.hash {
            config::DistributorHash::FiveTuple => "five_tuple",
            config::DistributorHash::ThreeTuple => "three_tuple",
        }
        .into(),
        rx: base.rx,
        rx_ports: plan
            .ports
            .iter()
            .zip(st.port_rx.iter())
            .map(|(&p, c)| (cfg.ports[p].name.get_ref().clone(), c.get()))
            .collect(),
        dropped: base.dropped(),
        drops: base.drops.clone(),
        feeds: plan
            .workers
            .iter()
            .enumerate()
            .map(|(k, &w)| FeedReport {
                worker: w,
                enqueued: st.enqueued[k].get(),
                ring_full: st.ring_full[k].get(),
            })
            .collect(),
        empty_polls: base.empty_polls,
        busy_cycles: base.busy_cycles,
        total_cycles: base.total_cycles,
        bursts: base.bursts,
    }
}

/// `/dataplane/stats` keys of the originated counters (one flat namespace
/// with the drop reasons), in [`Originated`] order.
const ORIGINATED_KEYS: [&str; Originated::COUNT] = [
    "originated_arp_request",
    "originated_nd_solicit",
    "originated_icmp_error",
    "originated_icmp_too_big",
];

/// The daemon's telemetry endpoints (`dpdk-telemetry.py -f <prefix>`):
/// `/dataplane/stats` (rx, tx, drops by reason, originated packets in total
/// and by kind, consumed, summed over workers) and `/dataplane/reloads`.
/// They hold counters only, never the tables.
fn register_telemetry(
    reloader: &Reloader,
    workers: &[Arc<WorkerStats>],
    distributor: Option<Arc<DistributorStats>>,
) {
    let counters = Arc::clone(&reloader.counters);
    let reloads = crate::dpdk::telemetry::register(
        "/dataplane/reloads",
        "Table reloads: generation in force, accepted, refused",
        move || {
            let r = counters.report();
            vec![
                ("generation", r.generation),
                ("reloads", r.reloads),
                ("refusals", r.refusals),
            ]
        },
    );
    let ws = workers.to_vec();
    let stats = crate::dpdk::telemetry::register(
        "/dataplane/stats",
        "Packets received and sent, drops by reason, summed over workers (and the distributor)",
        move || {
            let sum = |f: &dyn Fn(&crate::stats::WorkerCounters) -> u64| {
                ws.iter().map(|w| f(w)).sum::<u64>()
                    + distributor.as_ref().map_or(0, |d| f(&d.base))
            };
            let mut v = vec![("rx", sum(&|w| w.rx.get())), ("tx", sum(&|w| w.tx.get()))];
            for r in crate::pipeline::DropReason::ALL {
                v.push((r.name(), sum(&|w| w.drops[r as usize].get())));
            }
            let originated = |o: Originated| sum(&|w| w.originated[o as usize].get());
            v.push((
                "originated",
                Originated::ALL.iter().map(|o| originated(*o)).sum(),
            ));
            for o in Originated::ALL {
                v.push((ORIGINATED_KEYS[o as usize], originated(o)));
            }
            v.push((
                "consumed",
                sum(&|w| w.events[crate::pipeline::Event::Consumed as usize].get()),
            ));
            v
        },
    );
    if let Err(e) = reloads.and(stats) {
        tracing::warn!("telemetry endpoints unavailable: {e}");
    }
}

/// A port's counters as the reports give them.
fn port_report(p: &config::PortSection, port: &Port) -> PortReport {
    let s = port.stats();
    let kernel = port.kernel_rx();
    PortReport {
        name: p.name.get_ref().clone(),
        device: p.device.get_ref().clone(),
        driver: port.info().driver.clone(),
        mac: config::Mac(port.mac()).to_string(),
        rx_offloads: port.rx_offload_names(),
        tx_offloads: port.tx_offload_names(),
        ipackets: s.ipackets,
        opackets: s.opackets,
        ibytes: s.ibytes,
        obytes: s.obytes,
        imissed: s.imissed,
        ierrors: s.ierrors,
        oerrors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
        rx_queue_packets: s
            .q_ipackets
            .iter()
            .take(usize::from(*p.rx_queues.get_ref()))
            .copied()
            .collect(),
        kernel_iface: kernel.map(|(i, _)| i.to_owned()),
        kernel_rx_packets: kernel.map(|(_, k)| k.rx_packets),
        kernel_rx_dropped: kernel.map(|(_, k)| k.rx_dropped),
        kernel_ring_dropped: kernel.map(|(_, k)| k.ring_dropped),
    }
}

/// The `stats` request's answer: counters now, per port and worker, and
/// the table generation each worker runs on.
fn live_stats(
    cfg: &Config,
    ports: &[Port],
    workers: &[Arc<WorkerStats>],
    distributor: Option<(&config::DistributorPlan, &DistributorStats)>,
    reloader: &Reloader,
    stages: &std::collections::BTreeMap<String, serde_json::Value>,
) -> serde_json::Value {
    let all = all_snapshots(workers, distributor.map(|(_, st)| st));
    let (rx, tx, drops) = stats::totals(&all);
    let balance = stats::Balance::of(&all);
    let snaps: Vec<_> = workers.iter().map(|s| s.snapshot()).collect();
    let dist = distributor.map(|(plan, st)| distributor_report(cfg, plan, st));
    serde_json::json!({
        "rx": rx,
        "tx": tx,
        "dropped": drops.values().sum::<u64>(),
        "drops": drops,
        "originated": stats::originated_totals(&all),
        "originated_total": balance.originated,
        "consumed": balance.consumed,
        "events": stats::event_totals(&all),
        "reloads": reloader.counters.report(),
        // A reload is being built: the tables in force are the old ones.
        "reload_building": reloader.busy(),
        "ports": cfg.ports.iter().zip(ports).map(|(p, port)| port_report(p, port)).collect::<Vec<_>>(),
        "workers": snaps,
        "distributor": dist,
        "stages": stages,
    })
}

fn cycles_per_packet(
    names: &[&str],
    snaps: &[stats::WorkerSnapshot],
    rx: u64,
) -> std::collections::BTreeMap<String, f64> {
    let mut m = std::collections::BTreeMap::new();
    let per = |slot: usize| {
        snaps.iter().map(|s| s.stage_cycles[slot]).sum::<u64>() as f64 / rx.max(1) as f64
    };
    for (k, n) in names.iter().enumerate() {
        m.insert((*n).to_owned(), per(k));
    }
    m.insert("dispatch".into(), per(crate::pipeline::MAX_STAGES));
    m
}
