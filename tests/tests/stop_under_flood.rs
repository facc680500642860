//! Black box: a UDP flood through `net_tap` ports (kernel hosts in two
//! network namespaces, the router between them) must not stall the control
//! thread: the stats line keeps its period, and SIGINT stops the daemon
//! within a second, with its final report and every mbuf back. Needs root.
//!
//! The tap PMD signals the process for every frame it receives (its "Rx
//! trigger": a real-time signal per frame, `F_SETOWN getpid()`), and a
//! process-directed signal goes to the main thread — the control thread —
//! unless it blocks it. The flood's senders run on the control core, as
//! the softirq and sender work of a real flood does. Before the fix this
//! test saw the stats line silent for up to 2.2 s and SIGINT take 0.8 to
//! 8.7 s; the daemon now keeps those signals on a thread of their own
//! (checked here too, in `/proc/<pid>/task/*/status`) and runs its control
//! thread at a higher priority.
use dataplane_tests::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The control core (`eal.control_core`); the worker gets the next one.
const CONTROL_CORE: usize = 0;

fn config(prefix: &str, if_a: &str, if_b: &str) -> String {
    format!(
        r#"pipeline = ["route"]

[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
control_core = {CONTROL_CORE}

[daemon]
stats_interval_ms = 100

[[port]]
name = "a"
device = "net_tap0,iface={if_a}"
ipv4 = ["10.10.1.1/24"]

[[port]]
name = "b"
device = "net_tap1,iface={if_b}"
ipv4 = ["10.10.2.1/24"]

[[worker]]
core = {worker}
rx = ["a", "b"]

[route]
icmp_rate = 100
"#,
        worker = CONTROL_CORE + 1
    )
}

fn addrs(v4: &'static str, gw4: &'static str) -> VethAddrs<'static> {
    VethAddrs {
        v4,
        v6: if v4.starts_with("10.10.1.") {
            "fd00:10:1::2/64"
        } else {
            "fd00:10:2::2/64"
        },
        gw4,
        gw6: if v4.starts_with("10.10.1.") {
            "fd00:10:1::1"
        } else {
            "fd00:10:2::1"
        },
    }
}

fn stats_lines(log: &str) -> usize {
    log.lines().filter(|l| l.contains(" stats rx=")).count()
}

/// Each thread of `pid` by name, with whether it blocks signal `sig`
/// (`SigBlk` in `/proc/<pid>/task/<tid>/status`).
fn blocks(pid: u32, sig: i32) -> Vec<(String, bool)> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let Some(blk) = status.lines().find_map(|l| l.strip_prefix("SigBlk:")) else {
            continue;
        };
        let mask = u64::from_str_radix(blk.trim(), 16).unwrap();
        v.push((comm.trim().to_owned(), mask & (1 << (sig - 1)) != 0));
    }
    v
}

#[test]
fn sigint_during_a_tap_flood_stops_within_a_second() {
    let (ns_a, if_a) = VethNs::names("fa");
    let (ns_b, if_b) = VethNs::names("fb");
    let dir = tempfile::tempdir().unwrap();
    let prefix = file_prefix("flood");
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, config(&prefix, &if_a, &if_b)).unwrap();
    let mut d = Daemon::start(dir.path(), &cfg, &[]).unwrap();
    d.wait_running().unwrap();
    let a = VethNs::adopt_tap(
        &ns_a,
        &if_a,
        "02:00:00:00:01:02",
        &addrs("10.10.1.2/24", "10.10.1.1"),
    )
    .expect("moving tap A into its namespace (this test needs root)");
    let b = VethNs::adopt_tap(
        &ns_b,
        &if_b,
        "02:00:00:00:02:02",
        &addrs("10.10.2.2/24", "10.10.2.1"),
    )
    .expect("moving tap B into its namespace (this test needs root)");
    // Resolve both hosts first, so the flood is routed both ways.
    for (ns, dst) in [(&a, "10.10.2.2"), (&b, "10.10.1.2")] {
        let st = ns
            .exec("ping")
            .args(["-c", "2", "-i", "0.2", "-W", "1", dst])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "ping {dst} through the router");
    }

    // The tap PMD's trigger signal (the first free real-time one from
    // SIGRTMIN + 1: 35 with glibc; SIGIO when the queue of real-time
    // signals is full) reaches only the daemon's signal thread.
    for sig in std::iter::once(libc::SIGIO).chain(libc::SIGRTMIN()..=libc::SIGRTMAX()) {
        let masks = blocks(d.pid(), sig);
        assert!(
            masks.iter().any(|(t, b)| t == "dp-tap-signals" && !b),
            "no thread takes signal {sig}: {masks:?}"
        );
        assert!(
            masks.iter().all(|(t, b)| t == "dp-tap-signals" || *b),
            "a thread other than the signal thread takes signal {sig}: {masks:?}"
        );
    }

    let floods = [
        UdpFlood::start(
            &a,
            "10.10.2.2:9".parse().unwrap(),
            64,
            Some(CONTROL_CORE),
            u64::MAX,
        ),
        UdpFlood::start(
            &b,
            "10.10.1.2:9".parse().unwrap(),
            64,
            Some(CONTROL_CORE),
            u64::MAX,
        ),
    ];
    // 4 s of flood, watching the stats line (every 100 ms).
    let t0 = Instant::now();
    let mut last = (stats_lines(&d.log()), Instant::now());
    let mut worst = Duration::ZERO;
    while t0.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(10));
        let n = stats_lines(&d.log());
        if n != last.0 {
            worst = worst.max(last.1.elapsed());
            last = (n, Instant::now());
        }
    }
    worst = worst.max(last.1.elapsed());
    let (out, report, took) = d.stop(libc::SIGINT, Duration::from_secs(30)).unwrap();
    let sent: Vec<u64> = floods.into_iter().map(|f| f.stop().unwrap()).collect();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "flood: {sent:?} datagrams sent; stats line: longest gap {worst:?}; SIGINT to exit: {took:?}\n{stdout}"
    );
    assert!(out.status.success(), "exit {:?}\n{stdout}", out.status);
    assert!(stdout.contains("final:"), "no final report:\n{stdout}");
    assert_eq!(report["mempool"]["in_use"], 0, "mbufs leaked: {report:#}");
    // The flood went through the router, both ways.
    for p in report["ports"].as_array().unwrap() {
        assert!(p["ipackets"].as_u64().unwrap() > 1_000, "{p:#}");
        assert!(p["opackets"].as_u64().unwrap() > 1_000, "{p:#}");
    }
    assert!(took < Duration::from_secs(1), "took {took:?} to stop");
    assert!(
        worst < Duration::from_millis(500),
        "stats line silent for {worst:?} (period 100 ms)"
    );
    drop(a);
    drop(b);
    for (ns, tap) in [(&ns_a, &if_a), (&ns_b, &if_b)] {
        assert!(!VethNs::exists(ns, tap), "{ns} / {tap} left behind");
    }
}
