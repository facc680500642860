//! Black box against the Linux kernel: two network namespaces, each a host
//! on its own veth link to a daemon port (`net_af_packet` on the root end),
//! ping each other through the router and ping the router itself, over IPv4
//! and IPv6. Everything on the wire is the kernel's own: its ARP and
//! neighbour solicitations for the gateway (answered by the daemon), the
//! daemon's ARP requests and solicitations for the far host (answered by the
//! kernel), echo through and to the router, and ICMP time exceeded for a
//! TTL / hop limit of 1. The final report must count all of it, with no mbuf
//! leaked. Needs root; without it the test fails and says so.
//!
//! The same hosts on `net_tap` ports check the checksum offloads: the tap
//! PMD has both (it fills in IPv4 header checksums on transmit and checks
//! them on receive), af_packet neither. A flood into an af_packet port with a
//! tiny ring checks that the ring overruns the PMD never reports show in
//! the port report's kernel counters.
use dataplane_tests::router_ns::{host_addrs, router_config, Running};
use dataplane_tests::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `ping args...` in `ns`; returns (replies received, ping's output).
fn ping(ns: &VethNs, args: &[&str]) -> (u32, String) {
    let out = ns
        .exec("ping")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running ping");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // "5 packets transmitted, 4 received, ..."
    let received = text
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("transmitted, ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no ping summary in:\n{text}"));
    eprintln!("[{}] ping {}\n{text}", ns.ns, args.join(" "));
    (received, text)
}

/// Every echo must come back.
fn ping_all(ns: &VethNs, dst: &str, v6: bool) {
    let fam = if v6 { "-6" } else { "-4" };
    let (got, text) = ping(ns, &[fam, "-c", "3", "-i", "0.2", "-W", "2", dst]);
    assert_eq!(got, 3, "ping {dst} from {}:\n{text}", ns.ns);
}

/// Through the router to a host it has not resolved yet: the first echo
/// may be lost (dropped as `neighbor_unresolved` while the ARP request or
/// neighbour solicitation goes out), every later one must arrive.
fn ping_through_first(ns: &VethNs, dst: &str, v6: bool) {
    let fam = if v6 { "-6" } else { "-4" };
    let (got, text) = ping(ns, &[fam, "-c", "5", "-i", "0.2", "-W", "2", dst]);
    for seq in 2..=5 {
        assert!(
            text.contains(&format!("icmp_seq={seq} ")),
            "echo {seq} to {dst} lost (only the first may be):\n{text}"
        );
    }
    assert!(got >= 4, "ping {dst}: {got}/5 replies:\n{text}");
}

/// TTL / hop limit 1: the router answers with time exceeded from its
/// address on the sender's link.
fn ping_ttl1(ns: &VethNs, dst: &str, v6: bool, from: &str, msg: &str) {
    let fam = if v6 { "-6" } else { "-4" };
    let (got, text) = ping(ns, &[fam, "-c", "1", "-t", "1", "-W", "2", dst]);
    assert_eq!(got, 0, "an echo with TTL 1 was forwarded:\n{text}");
    assert!(
        text.contains(&format!("From {from} ")) && text.contains(msg),
        "expected `{msg}` from {from}:\n{text}"
    );
}

fn config(prefix: &str, a: &VethNs, b: &VethNs) -> String {
    let dev_a = format!("net_af_packet0,iface={},qpairs=1", a.host_if);
    let dev_b = format!("net_af_packet1,iface={},qpairs=1", b.host_if);
    router_config(prefix, (&dev_a, ""), (&dev_b, ""), "")
}

