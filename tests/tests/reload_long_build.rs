//! Black box: a reload that takes seconds to build (300,000 routes) does not
//! stall the daemon's control side, and a stop in the middle of one is
//! honoured.
//!
//! While the first reload builds on its helper thread, under load:
//! `dataplane stats` answers, saying `reload_building` and the generation
//! still in force (0); a second reload over the socket and a SIGHUP are
//! refused at once ("another reload is being built") and counted; then the
//! first answers with generation 1 and its route change. A second long
//! reload is then interrupted by SIGINT: its client is told the reload was
//! abandoned, the daemon exits cleanly with its report (the
//! generation still 1), every mbuf back in the pool.
use dataplane_tests::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const ROUTES: usize = 300_000;
const IN_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

/// UDP from 10.0.0.2 to 198.51.100.7 (the route the reloads move).
fn feed() -> Vec<Vec<u8>> {
    (0..32u16)
        .map(|i| {
            let b = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xee], IN_MAC)
                .ipv4([10, 0, 0, 2], [198, 51, 100, 7], 64)
                .udp(1000 + i, 5000);
            let mut f = Vec::new();
            b.write(&mut f, &[0u8; 18]).unwrap();
            f
        })
        .collect()
}

fn config(dir: &Path, prefix: &str) -> String {
    let d = dir.display();
    format!(
        r#"pipeline = ["route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 1536
hugepages = "off"
[daemon]
stats_interval_ms = 200
[[port]]
name = "in"
device = "net_pcap0,rx_pcap={d}/feed.pcap,infinite_rx=1"
mac = "02:00:00:00:00:01"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "a"
device = "net_pcap1,rx_pcap={d}/empty.pcap,tx_pcap=/dev/null"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "b"
device = "net_pcap2,rx_pcap={d}/empty.pcap,tx_pcap=/dev/null"
ipv4 = ["10.0.2.1/24"]
[[worker]]
core = 1
rx = ["in", "a", "b"]
[route]
routes_file = "routes.txt"
[[route.neighbor]]
ip = "10.0.0.2"
mac = "02:00:00:00:00:aa"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:02"
[[route.neighbor]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
"#
    )
}

/// The routes file, with the watched prefix via `via`.
fn write_routes(dir: &Path, bulk: &str, via: &str) {
    std::fs::write(
        dir.join("routes.txt"),
        format!("{bulk}198.51.100.0/24 {via}\n"),
    )
    .unwrap();
}

/// A reload request on its own thread (it answers when the build is done).
fn reload_in_background(prefix: &str, path: &str) -> std::thread::JoinHandle<(bool, String)> {
    let (prefix, req) = (prefix.to_owned(), format!("reload {path}"));
    std::thread::spawn(move || {
        let a = dataplane::control::socket::request(&prefix, &req).expect("reload request");
        (a.ok, a.message)
    })
}

/// Polls `dataplane stats` until it says a reload is being built; returns
/// that answer.
fn wait_building(prefix: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = daemon_stats(prefix);
        if s["reload_building"] == true {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "no stats answer said reload_building: {s}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_long_reload_builds_aside_refuses_a_second_and_yields_to_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    write_pcap(&dir.path().join("feed.pcap"), &feed()).unwrap();
    write_pcap(&dir.path().join("empty.pcap"), &[]).unwrap();
    let bulk = pseudo_random_routes(ROUTES);
    write_routes(dir.path(), &bulk, "10.0.1.2");
    let prefix = file_prefix("longreload");
    let path = dir.path().join("router.toml");
    let cfg_path = path.to_str().unwrap().to_owned();
    std::fs::write(&path, config(dir.path(), &prefix)).unwrap();
    let mut d = Daemon::start(dir.path(), &path, &[]).unwrap();
    d.wait_log("traffic", Duration::from_secs(300), |l| {
        l.lines()
            .any(|x| x.contains("stats rx=") && !x.contains("stats rx=0 "))
    })
    .unwrap();

    // Reload 1: the watched prefix moves to port b.
    write_routes(dir.path(), &bulk, "10.0.2.2");
    let first = reload_in_background(&prefix, &cfg_path);
    let during = wait_building(&prefix);
    assert_eq!(during["reloads"]["generation"], 0, "{during}");
    // The books and the ports are answered from the running set.
    assert!(during["rx"].as_u64().unwrap() > 0, "{during}");
    let second = dataplane::control::socket::request(&prefix, &format!("reload {cfg_path}"))
        .expect("second reload request");
    assert!(!second.ok, "a second reload was accepted during a build");
    assert!(
        second.message.contains("another reload is being built"),
        "{}",
        second.message
    );
    signal_pid(d.pid(), libc::SIGHUP);
    d.wait_log("the SIGHUP refusal", Duration::from_secs(10), |l| {
        l.matches("another reload is being built").count() >= 2
    })
    .unwrap();
    let still = daemon_stats(&prefix);
    assert_eq!(still["reload_building"], true, "the build ended too soon");
    assert_eq!(still["reloads"]["generation"], 0);

    let (ok, text) = first.join().unwrap();
    assert!(ok, "reload 1: {text}");
    assert!(text.starts_with("generation 1: routes +1 -1"), "{text}");
    eprintln!("reload 1: {text}");
    let after = daemon_stats(&prefix);
    assert_eq!(after["reload_building"], false);
    assert_eq!(after["reloads"]["generation"], 1);
    assert_eq!(after["reloads"]["refusals"], 2);

    // Reload 2, interrupted: the prefix would move back to port a.
    write_routes(dir.path(), &bulk, "10.0.1.2");
    let abandoned = reload_in_background(&prefix, &cfg_path);
    wait_building(&prefix);
    let (out, report, took) = d.stop(libc::SIGINT, Duration::from_secs(30)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let (ok, text) = abandoned.join().unwrap();
    assert!(!ok, "the interrupted reload succeeded: {text}");
    assert!(text.contains("abandoned: the daemon is stopping"), "{text}");
    assert_eq!(report["reloads"]["generation"], 1);
    assert_eq!(report["reloads"]["refusals"], 3);
    assert_eq!(report["mempool"]["in_use"], 0, "mbuf leak: {stdout}");
    assert!(
        report["drops"].as_object().unwrap().is_empty(),
        "drops: {}",
        report["drops"]
    );
    // Not a timing assertion on the data path: how long the stop took is
    // printed, bounded only by the 30 s above.
    eprintln!("SIGINT during a {ROUTES}-route reload: exit after {took:?}");
}
