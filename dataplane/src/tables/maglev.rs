//! The Maglev lookup table (Eisenbud et al., "Maglev: A Fast and Reliable
//! Software Network Load Balancer", NSDI 2016, section 3.4): a prime-sized
//! array of backend indices that maps a flow hash to a backend so that every
//! backend gets a share of the entries proportional to its weight, and a
//! change to the backend set moves few entries.
//!
//! What it promises:
//! * **The same table everywhere.** The table depends only on the size, the
//!   backend identities and their weights: backends are sorted by identity
//!   before the build (so config order does not matter; VPP's lb plugin
//!   depends on insertion order), and the two permutation hashes are fixed,
//!   seedless, byte-oriented functions (no `RandomState`, no pointer width or
//!   endianness in them), so two daemons, or two runs of one, with the same
//!   backend set send a flow to the same backend. A golden test pins it.
//! * **Shares proportional to weight.** Each backend with weight `w` gets
//!   `M·w/Σw` entries to within about one entry (plus a rounding of at most
//!   `N` entries spread over all backends); with equal weights counts differ
//!   by at most one, exactly as the paper's algorithm. Weight 0 drains a
//!   backend: it gets no entries but keeps its index, so connections already
//!   tracked to it (see [`super::conntrack`]) stay valid.
//! * **Small disruption.** Removing one of `N` backends moves its `M/N`
//!   entries plus a few more (Maglev trades a little disruption for perfect
//!   balance; the tests measure and bound both).
//!
//! Built by the control plane off the hot path; workers read it through
//! `&self` (one multiply, one shift, one load per lookup).
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::net::IpAddr;

/// The paper's default size: prime, and > 100 × N for up to 655 backends,
/// which keeps each backend's share within 1 % of its ideal (section 3.4).
pub const DEFAULT_SIZE: u32 = 65_537;

/// The largest size accepted (the largest prime below it is): 32 MiB of
/// entries. Larger tables buy no balance worth having (the rounding error is
/// one entry in `M`) and cost cache.
pub const MAX_SIZE: u32 = 1 << 24;

/// Entries are `u16` backend indices, which halves the table (128 KiB at
/// the default size, the L2 of most cores); `u16::MAX` marks an empty
/// entry during the build.
pub const MAX_BACKENDS: usize = u16::MAX as usize;

/// A backend's stable identity: what the permutation hashes read and what
/// backends are sorted by. Two backends with the same address may differ by
/// name (e.g. two services on one host).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BackendId {
    pub addr: IpAddr,
    pub name: Option<String>,
}

impl BackendId {
    pub fn new(addr: IpAddr) -> Self {
        BackendId { addr, name: None }
    }

    pub fn named(addr: IpAddr, name: impl Into<String>) -> Self {
        BackendId {
            addr,
            name: Some(name.into()),
        }
    }

    /// FNV-1a 64 over the identity's bytes, from `basis`: the family (4 or
    /// 6), the address octets in network order, then, for a named backend,
    /// the byte 1 and the name's UTF-8 (so `None` and `Some("")` differ).
    fn fnv(&self, basis: u64) -> u64 {
        let mut h = basis;
        match self.addr {
            IpAddr::V4(a) => h = fnv1a(fnv1a(h, &[4]), &a.octets()),
            IpAddr::V6(a) => h = fnv1a(fnv1a(h, &[6]), &a.octets()),
        }
        if let Some(name) = &self.name {
            h = fnv1a(fnv1a(h, &[1]), name.as_bytes());
        }
        h
    }

