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
        let first = res.acl_rules.len();
        for (i, r) in acl.rule.iter().enumerate() {
            let r = r.get_ref();
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
        warn_shadowed(loc, &acl.rule, &res.acl_rules[first..], &mut res.warnings);
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

/// Rule lists up to this long are checked for rules an earlier one hides
/// (every pair is compared: a longer, generated list is left alone).
const SHADOW_CHECK_MAX: usize = 10_000;

/// Hidden rules warned about one by one; the rest in one summing warning.
const SHADOW_WARNINGS: usize = 10;

/// Warns of each rule that can never match because an earlier one matches
/// every packet it does (first match wins): a rule in the wrong place, or
/// one left over. Not an error: the list still means what it says.
fn warn_shadowed(
    loc: &Locator,
    spans: &[Spanned<AclRuleConfig>],
    rules: &[crate::tables::AclRule],
    warnings: &mut Vec<ConfigError>,
) {
    if rules.len() > SHADOW_CHECK_MAX {
        return;
    }
    let hidden: Vec<(usize, usize)> = rules
        .iter()
        .enumerate()
        .filter_map(|(j, later)| Some((rules[..j].iter().position(|r| r.covers(later))?, j)))
        .collect();
    for &(i, j) in hidden.iter().take(SHADOW_WARNINGS) {
        let same = if rules[i].action == rules[j].action {
            "with the same action"
        } else {
            "with the other action"
        };
        warnings.push(loc.error(
            spans[j].span(),
            Some(format!("acl.rule[{j}]")),
            format!(
                "this rule never matches: acl.rule[{i}] (line {}) matches every packet it does, \
                 {same}, and comes first",
                loc.line_of(&spans[i].span())
            ),
        ));
    }
    if let Some(&(_, j)) = hidden.get(SHADOW_WARNINGS) {
        warnings.push(loc.error(
            spans[j].span(),
            Some(format!("acl.rule[{j}]")),
            format!(
                "{} more rules never match, from this one on (each hidden by an earlier rule)",
                hidden.len() - SHADOW_WARNINGS
            ),
        ));
    }
}
