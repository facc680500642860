//! An exact-match flow cache: the ACL's answer for flows seen recently, so a
//! packet of a known flow skips rte_acl's trie walk (Open vSwitch's EMC in
//! front of its classifier is the same idea).
//!
//! It is written here rather than taken from `rte_hash` because it is a
//! cache, not a map: a fixed 8-way set-associative array that never fails an
//! insert (it evicts), needs no lock (one per worker), and reads two cache
//! lines for a hit (the bucket's tags, then the one key whose tag matches);
//! rte_hash's bulk lookup costs about as much as the classification it would
//! save.
//!
//! A hit is exact: the address family and every key byte the classifier
//! reads are compared (for IPv6 the whole [`FlowKey`]; for IPv4 the first 8
//! bytes and the first 4 of each address, all that an IPv4 lookup reads), so
//! the cached answer is the one the classifier would give for the key. The
//! cache belongs to one worker's stage instance over one immutable
//! [`super::AclTable`]; a new table means a new stage and an empty cache.
use crate::flow::{flow_hash, FlowKey, FlowKeyV4};

/// Ways per bucket: a bucket's tags and values fill one cache line.
const WAYS: usize = 8;

/// The tags and values of one bucket: a lookup reads this line, then the
/// key of the one way whose tag matches.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    /// 0 = empty; else a hash-derived tag with the family in bit 0.
    tags: [u32; WAYS],
    values: [u32; WAYS],
}

/// A per-worker exact-match cache from (family, [`FlowKey`]) to a `u32`:
/// 8-way set associative, random replacement (a cyclic scan of more flows
/// than a set holds would miss every time under LRU).
pub struct FlowCache {
    buckets: Box<[Bucket]>,
    /// `keys[b * WAYS + w]` is the key of way `w` of bucket `b`.
    keys: Box<[Words]>,
    mask: u32,
    /// Picks the way to evict (xorshift).
    rng: u32,
}

/// A probe in flight: the slot of the way whose tag matched, or none.
#[derive(Clone, Copy)]
pub struct Probe(u32);

impl Probe {
    const NONE: Probe = Probe(u32::MAX);
}

impl Default for Probe {
    fn default() -> Self {
        Probe::NONE
    }
}

impl FlowCache {
    /// A cache of at least `entries` entries (rounded up to a power of two,
    /// at least 8). Each entry costs 48 bytes.
    pub fn new(entries: usize) -> FlowCache {
        let buckets = Self::new_capacity(entries) / WAYS;
        // Slots must fit a `Probe` below NONE.
        assert!(buckets * WAYS <= 1 << 31, "flow cache of {entries} entries");
        FlowCache {
            buckets: vec![Bucket::default(); buckets].into_boxed_slice(),
            keys: vec![Words::default(); buckets * WAYS].into_boxed_slice(),
            mask: buckets as u32 - 1,
            rng: 0x9e37_79b9,
        }
    }

    /// The capacity [`FlowCache::new`] gives for `entries`.
    pub fn new_capacity(entries: usize) -> usize {
        entries.div_ceil(WAYS).max(1).next_power_of_two() * WAYS
    }

    /// How many entries it holds at most.
    pub fn capacity(&self) -> usize {
        self.keys.len()
    }