    /// The paper's `offset` and `skip` for a table of `size` (prime) entries:
    /// `offset = h1 % M`, `skip = h2 % (M − 1) + 1`, so the permutation
    /// `offset + j·skip (mod M)` visits every entry once.
    ///
    /// `h1` and `h2` are FNV-1a 64 over the identity bytes from two
    /// different offset bases, each followed by murmur3's 64-bit finaliser.
    /// FNV-1a alone is a poor choice here: its low bits depend only on the
    /// low bits of the input bytes, so `% M` would see little of the
    /// address; the finaliser avalanches every input bit into every output
    /// bit. The two bases make the two FNV states differ from the first
    /// byte on (each step is a bijection of the state, so they never meet),
    /// and the finaliser makes the two results unrelated in practice.
    /// SipHash would do as well but is a keyed PRF built against an
    /// adversary choosing inputs; identities come from our own config, and
    /// this needs no dependency and is a dozen lines whose output the golden
    /// test pins.
    pub fn offset_skip(&self, size: u32) -> (u32, u32) {
        let m = u64::from(size);
        let h1 = fmix64(self.fnv(FNV_OFFSET));
        let h2 = fmix64(self.fnv(SKIP_BASIS));
        let skip = if m > 1 { h2 % (m - 1) + 1 } else { 1 };
        ((h1 % m) as u32, skip as u32)
    }
}

impl fmt::Display for BackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) => write!(f, "{} ({n})", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// A backend and its weight (0 = drained: no new flows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub id: BackendId,
    pub weight: u32,
}

impl Backend {
    pub fn new(addr: IpAddr, weight: u32) -> Self {
        Backend {
            id: BackendId::new(addr),
            weight,
        }
    }

    pub fn named(addr: IpAddr, name: impl Into<String>, weight: u32) -> Self {
        Backend {
            id: BackendId::named(addr, name),
            weight,
        }
    }
}

/// Why a table was not built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaglevError {
    #[error("maglev table size {size} is not prime (the next prime is {next})")]
    NotPrime { size: u32, next: u32 },
    #[error("maglev table size {size} is larger than the maximum {max}")]
    TooLarge { size: u32, max: u32 },
    #[error(
        "maglev table size {size} is smaller than the {backends} backends with a weight \
         (use at least 100 entries per backend)"
    )]
    TooSmall { size: u32, backends: usize },
    #[error("{count} backends: at most {max}")]
    TooManyBackends { count: usize, max: usize },
    #[error("backend {id} is listed twice")]
    Duplicate { id: BackendId },
}

/// A built Maglev table: immutable, read by workers through `&self`.
#[derive(Debug, Clone)]
pub struct Maglev {
    size: u32,
    /// Sorted by identity; entries index into this.
    backends: Box<[Backend]>,
    /// `size` backend indices, or empty when no backend has a weight.
    entries: Box<[u16]>,
}

