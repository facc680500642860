//! Black box: ring mode (`[distributor]`). One receiving core spreads the
//! packets of two single-queue `net_pcap` ports by flow over the workers'
//! rings; the router (`route`) runs on the workers.
//!
//! * With 1 and with 2 workers it sends the same frames out of each port as
//!   run-to-completion on the same input (compared as multisets: the
//!   interleaving of flows across workers may differ), with the same drop
//!   counters, and every flow's packets leave in the order they came
//!   (each frame carries its flow and sequence number; with 2 workers each
//!   flow leaves through one worker's TX queue only, so one capture file).
//! * Under a flood (a pcap replayed forever) into small rings it stops on
//!   SIGINT with no mbuf left in a ring or anywhere else, and the books
//!   balance: `ring_full` counts what the rings refused.
//! * `dataplane check` locates ring-mode mistakes (file:line: field).
//!
//! The machine may have only two CPUs (0 and 1): the distributor and a
//! worker then share a CPU (a warning, not an error), as do the control
//! thread and the other worker. Slow, but ring mode's promises do not
//! depend on speed: the rings are sized to hold the whole input, so no
//! packet is refused in the comparison runs.
use dataplane_tests::*;
use etherparse::{PacketBuilder, VlanId};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

const LAN_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const WAN_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0x50];
const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 2, 0x50];
/// Marks the payload of a sequenced frame: MAGIC, flow (u32), seq (u32).
const MAGIC: &[u8; 4] = b"RNGT";
const SEQS: u32 = 10;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    RunToCompletion,
    Ring { workers: usize },
}

impl Mode {
    fn workers(self) -> usize {
        match self {
            Mode::RunToCompletion => 1,
            Mode::Ring { workers } => workers,
        }
    }
    fn tag(self) -> String {
        match self {
            Mode::RunToCompletion => "rtc".into(),
            Mode::Ring { workers } => format!("ring{workers}"),
        }
    }
}

/// `tx_pcap=` once per worker: a `net_pcap` port has one TX queue per TX
/// file, and each worker transmits on a queue of its own.
fn tx_files(d: &Path, tag: &str, port: &str, workers: usize) -> String {
    (0..workers)
        .map(|w| format!(",tx_pcap={}/{tag}-{port}-{w}.pcap", d.display()))
        .collect()
}

