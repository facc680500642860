//! What validation needs to know about the machine it runs on: the CPUs that
//! are online. [`Host::current`] reads it from sysfs; tests inject their own
//! with [`Host::with_online_cpus`], and [`Host::unknown`] skips the checks.
use std::collections::BTreeSet;

/// Where the kernel lists the online CPUs, as a range list (`0-3,5,8-11`).
pub const ONLINE_CPUS: &str = "/sys/devices/system/cpu/online";

/// Facts about the host that a config is checked against.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// Online CPUs and the range list they came from; `None` = not known.
    online_cpus: Option<(BTreeSet<u32>, String)>,
}

impl Host {
    /// Nothing known: no host checks.
    pub fn unknown() -> Host {
        Host::default()
    }

    /// This machine, from [`ONLINE_CPUS`] (unknown when it cannot be read).
    pub fn current() -> Host {
        std::fs::read_to_string(ONLINE_CPUS)
            .ok()
            .and_then(|s| Host::with_online_cpus(&s).ok())
            .unwrap_or_default()
    }

    /// A host whose online CPUs are the kernel range list `list`.
    pub fn with_online_cpus(list: &str) -> Result<Host, String> {
        let list = list.trim();
        Ok(Host {
            online_cpus: Some((parse_cpu_list(list)?, list.to_owned())),
        })
    }

    /// Whether `cpu` is online: `None` when not known.
    pub fn cpu_online(&self, cpu: u32) -> Option<bool> {
        self.online_cpus.as_ref().map(|(s, _)| s.contains(&cpu))
    }

    /// The online CPUs as the kernel wrote them, for messages.
    pub fn online_list(&self) -> &str {
        self.online_cpus.as_ref().map_or("unknown", |(_, l)| l)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let s = parse_cpu_list("0-3,5,8-9\n").unwrap();
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 5, 8, 9]);
        assert_eq!(parse_cpu_list("0").unwrap().len(), 1);
        assert!(parse_cpu_list("").unwrap().is_empty());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("0-x").is_err());
        let h = Host::with_online_cpus("0-1").unwrap();
        assert_eq!(h.cpu_online(1), Some(true));
        assert_eq!(h.cpu_online(2), Some(false));
        assert_eq!(Host::unknown().cpu_online(0), None);
    }
}
