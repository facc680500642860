//! `[route]`: static routes, neighbours, table sizes; next hops on a
//! connected subnet.
use crate::config::location::Locator;
use crate::config::*;
use std::ops::Range;
use toml::Spanned;

impl Config {
    /// Why `ip` cannot be a neighbour or a next hop, if it cannot: one of
    /// the router's own addresses, or a connected IPv4 subnet's network or
    /// broadcast address.
    pub(in crate::config) fn no_station(&self, ip: std::net::IpAddr) -> Option<String> {
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
            let what = if c.len <= 30 && a == c.network() {
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
    pub(in crate::config) fn nexthop_port(
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
                p.ipv6.iter().any(|c| c.get_ref().contains(a)) || a.is_unicast_link_local()
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
        // A link-local address is on every IPv6 link: which port it is on
        // only the config can say (the first port would be a guess).
        let link_local = matches!(ip, std::net::IpAddr::V6(a) if a.is_unicast_link_local());
        if link_local && self.ports.iter().filter(|p| on_link(p)).count() > 1 {
            return Err(loc.error(
                span,
                Some(field.into()),
                format!(
                    "{ip} is link-local, on every port's link: name its port (`port = \"...\"`; ports: {})",
                    self.port_names()
                ),
            ));
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

    pub(in crate::config) fn resolve_routes(
        &self,
        loc: &Locator,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        use crate::tables::routing::{RouteSpec, RouteTarget};
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
        let to_prefix = IpCidr::prefix;
        // One route per prefix: a second one would silently replace the
        // first in the tables (ECMP is one route with several `via`s).
        let mut seen = RoutesSeen::default();
        for (i, r) in route.statics.iter().enumerate() {
            let field = format!("route.static[{i}]");
            let prefix = to_prefix(r.prefix.get_ref());
            if let Some(first) = seen.insert(prefix, RouteOrigin::Static(i)) {
                return Err(loc.error(
                    r.prefix.span(),
                    Some(format!("{field}.prefix")),
                    format!("{prefix} is already routed by {first}: one route per prefix (several next hops go in one `via`)"),
                ));
            }
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
            self.parse_routes_file(&text, &path, res, &mut seen)?;
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
}

/// Where a prefix was first routed (for the duplicate-prefix error).
#[derive(Debug, Clone, Copy)]
pub(in crate::config) enum RouteOrigin {
    Static(usize),
    FileLine(usize),
}

impl std::fmt::Display for RouteOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RouteOrigin::Static(i) => write!(f, "route.static[{i}]"),
            RouteOrigin::FileLine(l) => write!(f, "line {l} of the routes file"),
        }
    }
}

/// The prefixes routed so far, static routes and the routes file alike.
#[derive(Default)]
pub(in crate::config) struct RoutesSeen(
    std::collections::HashMap<crate::tables::prefix::Prefix, RouteOrigin>,
);

impl RoutesSeen {
    /// Records `prefix`; returns where it was routed first if it was.
    pub(in crate::config) fn insert(
        &mut self,
        prefix: crate::tables::prefix::Prefix,
        at: RouteOrigin,
    ) -> Option<RouteOrigin> {
        match self.0.entry(prefix) {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(at);
                None
            }
        }
    }
}
