//! Route tables: longest-prefix match from an address to a next-hop id.
//!
//! [`RouteTable`] is the one interface, implemented by the four DPDK tables
//! of [`crate::dpdk::lpm`], by [`HashLpm`] (the pure-Rust `linear`
//! backend, which needs no EAL), by [`Route4`]/[`Route6`] (a backend chosen
//! at start-up by [`RouteBackend`], one `match` per burst) and by
//! [`LinearRoutes`], the linear-scan oracle. Next hops are `u32` ids; a
//! lookup that matches no route yields [`MISS`] whatever the backend. The
//! data path reads the same tables through the smaller [`RouteLookup`]
//! (a burst of addresses to raw entries), implemented by the same types.
//!
//! The default backend is rte_fib for both families. IPv4: lookups cost about
//! the same as rte_lpm, but rte_lpm's add scans every rule of the same
//! length, so a million routes load in minutes where rte_fib takes seconds.
//! IPv6: rte_fib6 and rte_lpm6 look up at about the same speed; rte_lpm6
//! loads faster but stores only 21-bit next hops, so rte_fib6 stays the
//! default and `Lpm` is the option for large, churning IPv6 tables. The
//! figures: the `tables` bench, README and `docs/perf-log.md`. `Linear`
//! ([`HashLpm`]) is for tests, the fuzzer and small tables: it gives the
//! DPDK backends' answers without EAL, at a cost that grows with the number
//! of distinct prefix lengths.
use super::hash_lpm::{self, HashLpm};
use super::prefix::{mask4, mask6};
pub use crate::dpdk::lpm::Fib4Reader;
use crate::dpdk::lpm::{Fib4, Fib6, Lpm4, Lpm6, LpmConfig};
use crate::dpdk::DpdkError;

/// The next-hop id of a lookup that matched no route.
pub const MISS: u32 = u32::MAX;

const _: () = assert!(Lpm4::MISS == MISS && Lpm6::MISS == MISS);

/// What backs a route table; the config's `route.backend` (`"fib"`,
/// `"lpm"` or `"linear"`) deserializes into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteBackend {
    /// rte_fib (DIR-24-8) / rte_fib6 (trie): add/delete cost the entries the
    /// route covers, whatever the table size; 31-bit next hops.
    #[default]
    Fib,
    /// rte_lpm / rte_lpm6: rte_lpm's add is O(rules of that length); next
    /// hops of 24 (IPv4) or 21 (IPv6) bits.
    Lpm,
    /// [`HashLpm`]: pure Rust, no EAL and no DPDK memory; one hash map per
    /// prefix length, probed longest first. Same answers and 31-bit next
    /// hops as `Fib`. For tests, the fuzzer and small tables; with it the
    /// daemon's neighbour table is the Rust one too
    /// ([`NeighborBackend::for_routes`](super::neighbor::NeighborBackend::for_routes)).
    Linear,
}

/// Backend and size of a route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteConfig {
    pub backend: RouteBackend,
    /// Most routes the table will hold.
    pub max_routes: u32,
    /// Second-level groups (see [`LpmConfig::num_tbl8`]).
    pub num_tbl8: u32,
}

impl RouteConfig {
    pub fn lpm_config(&self) -> LpmConfig {
        LpmConfig::new(self.max_routes, self.num_tbl8)
    }

    /// Bytes of EAL memory the table takes once created, before it is built
    /// (what `config` checks `eal.memory_mb` against): the formulas of
    /// `memory_bytes` in [`crate::dpdk::lpm`] for `ipv6` or IPv4, from the
    /// configuration alone. tbl24 is 2^24 4-byte entries (64 MiB) in all
    /// four; a tbl8 group is 256 × 4 B; a RIB node 64 B; an rte_lpm6 rule
    /// about 48 B.
    pub fn estimated_bytes(&self, ipv6: bool) -> u64 {
        const TBL24: u64 = (1 << 24) * 4;
        const TBL8_GROUP: u64 = 256 * 4;
        const RIB_NODE: u64 = 64;
        let tbl8 = u64::from(self.num_tbl8);
        let routes = u64::from(self.max_routes);
        match (self.backend, ipv6) {
            (RouteBackend::Fib, false) => {
                TBL24 + (tbl8.div_ceil(64) * 64 + 1) * TBL8_GROUP + 2 * routes * RIB_NODE
            }
            (RouteBackend::Fib, true) => {
                TBL24 + (tbl8 + 1) * TBL8_GROUP + tbl8 * 4 + 2 * routes * RIB_NODE
            }
            (RouteBackend::Lpm, false) => TBL24 + tbl8 * TBL8_GROUP + routes * (8 + 9),
            (RouteBackend::Lpm, true) => TBL24 + tbl8 * (TBL8_GROUP + 16) + routes * 48,
            // On the Rust heap, not in EAL memory.
            (RouteBackend::Linear, _) => 0,
        }
    }
}

