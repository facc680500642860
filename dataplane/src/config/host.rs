//! What validation needs to know about the machine it runs on: the CPUs that
//! are online and, of those, the ones this process may run on (its affinity:
//! taskset, a cgroup cpuset), its memory and free hugepages, and whether the
//! files devices open (pcap inputs) are to be looked for. [`Host::current`]
//! knows them all; tests inject their own with [`Host::with_online_cpus`],
//! [`Host::with_allowed_cpus`], [`Host::with_memory`] and
//! [`Host::with_files`], and [`Host::unknown`] skips the checks.
use std::collections::BTreeSet;

/// Where the kernel lists the online CPUs, as a range list (`0-3,5,8-11`).
pub const ONLINE_CPUS: &str = "/sys/devices/system/cpu/online";

/// The machine's memory and its free hugepages of the default size, in MiB
/// (`/proc/meminfo`), and whether hugetlbfs is mounted (`/proc/mounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    pub total_mb: u64,
    pub huge_free_mb: u64,
    pub huge_mounted: bool,
}

impl HostMemory {
    /// This machine's, or `None` when `/proc/meminfo` cannot be read.
    pub fn read() -> Option<HostMemory> {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kb = |key: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        };
        let huge_free_mb =
            kb("HugePages_Free:").unwrap_or(0) * kb("Hugepagesize:").unwrap_or(0) / 1024;
        let huge_mounted = std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        });
        Some(HostMemory {
            total_mb: kb("MemTotal:")? / 1024,
            huge_free_mb,
            huge_mounted,
        })
    }

    /// Whether hugepages can back an EAL that reserves `mb` MiB at start
    /// (`-m`): hugetlbfs mounted and that much free.
    pub fn hugepages_fit(&self, mb: u64) -> bool {
        self.huge_mounted && self.huge_free_mb >= mb
    }
}

/// Facts about the host that a config is checked against.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// Memory and hugepages; `None` = not known.
    memory: Option<HostMemory>,
    /// Online CPUs and the range list they came from; `None` = not known.
    online_cpus: Option<(BTreeSet<u32>, String)>,
    /// The process's CPU affinity as a range list; `None` = not known.
    allowed_cpus: Option<(BTreeSet<u32>, String)>,
    /// Whether the files that devices open are checked: a config parsed
    /// for a reload or a test may name files of another machine.
    files: bool,
}

impl Host {
    /// Nothing known: no host checks.
    pub fn unknown() -> Host {
        Host::default()
    }

    /// This machine, from [`ONLINE_CPUS`] and the process's affinity
    /// (each unknown when it cannot be read).
    pub fn current() -> Host {
        let host = std::fs::read_to_string(ONLINE_CPUS)
            .ok()
            .and_then(|s| Host::with_online_cpus(&s).ok())
            .unwrap_or_default();
        let mut host = host.with_files(true);
        host.memory = HostMemory::read();
        match crate::dpdk::sched::allowed_cpus() {
            Ok(cpus) => host.with_allowed_set(cpus),
            Err(_) => host,
        }
    }

    /// A host whose online CPUs are the kernel range list `list`.
    pub fn with_online_cpus(list: &str) -> Result<Host, String> {
        let list = list.trim();
        Ok(Host {
            online_cpus: Some((parse_cpu_list(list)?, list.to_owned())),
            ..Host::default()
        })
    }

    /// This host, with `memory`.
    pub fn with_memory(mut self, memory: HostMemory) -> Host {
        self.memory = Some(memory);
        self
    }

    /// Its memory and hugepages, when known.
    pub fn memory(&self) -> Option<HostMemory> {
        self.memory
    }

    /// This host, run with CPU affinity `list` (a range list).
    pub fn with_allowed_cpus(self, list: &str) -> Result<Host, String> {
        Ok(self.with_allowed_set(parse_cpu_list(list)?))
    }

    /// This host, with the files devices open checked or not.
    pub fn with_files(mut self, check: bool) -> Host {
        self.files = check;
        self
    }

    /// Whether the files devices open are checked.
    pub fn files_known(&self) -> bool {
        self.files
    }

