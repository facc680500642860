//! Black box: the daemon with two net_pcap ports cross-connected by the
//! `forward` stage sends every frame of a generated pcap exactly once out of
//! the other port, byte-identical except the rewritten MACs; its counters
//! equal the pcap counts; no mbuf is leaked. Once with hugepages, once without.
use dataplane::gen::{generate, GenArgs};
use dataplane_tests::*;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

const PORT0_MAC: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x10];
const PORT1_MAC: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x11];
const PEER0_MAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x20];
const PEER1_MAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x21];

fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn config(dir: &Path, prefix: &str, hugepages: &str) -> String {
    let d = dir.display();
    format!(
        r#"pipeline = ["forward"]

[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "{hugepages}"

[daemon]
stats_interval_ms = 0

[[port]]
name = "west"
device = "net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap"
mac = "{m0}"
peer_mac = "{p0}"

[[port]]
name = "east"
device = "net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"
mac = "{m1}"
peer_mac = "{p1}"

[[worker]]
core = 1
rx = ["west:0", "east:0"]

[forward]
pairs = [["west", "east"]]
"#,
        m0 = mac(PORT0_MAC),
        m1 = mac(PORT1_MAC),
        p0 = mac(PEER0_MAC),
        p1 = mac(PEER1_MAC),
    )
}

/// Checks `out` holds each frame of `input` exactly once (as a multiset),
/// with MACs rewritten to (dst, src) and every other byte unchanged.
fn assert_forwarded(input: &[Vec<u8>], out: &[Vec<u8>], dst: [u8; 6], src: [u8; 6]) {
    assert_eq!(out.len(), input.len(), "frame count");
    let mut expected: HashMap<Vec<u8>, usize> = HashMap::new();
    for f in input {
        let mut e = f.clone();
        e[..6].copy_from_slice(&dst);
        e[6..12].copy_from_slice(&src);
        *expected.entry(e).or_default() += 1;
    }
    for f in out {
        let n = expected
            .get_mut(f)
            .unwrap_or_else(|| panic!("unexpected frame out: {f:02x?}"));
        assert!(*n > 0, "frame forwarded more than once: {f:02x?}");
        *n -= 1;
    }
    assert!(expected.values().all(|&n| n == 0));
    // Order is kept within a direction (one queue, one worker).
    for (a, b) in input.iter().zip(out) {
        assert_eq!(&a[12..], &b[12..], "payload or order changed");
    }
}

fn run_case(hugepages: &str) {
    let dir = tempfile::tempdir().unwrap();
    let west = generate(&GenArgs {
        count: 3000,
        flows: 64,
        ipv6_ratio: 0.25,
        seed: 7,
        ..GenArgs::default()
    })
    .unwrap();
    let east = generate(&GenArgs {
        count: 1777,
        flows: 9,
        seed: 8,
        vlan: Some(42),
        size: "imix".parse().unwrap(),
        ..GenArgs::default()
    })
    .unwrap();
    write_pcap(&dir.path().join("in0.pcap"), &west).unwrap();
    write_pcap(&dir.path().join("in1.pcap"), &east).unwrap();
    let cfg = dir.path().join("fwd.toml");
    std::fs::write(&cfg, config(dir.path(), &file_prefix("fwd"), hugepages)).unwrap();

    let r = run_daemon(
        dir.path(),
        &cfg,
        &["--stop-when-idle", "500"],
        Duration::from_secs(60),
    )
    .unwrap();
    eprintln!("{}", r.stdout());

    let out0 = read_pcap(&dir.path().join("out0.pcap")).unwrap();
    let out1 = read_pcap(&dir.path().join("out1.pcap")).unwrap();
    // west -> east: leaves on port 1 towards east's peer, from port 1's MAC.
    assert_forwarded(&west, &out1, PEER1_MAC, PORT1_MAC);
    assert_forwarded(&east, &out0, PEER0_MAC, PORT0_MAC);

    let w = r.port("west");
    let e = r.port("east");
    assert_eq!(w["ipackets"], west.len() as u64);
    assert_eq!(e["ipackets"], east.len() as u64);
    assert_eq!(e["opackets"], west.len() as u64);
    assert_eq!(w["opackets"], east.len() as u64);
    let total = (west.len() + east.len()) as u64;
    assert_eq!(r.report["rx"], total);
    assert_eq!(r.report["tx"], total);
    assert_eq!(r.report["dropped"], 0);
    assert_eq!(r.report["mempool"]["in_use"], 0, "mbufs leaked");
    assert_eq!(r.report["hugepages"], hugepages == "on");
}

#[test]
fn forwards_every_frame_once_with_hugepages() {
    assert!(
        ensure_hugepages(256),
        "no free 2 MiB hugepages and could not reserve them (run scripts/setup.sh as root)"
    );
    run_case("on");
}

#[test]
fn forwards_every_frame_once_without_hugepages() {
    run_case("off");
}

/// Chains (frames over one mbuf's data room): a 9,000-byte frame arrives as
/// a sound chain and is forwarded whole; a 70,000-byte record, which
/// net_pcap delivers as a chain whose length disagrees with its segments
/// (it copies only 70,000 mod 65,536 bytes but sets `pkt_len` to all of
/// it), is dropped as `bad_total_len` instead of being handed to the PMD's
/// TX (which once crashed on such a chain); the frames around them pass.
#[test]
fn broken_chains_are_dropped_and_sound_ones_forwarded() {
    let dir = tempfile::tempdir().unwrap();
    let frame = |len: usize, fill: u8| {
        let mut f = vec![fill; len];
        f[..6].copy_from_slice(&PORT0_MAC);
        f[6..12].copy_from_slice(&PEER0_MAC);
        f[12..14].copy_from_slice(&[0x88, 0xb5]);
        f
    };
    let west = vec![
        frame(60, 1),
        frame(9000, 2),
        frame(70_000, 3),
        frame(100, 4),
    ];
    write_big_pcap(&dir.path().join("in0.pcap"), &west).unwrap();
    write_pcap(&dir.path().join("in1.pcap"), &[]).unwrap();
    let cfg = dir.path().join("fwd.toml");
    std::fs::write(&cfg, config(dir.path(), &file_prefix("fwdchain"), "off")).unwrap();
    let r = run_daemon(
        dir.path(),
        &cfg,
        &["--stop-when-idle", "500"],
        Duration::from_secs(60),
    )
    .unwrap();
    let out1 = read_pcap(&dir.path().join("out1.pcap")).unwrap();
    let sound = [west[0].clone(), west[1].clone(), west[3].clone()];
    assert_forwarded(&sound, &out1, PEER1_MAC, PORT1_MAC);
    assert_eq!(r.report["rx"], 4);
    assert_eq!(r.report["tx"], 3);
    assert_eq!(r.drop_count("bad_total_len"), 1);
    assert_eq!(r.report["dropped"], 1);
    assert_accounting(&r.report);
    assert_eq!(r.report["mempool"]["in_use"], 0, "mbufs leaked");
}

#[test]
fn port_outside_every_pair_drops_with_reason() {
    let dir = tempfile::tempdir().unwrap();
    let frames = generate(&GenArgs {
        count: 100,
        ..GenArgs::default()
    })
    .unwrap();
    write_pcap(&dir.path().join("in0.pcap"), &frames).unwrap();
    write_pcap(&dir.path().join("in1.pcap"), &[]).unwrap();
    write_pcap(&dir.path().join("in2.pcap"), &frames[..10]).unwrap();
    let d = dir.path().display();
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 256
hugepages = "off"
[[port]]
name = "a"
device = "net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap"
[[port]]
name = "b"
device = "net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"
[[port]]
name = "lonely"
device = "net_pcap2,rx_pcap={d}/in2.pcap,tx_pcap={d}/out2.pcap"
[[worker]]
core = 1
rx = ["a", "b", "lonely"]
[forward]
pairs = [["a", "b"]]
"#,
        prefix = file_prefix("lonely")
    );
    let path = dir.path().join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let r = run_daemon(
        dir.path(),
        &path,
        &["--stop-when-idle", "400"],
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(r.drop_count("no_output"), 10);
    assert_eq!(r.report["tx"], 100);
    assert_eq!(read_pcap(&dir.path().join("out1.pcap")).unwrap().len(), 100);
    assert_eq!(read_pcap(&dir.path().join("out2.pcap")).unwrap().len(), 0);
    assert_eq!(r.report["mempool"]["in_use"], 0);
}
