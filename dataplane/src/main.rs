//! `dataplane`: parse arguments, load the config, install signal handlers and
//! hand over to the library.
use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use dataplane::config::Config;
use dataplane::control::socket;
use dataplane::daemon::{self, RunOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "dataplane",
    version,
    about = "Userspace packet-forwarding dataplane on DPDK"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon. EAL arguments after `--` override the config's.
    Run {
        /// TOML configuration file.
        #[arg(short, long)]
        config: PathBuf,
        /// Stop after this many seconds.
        #[arg(long, value_name = "SECONDS", value_parser = dataplane::preflight::parse_seconds)]
        duration: Option<Duration>,
        /// Stop once no packet arrived for this many milliseconds (finite pcap input).
        #[arg(long, value_name = "MS")]
        stop_when_idle: Option<u64>,
        /// Write the final statistics as JSON to this file.
        #[arg(long, value_name = "PATH")]
        stats_json: Option<PathBuf>,
        /// Extra EAL arguments.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// Ask a running daemon to re-read its config file (or `--config`):
    /// routes, neighbours, ACL rules and load-balancer services are swapped
    /// in under traffic;
    /// anything else that changed is refused, naming the field. Exit 1 when
    /// refused. SIGHUP to the daemon does the same with its own file.
    Reload {
        /// The config to load (default: the one the daemon runs); its
        /// `eal.file_prefix` also finds the daemon.
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// The daemon's EAL file prefix, when it is not the config's.
        #[arg(long)]
        file_prefix: Option<String>,
    },
    /// Print a running daemon's counters now (JSON): per port, per worker,
    /// drops, events, and the table generation.
    Stats {
        /// A config whose `eal.file_prefix` finds the daemon.
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// The daemon's EAL file prefix.
        #[arg(long)]
        file_prefix: Option<String>,
    },
    /// Validate a configuration without starting DPDK.
    Check {
        /// TOML configuration file.
        config: PathBuf,
    },
    /// Generate a pcap of test traffic.
    Gen(dataplane::gen::GenArgs),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        // A closed stderr (the operator's terminal or pipe went away) must
        // not turn a log line into a panic: drop the line instead.
        .log_internal_errors(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let code = match real_main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn real_main(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Check { config } => {
            let (cfg, res) = Config::load(&config)?;
            let ring = res.distributor.as_ref().map_or(String::new(), |d| {
                format!(
                    ", ring mode: distributor on CPU {} feeds {} worker(s)",
                    d.core,
                    d.workers.len()
                )
            });
            println!(
                "{}: ok ({} ports, {} workers, pipeline: {}{ring})",
                config.display(),
                cfg.ports.len(),
                cfg.workers.len(),
                cfg.stages()
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(" -> ")
            );
            Ok(0)
        }
        Command::Reload {
            config,
            file_prefix,
        } => {
            let prefix = daemon_prefix(config.as_deref(), file_prefix)?;
            let line = match &config {
                Some(c) => format!("reload {}", std::path::absolute(c)?.display()),
                None => "reload".into(),
            };
            let a = socket::request(&prefix, &line)?;
            println!("{}", a.message);
            Ok(if a.ok { 0 } else { 1 })
        }
        Command::Stats {
            config,
            file_prefix,
        } => {
            let prefix = daemon_prefix(config.as_deref(), file_prefix)?;
            let a = socket::request(&prefix, "stats")?;
            let data = a.data.unwrap_or(serde_json::Value::Null);
            // A reader that closes early (`| head`) is not an error.
            let text = serde_json::to_string_pretty(&data)?;
            match writeln!(std::io::stdout().lock(), "{text}") {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                _ => {}
            }
            Ok(if a.ok { 0 } else { 1 })
        }
        Command::Gen(args) => {
            dataplane::gen::run(&args)?;
            Ok(0)
        }
        Command::Run {
            config,
            duration,
            stop_when_idle,
            stats_json,
            eal,
        } => {
            let (cfg, resolved) = Config::load(&config)?;
            if let Some(path) = &stats_json {
                dataplane::preflight::check_writable(path).map_err(anyhow::Error::msg)?;
            }
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())
                    .context("installing signal handler")?;
            }
            // SIGHUP reloads (its default action would end the daemon with
            // no report and hugepages left behind).
            let reload = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGHUP, reload.clone())
                .context("installing the SIGHUP handler")?;
            let opts = RunOptions {
                eal_overrides: eal,
                duration,
                stop_when_idle: stop_when_idle.map(Duration::from_millis),
                config_path: Some(std::path::absolute(&config).unwrap_or(config.clone())),
                reload,
            };
            let report = daemon::run(&cfg, &resolved, &opts, stop)?;
            print_report(&report);
            if let Some(path) = &stats_json {
                std::fs::write(path, serde_json::to_string_pretty(&report)?)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(if report.mempool.in_use == 0 { 0 } else { 3 })
        }
    }
}