impl Default for RouteConfig {
    /// rte_fib, 65,536 routes, 4,096 second-level groups (16 MiB).
    fn default() -> RouteConfig {
        RouteConfig {
            backend: RouteBackend::Fib,
            max_routes: 65_536,
            num_tbl8: 4_096,
        }
    }
}

/// An address type routes are keyed by: host-order `u32` for IPv4,
/// network-order `[u8; 16]` for IPv6.
pub trait RouteAddr: Copy + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static {
    /// Address length in bits: the longest prefix.
    const BITS: u8;
    /// The address with the bits past `len` cleared.
    fn mask(self, len: u8) -> Self;
}

impl RouteAddr for u32 {
    const BITS: u8 = 32;
    #[inline]
    fn mask(self, len: u8) -> u32 {
        mask4(self, len)
    }
}

impl RouteAddr for [u8; 16] {
    const BITS: u8 = 128;
    #[inline]
    fn mask(self, len: u8) -> [u8; 16] {
        mask6(self, len)
    }
}

/// A longest-prefix-match table from addresses to next-hop ids.
pub trait RouteTable: Send + Sync {
    type Addr: RouteAddr;

    /// Adds `prefix/len -> nh` (host bits of `prefix` are ignored),
    /// replacing the next hop of an existing route. Fails when `len` is too
    /// long, `nh` above [`RouteTable::max_nexthop`] or the table full.
    fn add(&mut self, prefix: Self::Addr, len: u8, nh: u32) -> Result<(), DpdkError>;

    /// Removes `prefix/len`; `Ok(false)` when there was no such route.
    fn delete(&mut self, prefix: Self::Addr, len: u8) -> Result<bool, DpdkError>;

    /// Writes the next hop of each address into `out`, [`MISS`] where no
    /// route matches. Panics if `out` is shorter than `addrs`.
    fn lookup_bulk(&self, addrs: &[Self::Addr], out: &mut [u32]);

    fn lookup(&self, addr: Self::Addr) -> Option<u32> {
        let mut out = [MISS];
        self.lookup_bulk(&[addr], &mut out);
        (out[0] != MISS).then_some(out[0])
    }

    /// Routes in the table.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Estimated bytes the table holds (for stats).
    fn memory_bytes(&self) -> usize;

    /// Largest next-hop id the table stores.
    fn max_nexthop(&self) -> u32;
}

/// rte_fib writes 8-byte next hops: look up through a stack buffer this many
/// addresses at a time (one burst: the buffer is zeroed per call), then
/// narrow to `u32` ids.
const FIB_CHUNK: usize = crate::burst::BURST_SIZE;

#[inline(always)]
fn narrow(raw: &[u64], fib_miss: u64, out: &mut [u32]) {
    for (o, &v) in out.iter_mut().zip(raw) {
        *o = if v == fib_miss { MISS } else { v as u32 };
    }
}

impl RouteTable for Fib4 {
    type Addr = u32;
    fn add(&mut self, prefix: u32, len: u8, nh: u32) -> Result<(), DpdkError> {
        Fib4::add(self, prefix, len, nh)
    }
    fn delete(&mut self, prefix: u32, len: u8) -> Result<bool, DpdkError> {
        Fib4::delete(self, prefix, len)
    }
    #[inline]
    fn lookup_bulk(&self, addrs: &[u32], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "lookup_bulk: output too short");
        let mut buf = [0u64; FIB_CHUNK];
        for (a, o) in addrs.chunks(FIB_CHUNK).zip(out.chunks_mut(FIB_CHUNK)) {
            let raw = &mut buf[..a.len()];
            Fib4::lookup_bulk(self, a, raw);
            narrow(raw, Fib4::MISS, o);
        }
    }
    fn len(&self) -> usize {
        Fib4::len(self)
    }
    fn memory_bytes(&self) -> usize {
        Fib4::memory_bytes(self)
    }
    fn max_nexthop(&self) -> u32 {
        Fib4::MAX_NEXTHOP
    }
}

