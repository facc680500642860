//! Black box: run-to-completion on two cores. Two workers each poll their
//! own RX queue of one `net_null` port (2 RX queues) and hairpin what they
//! get back out of it on their own TX queue. The report shows each
//! worker's share, and nothing is lost or counted twice: each queue's
//! packets (the driver's per-queue counter) are exactly its worker's `rx`,
//! every received packet was sent (`rx = tx`, no drop, per worker and in
//! total) and the port sent exactly `tx`.
//!
//! The machine may have only CPUs 0 and 1: worker 0 shares CPU 0 with the
//! control thread (a warning), as `config/forward-multicore.toml` does.
use dataplane_tests::*;
use std::time::Duration;

#[test]
fn two_workers_on_two_queues_share_the_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "a"
device = "net_null0,size=64"
rx_queues = 2
[[worker]]
core = 0
rx = ["a:0"]
[[worker]]
core = 1
rx = ["a:1"]
[forward]
pairs = [["a", "a"]]
"#,
        prefix = file_prefix("mc")
    );
    let path = dir.path().join("mc.toml");
    std::fs::write(&path, cfg).unwrap();
    let r = run_daemon(
        dir.path(),
        &path,
        &["--duration", "1.5"],
        Duration::from_secs(60),
    )
    .unwrap();
    let rep = &r.report;
    let workers = rep["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    let port = r.port("a");
    let queues: Vec<u64> = port["rx_queue_packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let rx: Vec<u64> = workers.iter().map(|w| w["rx"].as_u64().unwrap()).collect();
    let total: u64 = rx.iter().sum();
    for (i, w) in workers.iter().enumerate() {
        assert!(rx[i] > 0, "worker {i} received nothing: {w}");
        assert_eq!(w["tx"], rx[i], "worker {i}: every packet it got was sent");
        assert_eq!(w["drops"], serde_json::json!({}), "worker {i}");
        assert_eq!(w["ring_rx"], 0, "worker {i}: no rings in run-to-completion");
        eprintln!(
            "worker {i} (CPU {}): {} packets, {:.1} % of {total}",
            w["core"],
            rx[i],
            100.0 * rx[i] as f64 / total as f64
        );
    }
    assert_eq!(queues, rx, "queue q's packets are worker q's rx");
    assert_eq!(rep["rx"], total);
    assert_eq!(port["ipackets"], total, "each packet received once");
    assert_eq!(rep["tx"], total);
    assert_eq!(port["opackets"], total, "each packet sent once");
    assert_eq!(rep["dropped"], 0);
    assert!(rep.get("distributor").is_none(), "no distributor: {rep}");
    assert_eq!(rep["mempool"]["in_use"], 0, "mbufs leaked");
}
