//! Test harness for black-box tests: finds the built `dataplane` binary,
//! gives every DPDK process its own file prefix and bounded memory, runs the
//! daemon from a TOML file and reads its final JSON report.
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Repository root (the workspace).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The daemon binary: `$DATAPLANE_BIN`, else target/{debug,release}/dataplane,
/// building it when missing.
pub fn dataplane_bin() -> PathBuf {
    if let Ok(p) = std::env::var("DATAPLANE_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target"));
    let debug = target.join("debug/dataplane");
    if !debug.exists() {
        let st = Command::new(env!("CARGO"))
            .args(["build", "-p", "dataplane", "--bin", "dataplane"])
            .current_dir(repo_root())
            .status()
            .expect("cargo build");
        assert!(st.success(), "building the dataplane binary failed");
    }
    debug
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
            .map(|m| m.lines().any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs")))
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

/// Runs `dataplane run --config cfg` to completion (the config or `args`
/// must make it stop, e.g. `--stop-when-idle`), within `timeout`.
pub fn run_daemon(dir: &Path, cfg: &Path, args: &[&str], timeout: Duration) -> Result<RunResult> {
    let json = dir.join(format!("stats-{}.json", SEQ.fetch_add(1, Ordering::Relaxed)));
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
    let report: Value = serde_json::from_slice(&std::fs::read(&json).context("reading stats json")?)?;
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
        let pkt = pcap_file::pcap::PcapPacket::new(Duration::from_micros(i as u64), fr.len() as u32, fr);
        w.write_packet(&pkt)?;
    }
    Ok(())
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