impl RouteTable for Lpm4 {
    type Addr = u32;
    fn add(&mut self, prefix: u32, len: u8, nh: u32) -> Result<(), DpdkError> {
        Lpm4::add(self, prefix, len, nh)
    }
    fn delete(&mut self, prefix: u32, len: u8) -> Result<bool, DpdkError> {
        Lpm4::delete(self, prefix, len)
    }
    #[inline]
    fn lookup_bulk(&self, addrs: &[u32], out: &mut [u32]) {
        Lpm4::lookup_bulk(self, addrs, out)
    }
    fn len(&self) -> usize {
        Lpm4::len(self)
    }
    fn memory_bytes(&self) -> usize {
        Lpm4::memory_bytes(self)
    }
    fn max_nexthop(&self) -> u32 {
        Lpm4::MAX_NEXTHOP
    }
}

impl RouteTable for Fib6 {
    type Addr = [u8; 16];
    fn add(&mut self, prefix: [u8; 16], len: u8, nh: u32) -> Result<(), DpdkError> {
        Fib6::add(self, prefix, len, nh)
    }
    fn delete(&mut self, prefix: [u8; 16], len: u8) -> Result<bool, DpdkError> {
        Fib6::delete(self, prefix, len)
    }
    #[inline]
    fn lookup_bulk(&self, addrs: &[[u8; 16]], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "lookup_bulk: output too short");
        let mut buf = [0u64; FIB_CHUNK];
        for (a, o) in addrs.chunks(FIB_CHUNK).zip(out.chunks_mut(FIB_CHUNK)) {
            let raw = &mut buf[..a.len()];
            Fib6::lookup_bulk(self, a, raw);
            narrow(raw, Fib6::MISS, o);
        }
    }
    fn len(&self) -> usize {
        Fib6::len(self)
    }
    fn memory_bytes(&self) -> usize {
        Fib6::memory_bytes(self)
    }
    fn max_nexthop(&self) -> u32 {
        Fib6::MAX_NEXTHOP
    }
}

impl RouteTable for Lpm6 {
    type Addr = [u8; 16];
    fn add(&mut self, prefix: [u8; 16], len: u8, nh: u32) -> Result<(), DpdkError> {
        Lpm6::add(self, prefix, len, nh)
    }
    fn delete(&mut self, prefix: [u8; 16], len: u8) -> Result<bool, DpdkError> {
        Lpm6::delete(self, prefix, len)
    }
    #[inline]
    fn lookup_bulk(&self, addrs: &[[u8; 16]], out: &mut [u32]) {
        Lpm6::lookup_bulk(self, addrs, out)
    }
    fn len(&self) -> usize {
        Lpm6::len(self)
    }
    fn memory_bytes(&self) -> usize {
        Lpm6::memory_bytes(self)
    }
    fn max_nexthop(&self) -> u32 {
        Lpm6::MAX_NEXTHOP
    }
}

/// The IPv4 route table, backend chosen at start-up.
pub enum Route4 {
    Fib(Fib4),
    Lpm(Lpm4),
    Linear(HashLpm<u32>),
}

impl Route4 {
    /// A table of `cfg.backend`; `Fib` and `Lpm` need EAL, `Linear` does not.
    pub fn new(cfg: RouteConfig) -> Result<Route4, DpdkError> {
        Ok(match cfg.backend {
            RouteBackend::Fib => Route4::Fib(Fib4::new(cfg.lpm_config())?),
            RouteBackend::Lpm => Route4::Lpm(Lpm4::new(cfg.lpm_config())?),
            RouteBackend::Linear => Route4::Linear(HashLpm::new(cfg.max_routes)?),
        })
    }

    pub fn backend(&self) -> RouteBackend {
        match self {
            Route4::Fib(_) => RouteBackend::Fib,
            Route4::Lpm(_) => RouteBackend::Lpm,
            Route4::Linear(_) => RouteBackend::Linear,
        }
    }

