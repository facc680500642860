//! `scripts/demo.sh`, the first thing a new user runs, runs to its end on
//! the debug build and shows what README says it shows: the router's
//! routed, denied, TTL-expired and answered packets, and a live reload that
//! takes a prefix away from the wan port, with no mbuf leaked and every
//! packet of every run accounted for (rx + originated = tx + Σdrops).

use dataplane_tests::{assert_accounting, dataplane_bin, repo_root};
use std::process::Command;

/// The two per-second rates of the summary line `port NAME out per second:
/// before X after Y`.
fn rates(summary: &str, port: &str) -> (u64, u64) {
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("port {port}")) && l.contains("per second"))
        .unwrap_or_else(|| panic!("no rate line for {port} in:\n{summary}"));
    let num = |key: &str| -> u64 {
        let rest = &line[line.find(key).unwrap() + key.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (num("before"), num("after"))
}

#[test]
fn demo_runs_and_shows_the_router_and_a_reload() {
    let out = Command::new("bash")
        .arg("scripts/demo.sh")
        .env("DEMO_NO_SETUP", "1")
        .env("DEMO_BIN", dataplane_bin())
        .current_dir(repo_root())
        .output()
        .expect("running scripts/demo.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    let summary = &stdout[stdout
        .find("demo summary")
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"))..];
    for shown in [
        "routed IPv4=",
        "routed IPv6=",
        "ICMP time exceeded=",
        "ICMP echo reply=",
        "ARP reply=",
        "acl_deny=",
        "ttl_exceeded=",
        "reload: generation 1: routes +1 -1",
        "0 in use at exit (no leak)",
    ] {
        assert!(
            summary.contains(shown),
            "summary lacks {shown:?}:\n{summary}"
        );
    }
    // Each run's report (the demo's --stats-json files) balances; the
    // router's run originated packets (ICMP errors and replies, ARP
    // replies), so its identity counts them.
    for name in ["final", "router", "live", "perf"] {
        let path = repo_root().join(format!("build/demo/{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_accounting(&report);
        assert_eq!(report["mempool"]["in_use"], 0, "{name}");
        if name == "router" {
            assert!(
                report["originated_total"].as_u64().unwrap_or(0) > 0,
                "the router's run originated nothing: {report:#}"
            );
        }
    }
    // 198.18.1.0/24 left the wan port: its rate falls by what that prefix
    // carried (lan-routed is most of the lan input).
    let (before, after) = rates(summary, "wan");
    assert!(before > 0, "nothing left wan before the reload:\n{summary}");
    assert!(
        after * 10 < before * 7,
        "wan's rate did not fall after the reload ({before} -> {after}):\n{summary}"
    );
}
