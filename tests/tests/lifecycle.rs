//! Black box: the daemon stops cleanly on SIGTERM and SIGINT while traffic
//! is flowing (infinite pcap replay): exit 0 within 2 s, final statistics
//! printed, and every mbuf back in the pool.
use dataplane::gen::{generate, GenArgs};
use dataplane_tests::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn stop_under_load(sig: i32) {
    let dir = tempfile::tempdir().unwrap();
    let frames = generate(&GenArgs {
        count: 500,
        flows: 32,
        ..GenArgs::default()
    })
    .unwrap();
    write_pcap(&dir.path().join("feed.pcap"), &frames).unwrap();
    let d = dir.path().display();
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "off"
[daemon]
stats_interval_ms = 200
[[port]]
name = "p0"
device = "net_pcap0,rx_pcap={d}/feed.pcap,infinite_rx=1"
[[port]]
name = "p1"
device = "net_pcap1,rx_pcap={d}/feed.pcap,infinite_rx=1"
[[worker]]
core = 1
rx = ["p0", "p1"]
[forward]
pairs = [["p0", "p1"]]
"#,
        prefix = file_prefix("sig")
    );
    let path = dir.path().join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let json = dir.path().join("final.json");
    let mut child = Command::new(dataplane_bin())
        .args(["run", "--config"])
        .arg(&path)
        .arg("--stats-json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until packets are flowing (the stats line reports rx > 0).
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut all = String::new();
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = tx.send(all.clone());
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut log = String::new();
    while !log.contains("stats rx=") || log.contains("stats rx=0 ") {
        assert!(Instant::now() < deadline, "no traffic seen:\n{log}");
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            log = l;
        }
    }
    let t0 = Instant::now();
    signal(&child, sig);
    let out = wait_with_timeout(child, Duration::from_secs(10)).unwrap();
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit status {:?}\n{stdout}", out.status);
    assert!(took < Duration::from_secs(2), "took {took:?} to stop");
    assert!(stdout.contains("final:"), "final stats missing:\n{stdout}");
    assert!(stdout.contains("0 in use (no leak)"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(report["rx"].as_u64().unwrap() > 0);
    assert_eq!(report["rx"], report["tx"]);
    assert_eq!(report["mempool"]["in_use"], 0);
}

#[test]
fn sigterm_under_traffic_exits_cleanly() {
    stop_under_load(libc::SIGTERM);
}

#[test]
fn sigint_under_traffic_exits_cleanly() {
    stop_under_load(libc::SIGINT);
}

#[test]
fn duration_limits_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 128
hugepages = "off"
[[port]]
name = "n0"
device = "net_null0"
[[port]]
name = "n1"
device = "net_null1"
[[worker]]
core = 1
rx = ["n0", "n1"]
[forward]
pairs = [["n0", "n1"]]
"#,
        prefix = file_prefix("dur")
    );
    let _ = d;
    let path = dir.path().join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let t0 = Instant::now();
    let r = run_daemon(dir.path(), &path, &["--duration", "1"], Duration::from_secs(30)).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(15));
    // net_null generates packets on RX: all of them go out of the other port.
    let rx = r.report["rx"].as_u64().unwrap();
    assert!(rx > 0);
    assert_eq!(r.report["tx"].as_u64().unwrap() + r.drop_count("tx_full"), rx);
    assert_eq!(r.report["mempool"]["in_use"], 0);
}