    /// rte_fib's table read in place ([`Fib4Reader`]), which the
    /// [`RouteLookup`] of an rte_fib table uses. None for rte_lpm and the
    /// linear backend (or an rte_fib whose layout did not check out).
    #[inline(always)]
    pub fn reader(&self) -> Option<Fib4Reader<'_>> {
        match self {
            Route4::Fib(t) => t.reader(),
            Route4::Lpm(_) | Route4::Linear(_) => None,
        }
    }
}

/// The data path's bulk lookup, the one way the route stage reads a route
/// table: implemented by each backend's reader (rte_fib's table read in
/// place, [`Fib4Reader`], or through `rte_fib_lookup_bulk`; rte_lpm;
/// rte_fib6; rte_lpm6; [`HashLpm`], the `linear` backend; the
/// [`LinearRoutes`] oracle), and by [`Route4`]/[`Route6`], which match
/// their backend once per call (per burst, never per packet) and delegate
/// to it. Statically dispatched: every implementation is inlined into the
/// route stage's loop. With the `linear` backend it needs no EAL, so the
/// pipeline's tests and the fuzzer run the same route code without it.
///
/// Unlike [`RouteTable::lookup_bulk`], an entry is the backend's own
/// 8-byte result, not narrowed into a second `u32` buffer (that pass and
/// its buffer showed in the route profile): the value itself, or a miss
/// (at or above [`RAW_MISS_FLOOR`]; [`raw_value`] turns it into [`MISS`]).
pub trait RouteLookup {
    type Addr;

    /// Writes the raw entry for `dst[k]` into `out[k]`.
    ///
    /// # Panics
    /// If `out` is shorter than `dst`, or `dst` holds more than
    /// `BURST_SIZE` addresses (the data path looks a burst up at a time).
    fn lookup_raw(&self, dst: &[Self::Addr], out: &mut [u64]);
}

/// Looks up `dst` (at most a burst) through `lookup`, which writes `u32`
/// values, widening each into `out`. One buffer of a burst, no loop over
/// chunks: such a loop in the `Lpm` arm of [`Route4`]'s dispatch cost the
/// `Fib` arm's burst loop instructions of its own.
#[inline(always)]
fn widen<A>(dst: &[A], out: &mut [u64], lookup: impl Fn(&[A], &mut [u32])) {
    let out = &mut out[..dst.len()];
    let mut v = [MISS; FIB_CHUNK];
    let v = &mut v[..dst.len()];
    lookup(dst, v);
    for (o, &v) in out.iter_mut().zip(v.iter()) {
        *o = u64::from(v);
    }
}

/// rte_fib's table read in place: the same entries `rte_fib_lookup_bulk`
/// writes, inlined into a loop of independent loads.
impl RouteLookup for Fib4Reader<'_> {
    type Addr = u32;
    #[inline(always)]
    fn lookup_raw(&self, dst: &[u32], out: &mut [u64]) {
        for (o, &a) in out[..dst.len()].iter_mut().zip(dst) {
            *o = self.lookup(a);
        }
    }
}

/// Through the in-place reader when the table's layout checked out, else
/// `rte_fib_lookup_bulk`.
impl RouteLookup for Fib4 {
    type Addr = u32;
    #[inline(always)]
    fn lookup_raw(&self, dst: &[u32], out: &mut [u64]) {
        match self.reader() {
            Some(r) => r.lookup_raw(dst, out),
            None => Fib4::lookup_bulk(self, dst, out),
        }
    }
}

impl RouteLookup for Lpm4 {
    type Addr = u32;
    #[inline(always)]
    fn lookup_raw(&self, dst: &[u32], out: &mut [u64]) {
        widen(dst, out, |a, v| Lpm4::lookup_bulk(self, a, v));
    }
}

impl RouteLookup for Fib6 {
    type Addr = [u8; 16];
    #[inline(always)]
    fn lookup_raw(&self, dst: &[[u8; 16]], out: &mut [u64]) {
        Fib6::lookup_bulk(self, dst, out);
    }
}