/// The file prefix of the daemon a client command talks to: `--file-prefix`,
/// else the config's `eal.file_prefix` (read even from a config that would
/// not validate: the daemon says what is wrong with it), else the default.
fn daemon_prefix(config: Option<&std::path::Path>, prefix: Option<String>) -> Result<String> {
    if let Some(p) = prefix {
        return Ok(p);
    }
    let Some(path) = config else {
        return Ok(dataplane::config::EalConfig::default()
            .file_prefix
            .into_inner());
    };
    let src =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let Ok(table) = src.parse::<toml::Table>() else {
        // `check`'s file:line:field error for it.
        let e = dataplane::config::Config::parse(&src, &path.display().to_string())
            .err()
            .map_or_else(
                || format!("{}: not TOML", path.display()),
                |e| e.to_string(),
            );
        anyhow::bail!("{e}");
    };
    Ok(table
        .get("eal")
        .and_then(|e| e.get("file_prefix"))
        .and_then(|p| p.as_str())
        .map_or_else(
            || {
                dataplane::config::EalConfig::default()
                    .file_prefix
                    .into_inner()
            },
            str::to_owned,
        ))
}

fn print_report(r: &dataplane::stats::FinalReport) {
    println!(
        "final: {:.2}s rx={} tx={} dropped={} avg_rx_mpps={:.3} hugepages={}",
        r.duration_s, r.rx, r.tx, r.dropped, r.rx_mpps, r.hugepages
    );
    for p in &r.ports {
        println!(
            "  port {:<8} in={:<12} out={:<12} imissed={} ierrors={} oerrors={} rx_nombuf={}",
            p.name, p.ipackets, p.opackets, p.imissed, p.ierrors, p.oerrors, p.rx_nombuf
        );
        if let (Some(iface), Some(rx), Some(dropped), Some(ring)) = (
            &p.kernel_iface,
            p.kernel_rx_packets,
            p.kernel_rx_dropped,
            p.kernel_ring_dropped,
        ) {
            println!(
                "       kernel {iface}: rx_packets={rx} rx_dropped={dropped} ring_dropped={ring}"
            );
        }
    }
    if let Some(d) = &r.distributor {
        println!(
            "  distributor (CPU {}): rx={} ring_full={} enqueued by worker: {}",
            d.core,
            d.rx,
            d.dropped,
            d.feeds
                .iter()
                .map(|f| format!("{}={}", f.worker, f.enqueued))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if r.drops.is_empty() {
        println!("  drops: none");
    }
    for (k, v) in &r.drops {
        println!("  drop {k:<20} {v}");
    }
    // The router's own packets, sent in the buffers of dropped ones:
    // rx + originated = tx + dropped + consumed.
    println!(
        "  originated: {} ({}) consumed: {}",
        r.originated_total,
        r.originated
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        r.consumed
    );
    println!(
        "  mempool: {} mbufs, {} in use{}",
        r.mempool.size,
        r.mempool.in_use,
        if r.mempool.in_use == 0 {
            " (no leak)"
        } else {
            " (LEAK)"
        }
    );
}
