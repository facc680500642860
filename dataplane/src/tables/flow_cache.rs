//! An exact-match flow cache: the ACL's answer for flows seen recently, so a
//! packet of a known flow skips rte_acl's trie walk (Open vSwitch's EMC in
//! front of its classifier is the same idea).
//!
//! It is written here rather than taken from `rte_hash` because it is a
//! cache, not a map: fixed set-associative arrays that never fail an insert
//! (they evict), need no lock (one per worker), and read as few cache lines
//! as a key's size allows; rte_hash's bulk lookup costs about as much as the
//! classification it would save.
//!
//! The two families live apart. An IPv4 key is 16 bytes ([`FlowKeyV4`]),
//! so three of them, their values and the bucket's occupancy fill one line:
//! a lookup reads that one line and compares the keys themselves. Three
//! ways alone would let a few crowded buckets thrash (and each miss costs
//! a classification), so a full bucket spills into its partner (the other
//! line of its 128-byte pair) and says so: only a lookup that misses in a
//! bucket that spilled reads the second line. An IPv6
//! key is 40 bytes: its buckets hold eight tags and values in one line, the
//! keys lie beside them, and a lookup reads the tags, then the one key whose
//! tag matches.
//!
//! A hit is exact: every key byte the classifier reads is compared (for
//! IPv6 the whole [`FlowKey`]; for IPv4 the first 8 bytes and the first 4
//! of each address, all that an IPv4 lookup reads), so the cached answer is
//! the one the classifier would give for the key. The cache belongs to one
//! worker's stage instance over one immutable [`super::AclTable`]; a reload
//! that changes the table rebinds the stage, which clears the cache.
use crate::flow::{flow_hash, FlowKey, FlowKeyV4};

/// Ways per IPv4 bucket: three 16-byte keys, their values and the occupancy
/// bits fill one cache line.
const WAYS4: usize = 3;

/// Ways per IPv6 bucket: a bucket's tags and values fill one cache line.
const WAYS: usize = 8;

/// One IPv4 bucket: a lookup reads this line and nothing else.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket4 {
    /// Way `w`'s key as [`FlowKeyV4`]'s two words.
    keys: [[u64; 2]; WAYS4],
    values: [u32; WAYS4],
    /// Bit `w`: way `w` holds an entry (every key value is a valid key, so
    /// none can mark an empty way); [`SPILLED`]: an insert found this bucket
    /// full and put its key into the partner bucket.
    used: u32,
}

/// [`Bucket4::used`]'s flag: look in the partner bucket too.
const SPILLED: u32 = 1 << WAYS4;

/// The tags and values of one IPv6 bucket: a lookup reads this line, then
/// the key of the one way whose tag matches.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    /// 0 = empty; else a hash-derived tag.
    tags: [u32; WAYS],
    values: [u32; WAYS],
}

/// A per-worker exact-match cache from (family, [`FlowKey`]) to a `u32`:
/// set associative, random replacement (a cyclic scan of more flows than a
/// set holds would miss every time under LRU).
pub struct FlowCache {
    v4: Box<[Bucket4]>,
    mask4: u32,
    /// IPv6 buckets; `keys[b * WAYS + w]` is the key of way `w` of bucket `b`.
    buckets: Box<[Bucket]>,
    keys: Box<[Words]>,
    mask: u32,
    /// Picks the way to evict (xorshift).
    rng: u32,
    /// The `entries` it was made for.
    entries: usize,
}

/// A probe in flight: an IPv4 bucket (tagged with [`Probe::V4`]), the slot
/// of the IPv6 way whose tag matched, or none.
#[derive(Clone, Copy)]
pub struct Probe(u32);

impl Probe {
    const NONE: Probe = Probe(u32::MAX);
    /// Marks an IPv4 bucket index (indices stay below 2^30).
    const V4: u32 = 1 << 31;
}

impl Default for Probe {
    fn default() -> Self {
        Probe::NONE
    }
}

