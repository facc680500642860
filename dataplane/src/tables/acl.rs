//! The firewall: an ordered list of rules, first match wins, else a default
//! action.
//!
//! [`AclTable::build`] splits the rules by address family into two rte_acl
//! contexts ([`AclContext`]): a rule with an IPv4 prefix goes to the IPv4
//! context only, one with an IPv6 prefix to the IPv6 context only, one with
//! no prefix to both. Rule `i` of `n` gets priority `n - i` (rte_acl picks the
//! highest) and userdata `i + 1`, so classification yields the index of the
//! first matching rule, or [`AclTable::NONE`]. [`AclTable::classify_naive`]
//! is the same decision by a linear scan: the oracle of the tests and the
//! baseline of the bench.
use super::prefix::Prefix;
use crate::dpdk::acl::{AclContext, AclFamily, AclFields};
use crate::dpdk::DpdkError;
use crate::flow::FlowKey;

/// What a rule (or the default) does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AclAction {
    Allow,
    Deny,
}

/// One firewall rule. Every field that is set must match; ranges are
/// inclusive (`(0, 65535)` is any port). Packets without L4 ports carry port
/// 0, untagged packets VLAN 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclRule {
    pub src: Option<Prefix>,
    pub dst: Option<Prefix>,
    pub proto: Option<u8>,
    pub sport: (u16, u16),
    pub dport: (u16, u16),
    pub vlan: Option<u16>,
    pub action: AclAction,
}

/// Any port.
pub const ANY_PORT: (u16, u16) = (0, u16::MAX);

impl AclRule {
    /// A rule matching every packet.
    pub fn any(action: AclAction) -> AclRule {
        AclRule {
            src: None,
            dst: None,
            proto: None,
            sport: ANY_PORT,
            dport: ANY_PORT,
            vlan: None,
            action,
        }
    }

    /// Whether this rule matches every packet `later` matches, so that
    /// `later`, placed after it, can never match (first match wins). Exact
    /// where it says yes; it may say no for some such pairs (a port range
    /// that holds only port 0 against a protocol without ports, say).
    pub fn covers(&self, later: &AclRule) -> bool {
        let (Ok(fa), Ok(fb)) = (self.family(), later.family()) else {
            return false;
        };
        // A rule tied to one family matches any address of it where it
        // names no prefix; a rule of both families matches any address.
        let of_family = |p: Option<Prefix>, f: Option<bool>| p.or(f.map(Prefix::any));
        let prefix = |a: Option<Prefix>, b: Option<Prefix>| match (a, b) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => a.covers(&b),
        };
        let range = |a: (u16, u16), b: (u16, u16)| a.0 <= b.0 && b.1 <= a.1;
        prefix(of_family(self.src, fa), of_family(later.src, fb))
            && prefix(of_family(self.dst, fa), of_family(later.dst, fb))
            && self.proto.is_none_or(|p| later.proto == Some(p))
            && range(self.sport, later.sport)
            && range(self.dport, later.dport)
            && self.vlan.is_none_or(|v| later.vlan == Some(v))
    }

    /// `Some(is_v6)` when the rule's prefixes tie it to one family, `None`
    /// when it applies to both; an error when src and dst disagree.
    pub fn family(&self) -> Result<Option<bool>, DpdkError> {
        match (self.src, self.dst) {
            (Some(s), Some(d)) if s.is_ipv6() != d.is_ipv6() => Err(DpdkError::Invalid(format!(
                "ACL rule mixes address families: src {s}, dst {d}"
            ))),
            (Some(p), _) | (_, Some(p)) => Ok(Some(p.is_ipv6())),
            (None, None) => Ok(None),
        }
    }

    fn applies_to(&self, is_v6: bool) -> bool {
        let fam = |p: &Option<Prefix>| p.is_none_or(|p| p.is_ipv6() == is_v6);
        fam(&self.src) && fam(&self.dst)
    }

    /// Whether the rule matches `key`, a packet of the given family.
    pub fn matches(&self, key: &FlowKey, is_v6: bool) -> bool {
        let in_range = |v: u16, (lo, hi): (u16, u16)| lo <= v && v <= hi;
        self.applies_to(is_v6)
            && self.proto.is_none_or(|p| key.proto == p)
            && self.vlan.is_none_or(|v| u16::from_be(key.vlan_be) == v)
            && in_range(key.sport(), self.sport)
            && in_range(key.dport(), self.dport)
            && self.src.is_none_or(|p| p.contains_key_bytes(&key.src))
            && self.dst.is_none_or(|p| p.contains_key_bytes(&key.dst))
    }

    fn fields(&self) -> AclFields {
        let pfx = |p: Option<Prefix>| p.map_or(([0; 16], 0), |p| (p.key_bytes(), p.prefix_len()));
        AclFields {
            proto: self.proto,
            vlan: self.vlan.map_or((0, u16::MAX), |v| (v, v)),
            sport: self.sport,
            dport: self.dport,
            src: pfx(self.src),
            dst: pfx(self.dst),
        }
    }

    fn check(&self) -> Result<(), DpdkError> {
        self.family()?;
        for (name, (lo, hi)) in [("sport", self.sport), ("dport", self.dport)] {
            if lo > hi {
                return Err(DpdkError::Invalid(format!(
                    "ACL rule {name} range {lo}-{hi} is empty"
                )));
            }
        }
        Ok(())
    }
}

