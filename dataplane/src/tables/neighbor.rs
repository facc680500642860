//! The neighbour cache (ARP for IPv4, NDP for IPv6): (port, IP) → MAC.
//!
//! Two backends with the same rules: lookups never take a lock, so workers
//! look up on the data path while others learn from ARP/NDP packets (rare;
//! writers are serialised), and entries are never removed. `rte_hash`
//! (lock-free readers, DPDK's multi-writer add) is the daemon's default;
//! [`LearnMap`], a fixed-capacity open-addressing table over atomics, is
//! pure Rust and needs no EAL. [`NeighborBackend::for_routes`] chooses. A
//! value is either a resolved MAC or the TSC time of the last solicitation
//! sent for an unresolved address, which rate-limits requests.
use super::route::RouteBackend;
use crate::dpdk::hash::Hash;
use crate::dpdk::DpdkError;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

const RESOLVED: u64 = 1 << 63;
const MAC_MASK: u64 = (1 << 48) - 1;

/// What the cache knows about a neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborState {
    /// MAC known.
    Resolved([u8; 6]),
    /// A solicitation was sent at this TSC time; no answer yet.
    Pending(u64),
    /// Never heard of.
    Unknown,
}

/// Key: port (2 bytes) + 2 bytes padding + IPv6 address or IPv4-mapped.
pub type NeighborKey = [u8; 20];

pub fn key(port: u16, ip: IpAddr) -> NeighborKey {
    let mut k = [0u8; 20];
    k[..2].copy_from_slice(&port.to_be_bytes());
    let v6 = match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    };
    k[4..].copy_from_slice(&v6.octets());
    k
}

pub fn key_v4(port: u16, ip: u32) -> NeighborKey {
    key(port, IpAddr::V4(ip.into()))
}

pub fn key_v6(port: u16, ip: [u8; 16]) -> NeighborKey {
    key(port, IpAddr::V6(ip.into()))
}

fn mac_to_u64(m: [u8; 6]) -> u64 {
    m.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
}

fn u64_to_mac(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn decode(v: Option<u64>) -> NeighborState {
    match v {
        None => NeighborState::Unknown,
        Some(v) if v & RESOLVED != 0 => NeighborState::Resolved(u64_to_mac(v & MAC_MASK)),
        Some(v) => NeighborState::Pending(v),
    }
}

/// Which map backs a [`NeighborTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborBackend {
    /// `rte_hash` (needs EAL): the daemon's default.
    RteHash,
    /// [`LearnMap`]: pure Rust, no EAL.
    Rust,
}

impl NeighborBackend {
    /// The backend for a config whose route section has `route` as its
    /// backend (`None`: no route section). The Rust map goes with the
    /// `linear` route backend, so that a routing config that asks for no
    /// DPDK table gets none and builds without EAL (tests), and
    /// with no route section at all (nothing learns then; no EAL memory for
    /// a table nobody reads). rte_fib and rte_lpm keep rte_hash: the daemon's
    /// tables stay DPDK's. The neighbour table is made once at start and
    /// outlives reloads, so a reload that changes `route.backend` keeps the
    /// one it has (both work under either route backend).
    pub fn for_routes(route: Option<RouteBackend>) -> NeighborBackend {
        match route {
            Some(RouteBackend::Fib | RouteBackend::Lpm) => NeighborBackend::RteHash,
            Some(RouteBackend::Linear) | None => NeighborBackend::Rust,
        }
    }
}

/// The map behind a [`NeighborTable`]: matched once per call.
enum Map {
    RteHash(Hash<20>),
    Rust(LearnMap),
}

/// Learned state: lives as long as the daemon, across table reloads.
pub struct NeighborTable {
    map: Map,
    /// Neighbours that could not be stored (cache full): slow path only.
    learn_failures: AtomicU64,
    /// The static neighbours of the tables in force
    /// ([`NeighborTable::install_statics`]; control thread only).
    statics: Mutex<HashSet<NeighborKey>>,
}

