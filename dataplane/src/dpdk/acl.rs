//! Packet classification with `rte_acl`, straight on [`FlowKey`] memory.
//!
//! An [`AclContext`] holds the rules of one address family, builds them once
//! into rte_acl's multi-bit tries and then classifies bursts of keys through
//! `&self` (read-only, any number of threads). Rules carry a priority (the
//! highest matching one wins) and a non-zero userdata that classification
//! returns; 0 means no rule matched. One category is used.
//!
//! # Field layout
//! rte_acl reads its input straight from each key: the first field must be
//! one byte (it is read alone), every later group of fields ("input index")
//! is read as one 4-byte word and must cover exactly 4 consecutive bytes.
//! On [`FlowKey`] (`proto@0, pad@1, vlan@2, sport@4, dport@6, src@8,
//! dst@24`):
//!
//! | input | bytes  | fields                                          |
//! |-------|--------|-------------------------------------------------|
//! | 0     | 0      | proto (bitmask)                                 |
//! | 1     | 0..4   | proto+pad (always wildcard), vlan (range)       |
//! | 2     | 4..8   | sport, dport (ranges)                           |
//! | 3..   | 8..    | src: 1 (IPv4) or 4 (IPv6) 32-bit prefix words   |
//! | ..    | 24..   | dst: likewise                                   |
//!
//! The VLAN id has no 2-byte neighbour to share a word with except the
//! proto/pad pair, so that pair is read again as a wildcard field. Values in
//! rules are in host order; rte_acl compares them with the network-order
//! bytes of the key, most significant byte first.
//!
//! # Safety invariant
//! rte_acl reads 4 bytes at each input's offset of every key pointer, so a
//! key must extend to at least the end of the last field: byte 28 for IPv4,
//! byte 40 for IPv6. `FlowKey` is 40 bytes (asserted below), and keys are
//! passed as `&FlowKey`, so every read stays inside a live key.
use super::error::{self, DpdkError};
use super::lpm::unique_name;
use crate::flow::FlowKey;
use crate::tables::prefix::mask6;
use dpdk_sys::{rte_acl_field, rte_acl_field_def, rte_acl_field_types, rte_acl_rule_data};
use std::ptr::NonNull;

const _: () = assert!(std::mem::size_of::<FlowKey>() == 40);
const _: () = assert!(FlowKey::OFF_DST as usize + 16 <= std::mem::size_of::<FlowKey>());

/// Fields of an IPv4 rule: proto, proto+pad wildcard, vlan, sport, dport,
/// src, dst.
const V4_FIELDS: usize = 7;
/// Fields of an IPv6 rule: as IPv4, with src and dst as 4 words each.
const V6_FIELDS: usize = 13;

/// A rule as `RTE_ACL_RULE_DEF(name, N)` lays it out: the rule data, then N
/// fields (8-byte aligned, so the fields start at offset 16).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawRule<const N: usize> {
    data: rte_acl_rule_data,
    field: [rte_acl_field; N],
}

const _: () = assert!(std::mem::size_of::<rte_acl_rule_data>() == 12);
const _: () = assert!(std::mem::size_of::<rte_acl_field>() == 16);
const _: () = assert!(std::mem::size_of::<RawRule<V4_FIELDS>>() == 16 + 16 * V4_FIELDS);
const _: () = assert!(std::mem::size_of::<RawRule<V6_FIELDS>>() == 16 + 16 * V6_FIELDS);
const _: () = assert!(std::mem::offset_of!(RawRule<V4_FIELDS>, field) == 16);

/// Address family of a context (and of the keys it classifies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AclFamily {
    Ipv4,
    Ipv6,
}

impl AclFamily {
    fn fields(self) -> usize {
        match self {
            AclFamily::Ipv4 => V4_FIELDS,
            AclFamily::Ipv6 => V6_FIELDS,
        }
    }

    fn addr_bits(self) -> u8 {
        match self {
            AclFamily::Ipv4 => 32,
            AclFamily::Ipv6 => 128,
        }
    }

    /// Bytes of a key rte_acl reads (end of the last field).
    pub fn key_len(self) -> usize {
        match self {
            AclFamily::Ipv4 => FlowKey::OFF_DST as usize + 4,
            AclFamily::Ipv6 => FlowKey::OFF_DST as usize + 16,
        }
    }
}