    /// Forgets every entry (the rules it cached answers of were replaced).
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
    }

    /// The hash a key is cached under (pass it to every call for the key).
    #[inline(always)]
    pub fn hash(key: &FlowKey, is_v6: bool) -> u32 {
        if is_v6 {
            return flow_hash(key);
        }
        Self::hash_v4(FlowKeyV4::of(key))
    }

    /// [`FlowCache::hash`] of an IPv4 key given as its two words: a
    /// multiply-xor over them.
    #[inline(always)]
    pub fn hash_v4(key: FlowKeyV4) -> u32 {
        let h = (key.head.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.addrs)
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        (h >> 32) as u32 ^ h as u32
    }

    /// Never 0, so 0 marks an empty way; bit 0 is the family, so an IPv4 key
    /// never answers for an IPv6 key with the same bytes.
    #[inline(always)]
    fn tag(hash: u32, is_v6: bool) -> u32 {
        (hash | 2) & !1 | is_v6 as u32
    }

    #[inline(always)]
    fn bucket_index(&self, hash: u32) -> usize {
        // The mask keeps the index in bounds.
        (hash & self.mask) as usize
    }

    /// Step 1 of a lookup, for a whole burst before step 2: hints the CPU to
    /// load the bucket `hash` maps to.
    #[inline(always)]
    pub fn prefetch(&self, hash: u32) {
        crate::dpdk::prefetch(&self.buckets[self.bucket_index(hash)]);
    }

    /// Step 2: finds the way whose tag matches and hints the CPU to load its
    /// key.
    #[inline(always)]
    pub fn probe(&self, hash: u32, is_v6: bool) -> Probe {
        let b = self.bucket_index(hash);
        let hits = crate::dpdk::match_mask8(&self.buckets[b].tags, Self::tag(hash, is_v6));
        if hits == 0 {
            return Probe::NONE;
        }
        let slot = b * WAYS + hits.trailing_zeros() as usize;
        crate::dpdk::prefetch(&self.keys[slot]);
        Probe(slot as u32)
    }

    /// Step 3: the value cached for `key`, if the probe's way holds it.
    #[inline(always)]
    pub fn resolve<K: CacheKey>(&self, probe: Probe, key: &K) -> Option<u32> {
        if probe.0 == Probe::NONE.0 {
            return None;
        }
        let slot = probe.0 as usize;
        let (b, w) = (slot / WAYS, slot % WAYS);
        // The matched way's tag carries the family in bit 0.
        let tag = self.buckets[b].tags[w];
        let way = if key.matches(&self.keys[slot], tag & 1 == 1) {
            Some(w)
        } else {
            // Two keys of one bucket with the same tag (rare).
            self.find(b, tag, key)
        };
        way.map(|w| self.buckets[b].values[w])
    }

    /// The way of bucket `b` holding `key` under `tag`, if any.
    #[inline]
    fn find<K: CacheKey>(&self, b: usize, tag: u32, key: &K) -> Option<usize> {
        let tags = &self.buckets[b].tags;
        (0..WAYS).find(|&w| tags[w] == tag && key.matches(&self.keys[b * WAYS + w], tag & 1 == 1))
    }

    /// The value cached for `key` (hashed to `hash` by the caller, the same
    /// way on every call), if any: the three steps at once.
    #[inline]
    pub fn get(&self, hash: u32, key: &FlowKey, is_v6: bool) -> Option<u32> {
        self.resolve(self.probe(hash, is_v6), key)
    }

    /// Caches `value` for `key`: in place if the key is there, else in an
    /// empty way, else over a randomly chosen way.
    #[inline]
    pub fn insert(&mut self, hash: u32, key: &FlowKey, is_v6: bool, value: u32) {
        let b = self.bucket_index(hash);
        let t = Self::tag(hash, is_v6);
        let way = match self.find(b, t, key) {
            Some(w) => w,
            None => match self.buckets[b].tags.iter().position(|&x| x == 0) {
                Some(w) => w,
                None => {
                    self.rng ^= self.rng << 13;
                    self.rng ^= self.rng >> 17;
                    self.rng ^= self.rng << 5;
                    self.rng as usize % WAYS
                }
            },
        };
        let bucket = &mut self.buckets[b];
        bucket.tags[way] = t;
        bucket.values[way] = value;
        self.keys[b * WAYS + way] = Words::of(key, is_v6);
    }
}

