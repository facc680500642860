//! Black box: tables change under load without a lost packet.
//!
//! `net_pcap` replays a feed forever (`infinite_rx`) into an `acl` + `route`
//! daemon. Two configs alternate, 20 reloads in all: set A routes the marked
//! destination out of port `a` and denies its UDP port 9 packets; set B
//! routes it out of port `b` and denies nothing. After each reload is
//! acknowledged (the `dataplane reload` answer comes once every worker runs
//! on the new set), the other port's counter must stand still: no packet
//! leaves by the old set; and no packet is judged by the old ACL: the
//! `acl_deny` drops stand still from the acknowledgement on under set B
//! and grow under set A. In the middle, a broken config (refused with its
//! file, line and field) and a port change are refused and traffic keeps
//! flowing on the running set; SIGHUP with an
//! unchanged file is a no-op that still logs. At the end: the books
//! balance (`assert_accounting`), every drop an ACL deny (the only one
//! either config explains), every mbuf back in the pool.
use dataplane_tests::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const IN_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

/// UDP from 10.0.0.2 to the marked destination 198.51.100.7: flows to
/// port 5000 and to port 9 (the one set A's ACL denies).
fn feed() -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for i in 0..64u16 {
        let dport = if i % 4 == 0 { 9 } else { 5000 };
        let b = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xee], IN_MAC)
            .ipv4([10, 0, 0, 2], [198, 51, 100, 7], 64)
            .udp(1000 + i, dport);
        let payload = [0u8; 18];
        let mut f = Vec::with_capacity(b.size(payload.len()));
        b.write(&mut f, &payload).unwrap();
        frames.push(f);
    }
    frames
}