/// What one rule matches, in host order. Ranges are inclusive; a wildcard is
/// the full range or a zero-length prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclFields {
    /// IP protocol; `None` matches any.
    pub proto: Option<u8>,
    /// VLAN id range (0 is untagged).
    pub vlan: (u16, u16),
    pub sport: (u16, u16),
    pub dport: (u16, u16),
    /// Source prefix in `FlowKey` layout (IPv4 in the first 4 bytes) and its
    /// length.
    pub src: ([u8; 16], u8),
    pub dst: ([u8; 16], u8),
}

impl AclFields {
    /// Matches every packet.
    pub const ANY: AclFields = AclFields {
        proto: None,
        vlan: (0, u16::MAX),
        sport: (0, u16::MAX),
        dport: (0, u16::MAX),
        src: ([0; 16], 0),
        dst: ([0; 16], 0),
    };
}

fn def(type_: u32, size: u8, field_index: u8, input_index: u8, offset: u32) -> rte_acl_field_def {
    rte_acl_field_def {
        type_: type_ as u8,
        size,
        field_index,
        input_index,
        offset,
    }
}

/// Field definitions for `family`, in field-index order (see the module doc).
fn field_defs(family: AclFamily) -> Vec<rte_acl_field_def> {
    use dpdk_sys::RTE_ACL_FIELD_TYPE_RANGE as RANGE;
    use dpdk_sys::{RTE_ACL_FIELD_TYPE_BITMASK as BITMASK, RTE_ACL_FIELD_TYPE_MASK as MASK};
    let mut d = vec![
        def(BITMASK, 1, 0, 0, FlowKey::OFF_PROTO),
        def(MASK, 2, 1, 1, FlowKey::OFF_PROTO),
        def(RANGE, 2, 2, 1, FlowKey::OFF_VLAN),
        def(RANGE, 2, 3, 2, FlowKey::OFF_SPORT),
        def(RANGE, 2, 4, 2, FlowKey::OFF_DPORT),
    ];
    let words = match family {
        AclFamily::Ipv4 => 1u8,
        AclFamily::Ipv6 => 4,
    };
    for (base, off) in [(0u8, FlowKey::OFF_SRC), (words, FlowKey::OFF_DST)] {
        for w in 0..words {
            let i = 5 + base + w;
            d.push(def(MASK, 4, i, i - 2, off + 4 * u32::from(w)));
        }
    }
    debug_assert_eq!(d.len(), family.fields());
    d
}

const _: () = assert!(
    cfg!(target_endian = "little"),
    "acl_field sets the narrow union members through the u64 one"
);

fn acl_field(value: u64, mask_range: u64) -> rte_acl_field {
    // Little-endian: writing the u64 member sets the u8/u16/u32 members too,
    // whichever of them rte_acl reads for the field's size.
    rte_acl_field {
        value: rte_acl_field_types { u64_: value },
        mask_range: rte_acl_field_types { u64_: mask_range },
    }
}

/// Encodes `f` into the N fields of `family` (field-index order).
fn encode<const N: usize>(family: AclFamily, f: &AclFields, data: rte_acl_rule_data) -> RawRule<N> {
    let mut field = [acl_field(0, 0); N];
    field[0] = match f.proto {
        Some(p) => acl_field(u64::from(p), 0xff),
        None => acl_field(0, 0),
    };
    field[1] = acl_field(0, 0); // proto+pad: always wildcard
    field[2] = acl_field(u64::from(f.vlan.0), u64::from(f.vlan.1));
    field[3] = acl_field(u64::from(f.sport.0), u64::from(f.sport.1));
    field[4] = acl_field(u64::from(f.dport.0), u64::from(f.dport.1));
    let words = N - 5;
    for (k, (addr, len)) in [f.src, f.dst].into_iter().enumerate() {
        let addr = mask6(addr, len);
        for w in 0..words / 2 {
            let v = u32::from_be_bytes([
                addr[4 * w],
                addr[4 * w + 1],
                addr[4 * w + 2],
                addr[4 * w + 3],
            ]);
            let bits = i32::from(len) - 32 * w as i32;
            field[5 + k * (words / 2) + w] = acl_field(u64::from(v), bits.clamp(0, 32) as u64);
        }
    }
    debug_assert_eq!(N, family.fields());
    RawRule { data, field }
}

/// An rte_acl context for one address family: add rules, build once, then
/// classify.
pub struct AclContext {
    raw: NonNull<dpdk_sys::rte_acl_ctx>,
    family: AclFamily,
    max_rules: u32,
    rules: u32,
    built: bool,
}

