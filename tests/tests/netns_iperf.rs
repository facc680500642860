//! Real TCP and UDP through the router: two network namespaces, each a
//! Linux host on its own link to a daemon port, run `iperf3` through it —
//! TCP with one and four streams, both directions (`-R`), and UDP — over
//! `net_af_packet` (veth pairs) and over `net_tap`. Every transfer must
//! complete with data received, and neither host's kernel may count a bad
//! TCP or UDP checksum (`nstat`: `TcpInCsumErrors`, `UdpInCsumErrors`) or a
//! bad IPv4 header (`InHdrErrors`). The hosts' interfaces send with TX
//! checksum offload off (`VethNs` does it, see `offloads_off`): with it on,
//! the kernel hands af_packet partial checksums and TCP never connects.
//!
//! And path-MTU discovery across the router: the router's port toward B
//! has `mtu = 1400` while both hosts' links are 1500 (a narrower hop in
//! the middle of the path, as a tunnel would be), so B's MSS does not hide
//! it from A. Packets with DF that are too big for it get ICMP
//! fragmentation needed / ICMPv6 packet too big from the router, A's
//! kernel records the path MTU (`ip route get` shows `mtu 1400`), and TCP
//! and UDP that start too big then get through; IPv4 without DF is
//! dropped as `too_big_no_df` (the router does not fragment). The report
//! counts the errors (`originated.icmp_too_big`).
//!
//! Each transfer is short (`-t 2`); throughput is printed (run with
//! `--no-capture` to see it), never asserted. Needs root, `iperf3`,
//! `ethtool`, `nstat` and `ping` (scripts/setup.sh installs them).
use dataplane_tests::router_ns::{host_addrs, router_config, Running};
use dataplane_tests::*;
use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The router (`router_ns::router_config`) with 198.51.100.0/24 (addresses
/// on B's loopback) via B; `b_extra` goes into port b's section.
fn config(prefix: &str, dev_a: &str, dev_b: &str, b_extra: &str) -> String {
    let routes = "[[route.static]]\nprefix = \"198.51.100.0/24\"\nvia = \"10.10.2.2\"\n";
    router_config(prefix, (dev_a, ""), (dev_b, b_extra), routes)
}

/// `prog args...` in `ns`, stdout and stderr together; panics unless it
/// ran (its exit status is the caller's to judge).
fn run_in(ns: &VethNs, prog: &str, args: &[&str]) -> (bool, String) {
    let out = ns
        .exec(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {prog} in {}: {e}", ns.ns));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Pings until one echo comes back (the router resolves the far host on
/// the first), so transfers start with every neighbour known.
fn warm_up(ns: &VethNs, dst: &str) {
    let fam = if dst.contains(':') { "-6" } else { "-4" };
    let (ok, text) = run_in(ns, "ping", &[fam, "-c", "5", "-i", "0.2", "-W", "1", dst]);
    assert!(
        ok && !text.contains(" 0 received"),
        "ping {dst} from {}:\n{text}",
        ns.ns
    );
}

/// `iperf3 -s` in `ns` on `port`, until dropped.
struct IperfServer {
    child: Child,
}

impl IperfServer {
    /// On every address, or only on `bind`: a UDP test's server answers
    /// from the address its socket is bound to, and from the route's source
    /// address when it is bound to none (B's 10.10.2.2 for a client of its
    /// loopback address 198.51.100.2, which the client's connected socket
    /// then refuses).
    fn start(ns: &VethNs, bind: Option<&str>, port: u16) -> IperfServer {
        let port_s = port.to_string();
        let mut args = vec!["-s", "-p", &port_s];
        if let Some(b) = bind {
            args.extend(["-B", b]);
        }
        let child = ns
            .exec("iperf3")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting iperf3 -s");
        let server = IperfServer { child };
        // Listening once `ss` shows the socket.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (_, text) = run_in(ns, "ss", &["-Hltn", "sport", "=", &format!(":{port}")]);
            if !text.trim().is_empty() {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "iperf3 -s in {} never listened",
                ns.ns
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for IperfServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One finished `iperf3` client run.
struct Transfer {
    what: String,
    /// Bytes the receiving side got, and its rate.
    received: u64,
    mbps: f64,
    /// UDP: datagrams sent (the sender's count) and lost (the receiver's).
    udp: Option<(u64, u64)>,
}

/// `iperf3 -c dst -p port -t 2 -J args...` from `ns`; panics unless it
/// completed with data received.
fn iperf(ns: &VethNs, dst: &str, port: u16, args: &[&str]) -> Transfer {
    let t = try_iperf(ns, dst, port, args).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.received > 0, "[{}] {}: no data received", ns.ns, t.what);
    if let Some((n, lost)) = t.udp {
        assert!(n > lost, "[{}] {}: every datagram lost", ns.ns, t.what);
    }
    t
}

/// [`iperf`], with iperf3's own error (e.g. a failed write) as `Err`.
fn try_iperf(ns: &VethNs, dst: &str, port: u16, args: &[&str]) -> Result<Transfer, String> {
    let what = format!("iperf3 -c {dst} -p {port} {}", args.join(" "));
    let port = port.to_string();
    let child = ns
        .exec("iperf3")
        .args([
            "-c",
            dst,
            "-p",
            &port,
            "-t",
            "2",
            "-J",
            "--connect-timeout",
            "3000",
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting iperf3 -c");
    let out = wait_with_timeout(child, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("[{}] {what}: {e:#}", ns.ns));
    let text = String::from_utf8_lossy(&out.stdout);
    let j: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("[{}] {what}: not JSON ({e}):\n{text}", ns.ns));
    if !out.status.success() || j.get("error").is_some() {
        return Err(format!(
            "[{}] {what} failed: {}\n{}",
            ns.ns,
            j["error"],
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let recv = &j["end"]["sum_received"];
    let received = recv["bytes"].as_u64().unwrap_or(0);
    let mbps = recv["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6;
    let udp = args.contains(&"-u").then(|| {
        (
            j["end"]["sum_sent"]["packets"].as_u64().unwrap_or(0),
            recv["lost_packets"].as_u64().unwrap_or(0),
        )
    });
    let t = Transfer {
        what,
        received,
        mbps,
        udp,
    };
    match t.udp {
        Some((n, lost)) => eprintln!(
            "[{}] {}: {} bytes received, {:.1} Mbit/s, {n} datagrams sent, {lost} lost (by the receiver's count)",
            ns.ns, t.what, t.received, t.mbps
        ),
        None => eprintln!(
            "[{}] {}: {} bytes received, {:.1} Mbit/s",
            ns.ns, t.what, t.received, t.mbps
        ),
    }
    Ok(t)
}

/// The kernel counters of namespace `ns` that count what it dropped for a
/// bad checksum or header: `nstat -asz` (absolute, every counter, history
/// untouched).
fn bad_checksums(ns: &VethNs) -> Vec<(String, u64)> {
    let names = ["TcpInCsumErrors", "UdpInCsumErrors", "IpInHdrErrors"];
    let mut args = vec!["-asz"];
    args.extend_from_slice(&names);
    let (ok, text) = run_in(ns, "nstat", &args);
    assert!(ok, "nstat in {}:\n{text}", ns.ns);
    names
        .iter()
        .map(|n| {
            let v = text
                .lines()
                .find_map(|l| {
                    let mut w = l.split_whitespace();
                    (w.next() == Some(*n)).then(|| w.next()?.parse().ok())?
                })
                .unwrap_or_else(|| panic!("no {n} in nstat's output in {}:\n{text}", ns.ns));
            (n.to_string(), v)
        })
        .collect()
}

fn assert_no_bad_checksums(hosts: &[&VethNs]) {
    for ns in hosts {
        let c = bad_checksums(ns);
        assert!(c.iter().all(|(_, v)| *v == 0), "in {}: {c:?}", ns.ns);
    }
}

/// TCP with 1 and 4 streams each way, UDP each way, from A to B's server.
fn transfers(a: &VethNs, b: &VethNs) -> Vec<Transfer> {
    warm_up(a, "10.10.2.2");
    warm_up(b, "10.10.1.2");
    let _server = IperfServer::start(b, None, 5201);
    let mut done = Vec::new();
    for args in [
        &[][..],
        &["-P", "4"][..],
        &["-R"][..],
        &["-P", "4", "-R"][..],
        &["-u", "-b", "50M"][..],
        &["-u", "-b", "50M", "-R"][..],
    ] {
        done.push(iperf(a, "10.10.2.2", 5201, args));
    }
    done
}

/// The report after transfers: packets both ways on both ports, no TX
/// errors, no leak; the books (checked by `Running::stop`).
fn check_report(r: &Value, driver: &str) {
    for p in r["ports"].as_array().unwrap() {
        assert_eq!(p["driver"], driver, "{p:#}");
        assert!(p["ipackets"].as_u64().unwrap() > 1000, "{p:#}");
        assert!(p["opackets"].as_u64().unwrap() > 1000, "{p:#}");
        assert_eq!(p["oerrors"], 0, "{p:#}");
    }
    assert_eq!(r["mempool"]["in_use"], 0, "mbufs leaked: {r:#}");
    assert_accounting(r);
}

/// The daemon with hosts A and B on `net_af_packet` ports (veths) or on
/// `net_tap` ports (`tap`); `b_extra` goes into port b's section. The
/// hosts' links are 1500 bytes either way.
fn setup(tag: &str, tap: bool, b_extra: &str) -> (tempfile::TempDir, Running, VethNs, VethNs) {
    assert!(have("iperf3"), "iperf3 is not installed (scripts/setup.sh)");
    let kind = if tap { "t" } else { "v" };
    let (ns_a, if_a) = VethNs::names(&format!("{tag}{kind}a"));
    let (ns_b, if_b) = VethNs::names(&format!("{tag}{kind}b"));
    let (addrs_a, addrs_b) = host_addrs();
    let dir = tempfile::tempdir().unwrap();
    let prefix = file_prefix(&format!("{tag}{kind}"));
    let cfg = dir.path().join("router.toml");
    if tap {
        let (dev_a, dev_b) = (
            format!("net_tap0,iface={if_a}"),
            format!("net_tap1,iface={if_b}"),
        );
        std::fs::write(&cfg, config(&prefix, &dev_a, &dev_b, b_extra)).unwrap();
        let running = Running::start(dir.path(), &cfg, prefix);
        let a = VethNs::adopt_tap(&ns_a, &if_a, "02:00:00:00:01:02", &addrs_a)
            .expect("tap A into its namespace (needs root)");
        let b = VethNs::adopt_tap(&ns_b, &if_b, "02:00:00:00:02:02", &addrs_b)
            .expect("tap B into its namespace (needs root)");
        (dir, running, a, b)
    } else {
        let a = VethNs::create(&ns_a, &if_a, "ethA", &addrs_a).expect("namespace A (needs root)");
        let b = VethNs::create(&ns_b, &if_b, "ethB", &addrs_b).expect("namespace B (needs root)");
        let dev_a = format!("net_af_packet0,iface={if_a},qpairs=1");
        let dev_b = format!("net_af_packet1,iface={if_b},qpairs=1");
        std::fs::write(&cfg, config(&prefix, &dev_a, &dev_b, b_extra)).unwrap();
        let running = Running::start(dir.path(), &cfg, prefix);
        (dir, running, a, b)
    }
}

fn iperf3_through(tap: bool) {
    let t0 = Instant::now();
    let (_dir, running, a, b) = setup("i", tap, "");
    transfers(&a, &b);
    assert_no_bad_checksums(&[&a, &b]);
    let r = running.stop();
    check_report(&r, if tap { "net_tap" } else { "net_af_packet" });
    eprintln!("took {:?}", t0.elapsed());
}

#[test]
fn iperf3_tcp_and_udp_through_af_packet() {
    iperf3_through(false);
}

#[test]
fn iperf3_tcp_and_udp_through_tap() {
    iperf3_through(true);
}

/// `ip route get dst` in `ns`: the path MTU A's kernel holds for it, if
/// one was learned (`... mtu N` in the cached route).
fn cached_mtu(ns: &VethNs, dst: &str) -> Option<u32> {
    let fam = if dst.contains(':') { "-6" } else { "-4" };
    let (ok, text) = run_in(ns, "ip", &[fam, "route", "get", dst]);
    assert!(ok, "ip route get {dst} in {}:\n{text}", ns.ns);
    eprintln!("[{}] ip route get {dst}: {}", ns.ns, text.trim());
    let mut w = text.split_whitespace();
    while let Some(x) = w.next() {
        if x == "mtu" {
            return w.next().and_then(|v| v.parse().ok());
        }
    }
    None
}

/// The path-MTU case (module doc) over af_packet or tap.
fn path_mtu_discovery(tap: bool) {
    let t0 = Instant::now();
    let (_dir, running, a, b) = setup("p", tap, "mtu = 1400");
    // Fresh destinations (no path MTU learned yet) for TCP and UDP.
    for addr in ["198.51.100.1/32", "198.51.100.2/32"] {
        let (ok, text) = run_in(&b, "ip", &["addr", "add", addr, "dev", "lo"]);
        assert!(ok, "{text}");
    }
    warm_up(&a, "10.10.2.2");
    warm_up(&a, "fd00:10:2::2");
    warm_up(&b, "10.10.1.2");
    assert_eq!(cached_mtu(&a, "10.10.2.2"), None, "no path MTU yet");

    // Without DF (-M dont) a 1478-byte packet is dropped, no error back.
    let (_, text) = run_in(
        &a,
        "ping",
        &[
            "-M",
            "dont",
            "-s",
            "1450",
            "-c",
            "2",
            "-i",
            "0.3",
            "-W",
            "1",
            "10.10.2.2",
        ],
    );
    eprintln!("[{}] ping -M dont -s 1450:\n{text}", a.ns);
    assert!(
        text.contains(" 0 received") && !text.contains("Frag needed"),
        "{text}"
    );
    assert_eq!(cached_mtu(&a, "10.10.2.2"), None, "no error, no path MTU");

    // With DF: fragmentation needed from the router's address on A's link,
    // with the MTU of its port toward B; A's kernel keeps it.
    let (_, text) = run_in(
        &a,
        "ping",
        &[
            "-M",
            "do",
            "-s",
            "1450",
            "-c",
            "3",
            "-i",
            "0.3",
            "-W",
            "1",
            "10.10.2.2",
        ],
    );
    eprintln!("[{}] ping -M do -s 1450:\n{text}", a.ns);
    assert!(
        text.contains("From 10.10.1.1 ") && text.contains("Frag needed and DF set (mtu = 1400)"),
        "{text}"
    );
    assert_eq!(cached_mtu(&a, "10.10.2.2"), Some(1400));
    // Exactly the MTU passes: 1372 + 8 + 20 = 1400.
    let (ok, text) = run_in(
        &a,
        "ping",
        &[
            "-M",
            "do",
            "-s",
            "1372",
            "-c",
            "2",
            "-i",
            "0.3",
            "-W",
            "2",
            "10.10.2.2",
        ],
    );
    assert!(ok, "a 1400-byte echo with DF:\n{text}");

    // IPv6: packet too big, the same.
    let (_, text) = run_in(
        &a,
        "ping",
        &[
            "-6",
            "-M",
            "do",
            "-s",
            "1450",
            "-c",
            "3",
            "-i",
            "0.3",
            "-W",
            "1",
            "fd00:10:2::2",
        ],
    );
    eprintln!("[{}] ping -6 -M do -s 1450:\n{text}", a.ns);
    assert!(
        text.contains("From fd00:10:1::1 ") && text.contains("Packet too big: mtu=1400"),
        "{text}"
    );
    assert_eq!(cached_mtu(&a, "fd00:10:2::2"), Some(1400));

    // TCP to a fresh address: B's MSS is 1460 (its link is 1500), so A's
    // first full segments are too big for the router's port; the error
    // lowers A's path MTU and the transfer completes.
    let _server = IperfServer::start(&b, None, 5201);
    let _udp_server = IperfServer::start(&b, Some("198.51.100.2"), 5202);
    assert_eq!(cached_mtu(&a, "198.51.100.1"), None);
    iperf(&a, "198.51.100.1", 5201, &[]);
    assert_eq!(cached_mtu(&a, "198.51.100.1"), Some(1400));
    // UDP with 1450-byte datagrams to another (the case, where they
    // vanished in silence): they leave with DF (Linux's default), the error
    // comes back, A's kernel lowers the path MTU and tells the connected
    // socket: iperf3's next write fails with EMSGSIZE, which iperf3 takes
    // as fatal. Run again, A fragments the datagrams to the learned MTU
    // (1396 + 102 bytes, no DF): through tap they arrive as fragments and
    // are forwarded. Through af_packet they do not: DPDK 22.11's PMD joins
    // its sockets to a fanout group with PACKET_FANOUT_FLAG_DEFRAG, so the
    // kernel reassembles them before the daemon reads them, and the
    // 1478-byte datagram without DF is dropped as `too_big_no_df` (the
    // router does not fragment; README "Path MTU").
    let udp = ["-u", "-b", "20M", "-l", "1450"];
    assert_eq!(cached_mtu(&a, "198.51.100.2"), None);
    match try_iperf(&a, "198.51.100.2", 5202, &udp) {
        Ok(t) => eprintln!("first UDP run completed: {} bytes", t.received),
        Err(e) => {
            eprintln!("first UDP run: {e}");
            assert!(e.contains("Message too long"), "{e}");
        }
    }
    assert_eq!(cached_mtu(&a, "198.51.100.2"), Some(1400));
    let reassembled = if tap {
        iperf(&a, "198.51.100.2", 5202, &udp);
        0
    } else {
        let t = try_iperf(&a, "198.51.100.2", 5202, &udp).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            t.received, 0,
            "fragments reassembled by af_packet got through"
        );
        t.udp.map_or(0, |(n, _)| n)
    };
    assert_no_bad_checksums(&[&a, &b]);

    let r = running.stop();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let (orig, drops, ev) = (&r["originated"], &r["drops"], &r["events"]);
    // At least one error per destination: ping v4, ping v6, TCP, UDP.
    let too_big = n(&orig["icmp_too_big"]);
    assert!(too_big >= 4, "{orig:#}");
    assert_eq!(
        n(&drops["too_big"]),
        too_big,
        "none rate-limited: {drops:#}"
    );
    assert_eq!(n(&ev["icmp_error_sent"]), too_big, "{ev:#}");
    // The two pings without DF, and the datagrams af_packet reassembled
    // (iperf3's count of them may miss a few at either end).
    let no_df = n(&drops["too_big_no_df"]);
    if tap {
        assert_eq!(no_df, 2, "the two pings without DF: {drops:#}");
    } else {
        assert!(
            no_df > 2 && no_df.abs_diff(2 + reassembled) <= 10,
            "{reassembled} reassembled datagrams: {drops:#}"
        );
    }
    assert_eq!(n(&orig["icmp_error"]), 0, "no time exceeded: {orig:#}");
    assert_eq!(r["mempool"]["in_use"], 0, "mbufs leaked: {r:#}");
    eprintln!("took {:?}", t0.elapsed());
}

#[test]
fn path_mtu_discovery_through_af_packet() {
    path_mtu_discovery(false);
}

#[test]
fn path_mtu_discovery_through_tap() {
    path_mtu_discovery(true);
}