impl RouteLookup for Lpm6 {
    type Addr = [u8; 16];
    #[inline(always)]
    fn lookup_raw(&self, dst: &[[u8; 16]], out: &mut [u64]) {
        widen(dst, out, |a, v| Lpm6::lookup_bulk(self, a, v));
    }
}

impl<A: RouteAddr> RouteLookup for HashLpm<A> {
    type Addr = A;
    #[inline(always)]
    fn lookup_raw(&self, dst: &[A], out: &mut [u64]) {
        for (o, &a) in out[..dst.len()].iter_mut().zip(dst) {
            *o = u64::from(self.lookup_one(a));
        }
    }
}

/// The oracle through the same interface, for tests that compare it with a
/// backend the way the data path reads them.
impl<A: RouteAddr> RouteLookup for LinearRoutes<A> {
    type Addr = A;
    fn lookup_raw(&self, dst: &[A], out: &mut [u64]) {
        widen(dst, out, |a, v| RouteTable::lookup_bulk(self, a, v));
    }
}

/// [`RouteLookup`] for the backend enums: one `match` per call (per burst),
/// each arm the backend's own implementation.
macro_rules! dispatch_route_lookup {
    ($ty:ident, $addr:ty) => {
        impl RouteLookup for $ty {
            type Addr = $addr;
            #[inline(always)]
            fn lookup_raw(&self, dst: &[$addr], out: &mut [u64]) {
                match self {
                    $ty::Fib(t) => t.lookup_raw(dst, out),
                    $ty::Lpm(t) => t.lookup_raw(dst, out),
                    $ty::Linear(t) => t.lookup_raw(dst, out),
                }
            }
        }
    };
}

dispatch_route_lookup!(Route4, u32);
dispatch_route_lookup!(Route6, [u8; 16]);

/// Raw lookup entries ([`RouteLookup::lookup_raw`]) at or above this are
/// misses: every backend's misses are, and no value a route stores is.
pub const RAW_MISS_FLOOR: u64 = Fib4::MISS;
const _: () = assert!(
    MISS as u64 >= RAW_MISS_FLOOR
        && Fib6::MISS >= RAW_MISS_FLOOR
        && (Fib4::MAX_NEXTHOP as u64) < RAW_MISS_FLOOR
        && (Fib6::MAX_NEXTHOP as u64) < RAW_MISS_FLOOR
        && (Lpm4::MAX_NEXTHOP as u64) < RAW_MISS_FLOOR
        && (Lpm6::MAX_NEXTHOP as u64) < RAW_MISS_FLOOR
        && (hash_lpm::MAX_NEXTHOP as u64) < RAW_MISS_FLOOR
);

/// The value of a raw lookup entry: a next-hop or group id, or [`MISS`].
#[inline(always)]
pub fn raw_value(raw: u64) -> u32 {
    if raw >= RAW_MISS_FLOOR {
        MISS
    } else {
        raw as u32
    }
}

/// The IPv6 route table, backend chosen at start-up.
pub enum Route6 {
    Fib(Fib6),
    Lpm(Lpm6),
    Linear(HashLpm<[u8; 16]>),
}

impl Route6 {
    /// A table of `cfg.backend`; `Fib` and `Lpm` need EAL, `Linear` does not.
    pub fn new(cfg: RouteConfig) -> Result<Route6, DpdkError> {
        Ok(match cfg.backend {
            RouteBackend::Fib => Route6::Fib(Fib6::new(cfg.lpm_config())?),
            RouteBackend::Lpm => Route6::Lpm(Lpm6::new(cfg.lpm_config())?),
            RouteBackend::Linear => Route6::Linear(HashLpm::new(cfg.max_routes)?),
        })
    }

    pub fn backend(&self) -> RouteBackend {
        match self {
            Route6::Fib(_) => RouteBackend::Fib,
            Route6::Lpm(_) => RouteBackend::Lpm,
            Route6::Linear(_) => RouteBackend::Linear,
        }
    }
}

