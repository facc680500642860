//! `[lb]`: the load balancer's services, checked and resolved into the
//! [`LbSpec`] the tables are built from. Everything a Maglev build or the
//! data path would refuse is refused here, with the field's location.
use super::location::{ConfigError, Locator};
use super::schema::*;
use super::Resolved;
use crate::tables::conntrack;
use crate::tables::lb::{
    BackendSpec, DfPolicy, FragPolicy, LbSpec, Method, ServiceKey, ServiceSpec,
};
use crate::tables::maglev::{self, BackendId};
use std::collections::HashSet;
use std::net::IpAddr;

impl Config {
    pub(super) fn resolve_lb(&self, loc: &Locator, res: &mut Resolved) -> Result<(), ConfigError> {
        let Some(lb) = &self.lb else { return Ok(()) };
        let cap = &lb.conntrack_capacity;
        if !(conntrack::MIN_CAPACITY..=conntrack::MAX_CAPACITY).contains(cap.get_ref()) {
            return Err(loc.error(
                cap.span(),
                Some("lb.conntrack_capacity".into()),
                format!(
                    "{} connections per worker is not in {}..={}",
                    cap.get_ref(),
                    conntrack::MIN_CAPACITY,
                    conntrack::MAX_CAPACITY
                ),
            ));
        }
        for (name, t) in [
            ("tcp_timeout_s", &lb.tcp_timeout_s),
            ("udp_timeout_s", &lb.udp_timeout_s),
            ("closing_timeout_s", &lb.closing_timeout_s),
        ] {
            if *t.get_ref() == 0 {
                return Err(loc.error(
                    t.span(),
                    Some(format!("lb.{name}")),
                    "an idle timeout of 0 s would forget every connection at once".into(),
                ));
            }
        }
        let mut keys = HashSet::new();
        let mut services = Vec::new();
        for (i, s) in lb.services.iter().enumerate() {
            let field = |f: &str| Some(format!("lb.service[{i}].{f}"));
            let vip: IpAddr = s.vip.get_ref().parse().map_err(|_| {
                loc.error(
                    s.vip.span(),
                    field("vip"),
                    format!("`{}` is not an IPv4 or IPv6 address", s.vip.get_ref()),
                )
            })?;
            if vip.is_unspecified() || vip.is_multicast() {
                return Err(loc.error(
                    s.vip.span(),
                    field("vip"),
                    format!("{vip} cannot be a virtual address"),
                ));
            }
            let router_owns = |a: IpAddr| {
                self.ports.iter().any(|p| match a {
                    IpAddr::V4(a) => p.ipv4.iter().any(|c| c.get_ref().addr == a),
                    IpAddr::V6(a) => p.ipv6.iter().any(|c| c.get_ref().addr == a),
                })
            };
            if router_owns(vip) {
                return Err(loc.error(
                    s.vip.span(),
                    field("vip"),
                    format!("{vip} is this router's own address: a VIP must be another"),
                ));
            }
            let proto = s.proto.get_ref().0;
            let port = match &s.port {
                Some(p) if *p.get_ref() == 0 => {
                    return Err(loc.error(
                        p.span(),
                        field("port"),
                        "port 0: leave `port` out for a service on every port".into(),
                    ))
                }
                Some(p) if !matches!(proto, 6 | 17 | 132) => {
                    return Err(loc.error(
                        p.span(),
                        field("port"),
                        format!("protocol {proto} has no ports: leave `port` out"),
                    ))
                }
                Some(p) => *p.get_ref(),
                None => 0,
            };
            let key = ServiceKey { vip, proto, port };
            if !keys.insert(key) {
                return Err(loc.error(
                    s.vip.span(),
                    field("vip"),
                    format!("service {key} is configured twice"),
                ));
            }
            let size = &s.table_size;
            let n = *size.get_ref();
            let active = s
                .backends
                .iter()
                .filter(|b| *b.weight.get_ref() > 0)
                .count();
            let size_err = if n > maglev::MAX_SIZE {
                Some(format!(
                    "{n} entries is more than the {} allowed",
                    maglev::MAX_SIZE
                ))
            } else if !maglev::is_prime(n) {
                Some(format!(
                    "{n} is not prime (Maglev needs a prime table size; the next prime is {})",
                    maglev::next_prime(n)
                ))
            } else if active > n as usize {
                Some(format!(
                    "{n} entries for {active} backends: use at least 100 per backend"
                ))
            } else {
                None
            };
            if let Some(msg) = size_err {
                return Err(loc.error(size.span(), field("table_size"), msg));
            }
            if active * 100 > n as usize {
                res.warnings.push(loc.error(
                    size.span(),
                    field("table_size"),
                    format!(
                        "{n} entries for {active} backends: Maglev balances to within 1 % \
                         only with more than 100 entries per backend"
                    ),
                ));
            }
            let method = match s.method {
                LbMethod::Dsr => {
                    if let Some(src) = &s.source {
                        return Err(loc.error(
                            src.span(),
                            field("source"),
                            "`source` is the outer header's, and method \"dsr\" has none".into(),
                        ));
                    }
                    Method::Dsr
                }
                LbMethod::Ipip => {
                    let Some(src) = &s.source else {
                        return Err(loc.error(
                            s.vip.span(),
                            field("source"),
                            "method \"ipip\" needs `source`, the outer header's source address"
                                .into(),
                        ));
                    };
                    let a: IpAddr = src.get_ref().parse().map_err(|_| {
                        loc.error(
                            src.span(),
                            field("source"),
                            format!("`{}` is not an IP address", src.get_ref()),
                        )
                    })?;
                    if a.is_ipv4() != vip.is_ipv4() {
                        return Err(loc.error(
                            src.span(),
                            field("source"),
                            "the outer source must be of the VIP's family".into(),
                        ));
                    }
                    Method::Ipip { source: a }
                }
            };
            let mut backends = Vec::new();
            let mut ids = HashSet::new();
            for (j, b) in s.backends.iter().enumerate() {
                let bfield = |f: &str| Some(format!("lb.service[{i}].backend[{j}].{f}"));
                let addr: IpAddr = b.address.get_ref().parse().map_err(|_| {
                    loc.error(
                        b.address.span(),
                        bfield("address"),
                        format!("`{}` is not an IP address", b.address.get_ref()),
                    )
                })?;
                if addr.is_ipv4() != vip.is_ipv4() {
                    return Err(loc.error(
                        b.address.span(),
                        bfield("address"),
                        "a backend must be of the VIP's family (IPv4 in IPv4, IPv6 in IPv6)".into(),
                    ));
                }
                if addr == vip || router_owns(addr) {
                    return Err(loc.error(
                        b.address.span(),
                        bfield("address"),
                        format!("{addr} is the VIP or this router's own address: no backend"),
                    ));
                }
                let id = BackendId {
                    addr,
                    name: b.name.clone(),
                };
                if !ids.insert(id.clone()) {
                    return Err(loc.error(
                        b.address.span(),
                        bfield("address"),
                        format!("backend {id} is listed twice (give one a `name`)"),
                    ));
                }
                let mut port = None;
                if s.method != LbMethod::Dsr && (b.mac.is_some() || b.port.is_some()) {
                    return Err(loc.error(
                        b.address.span(),
                        bfield(if b.mac.is_some() { "mac" } else { "port" }),
                        "`mac` and `port` are for method \"dsr\"; this service routes to its \
                         backends"
                            .into(),
                    ));
                }
                if s.method == LbMethod::Dsr {
                    if b.mac.is_none() {
                        return Err(loc.error(
                            b.address.span(),
                            bfield("mac"),
                            "method \"dsr\" needs each backend's `mac`".into(),
                        ));
                    }
                    if !b
                        .mac
                        .is_some_and(|m| crate::tables::routing::usable_neighbor_mac(m.0))
                    {
                        return Err(loc.error(
                            b.address.span(),
                            bfield("mac"),
                            "a backend's MAC must be unicast and not zero".into(),
                        ));
                    }
                    port = Some(self.dsr_port(loc, res, b, addr, bfield("port"))?);
                }
                backends.push(BackendSpec {
                    addr,
                    name: b.name.clone(),
                    weight: *b.weight.get_ref(),
                    mac: b.mac.map(|m| m.0),
                    port,
                });
            }
            if backends.len() > maglev::MAX_BACKENDS {
                return Err(loc.error(
                    s.vip.span(),
                    field("backend"),
                    format!(
                        "{} backends: at most {}",
                        backends.len(),
                        maglev::MAX_BACKENDS
                    ),
                ));
            }
            let name = s.name.clone().unwrap_or_else(|| key.to_string());
            // The report, the log and the stats line name services.
            if services.iter().any(|o: &ServiceSpec| o.name == name) {
                return Err(loc.error(
                    s.vip.span(),
                    field("name"),
                    format!("service name `{name}` is used twice"),
                ));
            }
            services.push(ServiceSpec {
                name,
                key,
                method,
                table_size: n,
                conntrack: s.conntrack,
                df: match s.df {
                    LbDf::Inner => DfPolicy::Inner,
                    LbDf::Set => DfPolicy::Set,
                    LbDf::Clear => DfPolicy::Clear,
                },
                fragments: match s.fragments {
                    LbFragments::Drop => FragPolicy::Drop,
                    LbFragments::ThreeTuple => FragPolicy::ThreeTuple,
                },
                backends,
            });
        }
        res.lb = Some(LbSpec {
            services,
            conntrack_capacity: *cap.get_ref(),
            tcp_timeout_s: *lb.tcp_timeout_s.get_ref(),
            udp_timeout_s: *lb.udp_timeout_s.get_ref(),
            closing_timeout_s: *lb.closing_timeout_s.get_ref(),
            icmp_rate: lb.icmp_rate,
        });
        Ok(())
    }

    /// A DSR backend's port: the one named, else the one whose subnet
    /// holds its address.
    fn dsr_port(
        &self,
        loc: &Locator,
        res: &Resolved,
        b: &LbBackendConfig,
        addr: IpAddr,
        field: Option<String>,
    ) -> Result<u16, ConfigError> {
        if let Some(p) = &b.port {
            return res
                .port_index
                .get(p.get_ref())
                .map(|&i| i as u16)
                .ok_or_else(|| {
                    loc.error(
                        p.span(),
                        field.clone(),
                        format!(
                            "unknown port `{}` (ports: {})",
                            p.get_ref(),
                            self.port_names()
                        ),
                    )
                });
        }
        let on_link = self.ports.iter().position(|p| match addr {
            IpAddr::V4(a) => p.ipv4.iter().any(|c| c.get_ref().contains(a)),
            IpAddr::V6(a) => p.ipv6.iter().any(|c| c.get_ref().contains(a)),
        });
        on_link.map(|i| i as u16).ok_or_else(|| {
            loc.error(
                b.address.span(),
                field,
                format!("no port's subnet holds DSR backend {addr}: name its `port`"),
            )
        })
    }
}