/// A cached key as the 64-bit words its family's classification reads:
/// for IPv4 the two of [`FlowKeyV4`] (the rest zero), for IPv6 the first 8
/// bytes and both whole addresses. Comparing words instead of `FlowKey`s
/// (whose derived `==` goes field by field and calls `bcmp` for the
/// addresses) makes an IPv4 compare two loads.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Words([u64; 5]);

impl Words {
    #[inline(always)]
    fn v4(k: FlowKeyV4) -> Words {
        Words([k.head, k.addrs, 0, 0, 0])
    }

    #[inline(always)]
    fn of(k: &FlowKey, is_v6: bool) -> Words {
        let v4 = FlowKeyV4::of(k);
        if !is_v6 {
            return Words::v4(v4);
        }
        let half = |x: &[u8; 16], i: usize| u64::from_ne_bytes(x[i..i + 8].try_into().unwrap());
        Words([
            v4.head,
            half(&k.src, 0),
            half(&k.src, 8),
            half(&k.dst, 0),
            half(&k.dst, 8),
        ])
    }
}

/// A key the cache can look up: a whole [`FlowKey`], or the two words of
/// an IPv4 one ([`FlowKeyV4`], built by the fast lane without a `Meta`).
pub trait CacheKey {
    /// Whether `self` is the key `stored` (cached under the family `is_v6`;
    /// the caller found the way by a tag that carries the family, so the
    /// families already match).
    fn matches(&self, stored: &Words, is_v6: bool) -> bool;
}

impl CacheKey for FlowKey {
    #[inline(always)]
    fn matches(&self, stored: &Words, is_v6: bool) -> bool {
        if !is_v6 {
            return FlowKeyV4::of(self).matches(stored, false);
        }
        let w = Words::of(self, true);
        w.0.iter()
            .zip(&stored.0)
            .fold(0, |acc, (p, q)| acc | (p ^ q))
            == 0
    }
}

impl CacheKey for FlowKeyV4 {
    /// Only ever an IPv4 key: looked up under the IPv4 tag, so the way is an
    /// IPv4 one and `is_v6` need not be read.
    #[inline(always)]
    fn matches(&self, stored: &Words, _is_v6: bool) -> bool {
        (stored.0[0] ^ self.head) | (stored.0[1] ^ self.addrs) == 0
    }
}