#[test]
fn netns_hosts_ping_through_and_to_the_router() {
    let t0 = Instant::now();
    assert!(have("ping"), "ping (iputils-ping) is not installed");
    let (ns_a, if_a) = VethNs::names("a");
    let (ns_b, if_b) = VethNs::names("b");
    let (addrs_a, addrs_b) = host_addrs();
    let a = VethNs::create(&ns_a, &if_a, "ethA", &addrs_a)
        .expect("setting up namespace A (this test needs root)");
    let b = VethNs::create(&ns_b, &if_b, "ethB", &addrs_b)
        .expect("setting up namespace B (this test needs root)");

    let dir = tempfile::tempdir().unwrap();
    let prefix = file_prefix("netns");
    let cfg = dir.path().join("router.toml");
    std::fs::write(&cfg, config(&prefix, &a, &b)).unwrap();
    let running = Running::start(dir.path(), &cfg, prefix);

    // The router's own addresses: the kernel resolves its gateway first
    // (ARP / NS answered by the daemon), so nothing is lost.
    ping_all(&a, "10.10.1.1", false);
    ping_all(&a, "fd00:10:1::1", true);
    // A to B: the daemon resolves 10.10.2.2 and fd00:10:2::2 itself.
    ping_through_first(&a, "10.10.2.2", false);
    ping_through_first(&a, "fd00:10:2::2", true);
    // Every neighbour is known now: all later echoes arrive, both ways.
    ping_all(&a, "10.10.2.2", false);
    ping_all(&a, "fd00:10:2::2", true);
    ping_all(&b, "10.10.1.2", false);
    ping_all(&b, "fd00:10:1::2", true);
    ping_ttl1(&a, "10.10.2.2", false, "10.10.1.1", "Time to live exceeded");
    ping_ttl1(&a, "fd00:10:2::2", true, "fd00:10:1::1", "Hop limit");

    let r = running.stop();

    assert!(r["rx"].as_u64().unwrap() > 0, "{r:#}");
    assert!(r["tx"].as_u64().unwrap() > 0, "{r:#}");
    for p in r["ports"].as_array().unwrap() {
        assert!(p["ipackets"].as_u64().unwrap() > 0, "{p:#}");
        assert!(p["opackets"].as_u64().unwrap() > 0, "{p:#}");
        assert_eq!(p["oerrors"], 0, "{p:#}");
    }
    let ev = &r["events"];
    let count = |k: &str| ev[k].as_u64().unwrap_or(0);
    for k in [
        "arp_reply_sent",
        "arp_request_sent",
        "nd_advert_sent",
        "nd_solicit_sent",
        "neighbor_learned",
    ] {
        assert!(count(k) > 0, "no {k} in events: {ev:#}");
    }
    // The 3 + 3 echoes to our own addresses (the rest were A's and B's).
    assert!(count("echo_reply_sent") >= 6, "{ev:#}");
    // Learned: 10.10.1.2 (its ARP for the gateway), 10.10.2.2 (ARP reply),
    // fd00:10:1::2 (its NS), fd00:10:2::2 (NA).
    assert!(count("neighbor_learned") >= 4, "{ev:#}");
    assert_eq!(count("icmp_error_sent"), 2, "{ev:#}");
    // The router's own packets sent in dropped packets' buffers: the two
    // time exceeded, and the ARP request / solicitation for B.
    let orig = &r["originated"];
    assert_eq!(orig["icmp_error"], 2, "{orig:#}");
    assert!(orig["arp_request"].as_u64().unwrap_or(0) >= 1, "{orig:#}");
    assert!(orig["nd_solicit"].as_u64().unwrap_or(0) >= 1, "{orig:#}");
    assert_accounting(&r);
    let drops = &r["drops"];
    assert_eq!(drops["ttl_exceeded"], 2, "{drops:#}");
    // At most the first echo per family waited for resolution.
    assert!(
        drops["neighbor_unresolved"].as_u64().unwrap_or(0) <= 2,
        "{drops:#}"
    );
    assert_eq!(r["mempool"]["in_use"], 0, "mbufs leaked: {r:#}");

    drop(a);
    drop(b);
    for (ns, host_if) in [(&ns_a, &if_a), (&ns_b, &if_b)] {
        assert!(!VethNs::exists(ns, host_if), "{ns} / {host_if} left behind");
    }
    eprintln!("took {:?}", t0.elapsed());
}

