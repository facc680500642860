//! Black box: the tools DPDK users already know work against the daemon:
//! `dpdk-telemetry.py` reads its port counters and `dpdk-dumpcap` captures
//! its traffic (a secondary process, which needs hugepages).
use dataplane::gen::{generate, GenArgs};
use dataplane_tests::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn telemetry_and_dumpcap_work_against_the_daemon() {
    assert!(
        have("dpdk-telemetry.py") && have("dpdk-dumpcap"),
        "install the dpdk package (scripts/setup.sh)"
    );
    assert!(
        ensure_hugepages(256),
        "dpdk-dumpcap needs hugepages and none could be reserved (run scripts/setup.sh as root)"
    );
    let dir = tempfile::tempdir().unwrap();
    let frames = generate(&GenArgs {
        count: 256,
        flows: 16,
        ..GenArgs::default()
    })
    .unwrap();
    write_pcap(&dir.path().join("feed.pcap"), &frames).unwrap();
    let prefix = file_prefix("obs");
    let d = dir.path().display();
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "on"
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
"#
    );
    let path = dir.path().join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut daemon = Daemon::start(dir.path(), &path, &[]).unwrap();
    daemon.wait_running().unwrap();

    // Telemetry: the standard client, non-interactively.
    let ask = |cmd: &str| telemetry(&prefix, cmd);
    let ipackets = ask("/ethdev/stats,0")["ipackets"].as_u64().unwrap();
    assert!(ipackets > 0, "telemetry shows no traffic");
    // The daemon's own endpoints: its counters, and the reloads (none yet).
    let own = ask("/dataplane/stats");
    assert!(own["rx"].as_u64().unwrap() > 0, "{own}");
    assert!(own["tx"].as_u64().unwrap() > 0, "{own}");
    assert_eq!(own["no_output"], 0, "{own}");
    // A cross-connect originates nothing and consumes nothing.
    assert_eq!(own["originated"], 0, "{own}");
    assert_eq!(own["originated_arp_request"], 0, "{own}");
    assert_eq!(own["consumed"], 0, "{own}");
    let reloads = ask("/dataplane/reloads");
    assert_eq!(reloads["generation"], 0, "{reloads}");
    assert_eq!(reloads["refusals"], 0, "{reloads}");

    // Capture 50 packets from port 0 with dumpcap.
    // -P: classic pcap (the pcap-file crate's pcapng reader rejects some of
    // dumpcap's pcapng options).
    let cap = dir.path().join("cap.pcap");
    let out = Command::new("timeout")
        .args(["30", "dpdk-dumpcap"])
        .arg(format!("--file-prefix={prefix}"))
        .args(["-P", "-i", "net_pcap0", "-c", "50", "-w"])
        .arg(&cap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dumpcap failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let captured = read_pcap(&cap).unwrap();
    assert!(captured.len() >= 50, "captured {} packets", captured.len());
    // What was captured is the traffic we fed in: received frames as they
    // are, transmitted ones with rewritten MACs (dumpcap sees both ways).
    for c in &captured {
        assert!(
            frames.iter().any(|f| f[12..] == c[12..]),
            "captured a frame that was never sent: {c:02x?}"
        );
    }

    let (out, report, _) = daemon.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    assert!(out.status.success());
    assert_eq!(report["mempool"]["in_use"], 0);
}