/// A built firewall: rules, default action and one rte_acl context per
/// family that has rules.
pub struct AclTable {
    rules: Vec<AclRule>,
    default_action: AclAction,
    v4: Option<AclContext>,
    v6: Option<AclContext>,
}

/// How many keys `classify_bulk` sorts by family at a time (stack buffers).
const SPLIT_CHUNK: usize = 64;

/// Stands in for unused slots of the split buffers; never classified.
static BLANK_KEY: FlowKey = FlowKey {
    proto: 0,
    _pad: 0,
    vlan_be: 0,
    sport_be: 0,
    dport_be: 0,
    src: [0; 16],
    dst: [0; 16],
};

impl AclTable {
    /// The rule index of a packet no rule matched.
    pub const NONE: u32 = u32::MAX;

    /// Checks the rules and builds the contexts. An empty rule list is fine:
    /// every packet gets the default action.
    pub fn build(rules: Vec<AclRule>, default_action: AclAction) -> Result<AclTable, DpdkError> {
        let n = rules.len();
        if n > AclContext::MAX_PRIORITY as usize {
            return Err(DpdkError::Invalid(format!(
                "{n} ACL rules: at most {}",
                AclContext::MAX_PRIORITY
            )));
        }
        let mut fams = Vec::with_capacity(n);
        for (i, r) in rules.iter().enumerate() {
            r.check()
                .map_err(|e| DpdkError::Invalid(format!("ACL rule {i}: {e}")))?;
            fams.push(r.family()?);
        }
        let build = |v6: bool| -> Result<Option<AclContext>, DpdkError> {
            let count = fams.iter().filter(|f| f.is_none_or(|f| f == v6)).count();
            if count == 0 {
                return Ok(None);
            }
            let fam = if v6 { AclFamily::Ipv6 } else { AclFamily::Ipv4 };
            let mut ctx = AclContext::new(fam, count as u32)?;
            for (i, r) in rules.iter().enumerate() {
                if fams[i].is_none_or(|f| f == v6) {
                    ctx.add_rule(&r.fields(), (n - i) as i32, i as u32 + 1)?;
                }
            }
            ctx.build()?;
            Ok(Some(ctx))
        };
        let v4 = build(false)?;
        let v6 = build(true)?;
        Ok(AclTable {
            rules,
            default_action,
            v4,
            v6,
        })
    }

    pub fn rules(&self) -> &[AclRule] {
        &self.rules
    }

    pub fn default_action(&self) -> AclAction {
        self.default_action
    }

    /// The action for a classification result (a rule index or `NONE`).
    #[inline]
    pub fn action(&self, rule: u32) -> AclAction {
        self.rules
            .get(rule as usize)
            .map_or(self.default_action, |r| r.action)
    }

    #[inline]
    fn classify_family(ctx: Option<&AclContext>, keys: &[&FlowKey], out: &mut [u32]) {
        assert!(
            out.len() >= keys.len(),
            "classify: output shorter than keys"
        );
        let out = &mut out[..keys.len()];
        match ctx {
            None => out.fill(Self::NONE),
            Some(ctx) => {
                let ok = ctx.classify(keys, out).is_ok();
                // Built contexts always classify; never act on stale output.
                debug_assert!(ok);
                if !ok {
                    out.fill(Self::NONE);
                }
                // userdata is index + 1 and 0 is no match: 0 wraps to NONE.
                for o in out.iter_mut() {
                    *o = o.wrapping_sub(1);
                }
            }
        }
    }