impl FlowCache {
    /// A cache of at least `entries` entries per family (each rounded up to
    /// a power of two of buckets, at least one). An IPv4 entry costs about
    /// 21 bytes, an IPv6 one 48.
    pub fn new(entries: usize) -> FlowCache {
        let (buckets4, buckets) = Self::buckets_for(entries);
        // Slots and bucket indices must fit a `Probe` below its flags.
        assert!(
            buckets * WAYS <= 1 << 30 && buckets4 <= 1 << 30,
            "flow cache of {entries} entries"
        );
        FlowCache {
            v4: vec![Bucket4::default(); buckets4].into_boxed_slice(),
            mask4: buckets4 as u32 - 1,
            buckets: vec![Bucket::default(); buckets].into_boxed_slice(),
            keys: vec![Words::default(); buckets * WAYS].into_boxed_slice(),
            mask: buckets as u32 - 1,
            rng: 0x9e37_79b9,
            entries,
        }
    }

    /// IPv4 and IPv6 bucket counts for `entries`.
    fn buckets_for(entries: usize) -> (usize, usize) {
        let b = |ways: usize| entries.div_ceil(ways).max(1).next_power_of_two();
        (b(WAYS4), b(WAYS))
    }

    /// Whether it is what [`FlowCache::new`] makes for `entries` (so
    /// clearing it gives the same cache as a new one).
    pub fn made_for(&self, entries: usize) -> bool {
        self.entries == entries
    }

    /// How many entries it holds at most: (IPv4, IPv6).
    pub fn capacity(&self) -> (usize, usize) {
        (self.v4.len() * WAYS4, self.keys.len())
    }