fn config(dir: &Path, prefix: &str, set_b: bool) -> String {
    let d = dir.display();
    let (via, deny) = if set_b {
        ("10.0.2.2", "")
    } else {
        (
            "10.0.1.2",
            // The second rule can never match (the first denies all it
            // would allow): warned of at start-up and on each reload.
            "[[acl.rule]]\naction = \"deny\"\nproto = \"udp\"\ndport = 9\n\
             [[acl.rule]]\naction = \"allow\"\nproto = \"udp\"\ndport = 9\n",
        )
    };
    format!(
        r#"pipeline = ["acl", "route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 1024
hugepages = "off"
[daemon]
stats_interval_ms = 200
# Partly filled TX buffers wait long: a packet the old set decided that the
# worker did not send before acknowledging would leave well after the
# acknowledgement, where the test looks.
tx_drain_us = 50000
[[port]]
name = "in"
device = "net_pcap0,rx_pcap={d}/feed.pcap,infinite_rx=1"
mac = "02:00:00:00:00:01"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "a"
device = "net_pcap1,rx_pcap={d}/empty.pcap,tx_pcap=/dev/null"
mac = "02:00:00:00:00:0a"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "b"
device = "net_pcap2,rx_pcap={d}/empty.pcap,tx_pcap=/dev/null"
mac = "02:00:00:00:00:0b"
ipv4 = ["10.0.2.1/24"]
[[worker]]
core = 1
rx = ["in", "a", "b"]
[acl]
default = "allow"
{deny}
[route]
[[route.static]]
prefix = "198.51.100.0/24"
via = "{via}"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:02"
[[route.neighbor]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
"#
    )
}

/// `dataplane ARGS...`: exit status and stdout.
fn client(args: &[&str]) -> (bool, String) {
    let out = Command::new(dataplane_bin())
        .args(args)
        .output()
        .expect("running the client");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn opackets(s: &Value, port: &str) -> u64 {
    s["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == port))
        .and_then(|p| p["opackets"].as_u64())
        .unwrap_or_else(|| panic!("no port {port} in {s}"))
}

fn acl_denies(s: &Value) -> u64 {
    let drops = s["drops"]
        .as_object()
        .unwrap_or_else(|| panic!("no drops in {s}"));
    drops.get("acl_deny").map_or(0, |v| v.as_u64().unwrap())
}

/// Checks that, on the set now in force, `quiet` sends nothing more than
/// it had sent when `at_ack` was taken (the reload's answer: counters read
/// right after every worker acknowledged), while `busy` keeps sending; and
/// that the ACL denies from then on exactly when the set in force has the
/// deny rule (`denying`, set A): under set B a deny counted after the
/// acknowledgement was judged by the old ACL.
fn only_one_port_sends(
    prefix: &str,
    at_ack: &Value,
    busy: &str,
    quiet: &str,
    denying: bool,
    what: &str,
) {
    std::thread::sleep(Duration::from_millis(150));
    let later = daemon_stats(prefix);
    if denying {
        assert!(
            acl_denies(&later) > acl_denies(at_ack),
            "{what}: set A's ACL denied nothing"
        );
    } else {
        assert_eq!(
            acl_denies(at_ack),
            acl_denies(&later),
            "{what}: a packet was denied by the old ACL after the reload was acknowledged"
        );
    }
    assert_eq!(
        opackets(at_ack, quiet),
        opackets(&later, quiet),
        "{what}: port {quiet} sent after the reload was acknowledged"
    );
    assert!(
        opackets(&later, busy) > opackets(at_ack, busy),
        "{what}: port {busy} sent nothing"
    );
}

/// `reload PATH` over the control socket: the answer, and the port
/// counters it carries.
fn reload(prefix: &str, path: &str) -> (bool, String, Value) {
    let a = dataplane::control::socket::request(prefix, &format!("reload {path}"))
        .expect("reload request");
    (a.ok, a.message, a.data.unwrap_or(Value::Null))
}

#[test]
fn tables_change_under_load_and_no_packet_leaves_by_the_old_set() {
    let dir = tempfile::tempdir().unwrap();
    write_pcap(&dir.path().join("feed.pcap"), &feed()).unwrap();
    write_pcap(&dir.path().join("empty.pcap"), &[]).unwrap();
    let prefix = file_prefix("reload");
    let path = dir.path().join("router.toml");
    let cfg_path = path.to_str().unwrap().to_owned();
    std::fs::write(&path, config(dir.path(), &prefix, false)).unwrap();
    let mut d = Daemon::start(dir.path(), &path, &[]).unwrap();
    d.wait_log("traffic", Duration::from_secs(60), |l| {
        l.lines()
            .any(|x| x.contains("stats rx=") && !x.contains("stats rx=0 "))
    })
    .unwrap();
    only_one_port_sends(
        &prefix,
        &daemon_stats(&prefix),
        "a",
        "b",
        true,
        "start (set A)",
    );

    let mut reload_ms = Vec::new();
    for k in 1..=20u64 {
        let set_b = k % 2 == 1;
        std::fs::write(&path, config(dir.path(), &prefix, set_b)).unwrap();
        let t = Instant::now();
        let (ok, text, at_ack) = reload(&prefix, &cfg_path);
        reload_ms.push(t.elapsed().as_millis());
        assert!(ok, "reload {k}: {text}");
        assert!(
            text.starts_with(&format!("generation {k}: routes +1 -1")),
            "reload {k}: {text}"
        );
        let (busy, quiet) = if set_b { ("b", "a") } else { ("a", "b") };
        only_one_port_sends(
            &prefix,
            &at_ack,
            busy,
            quiet,
            !set_b,
            &format!("reload {k}"),
        );

        if k == 10 {
            // A broken file is refused with its location; the running set
            // stays and traffic keeps flowing.
            std::fs::write(
                &path,
                "pipeline = [\"acl\", \"route\"]\n[route]\nbogus = 1\n",
            )
            .unwrap();
            let (ok, text) = client(&["reload", "--config", &cfg_path, "--file-prefix", &prefix]);
            assert!(!ok, "a broken config was accepted: {text}");
            // File, line:column, field, as `check` says it.
            assert!(
                text.contains(&format!(
                    "{cfg_path}:3:1: route.bogus: unknown field `bogus`"
                )),
                "no location or field: {text}"
            );
            // A change only a restart applies is refused, naming the field.
            let mtu = config(dir.path(), &prefix, false).replace(
                "ipv4 = [\"10.0.1.1/24\"]",
                "ipv4 = [\"10.0.1.1/24\"]\nmtu = 1400",
            );
            std::fs::write(&path, mtu).unwrap();
            let (ok, text) = client(&["reload", "--config", &cfg_path, "--file-prefix", &prefix]);
            assert!(!ok, "a port change was accepted: {text}");
            assert!(text.contains("port[1].mtu: changed"), "{text}");
            assert_eq!(daemon_stats(&prefix)["reloads"]["generation"], k);
            only_one_port_sends(
                &prefix,
                &daemon_stats(&prefix),
                busy,
                quiet,
                !set_b,
                "after the refusals",
            );
            std::fs::write(&path, config(dir.path(), &prefix, set_b)).unwrap();
        }
    }

    // SIGHUP with the file unchanged: logged as every reload is (generation,
    // what changed: nothing, build and swap times), counted, no new
    // generation.
    signal_pid(d.pid(), libc::SIGHUP);
    d.wait_log("the SIGHUP no-op", Duration::from_secs(10), |l| {
        l.contains("reload: no table changed")
    })
    .unwrap();
    let log = d.log();
    let line = log
        .lines()
        .find(|l| l.contains("reload: no table changed"))
        .unwrap();
    for field in [
        "generation=20",
        "changes=routes +0 -0, acl unchanged, static neighbours +0 -0",
        "build_ms=",
        "swap_ms=0",
    ] {
        assert!(line.contains(field), "no `{field}` in: {line}");
    }
    assert_eq!(daemon_stats(&prefix)["reloads"]["generation"], 20);
    // Telemetry and the stats line count the same reloads and refusals.
    let t = telemetry(&prefix, "/dataplane/reloads");
    assert_eq!(t["generation"], 20, "{t}");
    assert_eq!(t["reloads"], 21, "{t}");
    assert_eq!(t["refusals"], 2, "{t}");
    d.wait_log(
        "a stats line after the reloads",
        Duration::from_secs(10),
        |l| l.contains("stats rx=") && l.contains(" generation=20 reloads=21 refused=2"),
    )
    .unwrap();
    let hidden = "acl.rule[1]: this rule never matches: acl.rule[0]";
    let at_start = log
        .lines()
        .filter(|l| l.contains(hidden) && !l.contains("reload:"));
    let on_reload = log
        .lines()
        .filter(|l| l.contains(hidden) && l.contains("reload:"));
    assert_eq!(at_start.count(), 1, "the hidden rule at start-up:\n{log}");
    assert!(
        on_reload.count() >= 9,
        "the hidden rule on set A's reloads:\n{log}"
    );

    let (out, report, _) = d.stop(libc::SIGINT, Duration::from_secs(20)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(report["mempool"]["in_use"], 0, "mbuf leak: {stdout}");
    assert_accounting(&report);
    let drops = report["drops"].as_object().unwrap();
    assert!(
        drops.keys().all(|k| k == "acl_deny"),
        "drops neither config explains: {drops:?}"
    );
    assert!(report["drops"]["acl_deny"].as_u64().unwrap() > 0);
    assert_eq!(report["reloads"]["generation"], 20);
    assert_eq!(report["reloads"]["reloads"], 21);
    assert_eq!(report["reloads"]["refusals"], 2);
    eprintln!("reload round trips (ms, client start to answer): {reload_ms:?}");
}