    /// Classifies IPv4 keys: the index of the first matching rule, or `NONE`.
    /// Panics if `out` is shorter than `keys`.
    #[inline]
    pub fn classify_v4(&self, keys: &[&FlowKey], out: &mut [u32]) {
        Self::classify_family(self.v4.as_ref(), keys, out)
    }

    /// Classifies IPv6 keys, like [`AclTable::classify_v4`].
    #[inline]
    pub fn classify_v6(&self, keys: &[&FlowKey], out: &mut [u32]) {
        Self::classify_family(self.v6.as_ref(), keys, out)
    }

    /// Classifies a burst of mixed families (`is_v6[i]` for `keys[i]`):
    /// sorts keys by family into stack buffers, classifies each family in
    /// bulk, and scatters the results back. Panics if `is_v6` or `out` is
    /// shorter than `keys`.
    pub fn classify_bulk(&self, keys: &[&FlowKey], is_v6: &[bool], out: &mut [u32]) {
        assert!(is_v6.len() >= keys.len() && out.len() >= keys.len());
        let mut k4: [&FlowKey; SPLIT_CHUNK] = [&BLANK_KEY; SPLIT_CHUNK];
        let mut k6: [&FlowKey; SPLIT_CHUNK] = [&BLANK_KEY; SPLIT_CHUNK];
        let mut i4 = [0u8; SPLIT_CHUNK];
        let mut i6 = [0u8; SPLIT_CHUNK];
        let mut r = [0u32; SPLIT_CHUNK];
        for base in (0..keys.len()).step_by(SPLIT_CHUNK) {
            let end = (base + SPLIT_CHUNK).min(keys.len());
            let (mut n4, mut n6) = (0, 0);
            for (j, (k, &v6)) in keys[base..end].iter().zip(&is_v6[base..end]).enumerate() {
                if v6 {
                    k6[n6] = k;
                    i6[n6] = j as u8;
                    n6 += 1;
                } else {
                    k4[n4] = k;
                    i4[n4] = j as u8;
                    n4 += 1;
                }
            }
            let out = &mut out[base..end];
            self.classify_v4(&k4[..n4], &mut r[..n4]);
            for (&j, &v) in i4[..n4].iter().zip(&r[..n4]) {
                out[j as usize] = v;
            }
            self.classify_v6(&k6[..n6], &mut r[..n6]);
            for (&j, &v) in i6[..n6].iter().zip(&r[..n6]) {
                out[j as usize] = v;
            }
        }
    }