fn config(dir: &Path, mode: Mode) -> String {
    let d = dir.display();
    let tag = mode.tag();
    let n = mode.workers();
    let workers = match mode {
        Mode::RunToCompletion => "[[worker]]\ncore = 1\nrx = [\"lan\", \"wan\"]\n".to_owned(),
        // The distributor on CPU 1; the workers on 0 (with the control
        // thread) and 1 (with the distributor): all this machine has.
        Mode::Ring { workers } => {
            let mut s = String::new();
            for w in 0..workers {
                s += &format!("[[worker]]\ncore = {}\n", w % 2);
            }
            // Rings that hold a whole input file: nothing is refused here.
            s += "[distributor]\ncore = 1\nrx = [\"lan\", \"wan\"]\nring_size = 4096\n";
            s
        }
    };
    format!(
        r#"pipeline = ["route"]
[eal]
file_prefix = "{prefix}"
memory_mb = 768
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "lan"
device = "net_pcap0,rx_pcap={d}/lan-in.pcap{lan_tx}"
mac = "02:00:00:00:01:01"
ipv4 = ["10.0.1.1/24"]
ipv6 = ["2001:db8:1::1/64"]
[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={d}/wan-in.pcap{wan_tx}"
mac = "02:00:00:00:02:01"
ipv4 = ["10.0.2.1/24"]
ipv6 = ["2001:db8:2::1/64"]
{workers}
[route]
icmp_rate = 1000
[[route.static]]
prefix = "198.18.0.0/15"
via = "10.0.2.2"
[[route.static]]
prefix = "172.16.0.0/16"
via = "10.0.1.2"
[[route.static]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:02"
[[route.neighbor]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
[[route.neighbor]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:02:02"
"#,
        prefix = file_prefix(&tag),
        lan_tx = tx_files(dir, &tag, "lan", n),
        wan_tx = tx_files(dir, &tag, "wan", n),
    )
}

fn payload(flow: u32, seq: u32) -> Vec<u8> {
    let mut p = MAGIC.to_vec();
    p.extend_from_slice(&flow.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&[0x5a; 6]);
    p
}

/// Frame `seq` of flow `f`: from the LAN (flows below 300: IPv4 UDP and
/// TCP to 198.18/15, some VLAN-tagged, every fifth IPv6 to
/// 2001:db8:100::/48) or from the WAN (flows 300..400: IPv4 UDP to
/// 172.16/16).
fn flow_frame(f: u32, seq: u32) -> Vec<u8> {
    let mut v = Vec::new();
    let pl = payload(f, seq);
    let sport = 1000 + f as u16;
    if f >= 300 {
        PacketBuilder::ethernet2(PEER_MAC, WAN_MAC)
            .ipv4(
                [203, 0, 113, (f % 256) as u8],
                [172, 16, 0, (f % 7) as u8],
                64,
            )
            .udp(sport, 4000)
            .write(&mut v, &pl)
            .unwrap();
        return v;
    }
    if f % 5 == 4 {
        let mut src = [0u8; 16];
        src[..6].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        src[15] = f as u8;
        let mut dst = src;
        dst[4..6].copy_from_slice(&[1, 0]);
        dst[14] = (f % 3) as u8;
        PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
            .ipv6(src, dst, 64)
            .udp(sport, 53)
            .write(&mut v, &pl)
            .unwrap();
        return v;
    }
    let dst = [198, 18 + (f % 2) as u8, (f / 7) as u8, (f % 11) as u8];
    let src = [10, 0, 1, 50 + (f % 100) as u8];
    let b = PacketBuilder::ethernet2(HOST_MAC, LAN_MAC);
    if f % 10 == 7 {
        let b = b
            .single_vlan(VlanId::try_new(5).unwrap())
            .ipv4(src, dst, 64);
        b.udp(sport, 80).write(&mut v, &pl).unwrap();
    } else if f.is_multiple_of(3) {
        b.ipv4(src, dst, 64)
            .tcp(sport, 443, seq, 1000)
            .write(&mut v, &pl)
            .unwrap();
    } else {
        b.ipv4(src, dst, 64)
            .udp(sport, 80)
            .write(&mut v, &pl)
            .unwrap();
    }
    v
}

/// Frames that are not part of a sequenced flow: TTL 1 (ICMP time
/// exceeded back to the sender), no route, ARP to the router, LLDP.
fn extras() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..8u8 {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
            .ipv4([10, 0, 1, 60 + i], [198, 18, 9, i], 1)
            .udp(2000, 2001)
            .write(&mut v, &[i; 20])
            .unwrap();
        out.push(v);
        let mut v = Vec::new();
        PacketBuilder::ethernet2(HOST_MAC, LAN_MAC)
            .ipv4([10, 0, 1, 60 + i], [192, 0, 2, i], 64)
            .udp(2000, 2001)
            .write(&mut v, &[i; 20])
            .unwrap();
        out.push(v);
    }
    for i in 0..4u8 {
        // ARP request for the router's address (answered in place).
        let mut v = vec![0xff; 6];
        v.extend_from_slice(&HOST_MAC);
        v.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        v.extend_from_slice(&HOST_MAC);
        v.extend_from_slice(&[10, 0, 1, 70 + i]);
        v.extend_from_slice(&[0; 6]);
        v.extend_from_slice(&[10, 0, 1, 1]);
        out.push(v);
        let mut lldp = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e];
        lldp.extend_from_slice(&HOST_MAC);
        lldp.extend_from_slice(&[0x88, 0xcc]);
        lldp.extend_from_slice(&[i; 46]);
        out.push(lldp);
    }
    out
}

/// The two input files: each round sends one frame of every flow, flows in
/// a different (seeded) order each round; the extras spread in between.
fn inputs() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut lan = Vec::new();
    let mut wan = Vec::new();
    let mut state = 0x2545_f491_u32;
    let mut extras = extras().into_iter();
    for seq in 0..SEQS {
        let mut flows: Vec<u32> = (0..400).collect();
        for i in (1..flows.len()).rev() {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            flows.swap(i, (state >> 8) as usize % (i + 1));
        }
        for f in flows {
            let fr = flow_frame(f, seq);
            if f >= 300 { &mut wan } else { &mut lan }.push(fr);
        }
        for e in extras.by_ref().take(3) {
            lan.push(e);
        }
    }
    lan.extend(extras);
    (lan, wan)
}

/// (flow, seq) of a sequenced frame.
fn flow_seq(frame: &[u8]) -> Option<(u32, u32)> {
    let at = frame.windows(4).position(|w| w == MAGIC)?;
    let b = frame.get(at + 4..at + 12)?;
    Some((
        u32::from_be_bytes(b[..4].try_into().unwrap()),
        u32::from_be_bytes(b[4..].try_into().unwrap()),
    ))
}

struct Outcome {
    /// Per port, per TX queue (worker), the frames sent.
    out: BTreeMap<&'static str, Vec<Vec<Vec<u8>>>>,
    report: serde_json::Value,
}

fn run(dir: &Path, mode: Mode) -> Outcome {
    let cfg = dir.join(format!("{}.toml", mode.tag()));
    std::fs::write(&cfg, config(dir, mode)).unwrap();
    let r = run_daemon(
        dir,
        &cfg,
        &["--stop-when-idle", "700"],
        Duration::from_secs(120),
    )
    .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    assert_eq!(r.report["mempool"]["in_use"], 0, "{mode:?}: mbufs leaked");
    let mut out = BTreeMap::new();
    for port in ["lan", "wan"] {
        let files = (0..mode.workers())
            .map(|w| read_pcap(&dir.join(format!("{}-{port}-{w}.pcap", mode.tag()))).unwrap())
            .collect();
        out.insert(port, files);
    }
    Outcome {
        out,
        report: r.report,
    }
}

fn multiset(files: &[Vec<Vec<u8>>]) -> HashMap<&[u8], usize> {
    let mut m = HashMap::new();
    for f in files.iter().flatten() {
        *m.entry(f.as_slice()).or_default() += 1;
    }
    m
}

/// Each flow's frames leave in sequence, and all through one TX queue.
fn assert_flow_order(mode: Mode, port: &str, files: &[Vec<Vec<u8>>]) -> usize {
    let mut seen: HashMap<u32, (usize, u32)> = HashMap::new();
    let mut frames = 0;
    for (q, file) in files.iter().enumerate() {
        for fr in file {
            let Some((flow, seq)) = flow_seq(fr) else {
                continue;
            };
            frames += 1;
            match seen.insert(flow, (q, seq)) {
                None => assert_eq!(seq, 0, "{mode:?} {port}: flow {flow} starts at seq {seq}"),
                Some((pq, ps)) => {
                    assert_eq!(
                        pq, q,
                        "{mode:?} {port}: flow {flow} left through two workers' queues"
                    );
                    assert_eq!(
                        seq,
                        ps + 1,
                        "{mode:?} {port}: flow {flow}: seq {seq} after {ps}"
                    );
                }
            }
        }
    }
    for (flow, (_, last)) in &seen {
        assert_eq!(*last, SEQS - 1, "{mode:?} {port}: flow {flow} incomplete");
    }
    frames
}

#[test]
fn ring_mode_sends_what_run_to_completion_sends_in_flow_order() {
    let dir = tempfile::tempdir().unwrap();
    let (lan, wan) = inputs();
    write_pcap(&dir.path().join("lan-in.pcap"), &lan).unwrap();
    write_pcap(&dir.path().join("wan-in.pcap"), &wan).unwrap();
    let rtc = run(dir.path(), Mode::RunToCompletion);
    // Sanity of the reference run: every flow frame routed, the extras
    // answered or dropped as the router does.
    let total = (lan.len() + wan.len()) as u64;
    assert_eq!(rtc.report["rx"], total);
    let drops = |r: &serde_json::Value| r["drops"].clone();
    assert_eq!(
        drops(&rtc.report),
        serde_json::json!({"no_route": 8, "ttl_exceeded": 8, "unsupported": 4}),
    );
    let lan_frames = assert_flow_order(Mode::RunToCompletion, "lan", &rtc.out["lan"]);
    let wan_frames = assert_flow_order(Mode::RunToCompletion, "wan", &rtc.out["wan"]);
    assert_eq!((lan_frames, wan_frames), (100 * 10, 300 * 10));

    for mode in [Mode::Ring { workers: 1 }, Mode::Ring { workers: 2 }] {
        let ring = run(dir.path(), mode);
        let r = &ring.report;
        for port in ["lan", "wan"] {
            assert_eq!(
                multiset(&ring.out[port]),
                multiset(&rtc.out[port]),
                "{mode:?}: port {port} sent other frames than run-to-completion"
            );
            assert_flow_order(mode, port, &ring.out[port]);
        }
        assert_eq!(r["rx"], total, "{mode:?}");
        assert_eq!(r["tx"], rtc.report["tx"], "{mode:?}");
        assert_eq!(drops(r), drops(&rtc.report), "{mode:?}: drops");
        assert_eq!(r["originated"], rtc.report["originated"], "{mode:?}");
        // The distributor counted every packet, per port; the workers got
        // them through rings only.
        let d = &r["distributor"];
        assert_eq!(d["rx"], total, "{mode:?}");
        assert_eq!(d["rx_ports"]["lan"], lan.len() as u64);
        assert_eq!(d["rx_ports"]["wan"], wan.len() as u64);
        assert_eq!(d["dropped"], 0, "{mode:?}: rings sized for the input");
        let feeds = d["feeds"].as_array().unwrap();
        assert_eq!(feeds.len(), mode.workers());
        for (i, w) in r["workers"].as_array().unwrap().iter().enumerate() {
            assert_eq!(w["rx"], 0, "{mode:?} worker {i} polls no queue");
            let got = w["ring_rx"].as_u64().unwrap();
            assert_eq!(feeds[i]["enqueued"], got);
            assert!(got > 0, "{mode:?}: worker {i} got no flow: {feeds:?}");
            eprintln!("{mode:?}: worker {i} took {got} of {total} packets from its rings");
        }
    }
}

/// A pcap replayed forever into rings of 64 slots, through 2 workers that
/// share the 2 CPUs with the distributor: SIGINT stops it with the report,
/// every ring drained and every mbuf back.
#[test]
fn ring_mode_under_a_flood_stops_with_empty_rings() {
    let dir = tempfile::tempdir().unwrap();
    let (lan, _) = inputs();
    write_pcap(&dir.path().join("feed.pcap"), &lan[..1000]).unwrap();
    let d = dir.path().display();
    let prefix = file_prefix("ringflood");
    let cfg = format!(
        r#"pipeline = ["forward"]
[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"
[daemon]
stats_interval_ms = 200
[[port]]
name = "a"
device = "net_pcap0,rx_pcap={d}/feed.pcap,infinite_rx=1,tx_pcap=/dev/null,tx_pcap=/dev/null"
[[port]]
name = "b"
device = "net_pcap1,rx_pcap={d}/feed.pcap,infinite_rx=1,tx_pcap=/dev/null,tx_pcap=/dev/null"
[[worker]]
core = 0
[[worker]]
core = 1
[distributor]
core = 1
rx = ["a", "b"]
ring_size = 64
[forward]
pairs = [["a", "b"]]
"#
    );
    let path = dir.path().join("flood.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut daemon = Daemon::start(dir.path(), &path, &[]).unwrap();
    daemon
        .wait_log("the distributor to start", Duration::from_secs(60), |l| {
            l.contains("distributor started")
        })
        .unwrap();
    // Let some stats lines by: traffic flows through both workers.
    daemon
        .wait_log("traffic", Duration::from_secs(30), |l| {
            l.lines().filter(|l| l.contains(" stats rx=")).count() >= 3
        })
        .unwrap();
    // `dataplane stats` shows the distributor live.
    let out = std::process::Command::new(dataplane_bin())
        .args(["stats", "--file-prefix", &prefix])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stats: {text}");
    let live: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(live["distributor"]["rx"].as_u64().unwrap() > 0, "{live}");
    assert_eq!(live["distributor"]["feeds"].as_array().unwrap().len(), 2);
    assert!(live["rx"].as_u64().unwrap() > 0, "{live}");
    let (out, report, took) = daemon.stop(libc::SIGINT, Duration::from_secs(20)).unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(report["mempool"]["in_use"], 0, "mbufs leaked");
    let dist = &report["distributor"];
    let rx = report["rx"].as_u64().unwrap();
    assert!(rx > 0);
    assert_eq!(dist["rx"], rx);
    let full = dist["dropped"].as_u64().unwrap();
    // The only drops are the rings' (forward sends everything it gets).
    assert_eq!(report["dropped"], full);
    assert_eq!(report["tx"].as_u64().unwrap() + full, rx);
    for w in report["workers"].as_array().unwrap() {
        assert!(w["ring_rx"].as_u64().unwrap() > 0, "{w}");
    }
    eprintln!(
        "flood: rx {rx}, ring_full {full}, enqueued {:?}, stopped in {took:?}",
        dist["feeds"]
    );
}

/// `dataplane check` names file, line and field for ring-mode mistakes.
#[test]
fn check_locates_ring_mode_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let base = r#"pipeline = ["forward"]
[[port]]
name = "a"
device = "net_pcap0,rx_pcap=a.pcap"
[[port]]
name = "b"
device = "net_pcap1,rx_pcap=b.pcap"
[[worker]]
core = 0
[distributor]
core = 1
rx = ["a", "b"]
[forward]
pairs = [["a", "b"]]
"#;
    let check = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        // `check` looks for the rx_pcap files, from the working directory.
        let child = std::process::Command::new(dataplane_bin())
            .arg("check")
            .arg(&p)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_with_timeout(child, Duration::from_secs(30)).unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text, p.display().to_string())
    };
    for f in ["a.pcap", "b.pcap"] {
        std::fs::write(dir.path().join(f), b"").unwrap();
    }
    let (ok, text, _) = check("good.toml", base);
    assert!(ok, "{text}");
    assert!(
        text.contains("ring mode: distributor on CPU 1 feeds 1 worker(s)"),
        "{text}"
    );
    for (name, from, to, want) in [
        (
            "size.toml",
            "rx = [\"a\", \"b\"]\n",
            "rx = [\"a\", \"b\"]\nring_size = 1000\n",
            ":13:13: distributor.ring_size: ring_size 1000 must be a power of two",
        ),
        (
            "port.toml",
            "rx = [\"a\", \"b\"]",
            "rx = [\"a\", \"c\"]",
            ":12:12: distributor.rx: unknown port `c`",
        ),
        (
            "twice.toml",
            "core = 0\n",
            "core = 0\n[[worker]]\ncore = 1\nrx = [\"b\"]\n",
            ":15:12: distributor.rx: rx queue b:0 is already polled by worker[1]",
        ),
        (
            "nofeed.toml",
            "[distributor]\ncore = 1\nrx = [\"a\", \"b\"]\n",
            "",
            ":9:8: worker[0].rx: this worker has no `rx` and there is no [distributor]",
        ),
        (
            "cpu.toml",
            "core = 1\nrx",
            "core = 4096\nrx",
            ":11:8: distributor.core: CPU 4096 does not exist or is offline",
        ),
    ] {
        assert!(base.contains(from), "{name}: {from}");
        let (ok, text, path) = check(name, &base.replacen(from, to, 1));
        assert!(!ok, "{name} passed check:\n{text}");
        assert!(
            text.contains(&format!("{path}{want}")),
            "{name}: want `{path}{want}` in:\n{text}"
        );
    }
}