impl NeighborTable {
    /// An rte_hash-backed table for `capacity` neighbours (EAL must be up).
    pub fn new(capacity: u32) -> Result<Self, DpdkError> {
        Self::with_backend(NeighborBackend::RteHash, capacity)
    }

    /// A table on `backend` for `capacity` neighbours; only
    /// [`NeighborBackend::RteHash`] can fail (and needs EAL).
    pub fn with_backend(backend: NeighborBackend, capacity: u32) -> Result<Self, DpdkError> {
        let map = match backend {
            NeighborBackend::RteHash => Map::RteHash(Hash::new(capacity)?),
            NeighborBackend::Rust => Map::Rust(LearnMap::new(capacity)),
        };
        Ok(NeighborTable {
            map,
            learn_failures: AtomicU64::new(0),
            statics: Mutex::new(HashSet::new()),
        })
    }

    pub fn backend(&self) -> NeighborBackend {
        match self.map {
            Map::RteHash(_) => NeighborBackend::RteHash,
            Map::Rust(_) => NeighborBackend::Rust,
        }
    }

    fn insert(&self, k: &NeighborKey, v: u64) -> bool {
        match &self.map {
            Map::RteHash(h) => h.insert(k, v).is_ok(),
            Map::Rust(m) => m.insert(k, v),
        }
    }

