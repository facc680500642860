//! The routes file: one route per line, `PREFIX VIA[,VIA...]` or
//! `PREFIX dev PORT`, `#` comments. Errors name the file's line.
use super::*;
use std::collections::HashMap;
use std::path::Path;

impl Config {
    /// Routes file: `PREFIX VIA[,VIA...]` or `PREFIX dev PORT` per line.
    pub(super) fn parse_routes_file(
        &self,
        text: &str,
        path: &Path,
        res: &mut Resolved,
        seen: &mut super::validate::route::RoutesSeen,
    ) -> Result<(), ConfigError> {
        use super::validate::route::RouteOrigin;
        use crate::tables::routing::{RouteSpec, RouteTarget};
        let file = path.display().to_string();
        let err = |line: usize, field: &str, message: String| ConfigError::Invalid {
            file: file.clone(),
            line,
            column: 1,
            field: field.into(),
            message,
        };
        // Next hops repeat across many routes: resolve each address once.
        let mut port_of: HashMap<std::net::IpAddr, u16> = HashMap::new();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let l = raw.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let mut it = l.split_whitespace();
            let p = it.next().unwrap_or("");
            let cidr: IpCidr = p.parse().map_err(|e: String| err(line, "prefix", e))?;
            let prefix = cidr.prefix();
            if let Some(first) = seen.insert(prefix, RouteOrigin::FileLine(line)) {
                return Err(err(
                    line,
                    "prefix",
                    format!("{prefix} is already routed by {first}: one route per prefix (several next hops go in one `via`, comma-separated)"),
                ));
            }
            let target = match (it.next(), it.next()) {
                (Some("dev"), Some(port)) if it.clone().next().is_none() => {
                    match res.port_index.get(port) {
                        Some(&pi) => RouteTarget::Port(pi as u16),
                        None => return Err(err(line, "dev", format!("unknown port `{port}`"))),
                    }
                }
                (Some(via), None) => {
                    let mut hops = Vec::new();
                    for v in via.split(',') {
                        let ip: std::net::IpAddr = v.parse().map_err(|_| {
                            err(line, "via", format!("invalid next-hop address `{v}`"))
                        })?;
                        if ip.is_ipv6() != prefix.is_ipv6() {
                            return Err(err(
                                line,
                                "via",
                                format!("next hop {ip} is not of the prefix's address family"),
                            ));
                        }
                        let p = match port_of.get(&ip) {
                            Some(&p) => p,
                            None => {
                                let on = |ps: &PortSection| match ip {
                                    std::net::IpAddr::V4(a) => {
                                        ps.ipv4.iter().any(|c| c.get_ref().contains(a))
                                    }
                                    std::net::IpAddr::V6(a) => {
                                        ps.ipv6.iter().any(|c| c.get_ref().contains(a))
                                    }
                                };
                                let p = self.ports.iter().position(on).ok_or_else(|| {
                                    err(line, "via", format!("{ip} is on no port's subnet"))
                                })? as u16;
                                if let Some(why) = self.no_station(ip) {
                                    return Err(err(line, "via", why));
                                }
                                port_of.insert(ip, p);
                                p
                            }
                        };
                        hops.push((ip, p));
                    }
                    RouteTarget::Via(hops)
                }
                _ => {
                    return Err(err(
                        line,
                        "route",
                        format!("expected `PREFIX VIA[,VIA...]` or `PREFIX dev PORT`, got `{l}`"),
                    ))
                }
            };
            res.routes.push(RouteSpec { prefix, target });
        }
        Ok(())
    }
}