    /// Forgets every entry (the rules it cached answers of were replaced).
    pub fn clear(&mut self) {
        self.v4.fill(Bucket4::default());
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

    /// Never 0, so 0 marks an empty IPv6 way.
    #[inline(always)]
    fn tag(hash: u32) -> u32 {
        hash | 1
    }

    #[inline(always)]
    fn bucket4_index(&self, hash: u32) -> usize {
        // The mask keeps the index in bounds.
        (hash & self.mask4) as usize
    }

    #[inline(always)]
    fn bucket_index(&self, hash: u32) -> usize {
        (hash & self.mask) as usize
    }

    /// Step 1 of a lookup, for a whole burst before step 2: hints the CPU to
    /// load the bucket `hash` maps to.
    #[inline(always)]
    pub fn prefetch(&self, hash: u32, is_v6: bool) {
        if is_v6 {
            crate::dpdk::prefetch(&self.buckets[self.bucket_index(hash)]);
        } else {
            crate::dpdk::prefetch(&self.v4[self.bucket4_index(hash)]);
        }
    }

    /// Step 2: for IPv6, finds the way whose tag matches and hints the CPU
    /// to load its key; for IPv4 (whose bucket holds the keys) only names
    /// the bucket, reading nothing.
    #[inline(always)]
    pub fn probe(&self, hash: u32, is_v6: bool) -> Probe {
        if !is_v6 {
            return Probe(Probe::V4 | self.bucket4_index(hash) as u32);
        }
        let b = self.bucket_index(hash);
        let hits = crate::dpdk::match_mask8(&self.buckets[b].tags, Self::tag(hash));
        if hits == 0 {
            return Probe::NONE;
        }
        let slot = b * WAYS + hits.trailing_zeros() as usize;
        crate::dpdk::prefetch(&self.keys[slot]);
        Probe(slot as u32)
    }

    /// Step 3: the value cached for `key` (of the probe's family), if any.
    #[inline(always)]
    pub fn resolve<K: CacheKey>(&self, probe: Probe, key: &K) -> Option<u32> {
        if probe.0 == Probe::NONE.0 {
            return None;
        }
        if probe.0 & Probe::V4 != 0 {
            // The mask drops the family flag and keeps the index in bounds.
            let at = (probe.0 & self.mask4) as usize;
            let (b, k) = (&self.v4[at], key.v4());
            if let Some(w) = Self::way4(b, k) {
                return Some(b.values[w]);
            }
            if b.used & SPILLED == 0 {
                return None;
            }
            return self.spilled4(at, k);
        }
        let slot = probe.0 as usize;
        let (b, w) = (slot / WAYS, slot % WAYS);
        let tag = self.buckets[b].tags[w];
        let way = if key.matches_v6(&self.keys[slot]) {
            Some(w)
        } else {
            // Two keys of one bucket with the same tag (rare).
            self.find(b, tag, key)
        };
        way.map(|w| self.buckets[b].values[w])
    }

    /// The way of IPv4 bucket `b` holding `k`, if any: all three compared,
    /// no branch per way.
    #[inline(always)]
    fn way4(b: &Bucket4, k: FlowKeyV4) -> Option<usize> {
        let mut hits = 0u32;
        for (w, s) in b.keys.iter().enumerate() {
            hits |= u32::from((s[0] ^ k.head) | (s[1] ^ k.addrs) == 0) << w;
        }
        let hits = hits & b.used;
        (hits != 0).then(|| hits.trailing_zeros() as usize)
    }

    /// The value of `k` in the partner of IPv4 bucket `at`, if any.
    #[cold]
    #[inline(never)]
    fn spilled4(&self, at: usize, k: FlowKeyV4) -> Option<u32> {
        let b = &self.v4[self.partner4(at)];
        Self::way4(b, k).map(|w| b.values[w])
    }

    /// The other bucket of `at`'s 128-byte pair (itself when there is only
    /// one bucket).
    #[inline(always)]
    fn partner4(&self, at: usize) -> usize {
        (at ^ 1) & self.mask4 as usize
    }

    /// A free way of IPv4 bucket `b`, if any.
    #[inline(always)]
    fn free4(b: &Bucket4) -> Option<usize> {
        let w = (!b.used & ((1 << WAYS4) - 1)).trailing_zeros() as usize;
        (w < WAYS4).then_some(w)
    }

    /// The way of IPv6 bucket `b` holding `key` under `tag`, if any.
    #[inline]
    fn find<K: CacheKey>(&self, b: usize, tag: u32, key: &K) -> Option<usize> {
        let tags = &self.buckets[b].tags;
        (0..WAYS).find(|&w| tags[w] == tag && key.matches_v6(&self.keys[b * WAYS + w]))
    }

    /// The value cached for `key` (hashed to `hash` by the caller, the same
    /// way on every call), if any: the three steps at once.
    #[inline]
    pub fn get(&self, hash: u32, key: &FlowKey, is_v6: bool) -> Option<u32> {
        self.resolve(self.probe(hash, is_v6), key)
    }

    /// A way to evict (xorshift), below `ways`.
    #[inline]
    fn victim(&mut self, ways: usize) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 17;
        self.rng ^= self.rng << 5;
        self.rng as usize % ways
    }

    /// Caches `value` for `key`: in place if the key is there, else in an
    /// empty way, else over a randomly chosen way.
    #[inline]
    pub fn insert(&mut self, hash: u32, key: &FlowKey, is_v6: bool, value: u32) {
        if !is_v6 {
            return self.insert4(hash, FlowKeyV4::of(key), value);
        }
        let b = self.bucket_index(hash);
        let t = Self::tag(hash);
        let way = match self.find(b, t, key) {
            Some(w) => w,
            None => match self.buckets[b].tags.iter().position(|&x| x == 0) {
                Some(w) => w,
                None => self.victim(WAYS),
            },
        };
        let bucket = &mut self.buckets[b];
        bucket.tags[way] = t;
        bucket.values[way] = value;
        self.keys[b * WAYS + way] = Words::v6(key);
    }

