//! Black box against DPDK's own testpmd: testpmd and the daemon are joined
//! by a `net_memif` wire. testpmd (io forwarding, `start tx_first`) injects
//! bursts; the daemon hairpins them back (forward pair m0↔m0); testpmd
//! forwards them again, so packets circulate. Every packet testpmd sent
//! must be received and forwarded by the daemon, and testpmd must see them
//! come back.
use dataplane_tests::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn testpmd_counter(out: &str, section: &str, key: &str) -> u64 {
    let sec = out
        .split(section)
        .nth(1)
        .unwrap_or_else(|| panic!("testpmd output lacks {section}:\n{out}"));
    let after = sec
        .split(key)
        .nth(1)
        .unwrap_or_else(|| panic!("no {key} in:\n{sec}"));
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn testpmd_traffic_flows_through_the_daemon_and_back() {
    assert!(
        have("dpdk-testpmd"),
        "dpdk-testpmd missing: run scripts/setup.sh (package dpdk)"
    );
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("memif.sock");
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "m0"
device = "net_memif0,role=server,socket={sock},id=0"
[[worker]]
core = 0
rx = ["m0"]
[forward]
pairs = [["m0", "m0"]]
"#,
        prefix = file_prefix("memif-d"),
        sock = sock.display()
    );
    let path = dir.path().join("d.toml");
    std::fs::write(&path, cfg).unwrap();
    // memif sockets are abstract (no file) by default in DPDK 22.11: wait
    // for the daemon to be up instead.
    let mut daemon = Daemon::start(dir.path(), &path, &[]).unwrap();
    daemon.wait_running().unwrap();

    let mut testpmd = Command::new("dpdk-testpmd")
        .args(["-l", "0,1", "--no-huge", "-m", "256", "--no-pci"])
        .arg(format!("--file-prefix={}", file_prefix("memif-t")))
        .arg(format!(
            "--vdev=net_memif0,role=client,socket={},id=0",
            sock.display()
        ))
        .args([
            "--",
            "-i",
            "--nb-cores=1",
            "--total-num-mbufs=8192",
            "--port-topology=loop",
            "--forward-mode=io",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = testpmd.stdin.take().unwrap();
    // Give the memif link time to come up, then inject 4 bursts and let
    // them circulate.
    std::thread::sleep(Duration::from_secs(3));
    writeln!(stdin, "start tx_first 4").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    writeln!(stdin, "stop").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let tout = wait_with_timeout(testpmd, Duration::from_secs(30)).unwrap();
    let tpmd = String::from_utf8_lossy(&tout.stdout).into_owned();

    let (dout, report, _) = daemon.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    assert!(
        dout.status.success(),
        "daemon: {}",
        String::from_utf8_lossy(&dout.stdout)
    );

    let section = "Accumulated forward statistics for all ports";
    let t_tx = testpmd_counter(&tpmd, section, "TX-packets:");
    let t_rx = testpmd_counter(&tpmd, section, "RX-packets:");
    let d_rx = report["rx"].as_u64().unwrap();
    let d_tx = report["tx"].as_u64().unwrap();
    eprintln!("testpmd tx={t_tx} rx={t_rx}; daemon rx={d_rx} tx={d_tx}");
    assert!(t_tx > 10_000, "too little traffic circulated: {t_tx}");
    // Everything testpmd sent reached the daemon and was forwarded.
    assert_eq!(d_rx, t_tx, "daemon must receive every packet testpmd sent");
    assert_eq!(d_tx, d_rx, "daemon must forward every packet it received");
    assert_eq!(report["dropped"], 0);
    // testpmd saw them come back, less what was in flight when it stopped
    // (at most the 4 injected bursts of 32).
    assert!(
        t_rx <= d_tx && d_tx - t_rx <= 128,
        "testpmd rx {t_rx} vs daemon tx {d_tx}"
    );
    assert_eq!(report["mempool"]["in_use"], 0);
}