/// Forwards every [`RouteTable`] method to the backend: one `match` per call,
/// i.e. per burst on the data path.
macro_rules! dispatch_route_table {
    ($ty:ident, $addr:ty) => {
        impl RouteTable for $ty {
            type Addr = $addr;
            fn add(&mut self, prefix: $addr, len: u8, nh: u32) -> Result<(), DpdkError> {
                match self {
                    $ty::Fib(t) => RouteTable::add(t, prefix, len, nh),
                    $ty::Lpm(t) => RouteTable::add(t, prefix, len, nh),
                    $ty::Linear(t) => RouteTable::add(t, prefix, len, nh),
                }
            }
            fn delete(&mut self, prefix: $addr, len: u8) -> Result<bool, DpdkError> {
                match self {
                    $ty::Fib(t) => RouteTable::delete(t, prefix, len),
                    $ty::Lpm(t) => RouteTable::delete(t, prefix, len),
                    $ty::Linear(t) => RouteTable::delete(t, prefix, len),
                }
            }
            #[inline]
            fn lookup_bulk(&self, addrs: &[$addr], out: &mut [u32]) {
                match self {
                    $ty::Fib(t) => RouteTable::lookup_bulk(t, addrs, out),
                    $ty::Lpm(t) => RouteTable::lookup_bulk(t, addrs, out),
                    $ty::Linear(t) => RouteTable::lookup_bulk(t, addrs, out),
                }
            }
            fn len(&self) -> usize {
                match self {
                    $ty::Fib(t) => RouteTable::len(t),
                    $ty::Lpm(t) => RouteTable::len(t),
                    $ty::Linear(t) => RouteTable::len(t),
                }
            }
            fn memory_bytes(&self) -> usize {
                match self {
                    $ty::Fib(t) => RouteTable::memory_bytes(t),
                    $ty::Lpm(t) => RouteTable::memory_bytes(t),
                    $ty::Linear(t) => RouteTable::memory_bytes(t),
                }
            }
            fn max_nexthop(&self) -> u32 {
                match self {
                    $ty::Fib(t) => RouteTable::max_nexthop(t),
                    $ty::Lpm(t) => RouteTable::max_nexthop(t),
                    $ty::Linear(t) => RouteTable::max_nexthop(t),
                }
            }
        }
    };
}

dispatch_route_table!(Route4, u32);
dispatch_route_table!(Route6, [u8; 16]);

/// Longest-prefix match by scanning every route: the oracle for tests and
/// the baseline for benches. Not for the data path.
#[derive(Debug, Clone, Default)]
pub struct LinearRoutes<A> {
    routes: Vec<(A, u8, u32)>,
}

impl<A: RouteAddr> LinearRoutes<A> {
    pub fn new() -> LinearRoutes<A> {
        LinearRoutes { routes: Vec::new() }
    }

    /// The routes, `(masked prefix, len, next hop)`, in insertion order.
    pub fn routes(&self) -> &[(A, u8, u32)] {
        &self.routes
    }
}

impl<A: RouteAddr> RouteTable for LinearRoutes<A> {
    type Addr = A;

    fn add(&mut self, prefix: A, len: u8, nh: u32) -> Result<(), DpdkError> {
        if len > A::BITS {
            return Err(DpdkError::Invalid(format!(
                "prefix length {len} > {}",
                A::BITS
            )));
        }
        if nh == MISS {
            return Err(DpdkError::Invalid("next hop is MISS".into()));
        }
        let p = prefix.mask(len);
        match self.routes.iter_mut().find(|r| r.0 == p && r.1 == len) {
            Some(r) => r.2 = nh,
            None => self.routes.push((p, len, nh)),
        }
        Ok(())
    }

    fn delete(&mut self, prefix: A, len: u8) -> Result<bool, DpdkError> {
        let p = prefix.mask(len.min(A::BITS));
        let before = self.routes.len();
        self.routes.retain(|r| !(r.0 == p && r.1 == len));
        Ok(self.routes.len() != before)
    }