    /// [`FlowCache::insert`] of an IPv4 key: where it is (its bucket or,
    /// if that spilled, the partner), else a free way of its bucket, else
    /// of the partner (the bucket marked as spilled), else over a random
    /// way of its bucket.
    fn insert4(&mut self, hash: u32, k: FlowKeyV4, value: u32) {
        let at = self.bucket4_index(hash);
        let partner = self.partner4(at);
        let spilled = self.v4[at].used & SPILLED != 0;
        let (b, way) = if let Some(w) = Self::way4(&self.v4[at], k) {
            (at, w)
        } else if let Some(w) = Self::way4(&self.v4[partner], k).filter(|_| spilled) {
            (partner, w)
        } else if let Some(w) = Self::free4(&self.v4[at]) {
            (at, w)
        } else if let Some(w) = Self::free4(&self.v4[partner]).filter(|_| partner != at) {
            self.v4[at].used |= SPILLED;
            (partner, w)
        } else {
            (at, self.victim(WAYS4))
        };
        let bucket = &mut self.v4[b];
        bucket.keys[way] = [k.head, k.addrs];
        bucket.values[way] = value;
        bucket.used |= 1 << way;
    }
}

/// A cached IPv6 key as the five 64-bit words its classification reads:
/// the first 8 bytes and both whole addresses. Comparing words instead of
/// `FlowKey`s (whose derived `==` goes field by field and calls `bcmp` for
/// the addresses) makes the compare five loads.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Words([u64; 5]);

impl Words {
    #[inline(always)]
    fn v6(k: &FlowKey) -> Words {
        let half = |x: &[u8; 16], i: usize| u64::from_ne_bytes(x[i..i + 8].try_into().unwrap());
        Words([
            FlowKeyV4::of(k).head,
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
    /// The key's IPv4 form (what an IPv4 bucket compares).
    fn v4(&self) -> FlowKeyV4;
    /// Whether `self` is the IPv6 key `stored`.
    fn matches_v6(&self, stored: &Words) -> bool;
}

impl CacheKey for FlowKey {
    #[inline(always)]
    fn v4(&self) -> FlowKeyV4 {
        FlowKeyV4::of(self)
    }

    #[inline(always)]
    fn matches_v6(&self, stored: &Words) -> bool {
        let w = Words::v6(self);
        w.0.iter()
            .zip(&stored.0)
            .fold(0, |acc, (p, q)| acc | (p ^ q))
            == 0
    }
}

impl CacheKey for FlowKeyV4 {
    #[inline(always)]
    fn v4(&self) -> FlowKeyV4 {
        *self
    }

    /// Never: an IPv4 key is looked up under its own family only.
    #[inline(always)]
    fn matches_v6(&self, _stored: &Words) -> bool {
        false
    }
}

/// Key equality for a family, over the bytes its classification reads.
#[cfg(test)]
fn same_key(a: &FlowKey, b: &FlowKey, is_v6: bool) -> bool {
    if is_v6 {
        a.matches_v6(&Words::v6(b))
    } else {
        a.v4() == b.v4()
    }
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
        assert_eq!(std::mem::size_of::<Bucket4>(), 64);
        assert_eq!(FlowCache::new(1).capacity(), (3, 8));
        assert_eq!(FlowCache::new(8192).capacity(), (4096 * 3, 8192));
        assert_eq!(FlowCache::new(8193).capacity(), (4096 * 3, 16384));
        assert_eq!(FlowCache::new(12289).capacity(), (8192 * 3, 16384));
        assert!(FlowCache::new(100).made_for(100) && !FlowCache::new(100).made_for(101));
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
        // IPv4: a bucket and the partner it spills into.
        for (v6, ways) in [(false, 2 * WAYS4 as u32), (true, WAYS as u32)] {
            // Hashes that are multiples of 64 share a bucket in both families.
            let mut c = FlowCache::new(64);
            let h = |n: u32| n << 6;
            for n in 0..ways {
                c.insert(h(n), &key(n), v6, n);
            }
            for n in 0..ways {
                assert_eq!(c.get(h(n), &key(n), v6), Some(n), "v6 {v6}");
            }
            c.insert(h(ways), &key(ways), v6, ways);
            assert_eq!(c.get(h(ways), &key(ways), v6), Some(ways));
            let kept = (0..ways)
                .filter(|&n| c.get(h(n), &key(n), v6) == Some(n))
                .count();
            assert_eq!(kept, ways as usize - 1, "exactly one way evicted, v6 {v6}");
        }
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