// SAFETY: the context is owned by this value alone. `classify` (`&self`) only
// reads the built tries (rte_acl_classify is documented safe to call from
// many threads); adding rules and building need `&mut self`.
unsafe impl Send for AclContext {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for AclContext {}

impl AclContext {
    /// Highest rule priority rte_acl accepts (lowest is 1).
    pub const MAX_PRIORITY: i32 = dpdk_sys::RTE_ACL_MAX_PRIORITY as i32;

    /// An empty context with room for `max_rules` rules.
    pub fn new(family: AclFamily, max_rules: u32) -> Result<AclContext, DpdkError> {
        if max_rules == 0 || max_rules > Self::MAX_PRIORITY as u32 {
            return Err(DpdkError::Invalid(format!(
                "rte_acl_create: max_rules {max_rules} out of range 1..={}",
                Self::MAX_PRIORITY
            )));
        }
        let name = unique_name(match family {
            AclFamily::Ipv4 => "acl4",
            AclFamily::Ipv6 => "acl6",
        });
        // rte_acl_create hands back an existing context of the same name
        // instead of failing; owning (and freeing) someone else's would be a
        // double free, so refuse.
        // SAFETY: name is a valid C string; the call only reads the list.
        if !unsafe { dpdk_sys::rte_acl_find_existing(name.as_ptr()) }.is_null() {
            return Err(DpdkError::Invalid(format!(
                "rte_acl_create: context {name:?} already exists"
            )));
        }
        let rule_size = match family {
            AclFamily::Ipv4 => std::mem::size_of::<RawRule<V4_FIELDS>>(),
            AclFamily::Ipv6 => std::mem::size_of::<RawRule<V6_FIELDS>>(),
        };
        let param = dpdk_sys::rte_acl_param {
            name: name.as_ptr(),
            socket_id: -1, // SOCKET_ID_ANY
            rule_size: rule_size as u32,
            max_rule_num: max_rules,
        };
        // SAFETY: param and the name it points to outlive the call; DPDK
        // copies the name. NULL sets rte_errno.
        let p = unsafe { dpdk_sys::rte_acl_create(&param) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_acl_create"))?;
        Ok(AclContext {
            raw,
            family,
            max_rules,
            rules: 0,
            built: false,
        })
    }

    pub fn family(&self) -> AclFamily {
        self.family
    }

    /// Rules added so far.
    pub fn len(&self) -> usize {
        self.rules as usize
    }

    pub fn is_empty(&self) -> bool {
        self.rules == 0
    }

    pub fn is_built(&self) -> bool {
        self.built
    }

    /// Adds a rule. `priority` in `1..=MAX_PRIORITY` (the highest matching
    /// rule wins); `userdata` non-zero (it is what classification returns).
    /// Fails after [`AclContext::build`].
    pub fn add_rule(
        &mut self,
        f: &AclFields,
        priority: i32,
        userdata: u32,
    ) -> Result<(), DpdkError> {
        if self.built {
            return Err(DpdkError::Invalid(
                "rte_acl_add_rules: context already built".into(),
            ));
        }
        if !(1..=Self::MAX_PRIORITY).contains(&priority) {
            return Err(DpdkError::Invalid(format!(
                "rte_acl_add_rules: priority {priority} out of range 1..={}",
                Self::MAX_PRIORITY
            )));
        }
        if userdata == 0 {
            return Err(DpdkError::Invalid(
                "rte_acl_add_rules: userdata 0 means no match".into(),
            ));
        }
        let bits = self.family.addr_bits();
        if f.src.1 > bits || f.dst.1 > bits {
            return Err(DpdkError::Invalid(format!(
                "rte_acl_add_rules: prefix length {} > {bits}",
                f.src.1.max(f.dst.1)
            )));
        }
        for (name, (lo, hi)) in [("vlan", f.vlan), ("sport", f.sport), ("dport", f.dport)] {
            if lo > hi {
                return Err(DpdkError::Invalid(format!(
                    "rte_acl_add_rules: {name} range {lo}..={hi} is empty"
                )));
            }
        }
        if self.rules >= self.max_rules {
            return Err(error::from_errno("rte_acl_add_rules", libc::ENOMEM));
        }
        let data = rte_acl_rule_data {
            category_mask: 1,
            priority,
            userdata,
        };
        let rc = match self.family {
            AclFamily::Ipv4 => {
                let r: RawRule<V4_FIELDS> = encode(self.family, f, data);
                // SAFETY: r is laid out as RTE_ACL_RULE_DEF(, V4_FIELDS) and the
                // context was created with that rule size; DPDK copies it.
                unsafe {
                    dpdk_sys::rte_acl_add_rules(
                        self.raw.as_ptr(),
                        (&r as *const RawRule<V4_FIELDS>).cast(),
                        1,
                    )
                }
            }
            AclFamily::Ipv6 => {
                let r: RawRule<V6_FIELDS> = encode(self.family, f, data);
                // SAFETY: as above, with the IPv6 rule size.
                unsafe {
                    dpdk_sys::rte_acl_add_rules(
                        self.raw.as_ptr(),
                        (&r as *const RawRule<V6_FIELDS>).cast(),
                        1,
                    )
                }
            }
        };
        error::check("rte_acl_add_rules", rc)?;
        self.rules += 1;
        Ok(())
    }

    /// Builds the tries (one category). Fails with no rules, or when built
    /// already: a context is built once and then only read.
    pub fn build(&mut self) -> Result<(), DpdkError> {
        if self.built {
            return Err(DpdkError::Invalid(
                "rte_acl_build: context already built".into(),
            ));
        }
        if self.rules == 0 {
            return Err(DpdkError::Invalid("rte_acl_build: no rules".into()));
        }
        let mut cfg = dpdk_sys::rte_acl_config {
            num_categories: 1,
            num_fields: self.family.fields() as u32,
            max_size: 0, // no limit on the run-time structures
            ..Default::default()
        };
        for (slot, d) in cfg.defs.iter_mut().zip(field_defs(self.family)) {
            *slot = d;
        }
        // SAFETY: raw is a live context, we hold &mut self (no classify
        // runs); cfg is a valid config that DPDK copies.
        let rc = unsafe { dpdk_sys::rte_acl_build(self.raw.as_ptr(), &cfg) };
        error::check("rte_acl_build", rc)?;
        self.built = true;
        Ok(())
    }

    /// Classifies `keys` into `results`: the userdata of the highest-priority
    /// matching rule, 0 where none matches. Fails when not built.
    ///
    /// # Panics
    /// If `results` is shorter than `keys`.
    #[inline]
    pub fn classify(&self, keys: &[&FlowKey], results: &mut [u32]) -> Result<(), DpdkError> {
        assert!(
            results.len() >= keys.len(),
            "classify: results shorter than keys"
        );
        assert!(keys.len() <= u32::MAX as usize, "classify: too many keys");
        if !self.built {
            return Err(not_built());
        }
        if keys.is_empty() {
            return Ok(());
        }
        // SAFETY: raw is a live, built context, only read. `&FlowKey` has the
        // layout of `*const FlowKey`, so keys is an array of keys.len() valid
        // pointers, each to a 40-byte FlowKey: rte_acl reads at most
        // family.key_len() <= 40 bytes from each (module doc); it never writes
        // through `data`, whatever the prototype says. It writes keys.len()
        // results (one category) and results has room for them.
        let rc = unsafe {
            dpdk_sys::rte_acl_classify(
                self.raw.as_ptr(),
                keys.as_ptr() as *mut *const u8,
                results.as_mut_ptr(),
                keys.len() as u32,
                1,
            )
        };
        error::check("rte_acl_classify", rc).map(|_| ())
    }
}

#[cold]
fn not_built() -> DpdkError {
    DpdkError::Invalid("rte_acl_classify: context not built".into())
}

impl Drop for AclContext {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_acl_create (never an existing context,
        // checked in new) and is freed once, here.
        unsafe { dpdk_sys::rte_acl_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::testing::test_lock;

    fn key4(proto: u8, vlan: u16, sport: u16, dport: u16, src: [u8; 4], dst: [u8; 4]) -> FlowKey {
        let mut k = FlowKey {
            proto,
            vlan_be: vlan.to_be(),
            sport_be: sport.to_be(),
            dport_be: dport.to_be(),
            ..Default::default()
        };
        k.src[..4].copy_from_slice(&src);
        k.dst[..4].copy_from_slice(&dst);
        k
    }

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut b = [0; 16];
        b[..4].copy_from_slice(&a);
        b
    }

    #[test]
    fn field_defs_group_in_words() {
        for fam in [AclFamily::Ipv4, AclFamily::Ipv6] {
            let d = field_defs(fam);
            assert_eq!(d[0].size, 1);
            assert_eq!(d[0].input_index, 0);
            // Every later input index covers exactly 4 consecutive bytes.
            let last = d.last().unwrap().input_index;
            for i in 1..=last {
                let g: Vec<_> = d.iter().filter(|f| f.input_index == i).collect();
                assert_eq!(
                    g.iter().map(|f| u32::from(f.size)).sum::<u32>(),
                    4,
                    "input {i}"
                );
                let mut off = g[0].offset;
                for f in g {
                    assert_eq!(f.offset, off);
                    off += u32::from(f.size);
                }
            }
            let end = d
                .iter()
                .map(|f| f.offset as usize + f.size as usize)
                .max()
                .unwrap();
            assert_eq!(end, fam.key_len());
            assert!(end <= std::mem::size_of::<FlowKey>());
        }
    }

    #[test]
    fn classify_v4_literal() {
        let _g = test_lock();
        let mut ctx = AclContext::new(AclFamily::Ipv4, 8).unwrap();
        // 1: tcp to 10.0.0.0/8 port 80, vlan 5 (highest priority)
        let r1 = AclFields {
            proto: Some(6),
            vlan: (5, 5),
            dport: (80, 80),
            dst: (v4([10, 0, 0, 0]), 8),
            ..AclFields::ANY
        };
        // 2: anything from 192.168.1.0/24 with sport 1024-65535
        let r2 = AclFields {
            sport: (1024, 65535),
            src: (v4([192, 168, 1, 0]), 24),
            ..AclFields::ANY
        };
        ctx.add_rule(&r1, 2, 1).unwrap();
        ctx.add_rule(&r2, 1, 2).unwrap();
        ctx.build().unwrap();
        let keys = [
            key4(6, 5, 2000, 80, [192, 168, 1, 1], [10, 1, 2, 3]), // both: r1 wins
            key4(6, 4, 2000, 80, [192, 168, 1, 1], [10, 1, 2, 3]), // vlan 4: r2
            key4(17, 5, 1000, 80, [1, 1, 1, 1], [10, 1, 2, 3]),    // udp: none
            key4(6, 5, 1000, 80, [1, 1, 1, 1], [11, 1, 2, 3]),     // dst off: none
            key4(6, 5, 100, 80, [192, 168, 1, 1], [11, 1, 2, 3]),  // sport low: none
        ];
        let refs: Vec<&FlowKey> = keys.iter().collect();
        let mut res = [9u32; 5];
        ctx.classify(&refs, &mut res).unwrap();
        assert_eq!(res, [1, 2, 0, 0, 0]);
    }

    #[test]
    fn classify_v6_literal() {
        let _g = test_lock();
        let mut ctx = AclContext::new(AclFamily::Ipv6, 8).unwrap();
        let net: std::net::Ipv6Addr = "2001:db8:aa00::".parse().unwrap();
        let r = AclFields {
            proto: Some(17),
            src: (net.octets(), 40),
            ..AclFields::ANY
        };
        ctx.add_rule(&r, 1, 7).unwrap();
        ctx.build().unwrap();
        let mut k = FlowKey {
            proto: 17,
            ..Default::default()
        };
        k.src = "2001:db8:aaff::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        let mut miss = k;
        miss.src[4] = 0xab; // 2001:db8:abff::1: outside the /40
        let mut res = [0u32; 2];
        ctx.classify(&[&k, &miss], &mut res).unwrap();
        assert_eq!(res, [7, 0]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let _g = test_lock();
        assert!(AclContext::new(AclFamily::Ipv4, 0).is_err());
        let mut ctx = AclContext::new(AclFamily::Ipv4, 2).unwrap();
        // Not built yet: classify refuses.
        let k = FlowKey::default();
        assert!(ctx.classify(&[&k], &mut [0]).is_err());
        // Empty rule set: build refuses.
        assert!(ctx.build().is_err());
        let any = AclFields::ANY;
        assert!(ctx.add_rule(&any, 0, 1).is_err());
        assert!(ctx.add_rule(&any, AclContext::MAX_PRIORITY + 1, 1).is_err());
        assert!(ctx.add_rule(&any, 1, 0).is_err());
        let long = AclFields {
            src: ([0; 16], 33),
            ..any
        };
        assert!(ctx.add_rule(&long, 1, 1).is_err());
        let empty_range = AclFields {
            dport: (10, 9),
            ..any
        };
        assert!(ctx.add_rule(&empty_range, 1, 1).is_err());
        ctx.add_rule(&any, 1, 1).unwrap();
        ctx.add_rule(&any, 1, 2).unwrap();
        // Full.
        assert!(ctx.add_rule(&any, 1, 3).is_err());
        ctx.build().unwrap();
        // Duplicate build, and adding after build.
        assert!(ctx.build().is_err());
        assert!(ctx.add_rule(&any, 1, 1).is_err());
        let mut res = [0u32; 1];
        ctx.classify(&[&k], &mut res).unwrap();
        assert!(res[0] == 1 || res[0] == 2);
        ctx.classify(&[], &mut []).unwrap();
    }
}
