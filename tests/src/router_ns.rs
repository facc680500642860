//! The router between two network namespaces, as the namespace tests run
//! it (`netns_ping.rs`, `netns_iperf.rs`): host A on 10.10.1.0/24 behind
//! port `a`, host B on 10.10.2.0/24 behind port `b` (and the IPv6
//! equivalents), and the daemon run for the length of a test.
use crate::{Daemon, VethAddrs};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The two hosts' addresses, each with the router's port as gateway.
pub fn host_addrs() -> (VethAddrs<'static>, VethAddrs<'static>) {
    (
        VethAddrs {
            v4: "10.10.1.2/24",
            v6: "fd00:10:1::2/64",
            gw4: "10.10.1.1",
            gw6: "fd00:10:1::1",
        },
        VethAddrs {
            v4: "10.10.2.2/24",
            v6: "fd00:10:2::2/64",
            gw4: "10.10.2.1",
            gw6: "fd00:10:2::1",
        },
    )
}

/// The router's config: `pipeline = ["route"]`, port `a` on `dev_a` with
/// `a_extra` in its section, `b` on `dev_b` with `b_extra`, and `routes`
/// after the `[route]` section's header.
pub fn router_config(
    prefix: &str,
    (dev_a, a_extra): (&str, &str),
    (dev_b, b_extra): (&str, &str),
    routes: &str,
) -> String {
    format!(
        r#"pipeline = ["route"]

[eal]
file_prefix = "{prefix}"
memory_mb = 512
hugepages = "off"

[daemon]
stats_interval_ms = 0

[[port]]
name = "a"
device = "{dev_a}"
{a_extra}
ipv4 = ["10.10.1.1/24"]
ipv6 = ["fd00:10:1::1/64"]

[[port]]
name = "b"
device = "{dev_b}"
{b_extra}
ipv4 = ["10.10.2.1/24"]
ipv6 = ["fd00:10:2::1/64"]

[[worker]]
core = 1
rx = ["a", "b"]

[route]
icmp_rate = 100
{routes}
"#,
    )
}

/// The daemon, killed if the test fails before stopping it; its EAL
/// runtime directory is removed either way.
pub struct Running {
    daemon: Option<Daemon>,
    file_prefix: String,
}

impl Running {
    /// Starts the daemon on `cfg` (written with `file_prefix`) and waits for
    /// its workers.
    pub fn start(dir: &Path, cfg: &Path, file_prefix: String) -> Running {
        let mut running = Running {
            daemon: Some(Daemon::start(dir, cfg, &[]).unwrap()),
            file_prefix,
        };
        running.daemon.as_mut().unwrap().wait_running().unwrap();
        running
    }

    /// SIGTERM; it must exit 0 with balanced books (`Daemon::stop` checks
    /// them). The final report.
    pub fn stop(mut self) -> Value {
        let d = self.daemon.take().unwrap();
        let log = d.log();
        let (out, r, _) = d.stop(libc::SIGTERM, Duration::from_secs(15)).unwrap();
        drop(self);
        assert!(out.status.success(), "exit {:?}\n{log}", out.status);
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
        r
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(d) = self.daemon.take() {
            eprintln!("daemon log:\n{}", d.log());
            drop(d); // kills a daemon still running
        }
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{}", self.file_prefix));
    }
}
