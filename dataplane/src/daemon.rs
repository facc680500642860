//! Daemon lifecycle: config → EAL → mempool → ports → workers on their lcores
//! → control loop (stats, stop conditions) → orderly shutdown with a final
//! report. Shutdown order matters: workers stop and flush, ports stop and
//! close (returning RX-ring mbufs), then the mempool is checked for leaks.
use crate::config::{self, Config, Hugepages, Resolved, StageKind};
use crate::dpdk::port::PortConfig;
use crate::dpdk::{Eal, LcoreId, Mempool, Port, QueueId};
use crate::pipeline::acl::{AclCounters, AclStage};
use crate::pipeline::forward::Forward;
use crate::pipeline::parse::Parse;
use crate::pipeline::route::RouteStage;
use crate::pipeline::{Pipeline, Stage};
use crate::stats::{
    self, AclCacheReport, FinalReport, MempoolReport, PortReport, WorkerReport, WorkerStats,
};
use crate::tables::routing::{PortAddrs, RouteTarget, Routing};
use crate::tables::AclTable;
use crate::worker::Worker;
use anyhow::{bail, Context, Result};
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
}

/// Whether free 2 MiB hugepages and a hugetlbfs mount exist.
pub fn hugepages_available() -> bool {
    let free = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("HugePages_Free:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        })
        .unwrap_or(false);
    free > 0 && mounted
}

/// The EAL command line for `cfg`: lcore map (control lcore 0, worker i on
/// lcore i+1 pinned to its core), memory, file prefix, devices, extras.
pub fn eal_args(cfg: &Config, overrides: &[String]) -> Result<(Vec<String>, bool)> {
    let mut args = vec!["dataplane".to_owned()];
    let mut lcores = vec![format!("0@{}", cfg.eal.control_core.get_ref())];
    for (i, w) in cfg.workers.iter().enumerate() {
        lcores.push(format!("{}@{}", i + 1, w.core.get_ref()));
    }
    args.push(format!("--lcores={}", lcores.join(",")));
    args.push("--main-lcore=0".into());
    let huge = match cfg.eal.hugepages {
        Hugepages::Off => false,
        Hugepages::On => {
            if !hugepages_available() {
                bail!("eal.hugepages = \"on\" but no free hugepages are mounted (run scripts/setup.sh)");
            }
            true
        }
        Hugepages::Auto => hugepages_available(),
    };
    // Command-line overrides win: honour an explicit --no-huge there.
    let huge = huge && !overrides.iter().any(|a| a == "--no-huge");
    if !huge && !overrides.iter().any(|a| a == "--no-huge") {
        args.push("--no-huge".into());
    }
    args.push("-m".into());
    args.push(cfg.eal.memory_mb.get_ref().to_string());
    args.push(format!("--file-prefix={}", cfg.eal.file_prefix));
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
    args.extend(cfg.eal.args.iter().cloned());
    args.extend(overrides.iter().cloned());
    Ok((args, huge))
}

/// Default link-peer MAC for port index `i`, like l2fwd's `02:00:00:00:00:<i>`.
pub fn default_peer_mac(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, i as u8]
}

/// Tables shared by every worker's pipeline, built once before they start.
pub struct SharedTables {
    pub routing: Option<Arc<Routing>>,
    pub acl: Option<Arc<AclTable>>,
}