/// Packets namespace `ns`'s IPv4 layer dropped for a bad header (a wrong
/// header checksum among them): `InHdrErrors` of `/proc/net/snmp`.
fn ipv4_header_errors(ns: &VethNs) -> u64 {
    let out = ns.exec("cat").arg("/proc/net/snmp").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ip = text.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (ip.next().unwrap(), ip.next().unwrap());
    let at = names
        .split_whitespace()
        .position(|n| n == "InHdrErrors")
        .expect("InHdrErrors in /proc/net/snmp");
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

/// The hosts on `net_tap` ports instead of veth + af_packet: the tap PMD
/// offers IPv4 header checksum offload, so with `tx_checksum_offload`
/// (the default) the router hands routed IPv4 packets to the port with the
/// checksum field zeroed and the PMD fills it in; without, the software
/// update. Either way the receiving kernel checks every header checksum
/// (a bad one is dropped and counted in `InHdrErrors`), so the echoes
/// through the router arriving is the proof. With `rx_checksum_offload =
/// "on"` the PMD checks received IPv4 header checksums and the router
/// trusts its "good" (`auto`, the default, leaves it off on net_tap, whose
/// check is software on the worker's core); frames with a wrong one are
/// dropped as `bad_checksum` either way.
fn tap_hosts_ping_through(offload: bool) {
    assert!(have("ping"), "ping (iputils-ping) is not installed");
    let tag = if offload { "o" } else { "s" };
    let (ns_a, if_a) = VethNs::names(&format!("t{tag}a"));
    let (ns_b, if_b) = VethNs::names(&format!("t{tag}b"));
    let dir = tempfile::tempdir().unwrap();
    let prefix = file_prefix("nstap");
    let cfg = dir.path().join("router.toml");
    // RX: `auto` (the default) leaves net_tap's software check off, so
    // the offload variant asks for it (`on`).
    let extra = if offload {
        "rx_checksum_offload = \"on\""
    } else {
        "tx_checksum_offload = false"
    };
    // Through a gateway as well (B, for a network on its loopback): the
    // fused fast path forwards those, the general path the connected ones.
    let routes = "[[route.static]]\nprefix = \"198.51.100.0/24\"\nvia = \"10.10.2.2\"\n";
    let toml = router_config(
        &prefix,
        (&format!("net_tap0,iface={if_a}"), extra),
        (&format!("net_tap1,iface={if_b}"), extra),
        routes,
    );
    std::fs::write(&cfg, toml).unwrap();
    let running = Running::start(dir.path(), &cfg, prefix);
    let (addrs_a, addrs_b) = host_addrs();
    let a = VethNs::adopt_tap(&ns_a, &if_a, "02:00:00:00:01:02", &addrs_a)
        .expect("moving tap A into its namespace (this test needs root)");
    let b = VethNs::adopt_tap(&ns_b, &if_b, "02:00:00:00:02:02", &addrs_b)
        .expect("moving tap B into its namespace (this test needs root)");

    let st = b
        .exec("ip")
        .args(["addr", "add", "198.51.100.1/32", "dev", "lo"])
        .status()
        .unwrap();
    assert!(st.success(), "adding 198.51.100.1 in {}", b.ns);

    ping_all(&a, "10.10.1.1", false);
    ping_through_first(&a, "10.10.2.2", false);
    ping_through_first(&a, "fd00:10:2::2", true);
    ping_all(&a, "10.10.2.2", false);
    ping_through_first(&a, "198.51.100.1", false);
    ping_all(&a, "198.51.100.1", false);
    ping_all(&b, "10.10.1.2", false);
    ping_all(&b, "fd00:10:1::2", true);
    for ns in [&a, &b] {
        assert_eq!(ipv4_header_errors(ns), 0, "bad IPv4 headers in {}", ns.ns);
    }
    // Headers with a wrong checksum, to B through the router: dropped as
    // `bad_checksum` whether the tap PMD checked them (and flagged them
    // bad) or the router summed them itself.
    let router_mac = neighbor_mac(&a, "10.10.1.1");
    send_bad_checksums(&a, &if_a, &router_mac, BAD_CHECKSUMS);
    std::thread::sleep(Duration::from_millis(500));

    let r = running.stop();
    assert_eq!(
        r["drops"]["bad_checksum"], BAD_CHECKSUMS,
        "{:#}",
        r["drops"]
    );
    for p in r["ports"].as_array().unwrap() {
        assert_eq!(p["driver"], "net_tap", "{p:#}");
        for list in ["tx_offloads", "rx_offloads"] {
            let on = p[list]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o.as_str() == Some("IPV4_CKSUM"));
            assert_eq!(on, offload, "{list}: {p:#}");
        }
        assert!(p["opackets"].as_u64().unwrap() >= 12, "{p:#}");
        assert_eq!(p["oerrors"], 0, "{p:#}");
    }
    assert_eq!(r["mempool"]["in_use"], 0, "mbufs leaked: {r:#}");
    drop(a);
    drop(b);
    for (ns, tap) in [(&ns_a, &if_a), (&ns_b, &if_b)] {
        assert!(!VethNs::exists(ns, tap), "{ns} / {tap} left behind");
    }
}

/// Frames of wrong IPv4 header checksum that `tap_hosts_ping_through`
/// sends.
const BAD_CHECKSUMS: u64 = 5;

/// The MAC that host `ns` has learned for `ip` (its neighbour table).
fn neighbor_mac(ns: &VethNs, ip: &str) -> String {
    let out = ns.exec("ip").args(["neigh", "show", ip]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    words
        .find(|w| *w == "lladdr")
        .and_then(|_| words.next())
        .unwrap_or_else(|| panic!("no MAC for {ip} in {}: {text}", ns.ns))
        .to_owned()
}

/// Sends `n` UDP frames from host `ns` (10.10.1.2 on `iface`) to
/// 10.10.2.2 through the router (`router_mac`), each with its IPv4 header
/// checksum off by one, through a raw packet socket (the kernel would
/// compute a right one).
fn send_bad_checksums(ns: &VethNs, iface: &str, router_mac: &str, n: u64) {
    let script = r#"
import socket, struct, sys
iface, dst_mac, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", "")), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
src_mac = s.getsockname()[4][:6]
payload = b"bad-checksum"
udp = struct.pack("!HHHH", 4000, 4001, 8 + len(payload), 0) + payload
def csum(b):
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16:
        t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                  socket.inet_aton("10.10.1.2"), socket.inet_aton("10.10.2.2"))
wrong = (csum(hdr) + 1) & 0xffff
hdr = hdr[:10] + struct.pack("!H", wrong) + hdr[12:]
for _ in range(n):
    s.send(dst_mac + src_mac + b"\x08\x00" + hdr + udp)
"#;
    let st = ns
        .exec("python3")
        .args(["-c", script, iface, router_mac, &n.to_string()])
        .status()
        .unwrap();
    assert!(
        st.success(),
        "sending frames with bad checksums from {}",
        ns.ns
    );
}

