//! Black box at scale: a routes file of 1,000,000 IPv4 routes loads (the
//! load time is logged and reported by scripts/bench.sh, not asserted here),
//! the report counts every route and the tables' memory, and traffic is
//! routed by the longest match among them.
use dataplane_tests::*;
use etherparse::PacketBuilder;
use std::time::Duration;

#[test]
fn a_million_routes_load_and_route() {
    let dir = tempfile::tempdir().unwrap();
    // Deterministic pseudo-random routes, next hops on both ports.
    let mut routes = pseudo_random_routes(1_000_000);
    // The routes the traffic exercises: a /16 with a more specific /24 and /32.
    routes.push_str("198.51.0.0/16 10.0.0.2\n198.51.100.0/24 10.0.1.2\n198.51.100.7/32 10.0.0.2\n");
    std::fs::write(dir.path().join("routes.txt"), &routes).unwrap();

    // (destination, expected output port index)
    let cases: [([u8; 4], usize); 4] = [
        ([198, 51, 7, 1], 0),     // /16 -> port 0
        ([198, 51, 100, 1], 1),   // /24 -> port 1
        ([198, 51, 100, 7], 0),   // /32 -> port 0
        ([198, 51, 100, 255], 1), // /24 again
    ];
    let mut frames = Vec::new();
    for (dst, _) in &cases {
        let mut v = Vec::new();
        // To port a's MAC (anything else is not for the router).
        PacketBuilder::ethernet2([2, 0, 0, 0, 9, 9], [2, 0, 0, 0, 0, 1])
            .ipv4([10, 0, 0, 50], *dst, 64)
            .udp(1, 2)
            .write(&mut v, &[0; 18])
            .unwrap();
        frames.push(v);
    }
    write_pcap(&dir.path().join("in.pcap"), &frames).unwrap();
    write_pcap(&dir.path().join("none.pcap"), &[]).unwrap();
    let d = dir.path().display();
    let cfg = format!(
        r#"pipeline = ["route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 2048
hugepages = "off"
[[port]]
name = "a"
device = "net_pcap0,rx_pcap={d}/in.pcap,tx_pcap={d}/out0.pcap"
mac = "02:00:00:00:00:01"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "b"
device = "net_pcap1,rx_pcap={d}/none.pcap,tx_pcap={d}/out1.pcap"
ipv4 = ["10.0.1.1/24"]
[[worker]]
core = 1
rx = ["a", "b"]
[route]
routes_file = "routes.txt"
[[route.neighbor]]
ip = "10.0.0.2"
mac = "02:00:00:00:00:aa"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:00:bb"
"#,
        prefix = file_prefix("scale")
    );
    let path = dir.path().join("scale.toml");
    std::fs::write(&path, cfg).unwrap();
    let r = run_daemon(
        dir.path(),
        &path,
        &["--stop-when-idle", "500"],
        Duration::from_secs(600),
    )
    .unwrap();
    let load = r
        .stderr()
        .lines()
        .find(|l| l.contains("route tables ready"))
        .map(str::to_owned);
    eprintln!("{}", load.unwrap_or_default());
    // The route stage reads rte_fib's table in place (`Fib4Reader`) only when
    // the table layout checked out; the cases below then go through it.
    assert!(
        !r.stderr().contains("layout is not DPDK 22.11's"),
        "rte_fib's table layout was not recognised:\n{}",
        r.stderr()
    );
    let t = &r.report["tables"];
    // 1,000,003 from the file plus the two connected subnets, their two
    // broadcast addresses and two own addresses.
    assert_eq!(t["routes_v4"], 1_000_009);
    assert!(t["route_memory_bytes"].as_u64().unwrap() > 64 << 20);
    let outs = [
        read_pcap(&dir.path().join("out0.pcap")).unwrap(),
        read_pcap(&dir.path().join("out1.pcap")).unwrap(),
    ];
    let gw = [[2, 0, 0, 0, 0, 0xaa], [2, 0, 0, 0, 0, 0xbb]];
    for (k, (dst, port)) in cases.iter().enumerate() {
        let hit = outs[*port]
            .iter()
            .any(|f| f[30..34] == dst[..] && f[..6] == gw[*port]);
        assert!(hit, "case {k}: {dst:?} not sent out of port {port}");
    }
    assert_eq!(outs[0].len() + outs[1].len(), cases.len());
    assert_eq!(r.report["mempool"]["in_use"], 0);
}
