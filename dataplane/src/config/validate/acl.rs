//! `[acl]`: rules into the classifier's form.
use crate::config::location::Locator;
use crate::config::*;
use toml::Spanned;

impl Config {
    pub(in crate::config) fn resolve_acl(
        &self,
        loc: &Locator,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        use crate::tables::{AclAction, AclRule};
        let Some(acl) = &self.acl else { return Ok(()) };
        let acl = acl.get_ref();
        let action = |a: Action| match a {
            Action::Allow => AclAction::Allow,
            Action::Deny => AclAction::Deny,
        };
        let prefix = IpCidr::prefix;
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
            // A portless packet's key holds no ports (zeros), so a range
            // on such a protocol only filters by accident, or never matches.
            if let Some(Proto(p)) = r.proto {
                for (name, ports) in [("sport", &r.sport), ("dport", &r.dport)] {
                    if let (false, Some(ports)) = (crate::wire::has_ports(p), ports) {
                        return Err(loc.error(
                            ports.span(),
                            field(name),
                            format!(
                                "protocol {p} has no ports, so a port range never matches it \
                                 (ports are matched for tcp, udp and sctp)"
                            ),
                        ));
                    }
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
}