impl Maglev {
    /// Builds the table of `size` entries (prime, at most [`MAX_SIZE`]) for
    /// `backends` in any order.
    ///
    /// Weighted population (the scheme of Envoy's Maglev load balancer, in
    /// integers): the paper's round robin, where in round `t` (from 1) a
    /// backend of weight `w` takes its `k`-th turn (from 0) only once
    /// `t·w ≥ k·W` (`W` the largest weight), at most one turn per round, in
    /// identity order within a round; a turn fills the next empty entry of
    /// its permutation. So a backend takes `⌊t·w/W⌋ + 1` turns in `t`
    /// rounds: its share is `w/Σw` to within about an entry, every backend
    /// with a weight gets at least one entry, and with equal weights this
    /// is exactly the paper's Pseudocode 1. Turns are scheduled through a
    /// heap keyed by (round, index), so a build costs `O(M log N)` plus the
    /// permutation probes whatever the weights' spread (a round-by-round
    /// scan would cost `N` per round, and one heavy backend makes `M`
    /// rounds).
    pub fn new(
        size: u32,
        backends: impl IntoIterator<Item = Backend>,
    ) -> Result<Self, MaglevError> {
        if size > MAX_SIZE {
            return Err(MaglevError::TooLarge {
                size,
                max: MAX_SIZE,
            });
        }
        if !is_prime(size) {
            return Err(MaglevError::NotPrime {
                size,
                next: next_prime(size),
            });
        }
        let mut backends: Vec<Backend> = backends.into_iter().collect();
        if backends.len() > MAX_BACKENDS {
            return Err(MaglevError::TooManyBackends {
                count: backends.len(),
                max: MAX_BACKENDS,
            });
        }
        backends.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(w) = backends.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(MaglevError::Duplicate {
                id: w[0].id.clone(),
            });
        }
        let active = backends.iter().filter(|b| b.weight > 0).count();
        if active > size as usize {
            return Err(MaglevError::TooSmall {
                size,
                backends: active,
            });
        }
        let entries = populate(size, &backends);
        Ok(Maglev {
            size,
            backends: backends.into_boxed_slice(),
            entries,
        })
    }

    /// Builds with [`DEFAULT_SIZE`].
    pub fn with_default_size(
        backends: impl IntoIterator<Item = Backend>,
    ) -> Result<Self, MaglevError> {
        Self::new(DEFAULT_SIZE, backends)
    }

    /// `M`, the number of entries (also when no backend has a weight).
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The backends sorted by identity: the order [`Maglev::backend`]'s
    /// indices refer to. Drained backends (weight 0) are included.
    pub fn backends(&self) -> &[Backend] {
        &self.backends
    }

    /// The index of the backend `id`, if it is in the table.
    pub fn index_of(&self, id: &BackendId) -> Option<usize> {
        self.backends.binary_search_by(|b| b.id.cmp(id)).ok()
    }

    /// Whether no backend has a weight (every lookup answers `None`).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry `hash` maps to: `⌊hash · M / 2³²⌋` (a multiply and a shift,
    /// Lemire's range reduction, instead of `hash % M`'s division). It is as
    /// uniform as `%` to within one part in `2³² / M`, and it reads the
    /// hash's high bits, which a NIC's RSS indirection (indexed by the low
    /// bits) did not use up: one worker's flows, which share their low
    /// bits, still spread over the whole table.
    #[inline(always)]
    pub fn entry_index(&self, hash: u32) -> usize {
        ((u64::from(hash) * u64::from(self.size)) >> 32) as usize
    }

    /// The index (into [`Maglev::backends`]) of the backend for a flow
    /// hash, or `None` when no backend has a weight.
    #[inline(always)]
    pub fn backend(&self, hash: u32) -> Option<usize> {
        // `get`: the bounds check is the empty-table check.
        self.entries
            .get(self.entry_index(hash))
            .map(|&b| usize::from(b))
    }

    /// Hints the CPU to load the entry [`Maglev::backend`] reads for `hash`
    /// (a table of 65,537 entries is 128 KiB: one service's lookups at
    /// random miss the first-level cache).
    #[inline(always)]
    pub fn prefetch(&self, hash: u32) {
        if let Some(e) = self.entries.get(self.entry_index(hash)) {
            crate::dpdk::prefetch(e);
        }
    }

    /// The backend for a flow hash, or `None` when no backend has a weight.
    #[inline(always)]
    pub fn lookup(&self, flow_hash: u32) -> Option<&Backend> {
        self.backend(flow_hash).map(|i| &self.backends[i])
    }

    /// The table: entry -> backend index (empty when no backend has a weight).
    pub fn entries(&self) -> &[u16] {
        &self.entries
    }

    /// How many entries each backend holds (index = backend index).
    pub fn entry_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.backends.len()];
        for &e in self.entries.iter() {
            counts[usize::from(e)] += 1;
        }
        counts
    }

    /// For each backend of `old`, its index in `self` (`None` if it is
    /// gone): what a connection table tracked under `old` needs after a
    /// reload (see [`super::conntrack::ConnTable::retain_backends`]).
    pub fn index_map_from(&self, old: &Maglev) -> Vec<Option<u32>> {
        // Both lists are sorted by identity: one merge.
        let mut map = Vec::with_capacity(old.backends.len());
        let mut j = 0;
        for b in old.backends.iter() {
            while j < self.backends.len() && self.backends[j].id < b.id {
                j += 1;
            }
            let hit = j < self.backends.len() && self.backends[j].id == b.id;
            map.push(hit.then_some(j as u32));
        }
        map
    }

    /// A fingerprint of the whole table (size, identities, weights,
    /// entries), FNV-1a 64 over a fixed little-endian encoding: equal on
    /// every machine for equal tables. For logs ("which table is this
    /// daemon using") and the golden test.
    pub fn fingerprint(&self) -> u64 {
        let mut h = fnv1a(FNV_OFFSET, &self.size.to_le_bytes());
        for b in self.backends.iter() {
            h = fnv1a(h, &b.id.fnv(FNV_OFFSET).to_le_bytes());
            h = fnv1a(h, &b.weight.to_le_bytes());
        }
        for e in self.entries.iter() {
            h = fnv1a(h, &e.to_le_bytes());
        }
        h
    }
}

