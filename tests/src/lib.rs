//! Test harness for black-box tests: finds the built `dataplane` binary,
//! gives every DPDK process its own file prefix and bounded memory, runs the
//! daemon from a TOML file and reads its final JSON report.
pub mod router_ns;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Repository root (the workspace).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The daemon binary: `$DATAPLANE_BIN`, else target/debug/dataplane, which
/// is (re)built once per test process so a test never runs a stale binary
/// (`cargo nextest -p dataplane-tests` alone would not rebuild it).
pub fn dataplane_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(p) = std::env::var("DATAPLANE_BIN") {
            return PathBuf::from(p);
        }
        // A relative CARGO_TARGET_DIR is relative to the workspace, not to the
        // test's working directory (the tests/ crate).
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(|t| repo_root().join(t))
            .unwrap_or_else(|_| repo_root().join("target"));
        let st = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "dataplane",
                "--bin",
                "dataplane",
                "--target-dir",
            ])
            .arg(&target)
            .current_dir(repo_root())
            .status()
            .expect("running cargo build");
        assert!(st.success(), "building the dataplane binary failed");
        target.join("debug/dataplane")
    })
    .clone()
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A unique DPDK `--file-prefix` for this test process.
pub fn file_prefix(tag: &str) -> String {
    format!(
        "dpt-{tag}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether free 2 MiB hugepages are mounted; tries to reserve some (as root)
/// when not, like scripts/setup.sh does.
pub fn ensure_hugepages(pages: u64) -> bool {
    fn free() -> u64 {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("HugePages_Free:"))
                    .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
    fn mounted() -> bool {
        std::fs::read_to_string("/proc/mounts")
            .map(|m| {
                m.lines()
                    .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
            })
            .unwrap_or(false)
    }
    if free() >= pages && mounted() {
        return true;
    }
    let nr = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
    if let Ok(cur) = std::fs::read_to_string(nr) {
        let cur: u64 = cur.trim().parse().unwrap_or(0);
        let _ = std::fs::write(nr, (cur + pages).to_string());
    }
    if !mounted() {
        let _ = std::fs::create_dir_all("/dev/hugepages");
        let _ = Command::new("mount")
            .args(["-t", "hugetlbfs", "nodev", "/dev/hugepages"])
            .status();
    }
    free() >= pages && mounted()
}

/// `count` distinct pseudo-random IPv4 routes (xorshift, the same list on
/// every run), one `PREFIX/LEN VIA` line each: lengths /16../32, no prefix
/// in 0/8, 10/8, 127/8, 198/8 or 224/3 (the tests' own addresses), next
/// hops alternating between 10.0.0.2 and 10.0.1.2.
pub fn pseudo_random_routes(count: usize) -> String {
    use std::fmt::Write as _;
    let mut routes = String::with_capacity(count * 28);
    let mut seen = std::collections::HashSet::with_capacity(count);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let lens = [16u8, 20, 22, 24, 24, 24, 24, 28, 32];
    while seen.len() < count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = lens[(x >> 40) as usize % lens.len()];
        let a = (x as u32) & (u32::MAX << (32 - len));
        let top = a >> 24;
        if top == 0 || top == 127 || top >= 224 || top == 10 || top == 198 {
            continue;
        }
        if !seen.insert((a, len)) {
            continue;
        }
        let via = if seen.len() % 2 == 0 {
            "10.0.0.2"
        } else {
            "10.0.1.2"
        };
        let b = a.to_be_bytes();
        writeln!(routes, "{}.{}.{}.{}/{len} {via}", b[0], b[1], b[2], b[3]).unwrap();
    }
    routes
}

/// One telemetry command (`/dataplane/reloads`, `/ethdev/stats,0`) to the
/// daemon on `prefix`, through DPDK's own client, non-interactively; the
/// value under the command's name.
pub fn telemetry(prefix: &str, cmd: &str) -> Value {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("echo {cmd} | dpdk-telemetry.py -f {prefix}"))
        .output()
        .expect("running dpdk-telemetry.py");
    let text = String::from_utf8_lossy(&out.stdout);
    let key = cmd.split(',').next().unwrap();
    let json_start = text
        .find(&format!("{{\"{key}\""))
        .unwrap_or_else(|| panic!("no {cmd} in:\n{text}"));
    let v: Value = serde_json::Deserializer::from_str(&text[json_start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    v[key].clone()
}

/// `dataplane stats --file-prefix PREFIX`: the running daemon's counters.
pub fn daemon_stats(prefix: &str) -> Value {
    let out = Command::new(dataplane_bin())
        .args(["stats", "--file-prefix", prefix])
        .output()
        .expect("running the client");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "stats: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("stats json ({e}): {text}"))
}

/// Sends `sig` to process `pid` (a daemon the test started).
pub fn signal_pid(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the test's own child's pid.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// The daemon's finished run.
pub struct RunResult {
    pub output: Output,
    pub report: Value,
}

impl RunResult {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    /// Port counters from the final report, by port name.
    pub fn port(&self, name: &str) -> &Value {
        self.report["ports"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .unwrap_or_else(|| panic!("port {name} not in report"))
    }
    pub fn drop_count(&self, reason: &str) -> u64 {
        self.report["drops"][reason].as_u64().unwrap_or(0)
    }
}

/// Asserts the daemon's books balance in a final report (`--stats-json`):
/// `rx + originated_total = tx + dropped + consumed`, in total and per
/// worker, with each total the sum of its parts (`dropped` of `drops`,
/// `originated_total` of `originated`, `consumed` = `events.consumed`).
/// A packet whose buffer the router reused for a message of its own (ARP
/// request, neighbour solicitation, time exceeded) is counted as a drop and,
/// once more, as originated and sent; every other packet is sent, dropped
/// or consumed exactly once. In ring mode a worker's input is also what it
/// took from the distributor's rings (`ring_rx`), and the distributor's
/// books are checked too: it received `rx` (Σ `rx_ports`), handed
/// `enqueued` to each worker, exactly that worker's `ring_rx` (the rings
/// are empty at exit), and dropped the rest as `ring_full`; the total `rx`
/// counts each packet once, where it entered (the workers' own RX queues
/// and the distributor's). [`run_daemon`] and [`Daemon::stop`] check every
/// report they read with it.
pub fn assert_accounting(report: &Value) {
    let n = |v: &Value, k: &str| -> u64 {
        v[k].as_u64()
            .unwrap_or_else(|| panic!("report has no `{k}` count: {v:#}"))
    };
    let sum = |v: &Value| -> u64 {
        v.as_object()
            .map_or(0, |m| m.values().map(|x| x.as_u64().unwrap_or(0)).sum())
    };
    let balance = |v: &Value, what: &str| {
        let (rx, tx, dropped) = (n(v, "rx"), n(v, "tx"), n(v, "dropped"));
        let (orig, consumed) = (n(v, "originated_total"), n(v, "consumed"));
        assert_eq!(
            rx + orig,
            tx + dropped + consumed,
            "{what}: rx {rx} + originated {orig} != tx {tx} + dropped {dropped} + consumed {consumed}"
        );
    };
    assert_eq!(
        n(report, "dropped"),
        sum(&report["drops"]),
        "dropped = Σ drops"
    );
    assert_eq!(
        n(report, "originated_total"),
        sum(&report["originated"]),
        "originated_total = Σ originated"
    );
    assert_eq!(
        n(report, "consumed"),
        report["events"]["consumed"].as_u64().unwrap_or(0),
        "consumed = events.consumed"
    );
    balance(report, "accounting");
    let workers = report["workers"].as_array().expect("workers in the report");
    let ring_rx = |w: &Value| w["ring_rx"].as_u64().unwrap_or(0);
    let dist = &report["distributor"];
    let dist_rx = if dist.is_null() { 0 } else { n(dist, "rx") };
    assert_eq!(
        n(report, "rx"),
        workers.iter().map(|w| n(w, "rx")).sum::<u64>() + dist_rx,
        "rx = Σ workers' rx + the distributor's rx (each packet once, where it entered)"
    );
    if dist.is_null() {
        assert!(
            workers.iter().all(|w| ring_rx(w) == 0),
            "ring_rx without a distributor"
        );
    } else {
        let feeds = dist["feeds"].as_array().expect("distributor feeds");
        let enqueued: u64 = feeds.iter().map(|f| n(f, "enqueued")).sum();
        let full: u64 = feeds.iter().map(|f| n(f, "ring_full")).sum();
        assert_eq!(
            n(dist, "dropped"),
            sum(&dist["drops"]),
            "distributor: dropped = Σ drops"
        );
        assert_eq!(
            n(dist, "dropped"),
            full,
            "distributor: dropped = Σ feeds' ring_full"
        );
        assert_eq!(
            sum(&dist["rx_ports"]),
            dist_rx,
            "distributor: rx = Σ rx_ports"
        );
        assert_eq!(
            dist_rx,
            enqueued + full,
            "distributor: rx {dist_rx} != enqueued {enqueued} + ring_full {full}"
        );
        for (i, w) in workers.iter().enumerate() {
            let handed: u64 = feeds
                .iter()
                .filter(|f| f["worker"].as_u64() == Some(i as u64))
                .map(|f| n(f, "enqueued"))
                .sum();
            assert_eq!(
                ring_rx(w),
                handed,
                "worker {i}: ring_rx != what the distributor enqueued for it (a ring not drained?)"
            );
        }
    }
    for (i, w) in workers.iter().enumerate() {
        // Workers carry the parts; build their totals the same way.
        let w = serde_json::json!({
            "rx": n(w, "rx") + ring_rx(w),
            "tx": n(w, "tx"),
            "dropped": sum(&w["drops"]),
            "originated_total": sum(&w["originated"]),
            "consumed": w["events"]["consumed"].as_u64().unwrap_or(0),
        });
        balance(&w, &format!("worker {i}"));
    }
}

/// Runs `dataplane run --config cfg` to completion (the config or `args`
/// must make it stop, e.g. `--stop-when-idle`), within `timeout`.
pub fn run_daemon(dir: &Path, cfg: &Path, args: &[&str], timeout: Duration) -> Result<RunResult> {
    let json = dir.join(format!(
        "stats-{}.json",
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut cmd = Command::new(dataplane_bin());
    cmd.arg("run")
        .arg("--config")
        .arg(cfg)
        .arg("--stats-json")
        .arg(&json)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().context("spawning dataplane")?;
    let output = wait_with_timeout(child, timeout)?;
    if !output.status.success() {
        bail!(
            "dataplane exited with {:?}\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(&json).context("reading stats json")?)?;
    assert_accounting(&report);
    Ok(RunResult { output, report })
}

/// Waits for `child`, killing it after `timeout`.
pub fn wait_with_timeout(mut child: Child, timeout: Duration) -> Result<Output> {
    let start = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let out = child.wait_with_output()?;
            bail!(
                "timed out after {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends a signal to a child process.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

/// Reads every frame of a pcap file.
pub fn read_pcap(path: &Path) -> Result<Vec<Vec<u8>>> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = pcap_file::pcap::PcapReader::new(f)?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        out.push(p?.data.into_owned());
    }
    Ok(out)
}

/// Writes frames to a pcap file (Ethernet).
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = pcap_file::pcap::PcapWriter::new(f)?;
    for (i, fr) in frames.iter().enumerate() {
        let pkt =
            pcap_file::pcap::PcapPacket::new(Duration::from_micros(i as u64), fr.len() as u32, fr);
        w.write_packet(&pkt)?;
    }
    Ok(())
}

/// Writes frames to a pcap file (Ethernet) whose snapshot length (262,144,
/// libpcap's most for Ethernet) lets records be longer than 65,535 bytes
/// (net_pcap delivers such a record as a chain whose length disagrees with
/// its segments).
pub fn write_big_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<()> {
    let mut v = Vec::new();
    v.extend(0xa1b2_c3d4u32.to_le_bytes());
    v.extend(2u16.to_le_bytes());
    v.extend(4u16.to_le_bytes());
    v.extend([0u8; 8]); // thiszone, sigfigs
    v.extend(262_144u32.to_le_bytes());
    v.extend(1u32.to_le_bytes()); // Ethernet
    for (i, f) in frames.iter().enumerate() {
        v.extend(0u32.to_le_bytes());
        v.extend((i as u32).to_le_bytes());
        v.extend((f.len() as u32).to_le_bytes());
        v.extend((f.len() as u32).to_le_bytes());
        v.extend(f);
    }
    std::fs::write(path, v).with_context(|| format!("write {}", path.display()))
}

/// Whether a program is on PATH.
pub fn have(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A daemon started in the background whose stderr (the log) is drained
/// into memory by a thread, so the pipe never blocks it.
pub struct Daemon {
    /// `None` once stopped; a daemon still running when the test unwinds is
    /// killed by `Drop` so it never outlives the test busy-polling a core.
    child: Option<Child>,
    log: std::sync::Arc<std::sync::Mutex<String>>,
    pub stats_json: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Daemon {
    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Starts `dataplane run --config cfg args...`.
    pub fn start(dir: &Path, cfg: &Path, args: &[&str]) -> Result<Daemon> {
        use std::io::Read;
        let stats_json = dir.join(format!(
            "stats-{}.json",
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut child = Command::new(dataplane_bin())
            .args(["run", "--config"])
            .arg(cfg)
            .arg("--stats-json")
            .arg(&stats_json)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning dataplane")?;
        let mut stderr = child.stderr.take().unwrap();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Ok(Daemon {
            child: Some(child),
            log,
            stats_json,
        })
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The log as it grows, also after [`Daemon::stop`] took the daemon.
    pub fn log_handle(&self) -> std::sync::Arc<std::sync::Mutex<String>> {
        self.log.clone()
    }

    /// Waits until the log satisfies `pred`; fails if the daemon exits first.
    pub fn wait_log(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.log()) {
                return Ok(());
            }
            if let Some(st) = self.child.as_mut().expect("running").try_wait()? {
                bail!("daemon exited ({st}) before {what}:\n{}", self.log());
            }
            if Instant::now() > deadline {
                bail!("timed out waiting for {what}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every worker has started.
    pub fn wait_running(&mut self) -> Result<()> {
        self.wait_log("workers to start", Duration::from_secs(30), |l| {
            l.contains("worker started")
        })
    }

    /// Sends `sig` and waits for exit; returns (output, final report, time to exit).
    pub fn stop(mut self, sig: i32, timeout: Duration) -> Result<(Output, Value, Duration)> {
        let child = self.child.take().expect("running");
        signal(&child, sig);
        let t0 = Instant::now();
        let out = wait_with_timeout(child, timeout)?;
        let took = t0.elapsed();
        let log = || {
            format!(
                "daemon {}\ndaemon log:\n{}",
                out.status,
                self.log.lock().unwrap()
            )
        };
        let bytes = std::fs::read(&self.stats_json).with_context(log)?;
        let report = serde_json::from_slice(&bytes)
            .with_context(|| format!("report {}: {}", self.stats_json.display(), log()))?;
        assert_accounting(&report);
        Ok((out, report, took))
    }
}

/// Runs `prog args...` and fails with its stderr when it does not succeed.
fn sh(prog: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {prog}"))?;
    if !out.status.success() {
        bail!(
            "`{prog} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A network namespace holding one end of a veth pair whose other end stays
/// in the root namespace, where a daemon port attaches to it
/// (`net_af_packet,iface=<host_if>`). The kernel inside is a real host on
/// that link: addresses, a default route via the daemon, real ARP and NDP.
///
/// The host's interface sends with TX checksum offload off (see
/// [`offloads_off`]): what it hands the daemon carries complete TCP/UDP
/// checksums, as what a real NIC would put on the wire does.
///
/// The test owns what this creates and nothing else: `Drop` deletes the
/// root end (which takes its peer with it) and the namespace, also when the
/// test panics. Names should carry the test's pid (see [`VethNs::names`]) so
/// test processes never collide.
pub struct VethNs {
    /// Namespace name.
    pub ns: String,
    /// Root-namespace end: the daemon's `iface=`.
    pub host_if: String,
    /// The end inside the namespace.
    pub ns_if: String,
}

/// One side's addressing: the host's interface addresses and its gateways.
pub struct VethAddrs<'a> {
    /// IPv4 address with prefix length, e.g. `10.10.1.2/24`.
    pub v4: &'a str,
    /// IPv6 address with prefix length, e.g. `fd00:10:1::2/64`.
    pub v6: &'a str,
    /// Default-route next hops (the daemon port's addresses).
    pub gw4: &'a str,
    pub gw6: &'a str,
}

impl VethNs {
    /// Unique (namespace, root-end) names for side `tag` of this test
    /// process; the interface name stays within IFNAMSIZ (15 characters).
    pub fn names(tag: &str) -> (String, String) {
        let pid = std::process::id();
        let host_if = format!("dpt{pid}{tag}");
        assert!(host_if.len() <= 15, "interface name {host_if} too long");
        (format!("dpt-{pid}-{tag}"), host_if)
    }

    /// Creates namespace `ns` with veth `ns_if` inside, `host_if` in the root
    /// namespace, both up. Inside: loopback up, duplicate address detection
    /// off (addresses usable at once), TX checksum offload off
    /// ([`offloads_off`]), `addrs` and default routes. The root end gets no
    /// address, IPv6 off, no IPv4 forwarding and no ARP answers, so only the
    /// daemon speaks on the link. Needs root (CAP_NET_ADMIN) and `ethtool`.
    pub fn create(ns: &str, host_if: &str, ns_if: &str, addrs: &VethAddrs) -> Result<VethNs> {
        check_can_create_namespaces()?;
        let g = VethNs {
            ns: ns.to_owned(),
            host_if: host_if.to_owned(),
            ns_if: ns_if.to_owned(),
        };
        // Leftovers of an earlier killed run with the same pid.
        g.remove();
        sh("ip", &["netns", "add", ns]).context(
            "cannot create a network namespace (needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN)",
        )?;
        sh(
            "ip",
            &[
                "link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns,
            ],
        )?;
        // Root end: keep the root kernel off the link. With no address and
        // IPv6 off it sends nothing of its own; frames for the daemon carry
        // this interface's MAC, so the kernel sees them too: no forwarding,
        // no ARP replies.
        for (key, val) in [
            (format!("ipv6/conf/{host_if}/disable_ipv6"), "1"),
            (format!("ipv4/conf/{host_if}/forwarding"), "0"),
            (format!("ipv4/conf/{host_if}/arp_ignore"), "8"),
        ] {
            let p = format!("/proc/sys/net/{key}");
            std::fs::write(&p, val).with_context(|| format!("writing {p}"))?;
        }
        sh("ip", &["link", "set", host_if, "up"])?;
        g.configure_host(addrs)?;
        Ok(g)
    }

    /// Namespace `ns` as a host on tap interface `tap_if`, which a daemon's
    /// `net_tap` port created: the interface moves into the namespace and
    /// gets its own MAC `mac` (the tap PMD gives the kernel side the port's
    /// MAC), then `addrs` and the offloads as in [`VethNs::create`]. The
    /// tap goes away when the daemon closes the port; `Drop` removes the
    /// namespace.
    pub fn adopt_tap(ns: &str, tap_if: &str, mac: &str, addrs: &VethAddrs) -> Result<VethNs> {
        check_can_create_namespaces()?;
        let g = VethNs {
            ns: ns.to_owned(),
            host_if: tap_if.to_owned(),
            ns_if: tap_if.to_owned(),
        };
        let _ = Command::new("ip")
            .args(["netns", "del", ns])
            .stderr(Stdio::null())
            .status();
        sh("ip", &["netns", "add", ns]).context(
            "cannot create a network namespace (needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN)",
        )?;
        sh("ip", &["link", "set", tap_if, "netns", ns])
            .with_context(|| format!("moving the daemon's tap {tap_if} into {ns}"))?;
        sh("ip", &["-n", ns, "link", "set", tap_if, "address", mac])?;
        g.configure_host(addrs)?;
        Ok(g)
    }

    /// Inside the namespace: loopback and `ns_if` up, duplicate address
    /// detection off (addresses usable at once), TX checksum offload off,
    /// `addrs` and default routes.
    fn configure_host(&self, addrs: &VethAddrs) -> Result<()> {
        let (ns, ns_if) = (self.ns.as_str(), self.ns_if.as_str());
        offloads_off(ns, ns_if)?;
        let x = |args: &[&str]| {
            let mut a = vec!["netns", "exec", ns];
            a.extend_from_slice(args);
            sh("ip", &a)
        };
        let dad = format!("net.ipv6.conf.{ns_if}.accept_dad=0");
        x(&[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.accept_dad=0",
            "net.ipv6.conf.default.accept_dad=0",
            &dad,
        ])?;
        let n = |args: &[&str]| {
            let mut a = vec!["-n", ns];
            a.extend_from_slice(args);
            sh("ip", &a)
        };
        n(&["link", "set", "lo", "up"])?;
        n(&["link", "set", ns_if, "up"])?;
        n(&["addr", "add", addrs.v4, "dev", ns_if])?;
        n(&["-6", "addr", "add", addrs.v6, "dev", ns_if, "nodad"])?;
        n(&["route", "add", "default", "via", addrs.gw4, "dev", ns_if])?;
        n(&[
            "-6", "route", "add", "default", "via", addrs.gw6, "dev", ns_if,
        ])?;
        Ok(())
    }

    /// `prog` run inside the namespace (`ip netns exec <ns> prog`).
    pub fn exec(&self, prog: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns, prog]);
        c
    }

    /// Whether namespace `ns` or root-namespace link `host_if` exists.
    pub fn exists(ns: &str, host_if: &str) -> bool {
        let link = Command::new("ip")
            .args(["link", "show", "dev", host_if])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        link || Path::new("/run/netns").join(ns).exists()
    }

    /// Deletes the link and the namespace; errors (already gone) ignored.
    fn remove(&self) {
        for args in [
            &["link", "del", "dev", self.host_if.as_str()][..],
            &["netns", "del", self.ns.as_str()][..],
        ] {
            let _ = Command::new("ip")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Turns TX checksum offload (and with it TCP/UDP segmentation offload)
/// off on interface `ifname` in namespace `ns`: `ethtool -K <if> tx off`.
///
/// Why: a veth (or tap) with the offload on hands the peer each TCP/UDP
/// packet with a *partial* checksum (the pseudo-header sum only, with
/// `CHECKSUM_PARTIAL` in the kernel's metadata for the device to finish).
/// `net_af_packet` reads the bytes and never sees that metadata (DPDK
/// 22.11's PMD ignores `TP_STATUS_CSUMNOTREADY`), the router forwards the
/// packet as it came, and the receiving kernel drops it as a bad checksum
/// (`TcpInCsumErrors`, `UdpInCsumErrors`): TCP never connects. ICMP
/// checksums are always complete, so ping works either way. With the
/// offload off the sender's kernel computes every checksum (and segments
/// in software: GSO stays on), as a host behind a real NIC sends.
pub fn offloads_off(ns: &str, ifname: &str) -> Result<()> {
    if !have("ethtool") {
        bail!(
            "`ethtool` is not installed (scripts/setup.sh installs it): it turns TX checksum offload off on {ifname}, without which TCP and UDP through the router fail their checksums"
        );
    }
    sh(
        "ip",
        &["netns", "exec", ns, "ethtool", "-K", ifname, "tx", "off"],
    )
    .with_context(|| format!("turning TX checksum offload off on {ifname} in {ns}"))
}

/// UDP datagrams sent as fast as a namespace's kernel takes them, from a
/// thread that joins the namespace itself (`setns`, so no program is needed
/// inside it), optionally pinned to one CPU: a sender on the daemon
/// worker's CPU is sure to outrun it, since while the sender runs the
/// worker does not.
pub struct UdpFlood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Result<u64>>,
}

impl UdpFlood {
    /// Starts sending `payload`-byte datagrams to `dst` from namespace `ns`
    /// until `max` were accepted or [`UdpFlood::stop`].
    pub fn start(
        ns: &VethNs,
        dst: std::net::SocketAddr,
        payload: usize,
        cpu: Option<usize>,
        max: u64,
    ) -> UdpFlood {
        let path = Path::new("/run/netns").join(&ns.ns);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || -> Result<u64> {
            use std::os::fd::AsRawFd;
            let ns = std::fs::File::open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            // SAFETY: setns(2) on an open namespace file; it moves only this
            // thread, which ends with the flood.
            #[allow(unsafe_code)]
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                bail!(
                    "setns {}: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                );
            }
            if let Some(cpu) = cpu {
                // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and
                // sched_setaffinity(0, ..) act on this thread only.
                #[allow(unsafe_code)]
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                        bail!(
                            "pinning the flood to CPU {cpu}: {}",
                            std::io::Error::last_os_error()
                        );
                    }
                }
            }
            let any = if dst.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
            let sock = std::net::UdpSocket::bind(any)?;
            let buf = vec![0x5au8; payload];
            let mut sent = 0u64;
            let mut tries = 0u64;
            while sent < max {
                tries += 1;
                if tries.is_multiple_of(256) && flag.load(Ordering::Relaxed) {
                    break;
                }
                // A full queue (ENOBUFS) or an ICMP error reported back
                // (ECONNREFUSED) loses that datagram, not the flood.
                if sock.send_to(&buf, dst).is_ok() {
                    sent += 1;
                }
            }
            Ok(sent)
        });
        UdpFlood { stop, thread }
    }

    /// Waits until the flood has sent its `max`; how many were accepted.
    pub fn join(self) -> Result<u64> {
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the flood thread panicked"))?
    }

    /// Stops the flood now; how many were accepted.
    pub fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }
}

/// Root and `ip`, which namespaces and links need.
fn check_can_create_namespaces() -> Result<()> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        bail!("creating network namespaces and links needs root (CAP_NET_ADMIN); this test runs as uid {euid}");
    }
    if !have("ip") {
        bail!("`ip` (iproute2) is not installed; it is needed to create network namespaces");
    }
    Ok(())
}

impl Drop for VethNs {
    fn drop(&mut self) {
        self.remove();
    }
}