/// Key equality for a family, over the bytes its classification reads.
#[cfg(test)]
fn same_key(a: &FlowKey, b: &FlowKey, is_v6: bool) -> bool {
    a.matches(&Words::of(b, is_v6), is_v6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn key(n: u32) -> FlowKey {
        let mut k = FlowKey {
            proto: 17,
            sport_be: 1000u16.to_be(),
            dport_be: 53u16.to_be(),
            ..FlowKey::default()
        };
        k.src[..4].copy_from_slice(&n.to_be_bytes());
        k
    }

    #[test]
    fn bucket_is_one_line() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(FlowCache::new(1).capacity(), 8);
        assert_eq!(FlowCache::new(8192).capacity(), 8192);
        assert_eq!(FlowCache::new(8193).capacity(), 16384);
    }

    #[test]
    fn match_mask_marks_each_matching_way() {
        for bits in 0u32..256 {
            let tags: [u32; WAYS] = std::array::from_fn(|w| {
                if bits >> w & 1 == 1 {
                    0xdead_beef
                } else {
                    w as u32 + 1
                }
            });
            assert_eq!(
                crate::dpdk::match_mask8(&tags, 0xdead_beef),
                bits,
                "{tags:x?}"
            );
        }
        assert_eq!(crate::dpdk::match_mask8(&[0; WAYS], 0), 0xff);
    }

    #[test]
    fn same_key_sees_every_byte_classification_reads() {
        let k = key(1);
        assert!(same_key(&k, &k, true) && same_key(&k, &k, false));
        let (mut v6_bits, mut v4_bits) = (0, 0);
        for f in 0..7 {
            for bit in 0..128 {
                let mut o = k;
                match f {
                    0 if bit < 8 => o.proto ^= 1 << bit,
                    1 if bit < 8 => o._pad ^= 1 << bit,
                    2 if bit < 16 => o.vlan_be ^= 1 << bit,
                    3 if bit < 16 => o.sport_be ^= 1 << bit,
                    4 if bit < 16 => o.dport_be ^= 1 << bit,
                    5 => o.src[bit / 8] ^= 1 << (bit % 8),
                    6 => o.dst[bit / 8] ^= 1 << (bit % 8),
                    _ => continue,
                }
                assert!(!same_key(&k, &o, true), "v6: field {f} bit {bit}");
                v6_bits += 1;
                // IPv4 classification reads the first 4 bytes of each address.
                let v4_reads = f < 5 || bit < 32;
                assert_eq!(
                    !same_key(&k, &o, false),
                    v4_reads,
                    "v4: field {f} bit {bit}"
                );
                v4_bits += usize::from(v4_reads);
                // One that differs only where IPv4 does not read hashes alike.
                if !v4_reads {
                    assert_eq!(FlowCache::hash(&k, false), FlowCache::hash(&o, false));
                }
            }
        }
        assert_eq!((v6_bits, v4_bits), (40 * 8, 16 * 8));
    }

    #[test]
    fn hit_miss_and_family() {
        let mut c = FlowCache::new(64);
        let k = key(7);
        let h = FlowCache::hash(&k, false);
        assert_eq!(c.get(h, &k, false), None);
        c.insert(h, &k, false, 42);
        assert_eq!(c.get(h, &k, false), Some(42));
        assert_eq!(c.get(h, &k, true), None, "same bytes, other family");
        c.insert(h, &k, true, 9);
        assert_eq!(
            (c.get(h, &k, false), c.get(h, &k, true)),
            (Some(42), Some(9))
        );
        c.insert(h, &k, true, 10);
        assert_eq!(c.get(h, &k, true), Some(10), "re-insert updates");
    }

    #[test]
    fn a_full_bucket_evicts_one_way() {
        let mut c = FlowCache::new(8); // one bucket: every key collides
        for n in 0..8 {
            c.insert(n, &key(n), false, n);
        }
        for n in 0..8 {
            assert_eq!(c.get(n, &key(n), false), Some(n));
        }
        c.insert(8, &key(8), false, 8);
        assert_eq!(c.get(8, &key(8), false), Some(8));
        let kept = (0..8)
            .filter(|&n| c.get(n, &key(n), false) == Some(n))
            .count();
        assert_eq!(kept, 7, "exactly one way evicted");
    }

    #[test]
    fn same_tag_different_keys_both_hit() {
        let mut c = FlowCache::new(64);
        c.insert(5, &key(1), false, 1);
        assert_eq!(c.get(5, &key(2), false), None);
        c.insert(5, &key(2), false, 2);
        assert_eq!(
            (c.get(5, &key(1), false), c.get(5, &key(2), false)),
            (Some(1), Some(2))
        );
    }

    proptest! {
        /// Whatever the sequence of inserts, a hit returns the value last
        /// inserted for exactly that key and family (a model map), even when
        /// a tiny cache makes keys collide.
        #[test]
        fn hits_are_exact(
            ops in proptest::collection::vec((0u32..40, any::<bool>(), any::<u32>(), any::<bool>()), 1..400),
            entries in 1usize..40,
        ) {
            let mut c = FlowCache::new(entries);
            let mut model = HashMap::new();
            for (n, v6, value, insert) in ops {
                let k = key(n);
                // A weak hash on purpose: many tags and sets collide.
                let h = n % 5;
                if insert {
                    c.insert(h, &k, v6, value);
                    model.insert((n, v6), value);
                } else if let Some(got) = c.get(h, &k, v6) {
                    prop_assert_eq!(Some(&got), model.get(&(n, v6)));
                }
            }
        }
    }
}