/// Fills the table (see [`Maglev::new`]); `backends` sorted by identity.
fn populate(size: u32, backends: &[Backend]) -> Box<[u16]> {
    const EMPTY: u16 = u16::MAX;
    let max_w = backends
        .iter()
        .map(|b| u64::from(b.weight))
        .max()
        .unwrap_or(0);
    if max_w == 0 {
        return Box::new([]);
    }
    let m = u64::from(size);
    struct Perm {
        /// The next entry of the permutation to try.
        pos: u64,
        skip: u64,
        weight: u64,
        /// Turns taken.
        turns: u64,
    }
    let mut perms: Vec<Perm> = backends
        .iter()
        .map(|b| {
            let (offset, skip) = b.id.offset_skip(size);
            Perm {
                pos: u64::from(offset),
                skip: u64::from(skip),
                weight: u64::from(b.weight),
                turns: 0,
            }
        })
        .collect();
    // (round, index), smallest first: every backend with a weight takes a
    // turn in round 1. Index ties break by identity order.
    let mut heap: BinaryHeap<Reverse<(u64, u16)>> = backends
        .iter()
        .enumerate()
        .filter(|(_, b)| b.weight > 0)
        .map(|(i, _)| Reverse((1, i as u16)))
        .collect();
    let mut entries = vec![EMPTY; size as usize];
    let mut filled = 0u64;
    while filled < m {
        let Some(Reverse((round, i))) = heap.pop() else {
            break; // unreachable: some backend has a weight
        };
        let p = &mut perms[usize::from(i)];
        // M prime and 1 <= skip < M: the permutation visits every entry,
        // so an empty one is found while any is left.
        loop {
            let c = p.pos as usize;
            p.pos += p.skip;
            if p.pos >= m {
                p.pos -= m;
            }
            if entries[c] == EMPTY {
                entries[c] = i;
                break;
            }
        }
        filled += 1;
        p.turns += 1;
        // Turn k comes in the first round t with t·w >= k·W, and after this
        // one. (k·W <= M·2³² and t <= M·2³²: no overflow with M <= 2²⁴.)
        let next = (p.turns * max_w).div_ceil(p.weight).max(round + 1);
        heap.push(Reverse((next, i)));
    }
    entries.into_boxed_slice()
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// The second hash's FNV offset basis (the 64-bit golden ratio): any value
/// other than `FNV_OFFSET` gives a different FNV state from the first byte.
const SKIP_BASIS: u64 = 0x9e37_79b9_7f4a_7c15;

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// murmur3's 64-bit finaliser: a bijection in which every input bit
/// affects every output bit.
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// Whether `n` is prime (trial division: `n` is at most [`MAX_SIZE`], so
/// at most 2,048 odd divisors).
pub fn is_prime(n: u32) -> bool {
    if n < 4 {
        return n >= 2;
    }
    if n.is_multiple_of(2) {
        return false;
    }
    let n = u64::from(n);
    (3..)
        .step_by(2)
        .take_while(|d| d * d <= n)
        .all(|d| !n.is_multiple_of(d))
}

/// The smallest prime `>= n` (for the error message).
pub fn next_prime(n: u32) -> u32 {
    (n..=u32::MAX).find(|&p| is_prime(p)).unwrap_or(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
    }

    fn v6(n: u32) -> IpAddr {
        IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0,
            0,
            0,
            0,
            (n >> 16) as u16,
            n as u16,
        ))
    }

    fn equal(n: u32) -> Vec<Backend> {
        (1..=n).map(|i| Backend::new(v4(i), 1)).collect()
    }

    /// The largest |count/M − w/Σw| over the backends.
    fn max_share_error(t: &Maglev) -> f64 {
        let total: f64 = t.backends().iter().map(|b| f64::from(b.weight)).sum();
        let m = f64::from(t.size());
        t.entry_counts()
            .iter()
            .zip(t.backends())
            .map(|(&c, b)| (f64::from(c) / m - f64::from(b.weight) / total).abs())
            .fold(0.0, f64::max)
    }

    /// Entries whose backend differs between two tables of one size, and of
    /// those the ones that went from one backend present in both to another
    /// (compared by identity).
    fn moved(a: &Maglev, b: &Maglev) -> (usize, usize) {
        let map = b.index_map_from(a);
        let (mut moved, mut between_survivors) = (0, 0);
        for (&x, &y) in a.entries().iter().zip(b.entries()) {
            let x_now = map[usize::from(x)];
            if x_now != Some(u32::from(y)) {
                moved += 1;
                if x_now.is_some() {
                    between_survivors += 1;
                }
            }
        }
        (moved, between_survivors)
    }

    #[test]
    fn sizes_must_be_prime_and_bounded() {
        for size in [0, 1, 4, 100, 65_536, 655_372] {
            assert!(
                matches!(
                    Maglev::new(size, equal(1)),
                    Err(MaglevError::NotPrime { .. })
                ),
                "{size}"
            );
        }
        assert_eq!(
            Maglev::new(65_536, equal(1)).unwrap_err(),
            MaglevError::NotPrime {
                size: 65_536,
                next: 65_537
            }
        );
        for size in [2, 3, 5, 10_007, 65_537, 655_373] {
            assert_eq!(
                Maglev::new(size, equal(1)).unwrap().entries().len(),
                size as usize
            );
        }
        assert!(matches!(
            Maglev::new(MAX_SIZE + 1, equal(1)),
            Err(MaglevError::TooLarge { .. })
        ));
        assert!(is_prime(16_777_213) && Maglev::new(16_777_213, []).is_ok());
        assert_eq!(
            Maglev::new(5, equal(6)).unwrap_err(),
            MaglevError::TooSmall {
                size: 5,
                backends: 6
            }
        );
        // Drained backends do not count against the size.
        let mut b = equal(5);
        b.push(Backend::new(v4(99), 0));
        assert!(Maglev::new(5, b).is_ok());
    }

    #[test]
    fn duplicates_and_too_many_are_refused() {
        let mut b = equal(3);
        b.push(Backend::new(v4(2), 7));
        assert_eq!(
            Maglev::new(DEFAULT_SIZE, b).unwrap_err(),
            MaglevError::Duplicate {
                id: BackendId::new(v4(2))
            }
        );
        // Same address, different names: two identities.
        let b = [
            Backend::named(v4(1), "a", 1),
            Backend::named(v4(1), "b", 1),
            Backend::new(v4(1), 1),
        ];
        assert_eq!(Maglev::new(DEFAULT_SIZE, b).unwrap().backends().len(), 3);
        assert!(matches!(
            Maglev::new(DEFAULT_SIZE, equal(MAX_BACKENDS as u32 + 1)),
            Err(MaglevError::TooManyBackends { .. })
        ));
        let e = Maglev::new(65_536, []).unwrap_err().to_string();
        assert_eq!(
            e,
            "maglev table size 65536 is not prime (the next prime is 65537)"
        );
    }

    #[test]
    fn no_backend_or_all_drained_answers_none() {
        for t in [
            Maglev::new(DEFAULT_SIZE, []).unwrap(),
            Maglev::new(
                DEFAULT_SIZE,
                [Backend::new(v4(1), 0), Backend::new(v6(1), 0)],
            )
            .unwrap(),
        ] {
            assert!(t.is_empty());
            for h in [0, 1, 0x8000_0000, u32::MAX] {
                assert_eq!(t.backend(h), None);
                assert!(t.lookup(h).is_none());
            }
        }
    }

    #[test]
    fn every_hash_maps_inside_the_table() {
        let t = Maglev::new(DEFAULT_SIZE, equal(3)).unwrap();
        assert_eq!(t.entry_index(0), 0);
        assert_eq!(t.entry_index(u32::MAX), DEFAULT_SIZE as usize - 1);
        assert!(t.backend(u32::MAX).is_some());
        // Every entry is reached by some hash: the reduction is onto.
        let step = (1u64 << 32) / u64::from(DEFAULT_SIZE);
        let mut seen = vec![false; DEFAULT_SIZE as usize];
        for e in 0..u64::from(DEFAULT_SIZE) {
            seen[t.entry_index(((e * step) + step / 2) as u32)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// M = 65537, 100 equal backends: the paper's algorithm gives each
    /// backend 655 or 656 entries, far inside the 1 % the issue asks for.
    #[test]
    fn equal_weights_are_even() {
        let t = Maglev::new(DEFAULT_SIZE, equal(100)).unwrap();
        let counts = t.entry_counts();
        let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        assert!(max - min <= 1, "{min}..{max}");
        let ideal = f64::from(DEFAULT_SIZE) / 100.0;
        let rel = counts
            .iter()
            .map(|&c| (f64::from(c) - ideal).abs() / ideal)
            .fold(0.0, f64::max);
        assert!(rel < 0.001, "largest relative deviation {rel}");
        assert!(max_share_error(&t) <= 0.01);
        assert_eq!(counts.iter().sum::<u32>(), DEFAULT_SIZE);
    }

    /// Weights 1, 2, 3, 4: each backend's share of the table is its weight
    /// share to within about one entry.
    #[test]
    fn weights_set_the_shares() {
        let t = Maglev::new(DEFAULT_SIZE, (1..=4).map(|w| Backend::new(v4(w), w))).unwrap();
        let m = f64::from(DEFAULT_SIZE);
        for (c, want) in t.entry_counts().iter().zip([0.1, 0.2, 0.3, 0.4]) {
            let share = f64::from(*c) / m;
            assert!((share - want).abs() <= 0.0001, "{share} vs {want}");
        }
        assert!(max_share_error(&t) <= 0.01);
        // A heavy spread: one backend a million times another's weight.
        let t = Maglev::new(
            DEFAULT_SIZE,
            [
                Backend::new(v4(1), 1),
                Backend::new(v4(2), 1_000_000),
                Backend::new(v4(3), u32::MAX),
            ],
        )
        .unwrap();
        let c = t.entry_counts();
        assert!(c[0] >= 1, "every weighted backend gets an entry: {c:?}");
        assert!(max_share_error(&t) <= 2.0 / m, "{c:?}");
    }

    /// Draining one of 10 backends: it keeps its index and gets no entries;
    /// the other nine share the table evenly (7281 or 7282 entries each).
    #[test]
    fn weight_zero_drains() {
        let mut b = equal(10);
        b[3].weight = 0;
        let t = Maglev::new(DEFAULT_SIZE, b).unwrap();
        assert_eq!(t.backends().len(), 10);
        let i = t.index_of(&BackendId::new(v4(4))).unwrap();
        let counts = t.entry_counts();
        assert_eq!(counts[i], 0);
        let others: Vec<u32> = counts
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &c)| c)
            .collect();
        let (min, max) = (others.iter().min().unwrap(), others.iter().max().unwrap());
        assert!(max - min <= 1, "{others:?}");
        assert!(max_share_error(&t) <= 0.0001);
        // The same table as without the drained backend, save the indices.
        let without = Maglev::new(
            DEFAULT_SIZE,
            equal(10)
                .into_iter()
                .filter(|b| b.id != BackendId::new(v4(4))),
        )
        .unwrap();
        assert_eq!(moved(&t, &without), (0, 0));
    }

    /// Removing one of N backends moves the removed backend's own 1/N and
    /// some entries between survivors: Maglev is not minimally disruptive,
    /// because after the removed backend's turns the survivors' fill order
    /// changes. Zero moves between survivors would need a table that
    /// remembers its history, and then two instances built from the same
    /// config would differ. The bounds sit just above what is observed
    /// (worst over the removals tried, in units of 1/N: moved / between
    /// survivors): N = 10 at M = 65537, every removal: 1.030 / 0.030;
    /// N = 100 at M = 65537, every removal: 1.617 / 0.618; N = 1000 at
    /// M = 655373, every 100th removal: 4.31 / 3.31. The between-survivor
    /// share grows with N/M, hence the larger table for N = 1000 (every
    /// 250th removal here, to keep the debug run to a few seconds).
    #[test]
    fn removing_a_backend_moves_about_its_share() {
        for (size, n, step, bound, survivors) in [
            (DEFAULT_SIZE, 10u32, 1, 1.05, 0.05),
            (DEFAULT_SIZE, 100, 7, 1.7, 0.7),
            (655_373, 1000, 250, 4.6, 3.6),
        ] {
            let all = Maglev::new(size, equal(n)).unwrap();
            let m = f64::from(size);
            let (mut worst, mut worst_survivors) = (0.0f64, 0.0f64);
            for gone in (1..=n).step_by(step) {
                let rest =
                    Maglev::new(size, equal(n).into_iter().filter(|b| b.id.addr != v4(gone)))
                        .unwrap();
                let (moved, between) = moved(&all, &rest);
                worst = worst.max(moved as f64 / m);
                worst_survivors = worst_survivors.max(between as f64 / m);
            }
            let n = f64::from(n);
            // The removed backend's own entries always move.
            assert!(worst >= 0.99 / n, "N = {n}: moved {worst}");
            assert!(worst <= bound / n, "N = {n}: moved {worst}");
            assert!(
                worst_survivors <= survivors / n,
                "N = {n}: between survivors {worst_survivors}"
            );
        }
    }

    #[test]
    fn ipv6_backends() {
        let t = Maglev::new(DEFAULT_SIZE, (1..=50).map(|i| Backend::new(v6(i), 1))).unwrap();
        let counts = t.entry_counts();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        // IPv4 sorts before IPv6; both in one table.
        let t = Maglev::new(
            DEFAULT_SIZE,
            [Backend::new(v6(1), 1), Backend::new(v4(1), 1)],
        )
        .unwrap();
        assert_eq!(t.backends()[0].id.addr, v4(1));
        assert_eq!(t.backends()[1].id.addr, v6(1));
        // An IPv4 address and its IPv4-mapped IPv6 form are two identities
        // with different permutations.
        let mapped = BackendId::new(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()));
        assert_ne!(
            mapped.offset_skip(DEFAULT_SIZE),
            BackendId::new(v4(1)).offset_skip(DEFAULT_SIZE)
        );
    }

    /// The permutation hashes and the table for a fixed backend set are
    /// constants: the same on every machine and run. If this fails, the
    /// table changed, and every flow of a deployed balancer would move.
    #[test]
    fn golden() {
        let b: Vec<Backend> = (1..=20)
            .map(|i| Backend::new(v4(i), i % 4))
            .chain((1..=5).map(|i| Backend::named(v6(i), format!("web{i}"), 3)))
            .collect();
        let t = Maglev::new(DEFAULT_SIZE, b).unwrap();
        assert_eq!(
            BackendId::new(v4(1)).offset_skip(DEFAULT_SIZE),
            GOLDEN_OFFSET_SKIP
        );
        assert_eq!(t.entries()[..8], GOLDEN_FIRST);
        assert_eq!(
            t.fingerprint(),
            GOLDEN_FINGERPRINT,
            "{:#x}",
            t.fingerprint()
        );
    }
    /// Also computed by an independent Python script of the same FNV-1a +
    /// fmix64 over the bytes `[4, 10, 0, 0, 1]`.
    const GOLDEN_OFFSET_SKIP: (u32, u32) = (18_939, 54_581);
    const GOLDEN_FIRST: [u16; 8] = [24, 17, 10, 20, 1, 21, 14, 12];
    const GOLDEN_FINGERPRINT: u64 = 0xb8f6_8f51_4d46_ea27;

    #[test]
    fn index_map_follows_identity() {
        let old = Maglev::new(DEFAULT_SIZE, [1, 2, 3, 4].map(|i| Backend::new(v4(i), 1))).unwrap();
        // 2 removed, 0 and 5 added (0 sorts first and shifts every index).
        let new = Maglev::new(
            DEFAULT_SIZE,
            [0, 1, 3, 4, 5].map(|i| Backend::new(v4(i), 1)),
        )
        .unwrap();
        assert_eq!(
            new.index_map_from(&old),
            vec![Some(1), None, Some(2), Some(3)]
        );
        assert_eq!(
            old.index_map_from(&old),
            vec![Some(0), Some(1), Some(2), Some(3)]
        );
    }

    fn backend_set() -> impl Strategy<Value = Vec<Backend>> {
        proptest::collection::btree_map((any::<bool>(), any::<u32>(), 0u8..3), 0u32..50, 1..40)
            .prop_map(|m| {
                m.into_iter()
                    .map(|((is_v6, a, name), w)| {
                        let addr = if is_v6 {
                            v6(a)
                        } else {
                            IpAddr::V4(Ipv4Addr::from(a))
                        };
                        match name {
                            0 => Backend::new(addr, w),
                            n => Backend::named(addr, format!("n{n}"), w),
                        }
                    })
                    .collect()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Config order does not matter: any permutation of a backend set
        /// gives the same table.
        #[test]
        fn order_does_not_matter(b in backend_set(), seed in any::<u64>()) {
            let mut shuffled = b.clone();
            // Fisher–Yates with a tiny LCG, so the order is the strategy's.
            let mut s = seed;
            for i in (1..shuffled.len()).rev() {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                shuffled.swap(i, (s >> 33) as usize % (i + 1));
            }
            let (x, y) = (Maglev::new(10_007, b).unwrap(), Maglev::new(10_007, shuffled).unwrap());
            prop_assert_eq!(x.entries(), y.entries());
            prop_assert_eq!(x.backends(), y.backends());
            prop_assert_eq!(x.fingerprint(), y.fingerprint());
        }

        /// Any weights: each backend's entry count is within 2 + 2N entries
        /// of M·w/Σw (one entry of rounding per backend, plus its part of
        /// the N first-round turns) and every weighted backend has one.
        #[test]
        fn shares_follow_weights(b in backend_set()) {
            let t = Maglev::new(10_007, b).unwrap();
            let total: u64 = t.backends().iter().map(|b| u64::from(b.weight)).sum();
            let n = t.backends().len() as f64;
            for (&c, b) in t.entry_counts().iter().zip(t.backends()) {
                if total == 0 {
                    prop_assert_eq!(c, 0);
                    continue;
                }
                let ideal = 10_007.0 * b.weight as f64 / total as f64;
                prop_assert!((f64::from(c) - ideal).abs() <= 2.0 + 2.0 * n, "{} vs {}", c, ideal);
                prop_assert_eq!(c == 0, b.weight == 0);
            }
        }

        /// Removing one backend of equal-weight sets (M = 10007, N < 40, so
        /// M/N > 250) moves its own 1/N plus, between survivors, at most
        /// 0.05/N + 1.5% of the table. Observed over every removal for every
        /// N in range: the between-survivor share grows about as 0.014·N in
        /// units of 1/N (0.107/N at N = 10, 0.538/N at N = 39; zero at N = 2).
        #[test]
        fn minimal_disruption(n in 2u32..40, gone in any::<prop::sample::Index>()) {
            let gone = gone.index(n as usize) as u32 + 1;
            let all = Maglev::new(10_007, equal(n)).unwrap();
            let rest = Maglev::new(10_007, equal(n).into_iter().filter(|b| b.id.addr != v4(gone))).unwrap();
            let (moved, between) = moved(&all, &rest);
            let own = all.entry_counts()[all.index_of(&BackendId::new(v4(gone))).unwrap()];
            let n = f64::from(n);
            let survivors = 0.05 / n + 0.015;
            prop_assert_eq!(moved - between, own as usize, "every entry of the removed backend moves");
            prop_assert!(between as f64 / 10_007.0 <= survivors, "between survivors {} at N = {}", between, n);
            prop_assert!(moved as f64 / 10_007.0 <= 1.0 / n + survivors + 1.0 / 10_007.0, "{} at N = {}", moved, n);
        }
    }
}