    /// The first rule matching `key` by a linear scan, or `NONE`.
    pub fn classify_naive(&self, key: &FlowKey, is_v6: bool) -> u32 {
        self.rules
            .iter()
            .position(|r| r.matches(key, is_v6))
            .map_or(Self::NONE, |i| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::testing::test_lock;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn key(proto: u8, vlan: u16, sport: u16, dport: u16, src: [u8; 16], dst: [u8; 16]) -> FlowKey {
        FlowKey {
            proto,
            _pad: 0,
            vlan_be: vlan.to_be(),
            sport_be: sport.to_be(),
            dport_be: dport.to_be(),
            src,
            dst,
        }
    }

    fn a4(a: [u8; 4]) -> [u8; 16] {
        let mut b = [0; 16];
        b[..4].copy_from_slice(&a);
        b
    }

    fn p4(a: [u8; 4], len: u8) -> Option<Prefix> {
        Some(Prefix::v4(Ipv4Addr::from(a), len).unwrap())
    }

    #[test]
    fn first_match_wins_and_default() {
        let _g = test_lock();
        let rules = vec![
            AclRule {
                dst: p4([10, 0, 0, 0], 8),
                proto: Some(6),
                dport: (22, 22),
                ..AclRule::any(AclAction::Deny)
            },
            AclRule {
                dst: p4([10, 0, 0, 0], 8),
                ..AclRule::any(AclAction::Allow)
            },
            AclRule {
                proto: Some(17),
                ..AclRule::any(AclAction::Allow)
            },
        ];
        let t = AclTable::build(rules, AclAction::Deny).unwrap();
        let ssh = key(6, 0, 5555, 22, a4([1, 2, 3, 4]), a4([10, 9, 9, 9]));
        let web = key(6, 0, 5555, 80, a4([1, 2, 3, 4]), a4([10, 9, 9, 9]));
        let dns = key(17, 0, 5555, 53, a4([1, 2, 3, 4]), a4([8, 8, 8, 8]));
        let other = key(6, 0, 5555, 53, a4([1, 2, 3, 4]), a4([8, 8, 8, 8]));
        let mut out = [0u32; 4];
        t.classify_v4(&[&ssh, &web, &dns, &other], &mut out);
        assert_eq!(out, [0, 1, 2, AclTable::NONE]);
        let acts: Vec<_> = out.iter().map(|&r| t.action(r)).collect();
        use AclAction::*;
        assert_eq!(acts, [Deny, Allow, Allow, Deny]);
        // The v6 context only has the family-less rule 2.
        let dns6 = key(17, 0, 1, 53, [0x20; 16], [0x20; 16]);
        let ssh6 = key(6, 0, 1, 22, [0x20; 16], [0x20; 16]);
        t.classify_v6(&[&dns6, &ssh6], &mut out[..2]);
        assert_eq!(out[..2], [2, AclTable::NONE]);
    }

    #[test]
    fn empty_rule_set_uses_default() {
        let _g = test_lock();
        let t = AclTable::build(Vec::new(), AclAction::Allow).unwrap();
        let k = FlowKey::default();
        let mut out = [0u32; 2];
        t.classify_bulk(&[&k, &k], &[false, true], &mut out);
        assert_eq!(out, [AclTable::NONE; 2]);
        assert_eq!(t.action(out[0]), AclAction::Allow);
        assert_eq!(t.classify_naive(&k, false), AclTable::NONE);
    }

    #[test]
    fn bad_rules_are_errors() {
        let _g = test_lock();
        let mixed = AclRule {
            src: p4([10, 0, 0, 0], 8),
            dst: Some(Prefix::v6(Ipv6Addr::LOCALHOST, 128).unwrap()),
            ..AclRule::any(AclAction::Allow)
        };
        assert!(AclTable::build(vec![mixed], AclAction::Deny).is_err());
        let backwards = AclRule {
            sport: (100, 99),
            ..AclRule::any(AclAction::Allow)
        };
        let e = AclTable::build(
            vec![AclRule::any(AclAction::Deny), backwards],
            AclAction::Deny,
        );
        assert!(e.err().unwrap().to_string().contains("rule 1"));
    }

    // --- proptest: rte_acl against the linear first-match scan ------------

    /// Address pools shared by rules and packets so that packets often hit.
    const BASES4: [[u8; 4]; 4] = [[10, 0, 0, 0], [10, 1, 0, 0], [192, 168, 1, 0], [0, 0, 0, 0]];
    const BASES6: [u128; 3] = [
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        0x2001_0db8_00aa_0000_0000_0000_0000_0000,
        0xfd00_0000_0000_0000_0000_0000_0000_0000,
    ];
    const PORTS: [u16; 7] = [0, 22, 53, 80, 443, 1024, 65535];

    fn prefix(v6: bool) -> impl Strategy<Value = Prefix> {
        let len = prop_oneof![
            Just(0u8),
            1u8..=128,
            Just(8),
            Just(16),
            Just(24),
            Just(32),
            Just(64),
            Just(128)
        ];
        (0usize..4, any::<u128>(), len, any::<bool>()).prop_map(move |(b, rnd, len, random)| {
            if v6 {
                let base = if random {
                    rnd
                } else {
                    BASES6[b % 3] | (rnd & 0xffff_ffff)
                };
                Prefix::v6(Ipv6Addr::from(base), len).unwrap()
            } else {
                let base = if random {
                    rnd as u32
                } else {
                    u32::from_be_bytes(BASES4[b]) | (rnd as u32 & 0xff)
                };
                Prefix::v4(Ipv4Addr::from(base), len % 33).unwrap()
            }
        })
    }

    fn ports() -> impl Strategy<Value = (u16, u16)> {
        prop_oneof![
            3 => Just(ANY_PORT),
            3 => prop::sample::select(&PORTS[..]).prop_map(|p| (p, p)),
            2 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| (a.min(b), a.max(b))),
            1 => Just((1024, 65535)),
            1 => Just((0, 1023)),
        ]
    }

    #[test]
    fn covers_names_the_rules_an_earlier_one_hides() {
        let r = |src, dst, proto, dport| AclRule {
            src,
            dst,
            proto,
            sport: ANY_PORT,
            dport,
            vlan: None,
            action: AclAction::Deny,
        };
        let v6 = |s: &str, len| Some(Prefix::v6(s.parse().unwrap(), len).unwrap());
        let ssh = r(p4([10, 9, 0, 0], 16), None, Some(6), (22, 22));
        // Wider prefix, any protocol, a range around the port: covers.
        assert!(r(p4([10, 0, 0, 0], 8), None, None, (0, 1024)).covers(&ssh));
        assert!(AclRule::any(AclAction::Allow).covers(&ssh));
        // An IPv4 rule without a source covers one with any IPv4 source;
        // not one of both families (no prefix at all).
        assert!(r(None, p4([0, 0, 0, 0], 0), None, ANY_PORT).covers(&ssh));
        assert!(
            !r(p4([0, 0, 0, 0], 0), None, None, ANY_PORT).covers(&AclRule::any(AclAction::Deny))
        );
        // Narrower in one field, another family, another protocol: no.
        assert!(!r(p4([10, 9, 1, 0], 24), None, Some(6), (22, 22)).covers(&ssh));
        assert!(!r(v6("2001:db8::", 32), None, None, ANY_PORT).covers(&ssh));
        assert!(!r(p4([10, 9, 0, 0], 16), None, Some(17), (22, 22)).covers(&ssh));
        assert!(!r(p4([10, 9, 0, 0], 16), None, Some(6), (23, 80)).covers(&ssh));
        assert!(ssh.covers(&ssh));
    }

    fn rule() -> impl Strategy<Value = AclRule> {
        // 0: IPv4 prefixes, 1: IPv6 prefixes (each src/dst may be absent).
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_flat_map(|(v6, has_src, has_dst)| {
            (
                prop::option::weighted(if has_src { 0.9 } else { 0.1 }, prefix(v6)),
                prop::option::weighted(if has_dst { 0.9 } else { 0.1 }, prefix(v6)),
                prop::option::of(prop::sample::select(&[1u8, 6, 17][..])),
                ports(),
                ports(),
                prop::option::weighted(0.3, 0u16..4),
                any::<bool>(),
            )
                .prop_map(|(src, dst, proto, sport, dport, vlan, deny)| AclRule {
                    src,
                    dst,
                    proto,
                    sport,
                    dport,
                    vlan,
                    action: if deny {
                        AclAction::Deny
                    } else {
                        AclAction::Allow
                    },
                })
        })
    }

    /// A packet near `rule` (inside its prefixes and ranges), perturbed by
    /// `rnd`: sometimes just outside one field, sometimes random.
    fn packet_near(rule: Option<&AclRule>, v6: bool, rnd: u128) -> FlowKey {
        let r16 = |s: u32| (rnd >> s) as u16;
        let addr = |p: Option<Prefix>, s: u32| -> [u8; 16] {
            let host = rnd.rotate_left(s);
            match p {
                Some(p) if p.is_ipv6() == v6 => {
                    let len = u32::from(p.prefix_len());
                    if v6 {
                        let net = u128::from_be_bytes(p.key_bytes());
                        let hm = if len == 0 {
                            u128::MAX
                        } else {
                            u128::MAX.checked_shr(len).unwrap_or(0)
                        };
                        (net | (host & hm)).to_be_bytes()
                    } else {
                        let net = u32::from_be_bytes(p.key_bytes()[..4].try_into().unwrap());
                        let hm = u32::MAX.checked_shr(len).unwrap_or(0);
                        a4((net | (host as u32 & hm)).to_be_bytes())
                    }
                }
                _ if v6 => (BASES6[(host % 3) as usize] | (host & 0xffff)).to_be_bytes(),
                _ => {
                    let b = u32::from_be_bytes(BASES4[(host % 4) as usize]) | (host as u32 & 0x1ff);
                    a4(b.to_be_bytes())
                }
            }
        };
        let port = |range: (u16, u16), s: u32| -> u16 {
            let (lo, hi) = range;
            match r16(s) % 4 {
                0 => lo,
                1 => hi,
                2 => lo + r16(s + 16) % (hi - lo).saturating_add(1).max(1),
                _ => PORTS[(r16(s + 16) % 7) as usize],
            }
        };
        let any = AclRule::any(AclAction::Allow);
        let r = rule.unwrap_or(&any);
        let mut k = key(
            r.proto.unwrap_or(PORTS[(rnd % 7) as usize] as u8),
            r.vlan.unwrap_or(r16(40) % 3),
            port(r.sport, 48),
            port(r.dport, 64),
            addr(r.src, 80),
            addr(r.dst, 96),
        );
        // Perturb one field about a third of the time.
        match (rnd >> 120) % 12 {
            0 => k.proto ^= 1 << (rnd % 8),
            1 => k.vlan_be = (u16::from_be(k.vlan_be) + 1).to_be(),
            2 => k.sport_be = k.sport().wrapping_add(1).to_be(),
            3 => k.dport_be = k.dport().wrapping_sub(1).to_be(),
            4 if v6 => k.src[(rnd % 16) as usize] ^= 1 << (rnd % 8),
            4 => k.src[(rnd % 4) as usize] ^= 1 << (rnd % 8),
            _ => {}
        }
        k
    }

    fn check_family(
        rules: Vec<AclRule>,
        seeds: &[(prop::sample::Index, u128, bool)],
        v6: bool,
    ) -> Result<(), TestCaseError> {
        let _g = test_lock();
        let t = AclTable::build(rules, AclAction::Deny)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let keys: Vec<FlowKey> = seeds
            .iter()
            .map(|(i, rnd, targeted)| {
                let r = (*targeted && !t.rules().is_empty())
                    .then(|| &t.rules()[i.index(t.rules().len())]);
                packet_near(r, v6, *rnd)
            })
            .collect();
        let refs: Vec<&FlowKey> = keys.iter().collect();
        let mut out = vec![0u32; refs.len()];
        if v6 {
            t.classify_v6(&refs, &mut out);
        } else {
            t.classify_v4(&refs, &mut out);
        }
        for (k, &got) in keys.iter().zip(&out) {
            let want = t.classify_naive(k, v6);
            prop_assert_eq!(got, want, "key {:?}\nrules {:#?}", k, t.rules());
        }
        // The mixed-family entry point agrees too.
        let fam = vec![v6; refs.len()];
        let mut mixed = vec![0u32; refs.len()];
        t.classify_bulk(&refs, &fam, &mut mixed);
        prop_assert_eq!(mixed, out);
        Ok(())
    }

    fn seeds() -> impl Strategy<Value = Vec<(prop::sample::Index, u128, bool)>> {
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                any::<u128>(),
                prop::bool::weighted(0.8),
            ),
            1..100,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::tables::testing::proptest_cases(48)))]

        /// A rule that `covers` another matches every packet the other
        /// matches; the earlier rule is the later one widened field by field
        /// (or any rule at all, for the pairs it does not cover).
        #[test]
        fn a_covering_rule_matches_all_the_covered_one_does(
            later in rule(),
            widen in any::<[bool; 7]>(),
            shorter in (0u8..=128, 0u8..=128),
            other in rule(),
            unrelated in any::<bool>(),
            packets in prop::collection::vec((any::<u128>(), any::<bool>()), 1..40),
        ) {
            let shorten = |p: Option<Prefix>, by: u8, keep: bool| match p {
                Some(p) if !keep => Some(Prefix::new(p.addr(), p.prefix_len().saturating_sub(by)).unwrap()),
                p => p,
            };
            let earlier = if unrelated {
                other
            } else {
                AclRule {
                    src: if widen[0] { None } else { shorten(later.src, shorter.0, widen[5]) },
                    dst: if widen[1] { None } else { shorten(later.dst, shorter.1, widen[6]) },
                    proto: if widen[2] { None } else { later.proto },
                    sport: if widen[3] { ANY_PORT } else { later.sport },
                    dport: later.dport,
                    vlan: if widen[4] { None } else { later.vlan },
                    action: later.action,
                }
            };
            if earlier.covers(&later) {
                for &(rnd, v6) in &packets {
                    let k = packet_near(Some(&later), v6, rnd);
                    if later.matches(&k, v6) {
                        prop_assert!(earlier.matches(&k, v6), "{earlier:?} covers {later:?} but misses {k:?}");
                    }
                }
            }
        }

        #[test]
        fn acl_v4_matches_linear_scan(rules in prop::collection::vec(rule(), 0..40), seeds in seeds()) {
            check_family(rules, &seeds, false)?;
        }

        #[test]
        fn acl_v6_matches_linear_scan(rules in prop::collection::vec(rule(), 0..40), seeds in seeds()) {
            check_family(rules, &seeds, true)?;
        }

        /// The ACL stage with a flow cache (tiny, so that sets collide and
        /// evict) gives every packet the same verdict and every rule the same
        /// hit count as the stage without one, over bursts that repeat flows;
        /// and both agree with the linear scan.
        #[test]
        fn flow_cache_never_changes_a_verdict(
            rules in prop::collection::vec(rule(), 0..30),
            flows in prop::collection::vec((any::<u128>(), any::<bool>()), 1..24),
            picks in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..200),
            entries in 1usize..20,
        ) {
            use crate::pipeline::acl::AclStage;
            use crate::pipeline::{new_meta_burst, DropReason, StageCtx, Verdict, L3};
            use crate::stats::WorkerCounters;
            let _g = test_lock();
            let t = std::sync::Arc::new(AclTable::build(rules, AclAction::Deny).unwrap());
            let keys: Vec<(FlowKey, bool)> = flows
                .iter()
                .map(|&(rnd, v6)| (packet_near(t.rules().get(rnd as usize % 4), v6, rnd), v6))
                .collect();
            let mut cached = AclStage::new(t.clone(), entries);
            let mut plain = AclStage::new(t.clone(), 0);
            let wc = WorkerCounters::default();
            let ctx = StageCtx::test(&wc);
            for burst in picks.chunks(crate::burst::BURST_SIZE) {
                let mut meta = new_meta_burst();
                for (m, (i, kind)) in meta.iter_mut().zip(burst) {
                    let (k, v6) = keys[i.index(keys.len())];
                    m.key = k;
                    m.l3 = if v6 { L3::Ipv6 } else { L3::Ipv4 };
                    // Some packets are not the ACL's business.
                    match kind {
                        0 => m.l3 = L3::Arp,
                        1 => m.verdict = Verdict::Tx(1),
                        _ => {}
                    }
                }
                let mut meta2 = meta;
                cached.process(burst.len(), &mut meta, &ctx);
                plain.process(burst.len(), &mut meta2, &ctx);
                for (j, (a, b)) in meta.iter().zip(&meta2).take(burst.len()).enumerate() {
                    prop_assert_eq!(a.verdict, b.verdict, "packet {}", j);
                    if matches!(a.l3, L3::Ipv4 | L3::Ipv6) && matches!(burst[j].1, 2..) {
                        let want = t.action(t.classify_naive(&a.key, a.l3 == L3::Ipv6));
                        prop_assert_eq!(a.verdict == Verdict::Drop(DropReason::AclDeny), want == AclAction::Deny);
                    }
                }
            }
            let (c, p) = (cached.acl_counters(), plain.acl_counters());
            let hits = |c: &crate::pipeline::acl::AclCounters| c.rules.iter().map(|h| h.get()).collect::<Vec<_>>();
            prop_assert_eq!(hits(&c), hits(&p));
            let classified: u64 = hits(&p).iter().sum();
            prop_assert_eq!(c.cache_hits.get() + c.cache_misses.get(), classified);
            prop_assert_eq!(p.cache_hits.get() + p.cache_misses.get(), 0);
        }

        #[test]
        fn classify_bulk_mixed(rules in prop::collection::vec(rule(), 0..20), seeds in prop::collection::vec((any::<u128>(), any::<bool>()), 0..150)) {
            let _g = test_lock();
            let t = AclTable::build(rules, AclAction::Allow).unwrap();
            let keys: Vec<FlowKey> = seeds.iter().map(|&(rnd, v6)| packet_near(t.rules().first(), v6, rnd)).collect();
            let refs: Vec<&FlowKey> = keys.iter().collect();
            let fam: Vec<bool> = seeds.iter().map(|s| s.1).collect();
            let mut out = vec![0u32; refs.len()];
            t.classify_bulk(&refs, &fam, &mut out);
            for ((k, &v6), &got) in keys.iter().zip(&fam).zip(&out) {
                prop_assert_eq!(got, t.classify_naive(k, v6));
            }
        }
    }
}