    fn with_allowed_set(mut self, cpus: BTreeSet<u32>) -> Host {
        let list = format_cpu_list(&cpus);
        self.allowed_cpus = Some((cpus, list));
        self
    }

    /// Whether `cpu` is online: `None` when not known.
    pub fn cpu_online(&self, cpu: u32) -> Option<bool> {
        self.online_cpus.as_ref().map(|(s, _)| s.contains(&cpu))
    }

    /// The online CPUs as the kernel wrote them, for messages.
    pub fn online_list(&self) -> &str {
        self.online_cpus.as_ref().map_or("unknown", |(_, l)| l)
    }

    /// Why `cpu` cannot host a thread of this process, if it cannot: it is
    /// offline (or does not exist), or it is outside the process's affinity.
    /// `None` when it can, or when the host is not known.
    pub fn cpu_problem(&self, cpu: u32) -> Option<String> {
        if self.cpu_online(cpu) == Some(false) {
            return Some(format!(
                "CPU {cpu} does not exist or is offline (online CPUs: {})",
                self.online_list()
            ));
        }
        match &self.allowed_cpus {
            Some((set, list)) if !set.contains(&cpu) => Some(format!(
                "CPU {cpu} is outside this process's CPU affinity (allowed CPUs: {list}; \
                 set by taskset or a cgroup cpuset): pin threads only to CPUs the process \
                 was given"
            )),
            _ => None,
        }
    }
}

/// Parses a kernel CPU range list: `0-3,5,8-11` (an empty list is empty).
pub fn parse_cpu_list(list: &str) -> Result<BTreeSet<u32>, String> {
    let mut out = BTreeSet::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("invalid CPU list `{list}`: `{s}` is not a CPU number"))
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if a > b {
            return Err(format!(
                "invalid CPU list `{list}`: range `{part}` is reversed"
            ));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// Writes `cpus` as a kernel range list (`0-3,5,8-11`), the inverse of
/// [`parse_cpu_list`].
pub fn format_cpu_list(cpus: &BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut it = cpus.iter().copied().peekable();
    while let Some(a) = it.next() {
        let mut b = a;
        while it.peek() == Some(&(b + 1)) {
            b = it.next().unwrap_or(b);
        }
        parts.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let s = parse_cpu_list("0-3,5,8-9\n").unwrap();
        assert_eq!(format_cpu_list(&s), "0-3,5,8-9");
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 5, 8, 9]);
        assert_eq!(parse_cpu_list("0").unwrap().len(), 1);
        assert!(parse_cpu_list("").unwrap().is_empty());
        assert_eq!(format_cpu_list(&BTreeSet::new()), "");
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("0-x").is_err());
        let h = Host::with_online_cpus("0-1").unwrap();
        assert_eq!(h.cpu_online(1), Some(true));
        assert_eq!(h.cpu_online(2), Some(false));
        assert_eq!(Host::unknown().cpu_online(0), None);
    }

    /// Offline is said first; an online CPU outside the affinity is
    /// refused with the allowed list.
    #[test]
    fn affinity_narrows_the_online_cpus() {
        let h = Host::with_online_cpus("0-7")
            .unwrap()
            .with_allowed_cpus("0-1,4")
            .unwrap();
        assert_eq!(h.cpu_problem(0), None);
        assert_eq!(h.cpu_problem(4), None);
        let m = h.cpu_problem(2).unwrap();
        assert!(
            m.starts_with("CPU 2 is outside this process's CPU affinity (allowed CPUs: 0-1,4;"),
            "{m}"
        );
        let m = h.cpu_problem(9).unwrap();
        assert!(
            m.contains("does not exist or is offline (online CPUs: 0-7)"),
            "{m}"
        );
        assert_eq!(Host::unknown().cpu_problem(4096), None);
    }

    /// The process's own affinity is read, and holds online CPUs only.
    #[test]
    fn current_host_knows_its_affinity() {
        let h = Host::current();
        let (allowed, _) = h.allowed_cpus.as_ref().expect("affinity read");
        assert!(!allowed.is_empty());
        for &c in allowed {
            assert_eq!(h.cpu_problem(c), None, "CPU {c}");
        }
    }
}
