//! A per-worker connection table for the load balancer: which backend each
//! tracked flow (5-tuple + service) was sent to, so a flow stays on its
//! backend when the Maglev table changes under it.
//!
//! One instance per worker, owned by its stage and never shared, so no lock
//! and no atomic: with RSS, a flow's packets all reach one worker. Written
//! here rather than on `rte_hash` because what this table needs is what
//! rte_hash does not do: expiry by timestamp, checked when an entry is met
//! (no sweep that stalls a burst; an expired way is reused by the next
//! insert that needs it), an eviction policy of our own (none: a live flow
//! is never pushed out, so a flood of new tuples cannot break established
//! connections; an insert that finds no room answers [`Full`] and the
//! caller counts it and uses the Maglev choice untracked), and no lock or
//! multi-writer machinery to pay for. It allocates only in [`ConnTable::new`].
//!
//! Layout: `capacity / 8` buckets of 8 ways. A bucket is 8 32-bit tags (half
//! a cache line; 0 = free); way `w` of bucket `b` keeps its key, last-seen
//! time, backend and flags in slot `b·8 + w`, one cache line. A lookup reads
//! the tag line, compares the tags with two SSE2 compares, then reads the
//! one slot whose tag matches: two cache lines for a hit. A key that finds
//! its bucket full goes to an alternate bucket derived from its tag
//! (`b ^ f(tag)`, cuckoo hashing's partial-key trick, so an entry's primary
//! bucket is known from where it sits); a per-bucket count of such entries
//! means a lookup reads the alternate only when some key of its primary
//! bucket really overflowed. At half load one bucket alone would refuse a
//! fraction of a percent of the flows (Poisson, mean 4 per 8-way bucket);
//! with the alternate, and one cuckoo step when both are full (an entry of
//! the primary bucket moves to its own alternate: moved, never evicted), the
//! tests find none refused at half and three-quarter load and a few at 90 %
//! (bounded there). The compares are SSE2 through `crate::dpdk::match_mask8`
//! and prefetches through `crate::dpdk::prefetch`: CPU intrinsics kept in
//! `dpdk/` because only it may use `unsafe`; neither calls DPDK or needs
//! EAL.
use crate::dpdk::bigmem::BigSlice;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Ways per bucket.
const WAYS: usize = 8;

/// The refresh step is the shortest timeout over this ([`ConnTable::refresh_step`]).
const REFRESH_DIVISOR: u64 = 64;

/// The largest capacity accepted: 2²⁶ ways, 4.3 GiB.
pub const MAX_CAPACITY: usize = 1 << 26;

/// The smallest (two buckets, so there is an alternate).
pub const MIN_CAPACITY: usize = 2 * WAYS;

/// Entry flags.
pub mod flags {
    /// A TCP FIN was seen (the closing timeout applies).
    pub const FIN: u8 = 1 << 0;
    /// A TCP RST was seen (the closing timeout applies).
    pub const RST: u8 = 1 << 1;
    /// Either of them.
    pub const CLOSING: u8 = FIN | RST;
    /// The key is TCP: the TCP idle timeout applies (set by the table).
    pub const TCP: u8 = 1 << 7;
}

const PROTO_TCP: u8 = 6;

/// Idle timeouts, in the caller's clock ticks (e.g. TSC cycles). An entry
/// idle for longer than its timeout is absent — give or take the table's
/// refresh step ([`ConnTable::refresh_step`]): never sooner than its
/// timeout after its last packet, at most one step later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP flows.
    pub tcp: u64,
    /// UDP and every other protocol.
    pub udp: u64,
    /// A flow marked closing ([`ConnTable::mark_closing`]), whatever its
    /// protocol.
    pub closing: u64,
}

/// A connection's key: 5-tuple plus the service (virtual address) it was
/// balanced for, as 64-bit words so that a compare is six loads and xors.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ConnKey {
    /// `w[0]`: source port | destination port << 16 | protocol << 32 |
    /// family (4 or 6) << 40. `w[1]`: the service id. IPv4: `w[2]` =
    /// source << 32 | destination, `w[3..]` zero. IPv6: `w[2..4]` the
    /// source, `w[4..6]` the destination, high half first.
    w: [u64; 6],
}

impl ConnKey {
    fn head(sport: u16, dport: u16, proto: u8, family: u8, service: u32) -> [u64; 2] {
        [
            u64::from(sport)
                | u64::from(dport) << 16
                | u64::from(proto) << 32
                | u64::from(family) << 40,
            u64::from(service),
        ]
    }

    pub fn v4(
        src: Ipv4Addr,
        sport: u16,
        dst: Ipv4Addr,
        dport: u16,
        proto: u8,
        service: u32,
    ) -> Self {
        let [h0, h1] = Self::head(sport, dport, proto, 4, service);
        let a = u64::from(u32::from(src)) << 32 | u64::from(u32::from(dst));
        ConnKey {
            w: [h0, h1, a, 0, 0, 0],
        }
    }

    pub fn v6(
        src: Ipv6Addr,
        sport: u16,
        dst: Ipv6Addr,
        dport: u16,
        proto: u8,
        service: u32,
    ) -> Self {
        let [h0, h1] = Self::head(sport, dport, proto, 6, service);
        let (s, d) = (u128::from(src), u128::from(dst));
        ConnKey {
            w: [
                h0,
                h1,
                (s >> 64) as u64,
                s as u64,
                (d >> 64) as u64,
                d as u64,
            ],
        }
    }

