//! Daemon lifecycle: config → EAL → mempool → ports → workers on their lcores
//! → control loop (stats, stop conditions) → orderly shutdown with a final
//! report. Shutdown order matters: workers stop and flush, ports stop and
//! close (returning RX-ring mbufs), then the mempool is checked for leaks.
use crate::config::{self, Config, Hugepages, Resolved, StageKind};
use crate::dpdk::port::PortConfig;
use crate::dpdk::{Eal, LcoreId, Mempool, Port, QueueId};
use crate::pipeline::forward::Forward;
use crate::pipeline::{Pipeline, Stage};
use crate::stats::{self, FinalReport, MempoolReport, PortReport, WorkerReport, WorkerStats};
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
    /// Write the final report as JSON here.
    pub stats_json: Option<std::path::PathBuf>,
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
        .map(|m| m.lines().any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs")))
        .unwrap_or(false);
    free > 0 && mounted
}

/// The EAL command line for `cfg`: lcore map (control lcore 0, worker i on
/// lcore i+1 pinned to its core), memory, file prefix, devices, extras.
pub fn eal_args(cfg: &Config, overrides: &[String]) -> Result<(Vec<String>, bool)> {
    let mut args = vec!["dataplane".to_owned()];
    let mut lcores = vec![format!("0@{}", cfg.eal.control_core)];
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
    args.push(cfg.eal.memory_mb.to_string());
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

/// Default link-peer MAC for port index `i`, like l2fwd's 02:00:00:00:00:<i>.
pub fn default_peer_mac(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, i as u8]
}

fn build_pipeline(
    cfg: &Config,
    res: &Resolved,
    port_macs: &[[u8; 6]],
    peer_macs: &[[u8; 6]],
) -> Pipeline {
    let mut stages = Vec::new();
    for kind in cfg.stages() {
        match kind {
            StageKind::Forward => {
                let out = res
                    .forward_out
                    .iter()
                    .map(|o| o.map(|i| i as u16))
                    .collect();
                stages.push(Stage::Forward(Forward::new(out, port_macs, peer_macs)));
            }
        }
    }
    Pipeline::new(stages)
}

/// Runs the daemon until a signal, `duration` or idleness stops it.
pub fn run(cfg: &Config, res: &Resolved, opts: &RunOptions, stop: Arc<AtomicBool>) -> Result<FinalReport> {
    let (args, huge) = eal_args(cfg, &opts.eal_overrides)?;
    tracing::info!(args = %args.join(" "), "starting EAL");
    let eal = Eal::init(&args).context("EAL init")?;
    let tsc_hz = eal.tsc_hz();

    let n_mbufs = cfg.mempool_size(res);
    let pool = Arc::new(
        Mempool::new_pktmbuf("dp_pool", n_mbufs, cfg.mempool.cache, cfg.mempool.data_room, 0)
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
            mtu: p.mtu,
            promiscuous: p.promiscuous,
            mac: p.mac.map(|m| m.0),
        };
        let port = Port::configure(dev, &pc, pool.clone())
            .with_context(|| format!("port `{}` ({dev})", p.name.get_ref()))?;
        tracing::info!(port = %p.name.get_ref(), device = dev, driver = %port.info().driver,
            mac = %config::Mac(port.mac()), rx_queues = pc.rx_queues, tx_queues = pc.tx_queues, "port configured");
        ports.push(port);
    }
    let port_macs: Vec<[u8; 6]> = ports.iter().map(Port::mac).collect();
    let peer_macs: Vec<[u8; 6]> = cfg
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| p.peer_mac.map(|m| m.0).unwrap_or_else(|| default_peer_mac(i)))
        .collect();

    for (p, port) in cfg.ports.iter().zip(ports.iter_mut()) {
        port.start().with_context(|| format!("starting port `{}`", p.name.get_ref()))?;
    }

    // Hand each worker its queues and a pipeline of its own.
    let worker_flag = Arc::new(AtomicBool::new(false));
    let lcores = eal.worker_lcores();
    let mut worker_stats = Vec::new();
    let mut launched = Vec::new();
    for (w, wk) in cfg.workers.iter().enumerate() {
        let rx = res.worker_rx[w]
            .iter()
            .map(|a| {
                let q = ports[a.port].take_rx_queue(QueueId(a.queue)).expect("rx queue assigned once");
                (a.port as u16, q)
            })
            .collect();
        let tx = ports
            .iter_mut()
            .map(|p| p.take_tx_queue(QueueId(w as u16)).expect("one tx queue per worker"))
            .collect();
        let st = Arc::new(WorkerStats::default());
        worker_stats.push(st.clone());
        let worker = Worker {
            index: w,
            rx,
            tx,
            pipeline: build_pipeline(cfg, res, &port_macs, &peer_macs),
            stats: st,
            stop: worker_flag.clone(),
            drain_tsc: tsc_hz / 1_000_000 * cfg.daemon.tx_drain_us.max(1),
        };
        let lcore = LcoreId(w as u32 + 1);
        if !lcores.contains(&lcore) {
            bail!("lcore {} for worker {w} is not enabled", lcore.0);
        }
        eal.launch(lcore, move || worker.run())
            .with_context(|| format!("launching worker {w} on core {}", wk.core.get_ref()))?;
        tracing::info!(worker = w, core = *wk.core.get_ref(), cpu = eal.lcore_cpu(lcore), "worker started");
        launched.push(lcore);
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
                .map(|s| format!("{:.0}%", 100.0 * s.busy_cycles as f64 / s.total_cycles.max(1) as f64))
                .collect();
            tracing::info!(
                "stats rx={rx} tx={tx} dropped={dropped} rx_mpps={rx_mpps:.2} tx_mpps={tx_mpps:.2} busy=[{}] drops={:?}",
                busy.join(","),
                drops
            );
        }
    }

    // Shutdown: workers drain and exit, then ports stop and close.
    worker_flag.store(true, Ordering::Relaxed);
    for l in &launched {
        let rc = eal.wait(*l);
        if rc != 0 {
            tracing::error!(lcore = l.0, rc, "worker exited with an error");
        }
    }
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
    drop(pool);
    drop(eal);
    Ok(report)
}