/// Builds the route and ACL tables the pipeline needs (EAL must be up).
/// `checksum_offload[i]`: port `i` fills in IPv4 header checksums on
/// transmit (missing = no).
pub fn build_tables(
    cfg: &Config,
    res: &Resolved,
    port_macs: &[[u8; 6]],
    checksum_offload: &[bool],
) -> Result<SharedTables> {
    let mut t = SharedTables {
        routing: None,
        acl: None,
    };
    if let Some(sec) = &cfg.route {
        let sec = sec.get_ref();
        let ports = cfg
            .ports
            .iter()
            .zip(port_macs)
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
                ipv4_checksum_offload: checksum_offload.get(i).copied().unwrap_or(false),
            })
            .collect();
        let (c4, c6) = config::route_configs(sec, res, cfg);
        let t0 = Instant::now();
        let routing = Routing::build(
            ports,
            &res.routes,
            &res.neighbors,
            c4,
            c6,
            sec.neighbor_capacity,
        )
        .map_err(|e| {
            if !e.is_table_allocation() {
                return anyhow::Error::new(e).context("building the route tables");
            }
            let est = cfg.memory_estimate(res);
            anyhow::anyhow!(
                "not enough EAL memory: raise eal.memory_mb (route tables need about {} MB, \
                 this config about {} MB in all; eal.memory_mb = {}) [{e}]",
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
        t.routing = Some(Arc::new(routing));
    }
    if let Some(default) = res.acl_default {
        let t0 = Instant::now();
        let acl = AclTable::build(res.acl_rules.clone(), default).context("building the ACL")?;
        tracing::info!(
            rules = res.acl_rules.len(),
            build_ms = t0.elapsed().as_millis() as u64,
            "ACL ready"
        );
        t.acl = Some(Arc::new(acl));
    }
    Ok(t)
}

/// One worker's pipeline; returns it with the worker's ACL counters.
pub fn build_pipeline(
    cfg: &Config,
    res: &Resolved,
    tables: &SharedTables,
    port_macs: &[[u8; 6]],
    peer_macs: &[[u8; 6]],
) -> (Pipeline, Option<Arc<AclCounters>>) {
    let mut stages = Vec::new();
    let mut hits = None;
    let kinds = cfg.stages();
    if kinds
        .iter()
        .any(|k| matches!(k, StageKind::Acl | StageKind::Route))
    {
        let ecmp = res
            .routes
            .iter()
            .any(|r| matches!(&r.target, RouteTarget::Via(v) if v.len() > 1));
        let acl_ports = res
            .acl_rules
            .iter()
            .any(|r| r.sport != (0, u16::MAX) || r.dport != (0, u16::MAX));
        stages.push(Stage::Parse(Parse {
            l4: ecmp || acl_ports,
            hash: ecmp,
            verify_checksum: true,
        }));
    }
    for kind in kinds {
        match kind {
            StageKind::Forward => {
                let out = res
                    .forward_out
                    .iter()
                    .map(|o| o.map(|i| i as u16))
                    .collect();
                stages.push(Stage::Forward(Forward::new(out, port_macs, peer_macs)));
            }
            StageKind::Acl => {
                let table = tables.acl.clone().expect("ACL built for an acl stage");
                let s = AclStage::new(table, res.acl_flow_cache);
                hits = Some(s.counters());
                stages.push(Stage::Acl(s));
            }
            StageKind::Route => {
                let routing = tables
                    .routing
                    .clone()
                    .expect("routes built for a route stage");
                let rate = cfg.route.as_ref().map_or(0, |r| r.get_ref().icmp_rate);
                stages.push(Stage::Route(Box::new(RouteStage::new(routing, rate))));
            }
        }
    }
    (Pipeline::new(stages), hits)
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

/// Runs the daemon until a signal, `duration` or idleness stops it.
pub fn run(
    cfg: &Config,
    res: &Resolved,
    opts: &RunOptions,
    stop: Arc<AtomicBool>,
) -> Result<FinalReport> {
    let (args, huge) = eal_args(cfg, &opts.eal_overrides)?;
    tracing::info!(args = %args.join(" "), "starting EAL");
    let eal = Eal::init(&args).context("EAL init")?;
    let tsc_hz = eal.tsc_hz();
    if huge {
        if let Err(e) = eal.enable_pdump() {
            tracing::warn!("packet capture (dpdk-dumpcap) unavailable: {e}");
        }
    }

    let n_mbufs = cfg.mempool_size(res);
    let pool = Arc::new(
        Mempool::new_pktmbuf("dp_pool", n_mbufs, *cfg.mempool.cache.get_ref(), *cfg.mempool.data_room.get_ref(), 0)
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
            mac: p.mac.map(|m| m.0),
            ipv4_checksum_offload: p.tx_checksum_offload,
        };
        let port = Port::configure(dev, &pc, pool.clone())
            .with_context(|| format!("port `{}` ({dev})", p.name.get_ref()))?;
        tracing::info!(port = %p.name.get_ref(), device = dev, driver = %port.info().driver,
            mac = %config::Mac(port.mac()), rx_queues = pc.rx_queues, tx_queues = pc.tx_queues,
            tx_offloads = %port.tx_offload_names().join(","), "port configured");
        ports.push(port);
    }
    let port_macs: Vec<[u8; 6]> = ports.iter().map(Port::mac).collect();
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

    let checksum_offload: Vec<bool> = ports.iter().map(Port::ipv4_checksum_offload).collect();
    let tables = build_tables(cfg, res, &port_macs, &checksum_offload)?;

    for (p, port) in cfg.ports.iter().zip(ports.iter_mut()) {
        port.start()
            .with_context(|| format!("starting port `{}`", p.name.get_ref()))?;
    }

    // Hand each worker its queues and a pipeline of its own.
    let worker_flag = Arc::new(AtomicBool::new(false));
    let lcores = eal.worker_lcores();
    let mut worker_stats = Vec::new();
    let mut acl_hits = Vec::new();
    let mut stage_names = Vec::new();
    let mut guard = WorkerGuard {
        eal: &eal,
        flag: worker_flag.clone(),
        lcores: Vec::new(),
    };
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
        let (pipeline, hits) = build_pipeline(cfg, res, &tables, &port_macs, &peer_macs);
        if w == 0 {
            stage_names = pipeline.stage_names();
        }
        acl_hits.extend(hits);
        let worker = Worker {
            rx,
            tx,
            pipeline,
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

    // Control loop.
    let started = Instant::now();
    let tick = Duration::from_millis(20);
    let interval = Duration::from_millis(cfg.daemon.stats_interval_ms);
    let mut last_print = Instant::now();
    let mut last_rx = 0u64;
    let mut last_rx_change = Instant::now();
    let mut prev_snapshot = (0u64, 0u64, Instant::now());
    loop {
        std::thread::sleep(tick);
        if stop.load(Ordering::Relaxed) {
            tracing::info!("stop requested");
            break;
        }
        let now = Instant::now();
        if let Some(d) = opts.duration {
            if now.duration_since(started) >= d {
                tracing::info!("duration reached");
                break;
            }
        }
        let rx: u64 = worker_stats.iter().map(|s| s.rx.get()).sum();
        if rx != last_rx {
            last_rx = rx;
            last_rx_change = now;
        } else if let Some(idle) = opts.stop_when_idle {
            if now.duration_since(last_rx_change) >= idle {
                tracing::info!(idle_ms = idle.as_millis() as u64, "input idle, stopping");
                break;
            }
        }
        if !interval.is_zero() && now.duration_since(last_print) >= interval {
            last_print = now;
            let snaps: Vec<_> = worker_stats.iter().map(|s| s.snapshot()).collect();
            let (rx, tx, drops) = stats::totals(&snaps);
            let dt = now.duration_since(prev_snapshot.2).as_secs_f64();
            let rx_mpps = (rx - prev_snapshot.0) as f64 / dt / 1e6;
            let tx_mpps = (tx - prev_snapshot.1) as f64 / dt / 1e6;
            prev_snapshot = (rx, tx, now);
            let dropped: u64 = drops.values().sum();
            let busy: Vec<String> = snaps
                .iter()
                .map(|s| {
                    format!(
                        "{:.0}%",
                        100.0 * s.busy_cycles as f64 / s.total_cycles.max(1) as f64
                    )
                })
                .collect();
            tracing::info!(
                "stats rx={rx} tx={tx} dropped={dropped} rx_mpps={rx_mpps:.2} tx_mpps={tx_mpps:.2} busy=[{}] drops={:?}",
                busy.join(","),
                drops
            );
        }
    }

    // Shutdown: workers drain and exit, then ports stop and close.
    guard.stop();
    drop(guard);
    let elapsed = started.elapsed().as_secs_f64();
    let mut port_reports = Vec::new();
    for (p, port) in cfg.ports.iter().zip(ports.iter_mut()) {
        // Read counters before stopping: some PMDs (memif) clear them on stop.
        let s = port.stats();
        let _ = port.stop();
        port_reports.push(PortReport {
            name: p.name.get_ref().clone(),
            device: p.device.get_ref().clone(),
            driver: port.info().driver.clone(),
            mac: config::Mac(port.mac()).to_string(),
            tx_offloads: port.tx_offload_names(),
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        });
    }
    drop(ports); // closes: RX rings and PMD caches give their mbufs back
    let snaps: Vec<_> = worker_stats.iter().map(|s| s.snapshot()).collect();
    let (rx, tx, drops) = stats::totals(&snaps);
    let report = FinalReport {
        duration_s: elapsed,
        rx,
        tx,
        dropped: drops.values().sum(),
        drops,
        events: stats::event_totals(&snaps),
        acl_hits: sum_hits(&acl_hits),
        acl_flow_cache: AclCacheReport {
            entries_per_worker: res.acl_flow_cache,
            hits: acl_hits.iter().map(|c| c.cache_hits.get()).sum(),
            misses: acl_hits.iter().map(|c| c.cache_misses.get()).sum(),
        },
        tables: table_report(&tables),
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
        mempool: MempoolReport {
            size: pool.size(),
            in_use: pool.in_use_count(),
        },
        hugepages: huge,
    };
    drop(tables);
    drop(pool);
    drop(eal);
    Ok(report)
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

fn sum_hits(per_worker: &[Arc<AclCounters>]) -> Vec<u64> {
    let n = per_worker.first().map_or(0, |h| h.rules.len());
    (0..n)
        .map(|i| per_worker.iter().map(|h| h.rules[i].get()).sum())
        .collect()
}

fn table_report(t: &SharedTables) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    if let Some(r) = &t.routing {
        let s = r.stats();
        m.insert("routes_v4".into(), s.routes_v4 as u64);
        m.insert("routes_v6".into(), s.routes_v6 as u64);
        m.insert("nexthops".into(), s.nexthops as u64);
        m.insert("ecmp_groups".into(), s.groups as u64);
        m.insert("neighbors".into(), s.neighbors as u64);
        m.insert("neighbor_learn_failures".into(), s.neighbor_learn_failures);
        m.insert("route_memory_bytes".into(), s.memory_bytes as u64);
    }
    if let Some(a) = &t.acl {
        m.insert("acl_rules".into(), a.rules().len() as u64);
    }
    m
}