    /// A key from addresses of one family (`None` when they differ).
    pub fn new(
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        proto: u8,
        service: u32,
    ) -> Option<Self> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Some(Self::v4(s, sport, d, dport, proto, service)),
            (IpAddr::V6(s), IpAddr::V6(d)) => Some(Self::v6(s, sport, d, dport, proto, service)),
            _ => None,
        }
    }

    pub fn is_v6(&self) -> bool {
        (self.w[0] >> 40) as u8 == 6
    }

    pub fn src(&self) -> IpAddr {
        if self.is_v6() {
            IpAddr::V6(Ipv6Addr::from(
                u128::from(self.w[2]) << 64 | u128::from(self.w[3]),
            ))
        } else {
            IpAddr::V4(Ipv4Addr::from((self.w[2] >> 32) as u32))
        }
    }

    pub fn dst(&self) -> IpAddr {
        if self.is_v6() {
            IpAddr::V6(Ipv6Addr::from(
                u128::from(self.w[4]) << 64 | u128::from(self.w[5]),
            ))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.w[2] as u32))
        }
    }

    pub fn sport(&self) -> u16 {
        self.w[0] as u16
    }

    pub fn dport(&self) -> u16 {
        (self.w[0] >> 16) as u16
    }

    pub fn proto(&self) -> u8 {
        (self.w[0] >> 32) as u8
    }

    pub fn service(&self) -> u32 {
        self.w[1] as u32
    }

    /// The key's words (for a caller that hashes them).
    pub fn words(&self) -> &[u64; 6] {
        &self.w
    }

    /// [`ConnKey::same`] for two keys of which `self` is IPv4: its last
    /// three words are zero, and the family in the first word keeps an
    /// IPv6 key from matching the first three.
    #[inline(always)]
    fn same_v4(&self, other: &ConnKey) -> bool {
        debug_assert!(!self.is_v6());
        (self.w[0] ^ other.w[0]) | (self.w[1] ^ other.w[1]) | (self.w[2] ^ other.w[2]) == 0
    }

    #[inline(always)]
    fn same(&self, other: &ConnKey) -> bool {
        // Branch-free: the derived `==` stops at the first difference.
        self.w
            .iter()
            .zip(&other.w)
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Debug for ConnKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ConnKey({} {}:{} -> {}:{} service {})",
            self.proto(),
            self.src(),
            self.sport(),
            self.dst(),
            self.dport(),
            self.service()
        )
    }
}

/// What the table holds for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The backend index the flow was sent to.
    pub backend: u32,
    /// When a packet of it was last seen (ticks).
    pub last_seen: u64,
    /// [`flags`].
    pub flags: u8,
}

/// An insert found no free or expired way for its key (both its buckets are
/// full of live flows). Nothing was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection table: no room for the flow (its buckets hold only live flows)")]
pub struct Full;

/// Why a table was not created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnTableError {
    #[error("connection table capacity {capacity} is larger than the maximum {max}")]
    TooLarge { capacity: usize, max: usize },
}

/// What [`ConnTable::retain_backends`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    /// Live entries kept with the same backend index.
    pub kept: usize,
    /// Live entries kept with a new index (the backend's position moved).
    pub remapped: usize,
    /// Live entries removed because their backend is gone: these flows
    /// move to the Maglev choice.
    pub removed: usize,
    /// Expired entries freed on the way.
    pub expired: usize,
}

/// The tags of one bucket (two buckets per cache line).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Bucket {
    /// 0 = free. Else bit 0: the entry sits in its alternate bucket; bit 1
    /// always set; the rest from the key's hash.
    tags: [u32; WAYS],
}

/// One way's entry: one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot {
    key: ConnKey,
    last_seen: u64,
    backend: u32,
    flags: u32,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);
const _: () = assert!(std::mem::size_of::<Bucket>() == 32);

/// A lookup in flight (see [`ConnTable::probe`]): the slot of the first
/// primary way whose tag matched, or none.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    slot: u32,
    /// The table's [`ConnTable::layout`] count when probed: while it has
    /// not moved, no way was freed, taken or moved, so the probed way
    /// still holds what its tag said.
    layout: u32,
}

impl Probe {
    pub const NONE: Probe = Probe {
        slot: u32::MAX,
        layout: 0,
    };
}

impl Default for Probe {
    fn default() -> Self {
        Probe::NONE
    }
}

/// The per-worker connection table (see the module doc).
///
/// Its arrays are on transparent huge pages ([`BigSlice`]): a lookup reads
/// two lines at random in megabytes, which on 4 KiB pages is a TLB miss
/// each.
pub struct ConnTable {
    buckets: BigSlice<Bucket>,
    slots: BigSlice<Slot>,
    /// Per bucket: entries whose primary bucket this is that sit in their
    /// alternate. While 0, a lookup that misses here is a miss.
    overflow: BigSlice<u16>,
    /// Buckets − 1 (a power of two minus one).
    mask: usize,
    /// The configured timeouts, indexed by [`ConnTable::class`]: other,
    /// TCP, closing, closing.
    timeouts: [u64; 4],
    /// What [`ConnTable::expired`] compares with: each timeout plus
    /// `refresh`.
    limits: [u64; 4],
    /// A hit refreshes an entry's last-seen time only when it is older
    /// than this ([`ConnTable::refresh_step`]).
    refresh: u64,
    /// Ways in use (live or expired and not yet reclaimed).
    used: usize,
    /// Bumped whenever a way is freed, taken or moved: a [`Probe`] taken
    /// at the same count needs no second look at its tag.
    layout: u32,
}

impl ConnTable {
    /// A table of at least `capacity` ways (rounded up to a power of two,
    /// at least [`MIN_CAPACITY`]) with the given idle timeouts. Each way
    /// costs 68 bytes (slot, tag, overflow count), all allocated here.
    pub fn new(capacity: usize, timeouts: Timeouts) -> Result<Self, ConnTableError> {
        if capacity > MAX_CAPACITY {
            return Err(ConnTableError::TooLarge {
                capacity,
                max: MAX_CAPACITY,
            });
        }
        let ways = capacity.max(MIN_CAPACITY).next_power_of_two();
        let buckets = ways / WAYS;
        let mut table = ConnTable {
            buckets: BigSlice::new(buckets, Bucket::default()),
            slots: BigSlice::new(ways, Slot::default()),
            overflow: BigSlice::new(buckets, 0),
            mask: buckets - 1,
            timeouts: [0; 4],
            limits: [0; 4],
            refresh: 0,
            used: 0,
            layout: 0,
        };
        table.set_timeouts(timeouts);
        Ok(table)
    }

    /// Ways in the table.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Ways in use: live entries plus expired ones not yet reclaimed (an
    /// upper bound on the live flows, kept as a counter: no scan).
    pub fn occupancy(&self) -> usize {
        self.used
    }