#[test]
fn tap_hosts_ping_through_with_checksum_offload() {
    tap_hosts_ping_through(true);
}

#[test]
fn tap_hosts_ping_through_with_software_checksums() {
    tap_hosts_ping_through(false);
}

/// An af_packet port with a two-frame RX ring, flooded from its host by a
/// sender on the worker's CPU (so the worker cannot drain the ring while
/// the sender runs): the ring overflows. The PMD reports nothing of it
/// (`imissed` stays 0, `ipackets` is what it read); the port report's
/// kernel counters do: `kernel_ring_dropped` is the kernel's count of
/// frames the ring had no room for, and the interface's `rx_packets` is
/// every frame read plus every frame dropped, to within what the ring
/// holds. (`kernel_rx_dropped`, the interface's own drop counter, does not
/// count ring overruns: the interface received those frames fine.)
#[test]
fn af_packet_ring_overruns_are_reported() {
    let (ns_a, if_a) = VethNs::names("ra");
    let (ns_b, if_b) = VethNs::names("rb");
    let (addrs_a, addrs_b) = host_addrs();
    let a = VethNs::create(&ns_a, &if_a, "ethA", &addrs_a)
        .expect("setting up namespace A (this test needs root)");
    let b = VethNs::create(&ns_b, &if_b, "ethB", &addrs_b)
        .expect("setting up namespace B (this test needs root)");
    let dir = tempfile::tempdir().unwrap();
    let prefix = file_prefix("ring");
    let cfg = dir.path().join("router.toml");
    // framecnt=2 with framesz=2048 in 4 KiB blocks: one block, two frames.
    let ring = "qpairs=1,blocksz=4096,framesz=2048,framecnt=2";
    let dev_a = format!("net_af_packet0,iface={},{ring}", a.host_if);
    let dev_b = format!("net_af_packet1,iface={},qpairs=1", b.host_if);
    std::fs::write(&cfg, router_config(&prefix, (&dev_a, ""), (&dev_b, ""), "")).unwrap();
    let running = Running::start(dir.path(), &cfg, prefix);

    // The worker runs on core 1 (router_config): so does the sender.
    let n = 200_000;
    let sent = UdpFlood::start(&a, "10.10.2.2:9".parse().unwrap(), 64, Some(1), n)
        .join()
        .unwrap();
    assert!(sent > n / 2, "only {sent} of {n} datagrams left A");
    // Let the worker drain what the ring still holds.
    std::thread::sleep(Duration::from_millis(300));

    let r = running.stop();
    let pa = &r["ports"][0];
    eprintln!("port a: {pa:#}");
    let get = |k: &str| {
        pa[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no {k} in port a: {pa:#}"))
    };
    assert_eq!(pa["kernel_iface"], a.host_if.as_str(), "{pa:#}");
    assert_eq!(pa["driver"], "net_af_packet", "{pa:#}");
    let (ipackets, ring_dropped) = (get("ipackets"), get("kernel_ring_dropped"));
    let kernel_rx = get("kernel_rx_packets");
    assert_eq!(get("imissed"), 0, "the PMD never reports receive drops");
    assert!(
        ring_dropped > 0,
        "the flood did not overrun the ring: {pa:#}"
    );
    assert!(
        kernel_rx > ipackets,
        "the interface received no more than the PMD read: {pa:#}"
    );
    // Every frame the interface received was read or dropped, but for the
    // ring's two frames at either end (held when counting started / left
    // unread at the end).
    let accounted = ipackets + ring_dropped;
    assert!(
        kernel_rx.abs_diff(accounted) <= 2,
        "kernel rx_packets {kernel_rx} != ipackets {ipackets} + ring drops {ring_dropped}: {pa:#}"
    );
    assert_eq!(r["mempool"]["in_use"], 0, "mbufs leaked: {r:#}");
    // The other port has a default ring and its own counters.
    assert_eq!(r["ports"][1]["kernel_iface"], b.host_if.as_str());
}
