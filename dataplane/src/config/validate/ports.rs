//! `[[port]]`: names, devices (their drivers, arguments and files), MACs,
//! MTUs, queue counts.
use crate::config::location::Locator;
use crate::config::*;
use std::collections::{HashMap, HashSet};

impl Config {
    /// Each MTU at least the least its IP versions allow.
    pub(super) fn check_mtus(&self, loc: &Locator) -> Result<(), ConfigError> {
        for (i, p) in self.ports.iter().enumerate() {
            let Some(m) = &p.mtu else { continue };
            let (mtu, v6) = (*m.get_ref(), !p.ipv6.is_empty());
            let min = if v6 { 1280 } else { 68 };
            if mtu < min {
                return Err(loc.error(
                    m.span(),
                    Some(format!("port[{i}].mtu")),
                    format!(
                        "MTU {mtu} is below {min}, the least {} (RFC {})",
                        if v6 { "IPv6 allows" } else { "IPv4 allows" },
                        if v6 { 8200 } else { 791 }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// At least one port, at most as many as DPDK holds.
    pub(super) fn check_port_count(&self, loc: &Locator) -> Result<(), ConfigError> {
        if self.ports.is_empty() {
            return Err(loc.error(
                0..0,
                Some("port".into()),
                "no [[port]] is configured".into(),
            ));
        }
        if let Some(p) = self.ports.get(crate::dpdk::port::MAX_PORTS) {
            return Err(loc.error(
                p.name.span(),
                Some(format!("port[{}]", crate::dpdk::port::MAX_PORTS)),
                format!(
                    "{} ports are configured; DPDK holds at most {} (RTE_MAX_ETHPORTS)",
                    self.ports.len(),
                    crate::dpdk::port::MAX_PORTS
                ),
            ));
        }
        Ok(())
    }

    /// Each port on its own: name, device, MAC, RX queues; no name or
    /// device twice. Gives the port index by name.
    pub(super) fn check_ports(&self, loc: &Locator) -> Result<HashMap<String, usize>, ConfigError> {
        let mut port_index = HashMap::new();
        for (i, p) in self.ports.iter().enumerate() {
            let name = p.name.get_ref();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(loc.error(
                    p.name.span(),
                    Some(format!("port[{i}].name")),
                    format!("port name `{name}` must be non-empty letters, digits, '_' or '-'"),
                ));
            }
            if port_index.insert(name.clone(), i).is_some() {
                return Err(loc.error(
                    p.name.span(),
                    Some(format!("port[{i}].name")),
                    format!("duplicate port name `{name}`"),
                ));
            }
            if p.device.get_ref().trim().is_empty() {
                return Err(loc.error(
                    p.device.span(),
                    Some(format!("port[{i}].device")),
                    "device must name a vdev or PCI address".into(),
                ));
            }
            if let Err(m) = check_device(p.device.get_ref()) {
                return Err(loc.error(p.device.span(), Some(format!("port[{i}].device")), m));
            }
            if let Some(mac) = &p.mac {
                if mac.get_ref().0[0] & 1 != 0 {
                    return Err(loc.error(
                        mac.span(),
                        Some(format!("port[{i}].mac")),
                        format!(
                            "{} is a group (multicast) address: a port's MAC must be unicast \
                             (the first byte even)",
                            mac.get_ref()
                        ),
                    ));
                }
            }
            if *p.rx_queues.get_ref() == 0 {
                return Err(loc.error(
                    p.rx_queues.span(),
                    Some(format!("port[{i}].rx_queues")),
                    "rx_queues must be at least 1".into(),
                ));
            }
        }
        let mut devices = HashSet::new();
        for (i, p) in self.ports.iter().enumerate() {
            let dev = device_name(p.device.get_ref());
            if !devices.insert(dev.to_owned()) {
                return Err(loc.error(
                    p.device.span(),
                    Some(format!("port[{i}].device")),
                    format!("device `{dev}` is used by two ports"),
                ));
            }
        }
        Ok(port_index)
    }

    /// TX queues per port: one per worker at least, and a `net_pcap` port
    /// with TX files needs one file per queue.
    pub(super) fn resolve_tx_queues(&self, loc: &Locator) -> Result<Vec<u16>, ConfigError> {
        let mut tx_queues = Vec::new();
        for (pi, p) in self.ports.iter().enumerate() {
            let n = match &p.tx_queues {
                Some(t) => {
                    if (*t.get_ref() as usize) < self.workers.len() {
                        return Err(loc.error(
                            t.span(),
                            Some(format!("port[{pi}].tx_queues")),
                            format!(
                                "{} tx queue(s) for {} workers: each worker needs its own",
                                t.get_ref(),
                                self.workers.len()
                            ),
                        ));
                    }
                    *t.get_ref()
                }
                None => self.workers.len() as u16,
            };
            if let Some(files) = pcap_tx_files(p.device.get_ref()) {
                if files != 0 && files < usize::from(n) {
                    return Err(loc.error(
                        p.device.span(),
                        Some(format!("port[{pi}].device")),
                        format!(
                            "net_pcap makes one TX queue per tx_pcap/tx_iface/iface argument \
                             ({files} here) and this port needs {n} (one per worker): give each \
                             worker its own, e.g. `tx_pcap=out-w0.pcap,tx_pcap=out-w1.pcap`"
                        ),
                    ));
                }
            }
            tx_queues.push(n);
        }
        Ok(tx_queues)
    }

    /// The files each `net_pcap` port opens, when `host` says to look.
    pub(in crate::config) fn check_port_files(
        &self,
        loc: &Locator,
        host: &Host,
    ) -> Result<(), ConfigError> {
        if !host.files_known() {
            return Ok(());
        }
        for (i, p) in self.ports.iter().enumerate() {
            if let Err(m) = check_device_files(p.device.get_ref()) {
                return Err(loc.error(p.device.span(), Some(format!("port[{i}].device")), m));
            }
        }
        Ok(())
    }
}

/// DPDK 22.11's virtual network drivers (`RTE_PMD_REGISTER_VDEV`) that its
/// Linux packages build, without the `net_` prefix.
const VDEV_DRIVERS: &[&str] = &[
    "af_packet",
    "af_xdp",
    "bonding",
    "failsafe",
    "memif",
    "null",
    "pcap",
    "ring",
    "softnic",
    "tap",
    "tun",
    "vdev_netvsc",
    "vhost",
    "virtio_user",
];

/// The older `eth_` aliases (`RTE_PMD_REGISTER_ALIAS`) of some of them.
const VDEV_ALIASES: &[&str] = &["af_packet", "bond", "null", "pcap", "ring", "vhost"];

/// Refuses a device string EAL would misread or refuse: it must be a
/// virtual device `net_<driver><N>` of a driver DPDK has (or one of the
/// older `eth_` aliases) or a PCI address `DDDD:BB:DD.F` / `BB:DD.F`,
/// optionally followed by `,key=value` arguments; `net_af_packet` needs its
/// `iface`. (`device = ",,,"` went to EAL as `--allow=,,,`, and EAL then
/// probed every PCI device of the host; `net_bogus0` failed in EAL's
/// start-up with `failed to find driver`.)
pub(in crate::config) fn check_device(device: &str) -> Result<(), String> {
    let mut parts = device.trim().split(',');
    let name = parts.next().unwrap_or("").trim();
    let vdev = vdev_driver(name);
    if let Some((prefix, driver)) = vdev {
        let known = if prefix == "net_" {
            VDEV_DRIVERS
        } else {
            VDEV_ALIASES
        };
        if !known.contains(&driver) {
            let all: Vec<String> = VDEV_DRIVERS.iter().map(|d| format!("net_{d}")).collect();
            return Err(format!(
                "`{device}`: unknown virtual device driver `{prefix}{driver}` (DPDK's are {})",
                all.join(", ")
            ));
        }
    } else if !is_pci_address(name) {
        return Err(format!(
            "`{device}` is neither a virtual device (`net_<driver><N>[,key=value...]`, e.g. \
             `net_pcap0,rx_pcap=in.pcap`) nor a PCI address (`DDDD:BB:DD.F` or `BB:DD.F`, hex)"
        ));
    }
    for arg in parts.clone() {
        let key = arg.split_once('=').map(|(k, _)| k.trim());
        if !key.is_some_and(|k| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            return Err(format!(
                "`{device}`: argument `{arg}` is not `key=value` (arguments follow the device \
                 name, comma-separated)"
            ));
        }
    }
    if vdev.is_some_and(|(_, d)| d == "af_packet")
        && !device_args(device).any(|(k, _)| k == "iface")
    {
        return Err(format!(
            "`{device}`: net_af_packet needs `iface=<name>`, the kernel interface it attaches to"
        ));
    }
    Ok(())
}

/// The prefix (`net_` or `eth_`) and driver of a vdev name
/// `net_<driver><N>`; `None` when `name` is not of that shape.
fn vdev_driver(name: &str) -> Option<(&'static str, &str)> {
    ["net_", "eth_"].into_iter().find_map(|p| {
        let rest = name.strip_prefix(p)?;
        let driver = rest.trim_end_matches(|c: char| c.is_ascii_digit());
        (driver.len() < rest.len()
            && driver.starts_with(|c: char| c.is_ascii_lowercase())
            && driver
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
        .then_some((p, driver))
    })
}

/// A device string's `key=value` arguments, trimmed.
fn device_args(device: &str) -> impl Iterator<Item = (&str, &str)> {
    device
        .split(',')
        .skip(1)
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.trim(), v.trim())))
}

/// The files a `net_pcap` device opens, against the file system (relative
/// paths from the working directory, as the PMD opens them): every
/// `rx_pcap` must exist, every `tx_pcap`'s directory too. EAL's own
/// failure names neither the port nor the config line.
pub(super) fn check_device_files(device: &str) -> Result<(), String> {
    let name = device.split(',').next().unwrap_or("").trim();
    if vdev_driver(name).is_none_or(|(_, d)| d != "pcap") {
        return Ok(());
    }
    for (key, value) in device_args(device) {
        let path = std::path::Path::new(value);
        match key {
            "rx_pcap" if !path.exists() => {
                return Err(format!(
                    "`{device}`: rx_pcap file `{value}` does not exist{}",
                    from_cwd(path)
                ));
            }
            "rx_pcap" if path.is_dir() => {
                return Err(format!(
                    "`{device}`: rx_pcap `{value}` is a directory, not a pcap file"
                ));
            }
            "tx_pcap" => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => std::path::Path::new("."),
                };
                if !dir.is_dir() {
                    return Err(format!(
                        "`{device}`: tx_pcap `{value}`: directory `{}` does not exist{}",
                        dir.display(),
                        from_cwd(path)
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// For a relative `path`, where it was looked for.
fn from_cwd(path: &std::path::Path) -> String {
    match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => {
            format!(" (relative to the working directory {})", cwd.display())
        }
        _ => String::new(),
    }
}

/// For a `net_pcap` device, how many TX queues its arguments make (one
/// per `tx_pcap`, `tx_iface` or `iface`); `None` for other devices.
pub(in crate::config) fn pcap_tx_files(device: &str) -> Option<usize> {
    let mut parts = device.split(',');
    let name = parts.next().unwrap_or("").trim();
    let driver = name
        .strip_prefix("net_")
        .or_else(|| name.strip_prefix("eth_"))?;
    if driver.trim_end_matches(|c: char| c.is_ascii_digit()) != "pcap" {
        return None;
    }
    Some(
        parts
            .filter(|a| {
                matches!(
                    a.split_once('=').map(|(k, _)| k.trim()),
                    Some("tx_pcap" | "tx_iface" | "iface")
                )
            })
            .count(),
    )
}

/// `DDDD:BB:DD.F` or `BB:DD.F`: hex domain, bus, device (≤ 0x1f), function (≤ 7).
fn is_pci_address(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    let f: Vec<&str> = s.split(':').collect();
    let (bus, rest) = match f.as_slice() {
        [dom, bus, rest] if hex(dom, 4) => (*bus, *rest),
        [bus, rest] => (*bus, *rest),
        _ => return false,
    };
    let Some((dev, func)) = rest.split_once('.') else {
        return false;
    };
    hex(bus, 2)
        && hex(dev, 2)
        && u8::from_str_radix(dev, 16).is_ok_and(|d| d <= 0x1f)
        && func.len() == 1
        && func.chars().all(|c| ('0'..='7').contains(&c))
}