    /// Live entries at `now` (a scan of the whole table: for stats and
    /// tests, not the data path).
    pub fn live(&self, now: u64) -> usize {
        self.held()
            .filter(|&(_, _, s)| !self.expired(s, now))
            .count()
    }

    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            udp: self.timeouts[0],
            tcp: self.timeouts[1],
            closing: self.timeouts[2],
        }
    }

    /// Replaces the idle timeouts (a reload, or the clock's rate learned);
    /// entries keep their last-seen times and are judged by the new ones.
    pub fn set_timeouts(&mut self, t: Timeouts) {
        self.timeouts = [t.udp, t.tcp, t.closing, t.closing];
        self.refresh = t.udp.min(t.tcp).min(t.closing) / REFRESH_DIVISOR;
        self.limits = self.timeouts.map(|x| x.saturating_add(self.refresh));
    }

    /// How stale a live entry's last-seen time may be: a hit writes the
    /// time only when the stored one is older than this, 1/64 of the
    /// shortest timeout. Writing it on every packet dirtied the entry's
    /// cache line on every packet of every flow, and the write-backs of
    /// those lines cost the balancer more than the lookups
    /// (`docs/perf-log.md`). The expiry check adds the step to every
    /// timeout, so a flow is never forgotten sooner than its timeout after
    /// its last packet, and at most one step later.
    pub fn refresh_step(&self) -> u64 {
        self.refresh
    }

    /// A hit at `now` on slot `s`: its last-seen time moves to `now` when
    /// it is more than a refresh step older (never backwards).
    #[inline(always)]
    fn refresh_slot(&mut self, s: usize, now: u64) -> Entry {
        let refresh = self.refresh;
        let slot = &mut self.slots[s];
        if now > slot.last_seen.saturating_add(refresh) {
            slot.last_seen = now;
        }
        Self::entry(slot)
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
        self.overflow.fill(0);
        self.used = 0;
        self.layout = self.layout.wrapping_add(1);
    }

    /// Nonzero, with bit 0 clear (the primary form of the tag).
    #[inline(always)]
    fn tag(hash: u32) -> u32 {
        (hash | 2) & !1
    }

    #[inline(always)]
    fn primary(&self, hash: u32) -> usize {
        hash as usize & self.mask
    }

    /// The other bucket of a key with tag `tag` found in (or hashed to)
    /// bucket `b`: `b ^ f(tag)`, odd so never `b` itself, and an involution
    /// so the primary bucket of an entry in its alternate is found the same
    /// way. `f` reads the tag's high bits (a multiply's high half), which
    /// the bucket index did not use.
    #[inline(always)]
    fn other(&self, b: usize, tag: u32) -> usize {
        let f = u64::from(tag & !3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32 | 1;
        b ^ (f as usize & self.mask)
    }

    /// 0 other, 1 TCP, 2 or 3 closing.
    #[inline(always)]
    fn class(flags: u32) -> usize {
        usize::from(flags as u8 & flags::CLOSING != 0) << 1 | (flags as usize >> 7 & 1)
    }

    /// Idle for longer than its timeout (plus the refresh step). A `now`
    /// before `last_seen` (a caller's clock that lags) counts as no idle
    /// time.
    #[inline(always)]
    fn expired(&self, s: &Slot, now: u64) -> bool {
        now.saturating_sub(s.last_seen) > self.limits[Self::class(s.flags)]
    }

    /// Every held way: (bucket, way, slot).
    fn held(&self) -> impl Iterator<Item = (usize, usize, &Slot)> {
        self.buckets
            .iter()
            .enumerate()
            .flat_map(move |(b, bucket)| {
                (0..WAYS)
                    .filter(move |&w| bucket.tags[w] != 0)
                    .map(move |w| (b, w, &self.slots[b * WAYS + w]))
            })
    }

    /// The slot holding `key` (live or expired), if any.
    #[inline(always)]
    fn find(&self, key: &ConnKey, hash: u32) -> Option<usize> {
        self.find_as::<false>(key, hash)
    }

    /// [`ConnTable::find`]; `V4`: `key` is an IPv4 key (three words compared).
    #[inline(always)]
    fn find_as<const V4: bool>(&self, key: &ConnKey, hash: u32) -> Option<usize> {
        let b = self.primary(hash);
        let t = Self::tag(hash);
        if let Some(s) = self.find_in::<V4>(b, t, key) {
            return Some(s);
        }
        if self.overflow[b] == 0 {
            return None;
        }
        self.find_in::<V4>(self.other(b, t), t | 1, key)
    }

    #[inline(always)]
    fn find_in<const V4: bool>(&self, b: usize, tag: u32, key: &ConnKey) -> Option<usize> {
        let mut hits = crate::dpdk::match_mask8(&self.buckets[b].tags, tag);
        while hits != 0 {
            let s = b * WAYS + hits.trailing_zeros() as usize;
            let same = if V4 {
                key.same_v4(&self.slots[s].key)
            } else {
                self.slots[s].key.same(key)
            };
            if same {
                return Some(s);
            }
            hits &= hits - 1;
        }
        None
    }

    /// Frees slot `s` (keeping the overflow count of its primary bucket).
    fn free(&mut self, s: usize) {
        let (b, w) = (s / WAYS, s % WAYS);
        let tag = self.buckets[b].tags[w];
        debug_assert!(tag != 0);
        if tag & 1 == 1 {
            let p = self.other(b, tag);
            self.overflow[p] -= 1;
        }
        self.buckets[b].tags[w] = 0;
        self.used -= 1;
        self.layout = self.layout.wrapping_add(1);
    }

    #[inline(always)]
    fn entry(s: &Slot) -> Entry {
        Entry {
            backend: s.backend,
            last_seen: s.last_seen,
            flags: s.flags as u8,
        }
    }

    /// The live slot holding `key`; an expired one is freed on the way.
    #[inline(always)]
    fn find_live(&mut self, key: &ConnKey, hash: u32, now: u64) -> Option<usize> {
        self.find_live_as::<false>(key, hash, now)
    }

    #[inline(always)]
    fn find_live_as<const V4: bool>(
        &mut self,
        key: &ConnKey,
        hash: u32,
        now: u64,
    ) -> Option<usize> {
        let s = self.find_as::<V4>(key, hash)?;
        if self.expired(&self.slots[s], now) {
            self.free(s);
            return None;
        }
        Some(s)
    }

    /// Step 1 of a burst's lookups: hints the CPU to load the tags of the
    /// bucket `hash` maps to.
    #[inline(always)]
    pub fn prefetch(&self, hash: u32) {
        crate::dpdk::prefetch(&self.buckets[self.primary(hash)]);
    }

    /// Step 2: finds the first way of the primary bucket whose tag matches
    /// and hints the CPU to load its slot.
    #[inline(always)]
    pub fn probe(&self, hash: u32) -> Probe {
        let b = self.primary(hash);
        let hits = crate::dpdk::match_mask8(&self.buckets[b].tags, Self::tag(hash));
        if hits == 0 {
            return Probe::NONE;
        }
        let s = b * WAYS + hits.trailing_zeros() as usize;
        crate::dpdk::prefetch(&self.slots[s]);
        Probe {
            slot: s as u32,
            layout: self.layout,
        }
    }

    /// Step 3: [`ConnTable::touch`], trying the probed slot first.
    #[inline(always)]
    pub fn touch_probed(
        &mut self,
        probe: Probe,
        key: &ConnKey,
        hash: u32,
        now: u64,
    ) -> Option<Entry> {
        self.touch_probed_as::<false>(probe, key, hash, now)
    }

    /// [`ConnTable::touch_probed`] for an IPv4 key ([`ConnKey::v4`]): the
    /// same answer, comparing the three words such a key has.
    #[inline(always)]
    pub fn touch_probed_v4(
        &mut self,
        probe: Probe,
        key: &ConnKey,
        hash: u32,
        now: u64,
    ) -> Option<Entry> {
        debug_assert!(!key.is_v6());
        self.touch_probed_as::<true>(probe, key, hash, now)
    }

    #[inline(always)]
    fn touch_probed_as<const V4: bool>(
        &mut self,
        probe: Probe,
        key: &ConnKey,
        hash: u32,
        now: u64,
    ) -> Option<Entry> {
        let s = probe.slot as usize;
        let same = |k: &ConnKey| if V4 { key.same_v4(k) } else { k.same(key) };
        // The tag check, when a call since the probe freed, took or moved
        // a way (the probed one's key bytes may stay behind).
        if probe.slot != Probe::NONE.slot
            && (probe.layout == self.layout
                || self.buckets[s / WAYS].tags[s % WAYS] == Self::tag(hash))
            && same(&self.slots[s].key)
        {
            if self.expired(&self.slots[s], now) {
                self.free(s);
                return None;
            }
            return Some(self.refresh_slot(s, now));
        }
        // No tag matched in the primary bucket (the probe saw the same
        // tags), or another key had the tag: the general path.
        let s = self.find_live_as::<V4>(key, hash, now)?;
        Some(self.refresh_slot(s, now))
    }

    /// The live entry for `key` (hashed to `hash` by the caller, the same
    /// way on every call), without refreshing it. An expired entry is freed
    /// and answers `None`.
    #[inline]
    pub fn lookup(&mut self, key: &ConnKey, hash: u32, now: u64) -> Option<Entry> {
        let s = self.find_live(key, hash, now)?;
        Some(Self::entry(&self.slots[s]))
    }

    /// [`ConnTable::lookup`], and a hit is seen at `now`: the call for each
    /// packet of a tracked flow. Returns the refreshed entry.
    #[inline(always)]
    pub fn touch(&mut self, key: &ConnKey, hash: u32, now: u64) -> Option<Entry> {
        let s = self.find_live(key, hash, now)?;
        Some(self.refresh_slot(s, now))
    }

    /// Marks a live flow closing (`seen`: [`flags::FIN`] and/or
    /// [`flags::RST`]) and touches it: from now on the closing timeout
    /// applies. Returns the updated entry, `None` if it is not tracked.
    pub fn mark_closing(&mut self, key: &ConnKey, hash: u32, now: u64, seen: u8) -> Option<Entry> {
        let s = self.find_live(key, hash, now)?;
        let slot = &mut self.slots[s];
        slot.flags |= u32::from(seen & flags::CLOSING);
        slot.last_seen = slot.last_seen.max(now);
        Some(Self::entry(slot))
    }

    /// Tracks `key` -> `backend`, seen at `now`. A key already there (live
    /// or expired) is updated in place and its closing flags cleared (a new
    /// connection on the same tuple). Otherwise it takes a free or expired
    /// way of its bucket, else of its alternate bucket; when both hold only
    /// live flows it answers [`Full`] and changes nothing.
    pub fn insert(&mut self, key: &ConnKey, hash: u32, backend: u32, now: u64) -> Result<(), Full> {
        let s = match self.find(key, hash) {
            Some(s) => s,
            None => self.place(hash, now)?,
        };
        let tcp = if key.proto() == PROTO_TCP {
            flags::TCP
        } else {
            0
        };
        self.slots[s] = Slot {
            key: *key,
            last_seen: now,
            backend,
            flags: u32::from(tcp),
        };
        Ok(())
    }

    /// Takes a way for a new key of `hash` and tags it.
    #[cold]
    #[inline(never)]
    fn place(&mut self, hash: u32, now: u64) -> Result<usize, Full> {
        let b = self.primary(hash);
        let t = Self::tag(hash);
        let (bucket, w, tag) = if let Some(w) = self.vacant(b, now, true) {
            (b, w, t)
        } else if self.overflow[b] == u16::MAX {
            return Err(Full);
        } else if let Some(w) = self.vacant(self.other(b, t), now, true) {
            self.overflow[b] += 1;
            (self.other(b, t), w, t | 1)
        } else if let Some(w) = self.kick(b, now) {
            (b, w, t)
        } else {
            return Err(Full);
        };
        self.buckets[bucket].tags[w] = tag;
        self.used += 1;
        self.layout = self.layout.wrapping_add(1);
        Ok(bucket * WAYS + w)
    }

    /// One cuckoo step: moves an entry that sits in its primary bucket `b`
    /// to its own alternate bucket, if that has a free way, and returns the
    /// way it left (free). A live flow moves, it is not evicted. Only free
    /// ways are looked for (the alternates' tag lines, not their slots'
    /// timestamps), so an insert into a table full of live flows (a flood
    /// of new tuples) costs at most 16 slot and 10 tag-line reads.
    fn kick(&mut self, b: usize, now: u64) -> Option<usize> {
        for w in 0..WAYS {
            let tag = self.buckets[b].tags[w];
            if tag & 1 == 1 {
                continue; // already in its alternate
            }
            let alt = self.other(b, tag);
            if let Some(w2) = self.vacant(alt, now, false) {
                self.slots[alt * WAYS + w2] = self.slots[b * WAYS + w];
                self.buckets[alt].tags[w2] = tag | 1;
                self.buckets[b].tags[w] = 0;
                self.overflow[b] += 1;
                self.layout = self.layout.wrapping_add(1);
                return Some(w);
            }
        }
        None
    }

    /// A free way of bucket `b`, else (if `reclaim`) its first expired way,
    /// freed.
    fn vacant(&mut self, b: usize, now: u64, reclaim: bool) -> Option<usize> {
        let tags = self.buckets[b].tags;
        if let Some(w) = tags.iter().position(|&x| x == 0) {
            return Some(w);
        }
        if !reclaim {
            return None;
        }
        let w = (0..WAYS).find(|&w| self.expired(&self.slots[b * WAYS + w], now))?;
        self.free(b * WAYS + w);
        Some(w)
    }

    /// Stops tracking `key`: its entry if it was live.
    pub fn remove(&mut self, key: &ConnKey, hash: u32, now: u64) -> Option<Entry> {
        let s = self.find(key, hash)?;
        let live = !self.expired(&self.slots[s], now);
        self.free(s);
        live.then(|| Self::entry(&self.slots[s]))
    }

    /// Revalidates every entry after the backend pool changed (a reload):
    /// `remap(old index)` gives the backend's new index, or `None` if it is
    /// gone, whose flows are then forgotten (they move to the Maglev
    /// choice; counted in [`Retained::removed`]). Expired entries are freed
    /// on the way. [`crate::tables::Maglev::index_map_from`] is the map.
    ///
    /// A scan of the whole table, run by the worker itself when it rebinds
    /// to the new tables (the table is the worker's: nobody else may touch
    /// it). It reads every tag and every held slot: with a million live
    /// entries that takes tens of milliseconds (`benches/conntrack.rs`,
    /// `docs/perf-log.md`), during which the worker does not poll, more than
    /// an RX ring holds at line rate. So a stage with large tables
    /// should rather store stable backend ids (never reused while a tracked
    /// flow may name one) and check at lookup that the id is still in the
    /// pool (one load from a small array; a gone backend's flow is then
    /// re-chosen and re-inserted), which needs no scan; this function is for
    /// small tables and tests.
    pub fn retain_backends(
        &mut self,
        now: u64,
        mut remap: impl FnMut(u32) -> Option<u32>,
    ) -> Retained {
        let mut r = Retained::default();
        for b in 0..self.buckets.len() {
            for w in 0..WAYS {
                if self.buckets[b].tags[w] == 0 {
                    continue;
                }
                let s = b * WAYS + w;
                if self.expired(&self.slots[s], now) {
                    self.free(s);
                    r.expired += 1;
                    continue;
                }
                let old = self.slots[s].backend;
                match remap(old) {
                    Some(new) if new == old => r.kept += 1,
                    Some(new) => {
                        self.slots[s].backend = new;
                        r.remapped += 1;
                    }
                    None => {
                        self.free(s);
                        r.removed += 1;
                    }
                }
            }
        }
        r
    }

    /// Whether an insert for `hash` at `now` would find no room (both its
    /// buckets hold only live entries).
    #[cfg(test)]
    fn would_be_full(&self, hash: u32, now: u64) -> bool {
        let b = self.primary(hash);
        let full = |b: usize| {
            (0..WAYS).all(|w| {
                self.buckets[b].tags[w] != 0 && !self.expired(&self.slots[b * WAYS + w], now)
            })
        };
        full(b) && (full(self.other(b, Self::tag(hash))) || self.overflow[b] == u16::MAX)
    }

    /// The overflow counts agree with the tags.
    #[cfg(test)]
    fn check_overflow(&self) {
        let mut want = vec![0u16; self.buckets.len()];
        for (b, w, _) in self.held() {
            let tag = self.buckets[b].tags[w];
            if tag & 1 == 1 {
                want[self.other(b, tag)] += 1;
            }
        }
        assert_eq!(&want[..], &self.overflow[..]);
        assert_eq!(self.held().count(), self.used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const T: Timeouts = Timeouts {
        tcp: 100,
        udp: 10,
        closing: 5,
    };

    fn tcp(n: u32) -> ConnKey {
        ConnKey::v4(
            Ipv4Addr::from(0x0a00_0000 + n),
            40_000,
            Ipv4Addr::new(192, 0, 2, 1),
            80,
            6,
            1,
        )
    }

    fn udp(n: u32) -> ConnKey {
        ConnKey::v4(
            Ipv4Addr::from(0x0a00_0000 + n),
            40_000,
            Ipv4Addr::new(192, 0, 2, 1),
            53,
            17,
            1,
        )
    }

    fn v6(n: u32, proto: u8) -> ConnKey {
        let src = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n as u16);
        ConnKey::v6(
            src,
            40_000,
            Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1),
            443,
            proto,
            7,
        )
    }

    /// A good hash, as the pipeline's flow hash would be.
    fn h(k: &ConnKey) -> u32 {
        let x = k.words().iter().fold(0u64, |h, &w| {
            (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31)
        });
        (x >> 32) as u32 ^ x as u32
    }

    fn table(cap: usize) -> ConnTable {
        ConnTable::new(cap, T).unwrap()
    }

    #[test]
    fn layout_and_capacity() {
        assert_eq!(table(0).capacity(), MIN_CAPACITY);
        assert_eq!(table(1000).capacity(), 1024);
        assert_eq!(table(1024).capacity(), 1024);
        assert_eq!(
            ConnTable::new(MAX_CAPACITY + 1, T).err(),
            Some(ConnTableError::TooLarge {
                capacity: MAX_CAPACITY + 1,
                max: MAX_CAPACITY
            })
        );
        assert_eq!(table(16).timeouts(), T);
    }

    /// A hit writes the last-seen time only once it is a refresh step
    /// (1/64 of the shortest timeout) old, and the expiry adds the step:
    /// a flow is live for at least its timeout after its last packet,
    /// however its hits fell, and gone at most one step later. Both hit
    /// paths (`touch`, and the burst's `probe` + `touch_probed_v4`) agree.
    #[test]
    fn last_seen_moves_in_refresh_steps_and_expiry_allows_for_them() {
        let t6400 = Timeouts {
            tcp: 64_000,
            udp: 6_400,
            closing: 6_400,
        };
        for burst_path in [false, true] {
            let mut t = ConnTable::new(1024, t6400).unwrap();
            assert_eq!(t.refresh_step(), 100);
            let k = udp(1);
            let hit = |t: &mut ConnTable, now: u64| {
                if burst_path {
                    t.prefetch(h(&k));
                    let p = t.probe(h(&k));
                    t.touch_probed_v4(p, &k, h(&k), now)
                } else {
                    t.touch(&k, h(&k), now)
                }
            };
            t.insert(&k, h(&k), 3, 0).unwrap();
            // Within a step: the stored time stays.
            assert_eq!(hit(&mut t, 100).unwrap().last_seen, 0);
            // Past it: the hit's time is stored.
            assert_eq!(hit(&mut t, 101).unwrap().last_seen, 101);
            assert_eq!(hit(&mut t, 150).unwrap().last_seen, 101);
            // The last packet was at 150: live through 150 + 6400, and
            // gone once 101 + 6400 + 100 has passed.
            assert!(t.lookup(&k, h(&k), 150 + 6_400).is_some());
            assert!(t.lookup(&k, h(&k), 101 + 6_400 + 100).is_some());
            assert_eq!(t.lookup(&k, h(&k), 101 + 6_400 + 101), None);
            // A clock that lags never moves the time back.
            let k2 = udp(2);
            t.insert(&k2, h(&k2), 4, 1_000).unwrap();
            assert_eq!(t.touch(&k2, h(&k2), 500).unwrap().last_seen, 1_000);
        }
        // Short timeouts (the model test's): no step, every hit is stored.
        let mut t = table(64);
        assert_eq!(t.refresh_step(), 0);
        let k = tcp(1);
        t.insert(&k, h(&k), 1, 0).unwrap();
        assert_eq!(t.touch(&k, h(&k), 1).unwrap().last_seen, 1);
        assert_eq!(t.lookup(&k, h(&k), 101).map(|e| e.last_seen), Some(1));
        assert_eq!(t.lookup(&k, h(&k), 102), None);
    }

    #[test]
    fn key_fields_round_trip() {
        let k = ConnKey::v4(
            Ipv4Addr::new(10, 1, 2, 3),
            1234,
            Ipv4Addr::new(192, 0, 2, 9),
            80,
            6,
            0xdead_beef,
        );
        assert!(!k.is_v6());
        assert_eq!(
            (
                k.src(),
                k.sport(),
                k.dst(),
                k.dport(),
                k.proto(),
                k.service()
            ),
            (
                IpAddr::from([10, 1, 2, 3]),
                1234,
                IpAddr::from([192, 0, 2, 9]),
                80,
                6,
                0xdead_beef
            )
        );
        let (s, d) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8:ffff::2".parse().unwrap(),
        );
        let k = ConnKey::new(s, 5, d, 6, 17, 3).unwrap();
        assert!(k.is_v6());
        assert_eq!(
            (
                k.src(),
                k.sport(),
                k.dst(),
                k.dport(),
                k.proto(),
                k.service()
            ),
            (s, 5, d, 6, 17, 3)
        );
        assert_eq!(
            ConnKey::new(s, 5, IpAddr::from([1, 2, 3, 4]), 6, 17, 3),
            None
        );
        assert_eq!(
            format!("{k:?}"),
            "ConnKey(17 2001:db8::1:5 -> 2001:db8:ffff::2:6 service 3)"
        );
    }

    #[test]
    fn insert_lookup_touch() {
        let mut t = table(1024);
        let k = tcp(1);
        assert_eq!(t.lookup(&k, h(&k), 0), None);
        t.insert(&k, h(&k), 3, 10).unwrap();
        let e = Entry {
            backend: 3,
            last_seen: 10,
            flags: flags::TCP,
        };
        assert_eq!(t.lookup(&k, h(&k), 20), Some(e));
        assert_eq!(t.touch(&k, h(&k), 20), Some(Entry { last_seen: 20, ..e }));
        // A lagging clock does not move last_seen back.
        assert_eq!(t.touch(&k, h(&k), 15).unwrap().last_seen, 20);
        // Every field of the key counts.
        let mut other = [tcp(2), udp(1)];
        other[0] = ConnKey::v4(
            Ipv4Addr::from(0x0a00_0001),
            40_000,
            Ipv4Addr::new(192, 0, 2, 1),
            80,
            6,
            2,
        );
        for o in [tcp(2), udp(1), other[0]] {
            assert_ne!(o, k);
            assert_eq!(t.lookup(&o, h(&k), 20), None, "{o:?} under the same hash");
        }
        // Re-insert updates.
        t.insert(&k, h(&k), 4, 30).unwrap();
        assert_eq!(t.lookup(&k, h(&k), 30).unwrap().backend, 4);
        assert_eq!(t.occupancy(), 1);
        assert_eq!(t.remove(&k, h(&k), 30).map(|e| e.backend), Some(4));
        assert_eq!((t.lookup(&k, h(&k), 30), t.occupancy()), (None, 0));
    }

    #[test]
    fn ipv6_keys() {
        let mut t = table(1024);
        for n in 0..100 {
            let k = v6(n, 6);
            t.insert(&k, h(&k), n, 0).unwrap();
        }
        for n in 0..100 {
            let k = v6(n, 6);
            assert_eq!(t.lookup(&k, h(&k), 1).unwrap().backend, n);
            let u = v6(n, 17);
            assert_eq!(t.lookup(&u, h(&u), 1), None);
        }
        // An IPv4 key and an IPv6 key with the same address bits differ.
        let a = ConnKey::v4(
            Ipv4Addr::new(0, 0, 0, 0),
            1,
            Ipv4Addr::new(0, 0, 0, 1),
            2,
            6,
            0,
        );
        let b = ConnKey::v6(
            Ipv6Addr::UNSPECIFIED,
            1,
            Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1),
            2,
            6,
            0,
        );
        t.insert(&a, 5, 1, 0).unwrap();
        assert_eq!(t.lookup(&b, 5, 0), None);
    }

    #[test]
    fn idle_timeouts_per_protocol() {
        let mut t = table(1024);
        let (a, b, c) = (tcp(1), udp(1), v6(1, 1)); // c: ICMP, the UDP timeout
        for k in [a, b, c] {
            t.insert(&k, h(&k), 1, 1000).unwrap();
        }
        // Live while idle for at most the timeout.
        assert!(t.lookup(&b, h(&b), 1010).is_some());
        assert!(t.lookup(&c, h(&c), 1010).is_some());
        assert_eq!(t.live(1010), 3);
        assert_eq!(t.lookup(&b, h(&b), 1011), None);
        assert_eq!(t.lookup(&c, h(&c), 1011), None);
        assert_eq!(t.live(1011), 1);
        // Lookup freed the expired ways; the TCP one is live until 1100.
        assert_eq!(t.occupancy(), 1);
        assert!(t.lookup(&a, h(&a), 1100).is_some());
        // A touch restarts the idle time.
        t.touch(&a, h(&a), 1100).unwrap();
        assert!(t.lookup(&a, h(&a), 1200).is_some());
        assert_eq!(t.lookup(&a, h(&a), 1201), None);
        assert_eq!(t.touch(&a, h(&a), 1201), None);
        assert_eq!(t.occupancy(), 0);
    }

    #[test]
    fn closing_shortens_the_timeout() {
        let mut t = table(1024);
        let k = tcp(1);
        t.insert(&k, h(&k), 1, 0).unwrap();
        let e = t.mark_closing(&k, h(&k), 50, flags::FIN).unwrap();
        assert_eq!(e.flags, flags::TCP | flags::FIN);
        assert!(t.lookup(&k, h(&k), 55).is_some());
        assert_eq!(t.lookup(&k, h(&k), 56), None);
        // RST: the same closing timeout (5, not TCP's 100).
        let r = tcp(2);
        t.insert(&r, h(&r), 1, 100).unwrap();
        let e = t.mark_closing(&r, h(&r), 120, flags::RST).unwrap();
        assert_eq!(e.flags, flags::TCP | flags::RST);
        assert!(t.lookup(&r, h(&r), 125).is_some());
        assert_eq!(t.lookup(&r, h(&r), 126), None);
        // RST on UDP-timed flow, and a re-insert clears the flags.
        let u = udp(1);
        t.insert(&u, h(&u), 1, 0).unwrap();
        t.mark_closing(&u, h(&u), 1, flags::RST | 0x40).unwrap();
        t.insert(&u, h(&u), 2, 2).unwrap();
        assert_eq!(t.lookup(&u, h(&u), 12).unwrap().flags, 0);
        assert_eq!(t.mark_closing(&tcp(9), h(&tcp(9)), 0, flags::FIN), None);
    }

    /// Every key under one hash: 8 ways in the primary bucket, 8 in the
    /// alternate, then `Full` with nothing evicted; an expired way is
    /// reused.
    #[test]
    fn full_buckets_are_counted_not_evicted() {
        let mut t = table(1024);
        for n in 0..16 {
            t.insert(&tcp(n), 77, n, n.into()).unwrap();
        }
        assert_eq!(t.insert(&tcp(16), 77, 16, 16), Err(Full));
        assert_eq!(t.insert(&tcp(17), 77, 17, 16), Err(Full));
        assert!(t.would_be_full(77, 16));
        for n in 0..16 {
            assert_eq!(t.lookup(&tcp(n), 77, 16).unwrap().backend, n);
        }
        assert_eq!(t.occupancy(), 16);
        t.check_overflow();
        // tcp(0), idle since 0, expires after 100: its way goes to tcp(16).
        assert_eq!(t.insert(&tcp(16), 77, 16, 100), Err(Full));
        t.insert(&tcp(16), 77, 16, 101).unwrap();
        assert_eq!(t.lookup(&tcp(0), 77, 101), None);
        assert_eq!(t.lookup(&tcp(16), 77, 101).unwrap().backend, 16);
        assert_eq!(t.lookup(&tcp(1), 77, 101).unwrap().backend, 1);
        assert_eq!(t.occupancy(), 16);
        t.check_overflow();
        // Once all expire, everything is reusable and the counts balance.
        for n in 100..116 {
            t.insert(&udp(n), 77, n, 1000).unwrap();
        }
        t.check_overflow();
        for n in 100..116 {
            t.remove(&udp(n), 77, 1000).unwrap();
        }
        t.check_overflow();
        assert_eq!(t.occupancy(), 0);
    }

    /// Filling 64 Ki ways with distinct flows: at half load (the bench's 1 M
    /// flows in 2 M ways, scaled down) and at 75 % every insert finds room
    /// (one bucket alone would refuse 0.8 % at half load); at 90 % a few do.
    /// Few buckets overflow at half load.
    #[test]
    fn loads_that_fit() {
        let mut t = table(1 << 16);
        let mut refused = 0;
        for n in 0..(1u32 << 16) * 9 / 10 {
            if n == 1 << 15 {
                assert_eq!(refused, 0, "half load");
                let overflowed = t.overflow.iter().filter(|&&c| c > 0).count();
                // Poisson(4) > 8: about 2 % of buckets.
                assert!(overflowed * 100 < t.buckets.len() * 4, "{overflowed}");
            }
            if n == 3 << 14 {
                assert_eq!(refused, 0, "75 % load");
            }
            let k = tcp(n);
            refused += usize::from(t.insert(&k, h(&k), n, 0).is_err());
        }
        assert!(refused * 200 < t.capacity(), "90 % load: {refused} refused");
        for n in 0..(1u32 << 16) * 9 / 10 {
            let k = tcp(n);
            if let Some(e) = t.lookup(&k, h(&k), 0) {
                assert_eq!(e.backend, n);
            }
        }
        assert_eq!(t.live(0) + refused, (1 << 16) * 9 / 10);
        t.check_overflow();
    }

    #[test]
    fn probe_then_touch() {
        probe_then_touch_as(false);
        probe_then_touch_as(true);
    }

    /// [`probe_then_touch`] through `touch_probed` or, `v4`, its IPv4 form
    /// (every key here is IPv4).
    fn probe_then_touch_as(v4: bool) {
        let mut t = table(1024);
        let touch = |t: &mut ConnTable, p: Probe, k: &ConnKey, h: u32, now: u64| {
            if v4 {
                t.touch_probed_v4(p, k, h, now)
            } else {
                t.touch_probed(p, k, h, now)
            }
        };
        let (a, b) = (tcp(1), tcp(2));
        t.insert(&a, 9, 1, 0).unwrap();
        t.insert(&b, 9, 2, 0).unwrap(); // same tag: the probe finds a first
        for (k, want) in [(a, Some(1)), (b, Some(2)), (tcp(3), None)] {
            t.prefetch(9);
            let p = t.probe(9);
            assert_eq!(touch(&mut t, p, &k, 9, 5).map(|e| e.backend), want);
        }
        assert_eq!(t.lookup(&a, 9, 5).unwrap().last_seen, 5);
        let p = t.probe(9);
        assert_eq!(touch(&mut t, p, &a, 9, 200), None, "expired");
        // Two packets of one flow in a burst: both probed first; the first
        // frees the expired way, the second must not hit its stale key.
        let u = udp(1);
        t.insert(&u, 33, 1, 0).unwrap();
        let (p1, p2) = (t.probe(33), t.probe(33));
        assert_eq!(touch(&mut t, p1, &u, 33, 20), None);
        assert_eq!(touch(&mut t, p2, &u, 33, 20), None);
        // And after a re-insert the stale probe still finds the new entry.
        let p3 = t.probe(33);
        t.insert(&u, 33, 2, 20).unwrap();
        assert_eq!(touch(&mut t, p3, &u, 33, 21).map(|e| e.backend), Some(2));
        assert_eq!(
            touch(&mut t, Probe::NONE, &b, 9, 1),
            Some(Entry {
                backend: 2,
                last_seen: 5,
                flags: flags::TCP
            })
        );
    }

    #[test]
    fn retain_remaps_and_removes() {
        let mut t = table(1024);
        for n in 0..40 {
            let k = tcp(n);
            t.insert(&k, h(&k), n % 4, 0).unwrap();
        }
        let u = udp(0);
        t.insert(&u, h(&u), 0, 0).unwrap(); // expired at 50
                                            // Backend 1 is gone, 2 moved to index 5.
        let r = t.retain_backends(50, |b| match b {
            1 => None,
            2 => Some(5),
            b => Some(b),
        });
        assert_eq!(
            r,
            Retained {
                kept: 20,
                remapped: 10,
                removed: 10,
                expired: 1
            }
        );
        for n in 0..40 {
            let k = tcp(n);
            let want = [Some(0), None, Some(5), Some(3)][n as usize % 4];
            assert_eq!(t.lookup(&k, h(&k), 50).map(|e| e.backend), want);
        }
        assert_eq!(t.occupancy(), 30);
        t.check_overflow();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u32),
        Touch(u8),
        Lookup(u8),
        Close(u8, u8),
        Remove(u8),
        Advance(u64),
        Retain(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..48, 0u32..8).prop_map(|(k, b)| Op::Insert(k, b)),
            3 => (0u8..48).prop_map(Op::Touch),
            3 => (0u8..48).prop_map(Op::Lookup),
            1 => (0u8..48, 0u8..4).prop_map(|(k, f)| Op::Close(k, f)),
            1 => (0u8..48).prop_map(Op::Remove),
            2 => (0u64..8).prop_map(Op::Advance),
            1 => (0u32..8).prop_map(Op::Retain),
        ]
    }

    /// Key `n`: TCP or UDP, IPv4 or IPv6.
    fn model_key(n: u8) -> ConnKey {
        let n32 = u32::from(n);
        match n % 4 {
            0 => tcp(n32),
            1 => udp(n32),
            2 => v6(n32, 6),
            _ => v6(n32, 17),
        }
    }

    proptest! {
        /// Against a map with the same expiry rule: every answer agrees,
        /// `Full` only comes when both buckets hold live flows, and the
        /// live count matches. A tiny table and a weak hash (7 values)
        /// make buckets fill and overflow.
        #[test]
        fn matches_a_model(ops in proptest::collection::vec(op(), 1..300), cap in 16usize..64) {
            let timeouts = Timeouts { tcp: 20, udp: 6, closing: 2 };
            let mut t = ConnTable::new(cap, timeouts).unwrap();
            let mut model: HashMap<u8, Entry> = HashMap::new();
            let mut now = 0u64;
            let timeout = |e: &Entry| {
                if e.flags & flags::CLOSING != 0 { timeouts.closing }
                else if e.flags & flags::TCP != 0 { timeouts.tcp } else { timeouts.udp }
            };
            let live = |m: &HashMap<u8, Entry>, k: u8, now: u64| {
                m.get(&k).copied().filter(|e| now.saturating_sub(e.last_seen) <= timeout(e))
            };
            let hash = |k: u8| u32::from(k % 7).wrapping_mul(0x0101_0101);
            for op in ops {
                match op {
                    Op::Insert(k, b) => {
                        let key = model_key(k);
                        let full = t.would_be_full(hash(k), now);
                        match t.insert(&key, hash(k), b, now) {
                            Ok(()) => {
                                let tcp = if key.proto() == 6 { flags::TCP } else { 0 };
                                model.insert(k, Entry { backend: b, last_seen: now, flags: tcp });
                            }
                            Err(Full) => {
                                prop_assert!(full);
                                prop_assert!(live(&model, k, now).is_none());
                                model.remove(&k);
                            }
                        }
                    }
                    Op::Touch(k) => {
                        let want = live(&model, k, now).map(|e| Entry { last_seen: e.last_seen.max(now), ..e });
                        prop_assert_eq!(t.touch(&model_key(k), hash(k), now), want);
                        if let Some(e) = want { model.insert(k, e); }
                    }
                    Op::Lookup(k) => {
                        prop_assert_eq!(t.lookup(&model_key(k), hash(k), now), live(&model, k, now));
                    }
                    Op::Close(k, f) => {
                        let want = live(&model, k, now).map(|e| Entry {
                            last_seen: e.last_seen.max(now),
                            flags: e.flags | (f & flags::CLOSING),
                            ..e
                        });
                        prop_assert_eq!(t.mark_closing(&model_key(k), hash(k), now, f), want);
                        if let Some(e) = want { model.insert(k, e); }
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(t.remove(&model_key(k), hash(k), now), live(&model, k, now));
                        model.remove(&k);
                    }
                    Op::Advance(dt) => now += dt,
                    Op::Retain(gone) => {
                        let r = t.retain_backends(now, |b| (b != gone).then_some(b + 1));
                        let mut removed = 0;
                        model.retain(|&k, e| {
                            if live(&HashMap::from([(k, *e)]), k, now).is_none() { return false; }
                            if e.backend == gone { removed += 1; return false; }
                            e.backend += 1;
                            true
                        });
                        prop_assert_eq!(r.removed, removed);
                        prop_assert_eq!(r.remapped, model.len());
                    }
                }
                t.check_overflow();
                let model_live = model.keys().filter(|&&k| live(&model, k, now).is_some()).count();
                prop_assert_eq!(t.live(now), model_live);
                prop_assert!(t.occupancy() >= model_live);
            }
        }
    }
}
