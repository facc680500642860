//! Validation: every cross-reference and limit checked, section by section,
//! into [`Resolved`]. Errors name file, line, column and field.
use super::location::Locator;
use super::*;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use toml::Spanned;

impl Config {
    pub(super) fn validate(&self, loc: &Locator) -> Result<Resolved, ConfigError> {
        let prefix = &self.eal.file_prefix;
        super::check_file_prefix(prefix.get_ref())
            .map_err(|e| loc.error(prefix.span(), Some("eal.file_prefix".into()), e))?;
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
        let in_args = crate::dpdk::eal::file_prefix_of(&self.eal.args);
        if self.eal.args.iter().any(|a| a.starts_with("--file-prefix")) {
            super::check_file_prefix(&in_args)
                .map_err(|e| loc.error(0..0, Some("eal.args".into()), e))?;
        }
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
        if self.workers.is_empty() {
            return Err(loc.error(
                0..0,
                Some("worker".into()),
                "no [[worker]] is configured".into(),
            ));
        }
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

        let mut cores = HashSet::new();
        let mut polled: HashMap<(usize, u16), Poller> = HashMap::new();
        let mut worker_rx = Vec::new();
        let mut fed = Vec::new();
        for (w, wk) in self.workers.iter().enumerate() {
            if !cores.insert(*wk.core.get_ref()) {
                return Err(loc.error(
                    wk.core.span(),
                    Some(format!("worker[{w}].core")),
                    format!("core {} is used by two workers", wk.core.get_ref()),
                ));
            }
            let Some(rx) = &wk.rx else {
                // Fed by the distributor (checked below that there is one).
                fed.push(w);
                worker_rx.push(Vec::new());
                continue;
            };
            if rx.get_ref().is_empty() {
                return Err(loc.error(
                    rx.span(),
                    Some(format!("worker[{w}].rx")),
                    "a worker must poll at least one rx queue (or, in ring mode, have no `rx` \
                     at all: the [distributor] feeds it)"
                        .into(),
                ));
            }
            let field = format!("worker[{w}].rx");
            let list =
                self.rx_assignments(loc, &port_index, rx, &field, Poller::Worker(w), &mut polled)?;
            worker_rx.push(list);
        }
        let distributor = match &self.distributor {
            None => {
                if let Some(&w) = fed.first() {
                    let wk = &self.workers[w];
                    return Err(loc.error(
                        wk.core.span(),
                        Some(format!("worker[{w}].rx")),
                        "this worker has no `rx` and there is no [distributor] to feed it: list \
                         the RX queues it polls (rx = [\"port\"] or [\"port:queue\"]), or add a \
                         [distributor] section (ring mode)"
                            .into(),
                    ));
                }
                None
            }
            Some(d) => Some(self.resolve_distributor(loc, &port_index, d, fed, &mut polled)?),
        };
        for (pi, p) in self.ports.iter().enumerate() {
            for q in 0..*p.rx_queues.get_ref() {
                if !polled.contains_key(&(pi, q)) {
                    return Err(loc.error(
                        p.rx_queues.span().start.max(p.name.span().start)..p.name.span().end,
                        Some(format!("port[{pi}].rx_queues")),
                        format!(
                            "rx queue {}:{q} is polled by no worker (its packets would be lost)",
                            p.name.get_ref()
                        ),
                    ));
                }
            }
        }

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

        // Pipeline: known stages, each once, each with its section; no
        // orphan sections.
        let stages = self.pipeline.get_ref();
        if stages.is_empty() {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                "the pipeline is empty: list stages, e.g. pipeline = [\"forward\"]".into(),
            ));
        }
        let mut seen = HashSet::new();
        for s in stages {
            if !seen.insert(*s.get_ref()) {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{}` is listed twice", s.get_ref().name()),
                ));
            }
            let has_section = match s.get_ref().section() {
                Some("forward") => self.forward.is_some(),
                Some("acl") => self.acl.is_some(),
                Some("route") => self.route.is_some(),
                Some("lb") => self.lb.is_some(),
                _ => true,
            };
            if !has_section {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{0}` needs a [{0}] section", s.get_ref().name()),
                ));
            }
        }
        let mut forward_out = vec![None; self.ports.len()];
        if let Some(fwd) = &self.forward {
            if !seen.contains(&StageKind::Forward) {
                return Err(loc.error(
                    fwd.span(),
                    Some("forward".into()),
                    "[forward] is configured but `forward` is not in the pipeline".into(),
                ));
            }
            for (k, pair) in fwd.get_ref().pairs.iter().enumerate() {
                let field = Some(format!("forward.pairs[{k}]"));
                if pair.get_ref().len() != 2 {
                    return Err(loc.error(
                        pair.span(),
                        field,
                        "a pair names exactly two ports".into(),
                    ));
                }
                let mut idx = [0usize; 2];
                for (j, name) in pair.get_ref().iter().enumerate() {
                    idx[j] = *port_index.get(name.get_ref()).ok_or_else(|| {
                        loc.error(
                            name.span(),
                            field.clone(),
                            format!(
                                "unknown port `{}` (ports: {})",
                                name.get_ref(),
                                self.port_names()
                            ),
                        )
                    })?;
                    if forward_out[idx[j]].is_some() {
                        return Err(loc.error(
                            name.span(),
                            field.clone(),
                            format!("port `{}` is in two pairs", name.get_ref()),
                        ));
                    }
                }
                if idx[0] == idx[1] {
                    // A port paired with itself is a hairpin: allowed.
                    forward_out[idx[0]] = Some(idx[0]);
                } else {
                    forward_out[idx[0]] = Some(idx[1]);
                    forward_out[idx[1]] = Some(idx[0]);
                }
            }
        }

        for (name, present, kind) in [
            ("acl", self.acl.as_ref().map(|a| a.span()), StageKind::Acl),
            (
                "route",
                self.route.as_ref().map(|r| r.span()),
                StageKind::Route,
            ),
            ("lb", self.lb.as_ref().map(|r| r.span()), StageKind::Lb),
        ] {
            if let Some(span) = present {
                if !seen.contains(&kind) {
                    return Err(loc.error(
                        span,
                        Some(name.into()),
                        format!("[{name}] is configured but `{name}` is not in the pipeline"),
                    ));
                }
            }
        }
        if seen.contains(&StageKind::Forward) && seen.iter().any(|k| k.needs_headers()) {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                "`forward` cross-connects ports and cannot be combined with other stages \
                 (but `count`)"
                    .into(),
            ));
        }
        let forwarder = stages.iter().position(|s| s.get_ref().forwards());
        for (k, s) in stages.iter().enumerate() {
            if s.get_ref().needs_later_forwarder() && forwarder.is_none_or(|f| f < k) {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!(
                        "`{}` needs a later stage that forwards: use pipeline = [\"{0}\", \"route\"]",
                        s.get_ref().name()
                    ),
                ));
            }
        }

        Ok(Resolved {
            port_index,
            worker_rx,
            distributor,
            tx_queues,
            forward_out,
            acl_rules: Vec::new(),
            acl_default: None,
            acl_flow_cache: 0,
            routes: Vec::new(),
            neighbors: Vec::new(),
            lb: None,
            // Valid (a counting sink), but rarely what was meant.
            warnings: match forwarder {
                Some(_) => Vec::new(),
                None => vec![loc.error(
                    self.pipeline.span(),
                    Some("pipeline".into()),
                    "no stage forwards (`forward` or `route`): every packet is dropped \
                     as `no_output`"
                        .into(),
                )],
            },
        })
    }

    /// One `rx` list (a worker's or the distributor's): each entry a known
    /// port's existing queue, polled by nobody else; recorded in `polled`.
    fn rx_assignments(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
        rx: &Spanned<Vec<Spanned<String>>>,
        field: &str,
        who: Poller,
        polled: &mut HashMap<(usize, u16), Poller>,
    ) -> Result<Vec<RxAssignment>, ConfigError> {
        let mut list = Vec::new();
        for r in rx.get_ref() {
            let field = Some(field.to_owned());
            let (pname, q) = match r.get_ref().split_once(':') {
                Some((p, q)) => {
                    let q: u16 = q.parse().map_err(|_| {
                        loc.error(
                            r.span(),
                            field.clone(),
                            format!("`{}`: queue `{q}` is not a number", r.get_ref()),
                        )
                    })?;
                    (p, q)
                }
                None => (r.get_ref().as_str(), 0),
            };
            let Some(&pi) = port_index.get(pname) else {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("unknown port `{pname}` (ports: {})", self.port_names()),
                ));
            };
            let nq = *self.ports[pi].rx_queues.get_ref();
            if q >= nq {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("port `{pname}` has {nq} rx queue(s); queue {q} does not exist"),
                ));
            }
            if let Some(other) = polled.insert((pi, q), who) {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("rx queue {pname}:{q} is already polled by {other}"),
                ));
            }
            list.push(RxAssignment { port: pi, queue: q });
        }
        Ok(list)
    }

    /// `[distributor]`: its queues, ring size, and the workers it feeds
    /// (there must be some).
    fn resolve_distributor(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
        d: &Spanned<DistributorSection>,
        fed: Vec<usize>,
        polled: &mut HashMap<(usize, u16), Poller>,
    ) -> Result<DistributorPlan, ConfigError> {
        let sec = d.get_ref();
        if fed.is_empty() {
            return Err(loc.error(
                d.span(),
                Some("distributor".into()),
                "[distributor] feeds the workers that have no `rx`, and every [[worker]] has \
                 one: remove `rx` from the workers it should feed, or remove [distributor]"
                    .into(),
            ));
        }
        if sec.rx.get_ref().is_empty() {
            return Err(loc.error(
                sec.rx.span(),
                Some("distributor.rx".into()),
                "the distributor must poll at least one rx queue".into(),
            ));
        }
        let rx = self.rx_assignments(
            loc,
            port_index,
            &sec.rx,
            "distributor.rx",
            Poller::Distributor,
            polled,
        )?;
        let size = *sec.ring_size.get_ref();
        let (lo, hi) = (
            DistributorSection::MIN_RING_SIZE,
            DistributorSection::MAX_RING_SIZE,
        );
        if !size.is_power_of_two() || !(lo..=hi).contains(&size) {
            return Err(loc.error(
                sec.ring_size.span(),
                Some("distributor.ring_size".into()),
                format!(
                    "ring_size {size} must be a power of two from {lo} to {hi} (rte_ring; a \
                     ring holds ring_size - 1 packets)"
                ),
            ));
        }
        let mut ports = Vec::new();
        for a in &rx {
            if !ports.contains(&a.port) {
                ports.push(a.port);
            }
        }
        Ok(DistributorPlan {
            core: *sec.core.get_ref(),
            rx,
            ports,
            workers: fed,
            ring_size: size,
            hash: sec.hash,
        })
    }

    pub(super) fn resolve_acl(&self, loc: &Locator, res: &mut Resolved) -> Result<(), ConfigError> {
        use crate::tables::{AclAction, AclRule, Prefix};
        let Some(acl) = &self.acl else { return Ok(()) };
        let acl = acl.get_ref();
        let action = |a: Action| match a {
            Action::Allow => AclAction::Allow,
            Action::Deny => AclAction::Deny,
        };
        let prefix = |c: &IpCidr| match c {
            IpCidr::V4(c) => Prefix::v4(c.addr, c.len).expect("length checked"),
            IpCidr::V6(c) => Prefix::v6(c.addr, c.len).expect("length checked"),
        };
        for (i, r) in acl.rule.iter().enumerate() {
            let field = |f: &str| Some(format!("acl.rule[{i}].{f}"));
            if let (Some(s), Some(d)) = (&r.src, &r.dst) {
                if matches!(s.get_ref(), IpCidr::V4(_)) != matches!(d.get_ref(), IpCidr::V4(_)) {
                    return Err(loc.error(
                        d.span(),
                        field("dst"),
                        "src and dst must be the same address family".into(),
                    ));
                }
            }
            if let Some(v) = &r.vlan {
                if *v.get_ref() > 4095 {
                    return Err(loc.error(
                        v.span(),
                        field("vlan"),
                        format!("VLAN id {} is not in 0..=4095", v.get_ref()),
                    ));
                }
            }
            let range = |p: &Option<Spanned<PortRange>>| {
                p.as_ref()
                    .map_or((0, u16::MAX), |p| (p.get_ref().0, p.get_ref().1))
            };
            res.acl_rules.push(AclRule {
                src: r.src.as_ref().map(|c| prefix(c.get_ref())),
                dst: r.dst.as_ref().map(|c| prefix(c.get_ref())),
                proto: r.proto.map(|p| p.0),
                sport: range(&r.sport),
                dport: range(&r.dport),
                vlan: r.vlan.as_ref().map(|v| *v.get_ref()),
                action: action(r.action),
            });
        }
        let cache = &acl.flow_cache;
        if *cache.get_ref() > AclConfig::MAX_FLOW_CACHE {
            return Err(loc.error(
                cache.span(),
                Some("acl.flow_cache".into()),
                format!(
                    "{} entries is more than the {} allowed",
                    cache.get_ref(),
                    AclConfig::MAX_FLOW_CACHE
                ),
            ));
        }
        res.acl_flow_cache = *cache.get_ref();
        res.acl_default = Some(action(acl.default));
        Ok(())
    }

    /// Why `ip` cannot be a neighbour or a next hop, if it cannot: one of
    /// the router's own addresses, or a connected IPv4 subnet's network or
    /// broadcast address.
    pub(super) fn no_station(&self, ip: std::net::IpAddr) -> Option<String> {
        let own = self.ports.iter().any(|p| match ip {
            std::net::IpAddr::V4(a) => p.ipv4.iter().any(|c| c.get_ref().addr == a),
            std::net::IpAddr::V6(a) => p.ipv6.iter().any(|c| c.get_ref().addr == a),
        });
        if own {
            return Some(format!(
                "{ip} is this router's own address: it cannot be a neighbour or a next hop"
            ));
        }
        let std::net::IpAddr::V4(a) = ip else {
            return None;
        };
        self.ports.iter().flat_map(|p| &p.ipv4).find_map(|c| {
            let c = c.get_ref();
            let what =
                if c.len <= 30 && u32::from(a) == u32::from(c.addr) & (u32::MAX << (32 - c.len)) {
                    "network"
                } else if crate::tables::routing::subnet_broadcast(c.addr, c.len) == Some(a) {
                    "broadcast"
                } else {
                    return None;
                };
            Some(format!(
                "{ip} is the {what} address of {}/{}: it cannot be a neighbour or a next hop",
                c.addr, c.len
            ))
        })
    }

    /// The port whose subnet holds `ip`, or the named one (checked to hold it).
    pub(super) fn nexthop_port(
        &self,
        loc: &Locator,
        res: &Resolved,
        ip: std::net::IpAddr,
        port: Option<&Spanned<String>>,
        span: Range<usize>,
        field: &str,
    ) -> Result<u16, ConfigError> {
        let on_link = |p: &PortSection| match ip {
            std::net::IpAddr::V4(a) => p.ipv4.iter().any(|c| c.get_ref().contains(a)),
            std::net::IpAddr::V6(a) => {
                p.ipv6.iter().any(|c| c.get_ref().contains(a)) || a.segments()[0] & 0xffc0 == 0xfe80
            }
        };
        if let Some(why) = self.no_station(ip) {
            return Err(loc.error(span, Some(field.into()), why));
        }
        if let Some(pn) = port {
            let Some(&pi) = res.port_index.get(pn.get_ref()) else {
                return Err(loc.error(
                    pn.span(),
                    Some(field.into()),
                    format!(
                        "unknown port `{}` (ports: {})",
                        pn.get_ref(),
                        self.port_names()
                    ),
                ));
            };
            if !on_link(&self.ports[pi]) {
                return Err(loc.error(
                    span,
                    Some(field.into()),
                    format!("{ip} is not on a subnet of port `{}`", pn.get_ref()),
                ));
            }
            return Ok(pi as u16);
        }
        match self.ports.iter().position(on_link) {
            Some(pi) => Ok(pi as u16),
            None => Err(loc.error(
                span,
                Some(field.into()),
                format!("{ip} is on no port's subnet: add the subnet to a port's ipv4/ipv6 or name the port"),
            )),
        }
    }

    pub(super) fn resolve_routes(
        &self,
        loc: &Locator,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        use crate::tables::routing::{RouteSpec, RouteTarget};
        use crate::tables::Prefix;
        let Some(route) = &self.route else {
            return Ok(());
        };
        let section = route.span();
        let route = route.get_ref();
        // What the tables' creation would refuse later (the linear table's
        // bound is the DPDK tables' too; rte_hash refuses beyond its own).
        const MAX_ROUTES: u32 = i32::MAX as u32 / 2;
        const MAX_NEIGHBORS: u32 = 1 << 24;
        for (name, v, lo, hi) in [
            ("max_routes", route.max_routes, 1, MAX_ROUTES),
            ("max_routes6", route.max_routes6, 1, MAX_ROUTES),
            (
                "neighbor_capacity",
                route.neighbor_capacity,
                8,
                MAX_NEIGHBORS,
            ),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(loc.error(
                    section.clone(),
                    Some(format!("route.{name}")),
                    format!("{v} is not in {lo}..={hi}"),
                ));
            }
        }
        let to_prefix = |c: &IpCidr| match c {
            IpCidr::V4(c) => Prefix::v4(c.addr, c.len).expect("length checked"),
            IpCidr::V6(c) => Prefix::v6(c.addr, c.len).expect("length checked"),
        };
        for (i, r) in route.statics.iter().enumerate() {
            let field = format!("route.static[{i}]");
            let prefix = to_prefix(r.prefix.get_ref());
            let target = match (&r.via, &r.port) {
                (Some(via), port) => {
                    let mut hops = Vec::new();
                    for ip in &via.get_ref().0 {
                        if ip.is_ipv6() != prefix.is_ipv6() {
                            return Err(loc.error(
                                via.span(),
                                Some(format!("{field}.via")),
                                format!("next hop {ip} is not of the prefix's address family"),
                            ));
                        }
                        let p = self.nexthop_port(
                            loc,
                            res,
                            *ip,
                            port.as_ref(),
                            via.span(),
                            &format!("{field}.via"),
                        )?;
                        hops.push((*ip, p));
                    }
                    RouteTarget::Via(hops)
                }
                (None, Some(pn)) => {
                    let Some(&pi) = res.port_index.get(pn.get_ref()) else {
                        return Err(loc.error(
                            pn.span(),
                            Some(format!("{field}.port")),
                            format!(
                                "unknown port `{}` (ports: {})",
                                pn.get_ref(),
                                self.port_names()
                            ),
                        ));
                    };
                    RouteTarget::Port(pi as u16)
                }
                (None, None) => {
                    return Err(loc.error(
                        r.prefix.span(),
                        Some(field),
                        "a route needs `via` (next hops) or `port` (directly connected)".into(),
                    ));
                }
            };
            res.routes.push(RouteSpec { prefix, target });
        }
        if let Some(file) = &route.routes_file {
            let path = loc.dir.join(file.get_ref());
            let text = std::fs::read_to_string(&path).map_err(|e| {
                loc.error(
                    file.span(),
                    Some("route.routes_file".into()),
                    format!("{}: {e}", path.display()),
                )
            })?;
            self.parse_routes_file(&text, &path, res)?;
        }
        for (i, n) in route.neighbor.iter().enumerate() {
            let field = format!("route.neighbor[{i}].ip");
            let ip: std::net::IpAddr = n.ip.get_ref().parse().map_err(|_| {
                loc.error(
                    n.ip.span(),
                    Some(field.clone()),
                    format!("invalid IP address `{}`", n.ip.get_ref()),
                )
            })?;
            let p = self.nexthop_port(loc, res, ip, n.port.as_ref(), n.ip.span(), &field)?;
            if !crate::tables::routing::usable_neighbor_mac(n.mac.0) {
                return Err(loc.error(
                    n.ip.span(),
                    Some(format!("route.neighbor[{i}].mac")),
                    "a neighbour's MAC must be unicast and not zero".into(),
                ));
            }
            res.neighbors.push((p, ip, n.mac.0));
        }
        Ok(())
    }

    /// Worker and control cores against the CPUs this process can use
    /// (online and in its affinity); a worker on the
    /// control core is a warning.
    pub(super) fn check_cores(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        let control = &self.eal.control_core;
        if let Some(why) = host.cpu_problem(*control.get_ref()) {
            return Err(loc.error(control.span(), Some("eal.control_core".into()), why));
        }
        for (w, wk) in self.workers.iter().enumerate() {
            let core = *wk.core.get_ref();
            if let Some(why) = host.cpu_problem(core) {
                return Err(loc.error(wk.core.span(), Some(format!("worker[{w}].core")), why));
            }
            if core == *control.get_ref() {
                res.warnings.push(loc.error(
                    wk.core.span(),
                    Some(format!("worker[{w}].core")),
                    format!(
                        "CPU {core} is also eal.control_core: the control thread's stats and \
                         signal handling take time from this worker's poll loop"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The distributor's core against the CPUs this process can use; sharing a CPU with
    /// the control thread or a worker is a warning (two busy loops then
    /// split one CPU's time: fine for a test, slow for traffic).
    pub(super) fn check_distributor_core(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        let Some(d) = &self.distributor else {
            return Ok(());
        };
        let core = &d.get_ref().core;
        let cpu = *core.get_ref();
        let field = Some("distributor.core".to_owned());
        if let Some(why) = host.cpu_problem(cpu) {
            return Err(loc.error(core.span(), field, why));
        }
        if cpu == *self.eal.control_core.get_ref() {
            res.warnings.push(loc.error(
                core.span(),
                field.clone(),
                format!(
                    "CPU {cpu} is also eal.control_core: the control thread's stats and signal \
                     handling take time from the distributor's poll loop"
                ),
            ));
        }
        if let Some(w) = self.workers.iter().position(|w| *w.core.get_ref() == cpu) {
            res.warnings.push(loc.error(
                core.span(),
                field,
                format!(
                    "CPU {cpu} is also worker[{w}].core: the distributor and that worker \
                     busy-poll one CPU and split its time (fine for a test, slow for traffic)"
                ),
            ));
        }
        Ok(())
    }

    /// The files each `net_pcap` port opens, when `host` says to look.
    pub(super) fn check_port_files(&self, loc: &Locator, host: &Host) -> Result<(), ConfigError> {
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

    /// Pool size and cache against DPDK's limits, data room against the
    /// headroom and every port's MTU.
    pub(super) fn check_mempool(&self, loc: &Locator) -> Result<(), ConfigError> {
        let mp = &self.mempool;
        let (mbufs, cache) = (*mp.mbufs.get_ref(), *mp.cache.get_ref());
        if cache > MEMPOOL_CACHE_MAX {
            return Err(loc.error(
                mp.cache.span(),
                Some("mempool.cache".into()),
                format!(
                    "cache {cache} is above DPDK's per-lcore maximum of {MEMPOOL_CACHE_MAX} \
                     (RTE_MEMPOOL_CACHE_MAX_SIZE)"
                ),
            ));
        }
        // rte_mempool_create refuses a pool smaller than its cache's flush
        // threshold, 1.5 × cache (CALC_CACHE_FLUSHTHRESH).
        if mbufs != 0 && u64::from(cache) * 3 / 2 > u64::from(mbufs) {
            return Err(loc.error(
                mp.mbufs.span(),
                Some("mempool.mbufs".into()),
                format!(
                    "{mbufs} mbufs is less than 1.5 × mempool.cache ({cache}), which DPDK \
                     requires: raise mbufs to at least {} or lower cache",
                    u64::from(cache) * 3 / 2
                ),
            ));
        }
        let Some(set) = &mp.data_room else {
            // Sized from the MTUs: only an MTU no mbuf can hold is wrong.
            for (i, p) in self.ports.iter().enumerate() {
                let Some(m) = &p.mtu else { continue };
                let need = data_room_for(*m.get_ref());
                if need > u32::from(u16::MAX) {
                    return Err(loc.error(
                        m.span(),
                        Some(format!("port[{i}].mtu")),
                        format!(
                            "MTU {} needs mbufs with a data room of {need} bytes ({} + 14 \
                             Ethernet + 8 two VLAN tags + {PKTMBUF_HEADROOM} headroom), more \
                             than an mbuf holds ({}): lower the MTU",
                            m.get_ref(),
                            m.get_ref(),
                            u16::MAX
                        ),
                    ));
                }
            }
            return Ok(());
        };
        let room = *set.get_ref();
        if room <= PKTMBUF_HEADROOM {
            return Err(loc.error(
                set.span(),
                Some("mempool.data_room".into()),
                format!(
                    "data_room {room} leaves no room for packet data: it includes the \
                     {PKTMBUF_HEADROOM}-byte mbuf headroom (RTE_PKTMBUF_HEADROOM) and must be \
                     larger"
                ),
            ));
        }
        for (i, p) in self.ports.iter().enumerate() {
            let mtu = p.mtu.as_ref().map_or(1500, |m| *m.get_ref());
            let need = data_room_for(mtu);
            if u32::from(room) >= need {
                continue;
            }
            let what = format!(
                "needs mbufs with data_room ≥ {need} ({mtu} + 14 Ethernet + 8 two VLAN tags + \
                 {PKTMBUF_HEADROOM} headroom) but mempool.data_room is {room}: larger frames \
                 would not fit one mbuf; raise mempool.data_room (or leave it unset: it is then \
                 sized from the MTUs) or lower the MTU"
            );
            return Err(match &p.mtu {
                Some(m) => loc.error(
                    m.span(),
                    Some(format!("port[{i}].mtu")),
                    format!("MTU {mtu} {what}"),
                ),
                None => loc.error(
                    set.span(),
                    Some("mempool.data_room".into()),
                    format!(
                        "port `{}` (MTU {mtu}, the default) {what}",
                        p.name.get_ref()
                    ),
                ),
            });
        }
        Ok(())
    }

    /// Warns when `eal.memory_mb` is below the estimate: with hugepages EAL
    /// grows past `-m`, without them start-up fails.
    pub(super) fn check_memory(&self, loc: &Locator, res: &mut Resolved) {
        let est = self.memory_estimate(res);
        let have = u64::from(*self.eal.memory_mb.get_ref());
        if have < est.total_mb {
            res.warnings.push(loc.error(
                self.eal.memory_mb.span(),
                Some("eal.memory_mb".into()),
                format!(
                    "{have} MB is below the ~{} MB this config needs (route tables ~{} MB, mbuf \
                     pool ~{} MB, EAL and the rest ~{} MB): without hugepages start-up will \
                     fail; raise eal.memory_mb to {}",
                    est.total_mb,
                    est.route_tables_mb,
                    est.mempool_mb,
                    MemoryEstimate::OTHER_MB,
                    est.total_mb
                ),
            ));
        }
    }
}

/// Who polls an RX queue (for "already polled by ..." errors).
#[derive(Debug, Clone, Copy)]
enum Poller {
    Worker(usize),
    Distributor,
}

impl std::fmt::Display for Poller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Poller::Worker(w) => write!(f, "worker[{w}]"),
            Poller::Distributor => f.write_str("the distributor"),
        }
    }
}

/// RTE_MEMPOOL_CACHE_MAX_SIZE.
const MEMPOOL_CACHE_MAX: u32 = 512;
/// RTE_PKTMBUF_HEADROOM.
const PKTMBUF_HEADROOM: u16 = 128;
/// Bytes of a frame beyond its MTU: Ethernet header and two VLAN tags.
const FRAME_OVERHEAD: u32 = 14 + 8;

/// DPDK's default mbuf data room (`RTE_MBUF_DEFAULT_BUF_SIZE`): 2048 bytes
/// and the headroom; the least `Config::data_room` sizes.
pub(super) const DEFAULT_DATA_ROOM: u32 = 2048 + PKTMBUF_HEADROOM as u32;

/// The data room (headroom included) an mbuf needs for a frame of a port
/// with `mtu`: the IP packet, Ethernet and two VLAN tags, the headroom.
pub(super) fn data_room_for(mtu: u16) -> u32 {
    u32::from(mtu) + FRAME_OVERHEAD + u32::from(PKTMBUF_HEADROOM)
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
pub(super) fn check_device(device: &str) -> Result<(), String> {
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
pub(super) fn pcap_tx_files(device: &str) -> Option<usize> {
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