    /// Records a resolved neighbour (static config or learned); false, and
    /// counted, when the cache is full.
    pub fn learn(&self, k: &NeighborKey, mac: [u8; 6]) -> bool {
        let ok = self.insert(k, RESOLVED | mac_to_u64(mac));
        if !ok {
            self.learn_failures.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// Makes `keys` the static neighbours in force and forgets the ones
    /// that were and are no longer (a reload removed them from the
    /// config): each becomes unresolved, as if never heard of but for a
    /// solicitation long ago, so the next packet to it solicits it and the
    /// wire's answer is learned. Without this the removed entry would keep
    /// its configured MAC for good (entries do not age). Overwritten, not
    /// deleted: both maps take writes under their readers, a delete
    /// (rte_hash's) does not. Returns how many were forgotten. Called once
    /// a table set's build has succeeded, before it is published.
    pub fn install_statics(&self, keys: &HashSet<NeighborKey>) -> usize {
        let mut statics = self.statics.lock().unwrap_or_else(|e| e.into_inner());
        let mut forgotten = 0;
        for k in statics.difference(keys) {
            self.mark_pending(k, 0);
            forgotten += 1;
        }
        *statics = keys.clone();
        forgotten
    }

    /// The static neighbours in force ([`NeighborTable::install_statics`]).
    pub fn installed_statics(&self) -> HashSet<NeighborKey> {
        self.statics
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Neighbours not learned because the cache was full.
    pub fn learn_failures(&self) -> u64 {
        self.learn_failures.load(Ordering::Relaxed)
    }

    /// Notes that a solicitation went out at `tsc` (only if not resolved).
    pub fn mark_pending(&self, k: &NeighborKey, tsc: u64) -> bool {
        self.insert(k, tsc & !RESOLVED)
    }

    pub fn get(&self, k: &NeighborKey) -> NeighborState {
        decode(match &self.map {
            Map::RteHash(h) => h.get(k),
            Map::Rust(m) => m.get(k),
        })
    }

    /// Bulk lookup of up to 64 keys.
    pub fn lookup_bulk(&self, keys: &[&NeighborKey], out: &mut [NeighborState]) {
        let mut raw = [None; crate::dpdk::hash::LOOKUP_BULK_MAX];
        let n = keys.len().min(raw.len());
        match &self.map {
            Map::RteHash(h) => h.lookup_bulk(&keys[..n], &mut raw[..n]),
            Map::Rust(m) => {
                for (r, k) in raw.iter_mut().zip(&keys[..n]) {
                    *r = m.get(k);
                }
            }
        }
        for (o, r) in out.iter_mut().zip(&raw[..n]) {
            *o = decode(*r);
        }
    }

    /// Resolved entries as (port, ip, mac), for stats and dumps.
    pub fn resolved(&self) -> Vec<(u16, IpAddr, [u8; 6])> {
        let entries = match &self.map {
            Map::RteHash(h) => h.entries(),
            Map::Rust(m) => m.entries(),
        };
        entries
            .into_iter()
            .filter(|(_, v)| v & RESOLVED != 0)
            .map(|(k, v)| {
                let port = u16::from_be_bytes([k[0], k[1]]);
                let mut a = [0u8; 16];
                a.copy_from_slice(&k[4..]);
                let v6 = std::net::Ipv6Addr::from(a);
                let ip = match v6.to_ipv4_mapped() {
                    Some(v4) => IpAddr::V4(v4),
                    None => IpAddr::V6(v6),
                };
                (port, ip, u64_to_mac(v & MAC_MASK))
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        match &self.map {
            Map::RteHash(h) => h.len(),
            Map::Rust(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn memory_bytes(&self) -> usize {
        match &self.map {
            Map::RteHash(h) => h.memory_bytes(),
            Map::Rust(m) => m.memory_bytes(),
        }
    }
}

/// A [`NeighborKey`] as the words a [`LearnMap`] slot stores.
const KEY_WORDS: usize = std::mem::size_of::<NeighborKey>() / 4;
const _: () = assert!(KEY_WORDS * 4 == std::mem::size_of::<NeighborKey>());

fn key_words(k: &NeighborKey) -> [u32; KEY_WORDS] {
    std::array::from_fn(|i| {
        u32::from_ne_bytes([k[4 * i], k[4 * i + 1], k[4 * i + 2], k[4 * i + 3]])
    })
}

/// One [`LearnMap`] slot. The key is written once, before `used` is set
/// (release), and never changes after; the value is one atomic word that
/// a writer replaces whole. So a reader that sees `used` (acquire) reads the
/// key the writer wrote and a value it stored, never a torn one: no
/// sequence count is needed.
struct Slot {
    used: AtomicBool,
    key: [AtomicU32; KEY_WORDS],
    value: AtomicU64,
}

/// The Rust neighbour map: a fixed array of at least twice `capacity`
/// slots (a power of two), linear probing from a seeded hash of the key, at
/// most `capacity` keys. Entries are never removed, so a probe ends at the
/// first unused slot, and one always exists. Lookups read atomics only and
/// take no lock; inserts (rare: ARP/NDP learning, solicitations) take
/// `writers`, so two writers never claim one slot.
pub struct LearnMap {
    slots: Box<[Slot]>,
    mask: usize,
    capacity: usize,
    len: AtomicUsize,
    hasher: std::collections::hash_map::RandomState,
    writers: Mutex<()>,
}

impl LearnMap {
    /// A map for `capacity` keys (at least 8, as the rte_hash one).
    pub fn new(capacity: u32) -> LearnMap {
        let capacity = capacity.max(8) as usize;
        let n = (2 * capacity).next_power_of_two();
        LearnMap {
            slots: (0..n)
                .map(|_| Slot {
                    used: AtomicBool::new(false),
                    key: std::array::from_fn(|_| AtomicU32::new(0)),
                    value: AtomicU64::new(0),
                })
                .collect(),
            mask: n - 1,
            capacity,
            len: AtomicUsize::new(0),
            hasher: Default::default(),
            writers: Mutex::new(()),
        }
    }

    fn start(&self, k: &NeighborKey) -> usize {
        self.hasher.hash_one(k) as usize & self.mask
    }

    /// The slot holding `k`, or the unused slot where it would go.
    fn probe(&self, k: &NeighborKey) -> (&Slot, bool) {
        let want = key_words(k);
        let mut i = self.start(k);
        loop {
            let s = &self.slots[i];
            if !s.used.load(Ordering::Acquire) {
                return (s, false);
            }
            if s.key
                .iter()
                .zip(&want)
                .all(|(a, b)| a.load(Ordering::Relaxed) == *b)
            {
                return (s, true);
            }
            // Fewer keys than slots: an unused slot comes before the probe
            // wraps all the way round.
            i = (i + 1) & self.mask;
        }
    }

    /// The value of `k`, if present. Lock-free.
    pub fn get(&self, k: &NeighborKey) -> Option<u64> {
        match self.probe(k) {
            (s, true) => Some(s.value.load(Ordering::Acquire)),
            _ => None,
        }
    }

    /// Inserts `k → v` or replaces `k`'s value; false when `k` is new and
    /// the map holds `capacity` keys.
    pub fn insert(&self, k: &NeighborKey, v: u64) -> bool {
        let _w = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let (s, found) = self.probe(k);
        if found {
            s.value.store(v, Ordering::Release);
            return true;
        }
        if self.len.load(Ordering::Relaxed) >= self.capacity {
            return false;
        }
        for (a, w) in s.key.iter().zip(key_words(k)) {
            a.store(w, Ordering::Relaxed);
        }
        s.value.store(v, Ordering::Relaxed);
        s.used.store(true, Ordering::Release);
        self.len.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Every (key, value) pair (control path: stats and dumps).
    pub fn entries(&self) -> Vec<(NeighborKey, u64)> {
        self.slots
            .iter()
            .filter(|s| s.used.load(Ordering::Acquire))
            .map(|s| {
                let mut k = [0u8; 20];
                for (c, w) in k.chunks_exact_mut(4).zip(&s.key) {
                    c.copy_from_slice(&w.load(Ordering::Relaxed).to_ne_bytes());
                }
                (k, s.value.load(Ordering::Acquire))
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learn_pending_lookup_rte_hash() {
        let _l = crate::tables::testing::test_lock();
        learn_pending_lookup(NeighborTable::new(64).unwrap());
    }

    #[test]
    fn learn_pending_lookup_rust() {
        learn_pending_lookup(NeighborTable::with_backend(NeighborBackend::Rust, 64).unwrap());
        crate::tables::testing::assert_no_eal();
    }

    fn learn_pending_lookup(t: NeighborTable) {
        let a = key(1, "10.0.0.1".parse().unwrap());
        let b = key(1, "2001:db8::1".parse().unwrap());
        let c = key(2, "10.0.0.1".parse().unwrap());
        assert_eq!(t.get(&a), NeighborState::Unknown);
        assert!(t.mark_pending(&a, 12345));
        assert_eq!(t.get(&a), NeighborState::Pending(12345));
        assert!(t.learn(&a, [2, 0, 0, 0, 0, 9]));
        assert!(t.learn(&b, [2, 0, 0, 0, 0, 10]));
        assert_eq!(t.get(&a), NeighborState::Resolved([2, 0, 0, 0, 0, 9]));
        let mut out = [NeighborState::Unknown; 3];
        t.lookup_bulk(&[&a, &b, &c], &mut out);
        assert_eq!(out[0], NeighborState::Resolved([2, 0, 0, 0, 0, 9]));
        assert_eq!(out[1], NeighborState::Resolved([2, 0, 0, 0, 0, 10]));
        assert_eq!(out[2], NeighborState::Unknown, "keys are per port");
        let mut r = t.resolved();
        r.sort();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].1, "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}

#[cfg(test)]
mod rust_tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    #[test]
    fn backend_follows_the_route_backend() {
        use NeighborBackend::*;
        assert_eq!(
            NeighborBackend::for_routes(Some(RouteBackend::Fib)),
            RteHash
        );
        assert_eq!(
            NeighborBackend::for_routes(Some(RouteBackend::Lpm)),
            RteHash
        );
        assert_eq!(
            NeighborBackend::for_routes(Some(RouteBackend::Linear)),
            Rust
        );
        assert_eq!(NeighborBackend::for_routes(None), Rust);
        let t = NeighborTable::with_backend(Rust, 8).unwrap();
        assert_eq!(t.backend(), Rust);
    }

    #[test]
    fn a_full_map_refuses_new_keys_and_keeps_updating_old_ones() {
        let t = NeighborTable::with_backend(NeighborBackend::Rust, 8).unwrap();
        let k = |i: u32| key_v4(1, 0x0a00_0000 + i);
        for i in 0..8 {
            assert!(t.learn(&k(i), [2, 0, 0, 0, 0, i as u8]));
        }
        assert!(!t.learn(&k(8), [2, 0, 0, 0, 0, 8]));
        assert!(!t.mark_pending(&k(9), 5));
        assert_eq!(t.learn_failures(), 1);
        assert!(
            t.learn(&k(3), [2, 0, 0, 0, 1, 3]),
            "an update needs no room"
        );
        assert_eq!(t.get(&k(3)), NeighborState::Resolved([2, 0, 0, 0, 1, 3]));
        assert_eq!(t.get(&k(8)), NeighborState::Unknown);
        assert_eq!((t.len(), t.resolved().len()), (8, 8));
        assert!(t.memory_bytes() >= 16 * 32);
    }

    /// Readers that never lock, while a writer learns and re-learns: a
    /// reader sees a key as unknown or with a value written for that very
    /// key (each MAC encodes its key), never another key's or a torn one.
    #[test]
    fn readers_see_whole_values_while_a_writer_learns() {
        const N: u32 = 512;
        let t = Arc::new(NeighborTable::with_backend(NeighborBackend::Rust, N).unwrap());
        let mac = |i: u32, round: u8| {
            let b = i.to_be_bytes();
            [round, b[0], b[1], b[2], b[3], round]
        };
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (t, stop) = (t.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut seen = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for i in 0..N {
                            match t.get(&key_v4(0, i)) {
                                NeighborState::Unknown => {}
                                NeighborState::Resolved(m) => {
                                    assert_eq!(m[1..5], i.to_be_bytes(), "key {i}: {m:02x?}");
                                    assert_eq!(m[0], m[5], "key {i}: torn {m:02x?}");
                                    seen += 1;
                                }
                                s => panic!("key {i}: {s:?}"),
                            }
                        }
                    }
                    seen
                })
            })
            .collect();
        for round in 1..=4u8 {
            for i in 0..N {
                assert!(t.learn(&key_v4(0, i), mac(i, round)));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(t.len(), N as usize);
        for i in 0..N {
            assert_eq!(t.get(&key_v4(0, i)), NeighborState::Resolved(mac(i, 4)));
        }
    }

    proptest! {
        /// The Rust map against a `HashMap`: inserts (new or updates) and
        /// gets over few keys, with the capacity limit.
        #[test]
        fn learn_map_matches_a_hash_map(
            cap in 8u32..24,
            ops in prop::collection::vec((0u32..40, any::<u64>(), any::<bool>()), 0..200),
        ) {
            let m = LearnMap::new(cap);
            let mut want = std::collections::HashMap::new();
            for (k, v, insert) in ops {
                let key = key_v4(k as u16 & 1, k);
                if insert {
                    let room = want.len() < cap as usize || want.contains_key(&key);
                    prop_assert_eq!(m.insert(&key, v), room);
                    if room {
                        want.insert(key, v);
                    }
                }
                prop_assert_eq!(m.get(&key), want.get(&key).copied());
                prop_assert_eq!(m.len(), want.len());
            }
            let mut got = m.entries();
            got.sort();
            let mut all: Vec<_> = want.into_iter().collect();
            all.sort();
            prop_assert_eq!(got, all);
        }
    }
}