    fn lookup_bulk(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "lookup_bulk: output too short");
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self
                .routes
                .iter()
                .filter(|r| a.mask(r.1) == r.0)
                .max_by_key(|r| r.1)
                .map_or(MISS, |r| r.2);
        }
    }

    fn len(&self) -> usize {
        self.routes.len()
    }

    fn memory_bytes(&self) -> usize {
        self.routes.capacity() * std::mem::size_of::<(A, u8, u32)>()
    }

    fn max_nexthop(&self) -> u32 {
        MISS - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::testing::test_lock;

    /// Every backend: the DPDK ones and the linear one must agree.
    const BACKENDS: [RouteBackend; 3] =
        [RouteBackend::Fib, RouteBackend::Lpm, RouteBackend::Linear];

    fn small(backend: RouteBackend) -> RouteConfig {
        RouteConfig {
            backend,
            max_routes: 256,
            num_tbl8: 64,
        }
    }

    #[test]
    fn default_backend_is_fib() {
        assert_eq!(RouteConfig::default().backend, RouteBackend::Fib);
        let _g = test_lock();
        assert_eq!(
            Route4::new(RouteConfig::default()).unwrap().backend(),
            RouteBackend::Fib
        );
    }

    #[test]
    fn route4_backends_agree_and_miss() {
        let _g = test_lock();
        for backend in BACKENDS {
            let mut t = Route4::new(small(backend)).unwrap();
            assert_eq!(t.backend(), backend);
            assert!(t.is_empty());
            t.add(0x0a00_0000, 8, 1).unwrap();
            t.add(0x0a01_0000, 16, 2).unwrap();
            t.add(0x0a01_0203, 32, 3).unwrap();
            t.add(0x0a01_0000, 16, 4).unwrap(); // replaces
            assert_eq!(t.len(), 3);
            // More than one FIB chunk, to cover the chunked narrowing.
            let addrs: Vec<u32> = (0..200u32)
                .map(|i| match i % 4 {
                    0 => 0x0a02_0000 | i,
                    1 => 0x0a01_0000 | i,
                    2 => 0x0a01_0203,
                    _ => 0x0b00_0000 | i,
                })
                .collect();
            let mut out = vec![0u32; addrs.len()];
            t.lookup_bulk(&addrs, &mut out);
            for (i, &o) in out.iter().enumerate() {
                let want = [1, 4, 3, MISS][i % 4];
                assert_eq!(o, want, "{backend:?} addr {:#x}", addrs[i]);
            }
            // The data path's raw lookup gives the same values, burst by
            // burst, with a default route too (rte_fib emulates it).
            for default in [None, Some(7)] {
                if let Some(nh) = default {
                    t.add(0, 0, nh).unwrap();
                }
                for (chunk, want) in addrs.chunks(FIB_CHUNK).zip(out.chunks(FIB_CHUNK)) {
                    let mut raw = [0u64; FIB_CHUNK];
                    t.lookup_raw(chunk, &mut raw);
                    for (&r, &w) in raw.iter().zip(want) {
                        let w = if w == MISS {
                            default.unwrap_or(MISS)
                        } else {
                            w
                        };
                        assert_eq!(raw_value(r), w, "{backend:?} raw {r:#x}");
                        assert_eq!(r < RAW_MISS_FLOOR, w != MISS, "{backend:?} raw {r:#x}");
                    }
                }
            }
            assert!(t.delete(0, 0).unwrap());
            assert_eq!(t.lookup(0x0b00_0000), None);
            assert!(t.delete(0x0a01_0000, 16).unwrap());
            assert!(!t.delete(0x0a01_0000, 16).unwrap());
            assert_eq!(t.lookup(0x0a01_0001), Some(1));
            if backend != RouteBackend::Linear {
                assert!(t.memory_bytes() >= 64 << 20);
            }
        }
    }

    #[test]
    fn route6_backends_agree_and_miss() {
        let _g = test_lock();
        let a: [u8; 16] = "2001:db8:1::"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        let b: [u8; 16] = "2001:db8:1:2::5"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        let c: [u8; 16] = "2002::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
        for backend in BACKENDS {
            let mut t = Route6::new(small(backend)).unwrap();
            assert_eq!(t.backend(), backend);
            t.add(a, 48, 7).unwrap();
            t.add(b, 128, 8).unwrap();
            assert_eq!(t.lookup(b), Some(8));
            assert_eq!(t.lookup(a), Some(7));
            assert_eq!(t.lookup(c), None);
            // The data path's raw lookup, before and after a default route,
            // against the oracle read the same way.
            let mut oracle = LinearRoutes::new();
            oracle.add(a, 48, 7).unwrap();
            oracle.add(b, 128, 8).unwrap();
            fn raw6(t: &impl RouteLookup<Addr = [u8; 16]>, d: [[u8; 16]; 3]) -> [u64; 3] {
                let mut out = [0u64; 3];
                t.lookup_raw(&d, &mut out);
                out
            }
            let want = raw6(&oracle, [a, b, c]);
            assert_eq!(want.map(raw_value), [7, 8, MISS]);
            assert!(want[2] >= RAW_MISS_FLOOR);
            let got = raw6(&t, [a, b, c]);
            assert_eq!(got.map(raw_value), want.map(raw_value), "{backend:?}");
            assert!(got[2] >= RAW_MISS_FLOOR, "{backend:?}");
            t.add([0; 16], 0, 9).unwrap();
            assert_eq!(t.lookup(c), Some(9));
            assert_eq!(t.len(), 3);
            assert_eq!(raw6(&t, [a, b, c]), [7, 8, 9], "{backend:?}");
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let _g = test_lock();
        for backend in BACKENDS {
            let mut t4 = Route4::new(small(backend)).unwrap();
            assert!(t4.add(0, 33, 1).is_err());
            assert!(t4.delete(0, 33).is_err());
            assert!(t4.add(0, 8, MISS).is_err());
            assert!(t4.add(0, 8, t4.max_nexthop() + 1).is_err());
            assert!(t4.add(0, 8, t4.max_nexthop()).is_ok());
            let mut t6 = Route6::new(small(backend)).unwrap();
            assert!(t6.add([0; 16], 129, 1).is_err());
            assert!(t6.add([0; 16], 8, t6.max_nexthop() + 1).is_err());
            assert!(t6.lookup([0; 16]).is_none());
        }
        for backend in BACKENDS {
            let zero = RouteConfig {
                max_routes: 0,
                ..small(backend)
            };
            assert!(Route4::new(zero).is_err(), "{backend:?}");
            assert!(Route6::new(zero).is_err(), "{backend:?}");
        }
    }

    /// The linear backend needs no EAL: this test never starts it (under
    /// nextest a test is its own process, so the check means something).
    #[test]
    fn linear_backend_runs_without_eal() {
        let cfg = small(RouteBackend::Linear);
        let mut t4 = Route4::new(cfg).unwrap();
        let mut t6 = Route6::new(cfg).unwrap();
        assert_eq!(
            (t4.backend(), t6.backend()),
            (RouteBackend::Linear, RouteBackend::Linear)
        );
        assert!(t4.reader().is_none());
        t4.add(0x0a00_0000, 8, 1).unwrap();
        t6.add(
            [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            32,
            2,
        )
        .unwrap();
        let mut raw = [0u64; FIB_CHUNK];
        t4.lookup_raw(&[0x0a09_0909, 0x0b00_0000], &mut raw);
        assert_eq!((raw_value(raw[0]), raw_value(raw[1])), (1, MISS));
        assert!(raw[1] >= RAW_MISS_FLOOR);
        assert_eq!(
            t6.lookup([0x20, 1, 0x0d, 0xb8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            Some(2)
        );
        assert_eq!(cfg.estimated_bytes(false), 0, "no EAL memory");
        crate::tables::testing::assert_no_eal();
    }

    #[test]
    fn table_full_is_an_error() {
        let _g = test_lock();
        for backend in BACKENDS {
            let cfg = RouteConfig {
                backend,
                max_routes: 4,
                num_tbl8: 64,
            };
            let mut t = Route4::new(cfg).unwrap();
            for i in 0..4u32 {
                t.add(i << 24, 8, i).unwrap();
            }
            assert!(t.add(9 << 24, 8, 1).is_err(), "{backend:?}");
            // Replacing an existing route still works when full.
            t.add(0, 8, 5).unwrap();
            assert_eq!(t.len(), 4);
        }
    }

    #[test]
    fn linear_oracle() {
        let mut t = LinearRoutes::<u32>::new();
        t.add(0x0a00_0000, 8, 1).unwrap();
        t.add(0x0a01_0000, 16, 2).unwrap();
        t.add(0x0a01_ffff, 16, 3).unwrap(); // same prefix: replaces
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup(0x0a01_0001), Some(3));
        assert_eq!(t.lookup(0x0a02_0001), Some(1));
        assert_eq!(t.lookup(0x0b02_0001), None);
        assert!(t.add(0, 33, 1).is_err());
    }
}
