//! Longest-prefix-match tables: rte_fib (DIR-24-8) and rte_lpm for IPv4,
//! rte_fib6 (trie) and rte_lpm6 for IPv6.
//!
//! Each type owns one DPDK table (freed on drop) under a process-unique name.
//! Lookups take `&self` and only read the table, so a built table can be
//! shared by many workers; `add`/`delete` take `&mut self`, so nobody reads
//! while it changes (the control plane builds a new table and swaps it in
//! between bursts). Addresses are host-order `u32` for IPv4 and network-order
//! `[u8; 16]` for IPv6. Prefixes are masked to their length before they reach
//! DPDK, and next hops are checked against what each table can store.
//!
//! Every table also counts its routes and estimates its memory from its
//! configuration (see each `memory_bytes`): mostly what DPDK allocates at
//! creation, which does not grow with the routes added.
//!
//! rte_lpm and rte_lpm6 have no /0 rule, and DPDK 22.11's DIR-24-8 mishandles
//! /0 and other prefixes that end at 255.255.255.255, so [`Lpm4`], [`Lpm6`]
//! and [`Fib4`] keep the default route themselves and apply it to misses;
//! rte_fib6's trie has the same top-of-address-space wrap, so [`Fib6`] does too.
//! [`Fib4`] also works around two more DIR-24-8 bugs (see its doc); the
//! proptests below check all four tables against a linear scan.
use super::error::{self, DpdkError};
use std::collections::HashSet;
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// DPDK's `SOCKET_ID_ANY` (a macro bindgen does not see).
const SOCKET_ID_ANY: i32 = -1;

/// Entries in the first-level table of DIR-24-8, rte_lpm, the fib6 trie and
/// rte_lpm6: all four index their first level by the top 24 address bits.
const TBL24_ENTRIES: usize = 1 << 24;
/// Entries in one second-level ("tbl8") group.
const TBL8_GROUP_ENTRIES: usize = 256;
/// A RIB node (rte_rib / rte_rib6, 40 / 56 bytes) as stored in its mempool:
/// 8-byte object header, padded to a 64-byte cache line.
const RIB_NODE_BYTES: usize = 64;
/// One rte_lpm6 rule in its rte_hash: 17-byte key in a 32-byte key slot, an
/// 8-byte share of a 64-byte bucket and a free-list slot.
const LPM6_RULE_BYTES: usize = 48;

/// Sizes a table at creation; DPDK allocates everything up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpmConfig {
    /// Most routes the table will hold.
    pub max_routes: u32,
    /// Second-level groups of 256 entries. IPv4 needs one per /24 that holds
    /// a route longer than /24; IPv6 needs up to `(len - 24) / 8` per route
    /// longer than /24 (fewer when routes share their leading bytes).
    pub num_tbl8: u32,
}

impl LpmConfig {
    pub const fn new(max_routes: u32, num_tbl8: u32) -> LpmConfig {
        LpmConfig {
            max_routes,
            num_tbl8,
        }
    }

    fn check(&self, what: &str) -> Result<(), DpdkError> {
        if self.max_routes == 0 || self.max_routes > i32::MAX as u32 / 2 {
            return Err(DpdkError::Invalid(format!(
                "{what}: max_routes {} out of range 1..={}",
                self.max_routes,
                i32::MAX / 2
            )));
        }
        if self.num_tbl8 == 0 || self.num_tbl8 > 1 << 24 {
            return Err(DpdkError::Invalid(format!(
                "{what}: num_tbl8 {} out of range 1..={}",
                self.num_tbl8,
                1 << 24
            )));
        }
        Ok(())
    }
}

impl Default for LpmConfig {
    /// A small table: 1024 routes, 256 second-level groups.
    fn default() -> LpmConfig {
        LpmConfig::new(1024, 256)
    }
}

/// `<prefix>_<n>`: DPDK refuses a second table with the same name (and
/// rte_acl would hand back the existing one), so every table gets its own.
pub(crate) fn unique_name(prefix: &str) -> CString {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    CString::new(format!("{prefix}_{n}")).expect("table name has no NUL")
}

/// `ip` with the bits past `depth` cleared (`depth <= 32`).
#[inline]
pub fn mask4(ip: u32, depth: u8) -> u32 {
    match depth {
        0 => 0,
        d => ip & (u32::MAX << (32 - u32::from(d.min(32)))),
    }
}

/// `ip` with the bits past `depth` cleared (`depth <= 128`).
#[inline]
pub fn mask6(ip: [u8; 16], depth: u8) -> [u8; 16] {
    let v = u128::from_be_bytes(ip);
    let m = match depth {
        0 => 0,
        d => u128::MAX << (128 - u32::from(d.min(128))),
    };
    (v & m).to_be_bytes()
}

fn check_depth(call: &str, depth: u8, max: u8) -> Result<(), DpdkError> {
    if depth > max {
        return Err(DpdkError::Invalid(format!(
            "{call}: prefix length {depth} > {max}"
        )));
    }
    Ok(())
}

fn check_nh(call: &str, nh: u32, max: u32) -> Result<(), DpdkError> {
    if nh > max {
        return Err(DpdkError::Invalid(format!("{call}: next hop {nh} > {max}")));
    }
    Ok(())
}

/// Bulk lookups hand DPDK `n` as a C int and write `n` results.
#[inline(always)]
fn check_bulk(n_in: usize, n_out: usize) {
    assert!(
        n_out >= n_in,
        "lookup_bulk: output slice ({n_out}) shorter than input ({n_in})"
    );
    assert!(n_in <= i32::MAX as usize, "lookup_bulk: too many keys");
}

// ---------------------------------------------------------------------------
// The top-of-address-space workaround shared by Fib4 and Fib6.

/// What a table keeps beside DPDK: its route count, and the default route
/// (which never reaches DPDK: see [`Fib4`]'s doc).
#[derive(Debug, Default)]
struct RibBook {
    routes: usize,
    default_nh: Option<u32>,
}

/// What the shared add/delete ([`rib_add`], [`rib_delete`]) need of a
/// RIB-backed table (`Fib4`, `Fib6`).
trait RibRoutes {
    type Ip: Copy + PartialEq;
    /// The all-ones address: prefixes ending there hit the wrap.
    const TOP: Self::Ip;
    const MAX_DEPTH: u8;
    const MAX_NEXTHOP: u32;
    /// DPDK call names for errors.
    const ADD: &'static str;
    const DELETE: &'static str;
    fn mask(ip: Self::Ip, depth: u8) -> Self::Ip;
    fn book(&self) -> &RibBook;
    fn book_mut(&mut self) -> &mut RibBook;
    fn max_routes(&self) -> usize;
    /// Whether the RIB holds exactly `masked/depth` (depth >= 1).
    fn in_rib(&self, masked: Self::Ip, depth: u8) -> bool;
    /// The routes strictly inside `ip/depth`: `(prefix, depth, next hop)`.
    fn inner_routes(&self, ip: Self::Ip, depth: u8) -> Vec<(Self::Ip, u8, u64)>;
    fn raw_add(&mut self, ip: Self::Ip, depth: u8, nh: u64) -> Result<(), DpdkError>;
    fn raw_delete(&mut self, ip: Self::Ip, depth: u8) -> Result<(), DpdkError>;

    fn contains(&self, masked: Self::Ip, depth: u8) -> bool {
        if depth == 0 {
            self.book().default_nh.is_some()
        } else {
            self.in_rib(masked, depth)
        }
    }

    /// Whether `masked/depth` (depth >= 1) ends at the top address.
    fn ends_at_top(masked: Self::Ip, depth: u8) -> bool {
        masked == Self::mask(Self::TOP, depth)
    }
}

/// Adds `prefix/depth -> nh`, replacing the next hop of an existing route:
/// `/0` stays in the book, a top-ending prefix is changed with the routes
/// inside it taken out, anything else is one DPDK call.
fn rib_add<T: RibRoutes>(t: &mut T, prefix: T::Ip, depth: u8, nh: u32) -> Result<(), DpdkError> {
    check_depth(T::ADD, depth, T::MAX_DEPTH)?;
    check_nh(T::ADD, nh, T::MAX_NEXTHOP)?;
    let ip = T::mask(prefix, depth);
    let new = !t.contains(ip, depth);
    if new && t.book().routes >= t.max_routes() {
        return Err(error::from_errno(T::ADD, libc::ENOSPC));
    }
    if depth == 0 {
        t.book_mut().default_nh = Some(nh);
    } else if T::ends_at_top(ip, depth) {
        with_inner_removed(t, ip, depth, |t| t.raw_add(ip, depth, u64::from(nh)))?;
    } else {
        t.raw_add(ip, depth, u64::from(nh))?;
    }
    t.book_mut().routes += usize::from(new);
    Ok(())
}

/// Removes `prefix/depth`; `Ok(false)` when there was no such route.
fn rib_delete<T: RibRoutes>(t: &mut T, prefix: T::Ip, depth: u8) -> Result<bool, DpdkError> {
    check_depth(T::DELETE, depth, T::MAX_DEPTH)?;
    let ip = T::mask(prefix, depth);
    if !t.contains(ip, depth) {
        return Ok(false);
    }
    if depth == 0 {
        t.book_mut().default_nh = None;
    } else if T::ends_at_top(ip, depth) {
        with_inner_removed(t, ip, depth, |t| t.raw_delete(ip, depth))?;
    } else {
        t.raw_delete(ip, depth)?;
    }
    t.book_mut().routes -= 1;
    Ok(true)
}

/// Runs `op` on the top-ending prefix `ip/depth` with the routes inside it
/// taken out (deepest first, so none of them has routes inside it when
/// removed), then puts them back (shallowest first); see [`Fib4`]'s doc.
fn with_inner_removed<T: RibRoutes>(
    t: &mut T,
    ip: T::Ip,
    depth: u8,
    op: impl FnOnce(&mut T) -> Result<(), DpdkError>,
) -> Result<(), DpdkError> {
    let mut inner = t.inner_routes(ip, depth);
    if inner.is_empty() {
        return op(t);
    }
    inner.sort_by_key(|r| std::cmp::Reverse(r.1));
    for &(p, d, _) in &inner {
        t.raw_delete(p, d)?;
    }
    let res = op(t);
    let mut restore = Ok(());
    for &(p, d, nh) in inner.iter().rev() {
        if let Err(e) = t.raw_add(p, d, nh) {
            restore = restore.and(Err(e));
        }
    }
    res.and(restore)
}

// ---------------------------------------------------------------------------
// Fib4: rte_fib, DIR-24-8, 4-byte next hops.

/// IPv4 FIB over `rte_fib` (DIR-24-8, 4-byte next hops).
///
/// rte_fib keeps the routes in a RIB (a binary trie) beside the lookup
/// tables, so adding or deleting a route costs a trie walk plus the table
/// entries it covers, independent of how many routes there are.
///
/// # Working around DPDK 22.11's DIR-24-8 at the top of the address space
/// When a route changes, DIR-24-8 rewrites its range minus the ranges of the
/// routes inside it, walking left to right with 32-bit edges. For a prefix
/// that ends at 255.255.255.255 (`0/0`, `128/1`, ..., `255.255.255.255/32`)
/// the right edge wraps to 0, and when the routes inside it reach the top as
/// well, the final "install from 0 to 0" is taken as the whole address space:
/// every entry gets the route's next hop. For `0/0` with a route inside the
/// first /24 it even writes about 2^32 tbl8 entries (out of bounds). So:
/// - the default route `0/0` never reaches DPDK: it is kept here and fills
///   misses in [`Fib4::lookup_bulk`] (one compare per result);
/// - a change to another top-ending prefix that has routes inside it first
///   takes those routes out (deepest first, so none of them has routes inside
///   it when removed), changes the prefix, and puts them back (shallowest
///   first). That costs time in the number of routes inside, and such
///   prefixes (`224/3`, `240/4`, ...) are rare; any other change is one call.
///
///
/// A second 22.11 bug: DIR-24-8 reserves a tbl8 group for the first route
/// longer than /24 in each /24, but skips the reservation when the new
/// route's covering route has the same next hop, while deleting it always
/// releases one. The count underflows and every later long route fails with
/// ENOSPC. So a new route longer than /24 is added twice: first with
/// [`Fib4::MISS`] (which no covering route has), then with its next hop.
///
/// The `fib4_*` proptests below cover these cases against the linear oracle.
pub struct Fib4 {
    raw: NonNull<dpdk_sys::rte_fib>,
    cfg: LpmConfig,
    book: RibBook,
    /// rte_fib's DIR-24-8 arrays, when their layout checked out.
    arrays: Option<Dir24Arrays>,
}

/// Where rte_fib keeps a DIR-24-8 table with 4-byte entries: `tbl24`
/// (2^24 entries) and `tbl8` (`n_tbl8` groups of 256). An entry is
/// `next_hop << 1`, or `group << 1 | 1` when the /24 has longer routes.
#[derive(Debug, Clone, Copy)]
struct Dir24Arrays {
    tbl24: NonNull<u32>,
    tbl8: NonNull<u32>,
    n_tbl8: u32,
}

// The offsets of `struct dir24_8_tbl` in DPDK 22.11 (`lib/fib/dir24_8.h`,
// private): number_tbl8s u32 at 0 (the configured count rounded up to a
// multiple of 64), nh_sz at 12, def_nh u64 at 16, the
// tbl8 pointer at 24, tbl24 at 64 (cache aligned). Not public API, so
// `Fib4::find_arrays` checks them on the fresh table before using them.
const DIR24_8_NUMBER_TBL8S: usize = 0;
const DIR24_8_NH_SZ: usize = 12;
const DIR24_8_DEF_NH: usize = 16;
const DIR24_8_TBL8: usize = 24;
const DIR24_8_TBL24: usize = 64;
const DIR24_8_TBL8_GROUP: usize = 256;

/// Reads a [`Fib4`]'s table directly, one address at a time, exactly as
/// rte_fib's own lookup does (`LOOKUP_FUNC` in `dir24_8.h`): the tbl24
/// entry, and the tbl8 entry when it is extended. Why by hand: rte_fib's
/// lookup is a call through a function pointer that prefetches only a few
/// entries ahead inside the call; with a million routes its loads missed
/// there. Inlined, the pass reads lines the parse sweep already prefetched
/// ([`Fib4Reader::prefetch`]). The table is still rte_fib's, built and
/// changed only by rte_fib; the reader borrows the `Fib4`, so no route can
/// change while it lives.
#[derive(Clone, Copy)]
pub struct Fib4Reader<'a> {
    arrays: Dir24Arrays,
    /// What a miss reads as: the default route's next hop, or `Fib4::MISS`.
    miss: u64,
    _fib: std::marker::PhantomData<&'a Fib4>,
}

impl Fib4Reader<'_> {
    /// Prefetches `ip`'s tbl24 entry, for a [`Fib4Reader::lookup`] later in
    /// the burst (rte_fib's own lookup prefetches too, a few entries ahead).
    #[inline(always)]
    pub fn prefetch(&self, ip: u32) {
        super::prefetch(self.arrays.tbl24.as_ptr().wrapping_add((ip >> 8) as usize));
    }

    /// What [`Fib4::lookup_bulk`] writes for `ip`.
    #[inline(always)]
    pub fn lookup(&self, ip: u32) -> u64 {
        let a = &self.arrays;
        // SAFETY: tbl24 has 2^24 entries (checked at creation), so any
        // `ip >> 8` is in bounds; the Fib4 outlives the reader and cannot
        // change while it is borrowed.
        let mut e = unsafe { *a.tbl24.as_ptr().add((ip >> 8) as usize) };
        if e & 1 != 0 {
            let group = e >> 1;
            if group >= a.n_tbl8 {
                return self.miss; // never written by rte_fib; kept in bounds
            }
            let at = group as usize * DIR24_8_TBL8_GROUP + (ip & 0xff) as usize;
            // SAFETY: group < n_tbl8, so `at` is inside the tbl8 array of
            // n_tbl8 groups of 256 entries.
            e = unsafe { *a.tbl8.as_ptr().add(at) };
        }
        let v = u64::from(e >> 1);
        if v == Fib4::MISS {
            self.miss
        } else {
            v
        }
    }
}

// SAFETY: the rte_fib is owned by this value alone. Lookups (`&self`) only
// read the tables; add/delete need `&mut self`, so they never run at the same
// time as a lookup or each other.
unsafe impl Send for Fib4 {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for Fib4 {}

impl Fib4 {
    /// The default next hop: what lookups return where no route matches.
    /// It is the largest value a 4-byte DIR-24-8 entry holds (one bit is the
    /// extension flag), so no route can use it.
    pub const MISS: u64 = (1 << 31) - 1;
    /// Largest next hop a route may carry.
    pub const MAX_NEXTHOP: u32 = (1 << 31) - 2;

    pub fn new(cfg: LpmConfig) -> Result<Fib4, DpdkError> {
        cfg.check("rte_fib_create")?;
        let name = unique_name("fib4");
        let mut conf = dpdk_sys::rte_fib_conf {
            type_: dpdk_sys::RTE_FIB_DIR24_8,
            default_nh: Self::MISS,
            // The RIB counts its inner (branching) nodes too: up to one per
            // route, so twice the routes bounds it.
            max_routes: (cfg.max_routes * 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        conf.__bindgen_anon_1.dir24_8 = dpdk_sys::rte_fib_conf__bindgen_ty_1__bindgen_ty_1 {
            nh_sz: dpdk_sys::RTE_FIB_DIR24_8_4B,
            num_tbl8: cfg.num_tbl8,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno (also when EAL is not up).
        let p = unsafe { dpdk_sys::rte_fib_create(name.as_ptr(), SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_fib_create"))?;
        let arrays = Self::find_arrays(raw, cfg.num_tbl8);
        if arrays.is_none() {
            tracing::warn!("rte_fib's DIR-24-8 layout is not DPDK 22.11's: the data path uses rte_fib_lookup_bulk");
        }
        Ok(Fib4 {
            raw,
            cfg,
            book: RibBook::default(),
            arrays,
        })
    }

    /// The arrays of a freshly created (empty) fib, if the private layout is
    /// the expected one: the header holds what the fib was created with,
    /// and the first and last tbl24 entries hold the default next hop (as
    /// every entry of an empty table does).
    fn find_arrays(raw: NonNull<dpdk_sys::rte_fib>, num_tbl8: u32) -> Option<Dir24Arrays> {
        // SAFETY: raw is a live fib.
        let dp = unsafe { dpdk_sys::rte_fib_get_dp(raw.as_ptr()) } as *const u8;
        if dp.is_null() {
            return None;
        }
        let empty = (Self::MISS << 1) as u32;
        // SAFETY: rte_fib_create allocated the 64-byte header and, behind it,
        // 2^24 4-byte tbl24 entries for a DIR24_8_4B table; each check
        // passes before the next read relies on the layout it confirms.
        unsafe {
            let u32_at = |off: usize| std::ptr::read_unaligned(dp.add(off) as *const u32);
            // rte_fib rounds the group count up to its bitmap's 64-bit
            // slabs and allocates that many (plus one) groups.
            let n_tbl8 = num_tbl8.div_ceil(64) * 64;
            let header_ok = u32_at(DIR24_8_NUMBER_TBL8S) == n_tbl8
                && u32_at(DIR24_8_NH_SZ) == dpdk_sys::RTE_FIB_DIR24_8_4B
                && std::ptr::read_unaligned(dp.add(DIR24_8_DEF_NH) as *const u64) == Self::MISS;
            if !header_ok
                || u32_at(DIR24_8_TBL24) != empty
                || u32_at(DIR24_8_TBL24 + 4 * ((1 << 24) - 1)) != empty
            {
                tracing::debug!(
                    number_tbl8s = u32_at(DIR24_8_NUMBER_TBL8S),
                    want_tbl8s = n_tbl8,
                    nh_sz = u32_at(DIR24_8_NH_SZ),
                    def_nh = std::ptr::read_unaligned(dp.add(DIR24_8_DEF_NH) as *const u64),
                    first = u32_at(DIR24_8_TBL24),
                    last = u32_at(DIR24_8_TBL24 + 4 * ((1 << 24) - 1)),
                    "rte_fib header"
                );
                return None;
            }
            let tbl8 = std::ptr::read_unaligned(dp.add(DIR24_8_TBL8) as *const *mut u32);
            Some(Dir24Arrays {
                tbl24: NonNull::new(dp.add(DIR24_8_TBL24) as *mut u32)?,
                tbl8: NonNull::new(tbl8)?,
                n_tbl8,
            })
        }
    }

    /// A direct reader of the table ([`Fib4Reader`]), when the layout
    /// checked out.
    #[inline(always)]
    pub fn reader(&self) -> Option<Fib4Reader<'_>> {
        Some(Fib4Reader {
            arrays: self.arrays?,
            miss: self.book.default_nh.map_or(Self::MISS, u64::from),
            _fib: std::marker::PhantomData,
        })
    }

    fn rib(&self) -> *mut dpdk_sys::rte_rib {
        // SAFETY: raw is a live fib; its RIB lives as long as it does.
        let rib = unsafe { dpdk_sys::rte_fib_get_rib(self.raw.as_ptr()) };
        debug_assert!(!rib.is_null());
        rib
    }

    fn raw_add_once(&mut self, ip: u32, depth: u8, nh: u64) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib and we hold &mut self: no lookup runs.
        let rc = unsafe { dpdk_sys::rte_fib_add(self.raw.as_ptr(), ip, depth, nh) };
        error::check("rte_fib_add", rc).map(|_| ())
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: u32, depth: u8, nh: u32) -> Result<(), DpdkError> {
        rib_add(self, prefix, depth, nh)
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: u32, depth: u8) -> Result<bool, DpdkError> {
        rib_delete(self, prefix, depth)
    }

    /// Looks up every address of `ips` (host order) into `out`: the next hop,
    /// or [`Fib4::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u64]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live fib; lookups only read it (the C prototype
        // takes `uint32_t *ips` but never writes through it). DPDK reads
        // ips.len() addresses and writes as many results, and out has room
        // for them (checked above).
        let rc = unsafe {
            dpdk_sys::rte_fib_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut u32,
                out.as_mut_ptr(),
                ips.len() as i32,
            )
        };
        debug_assert_eq!(rc, 0);
        if let Some(d) = self.book.default_nh {
            for e in out.iter_mut() {
                if *e == Self::MISS {
                    *e = u64::from(d);
                }
            }
        }
    }

    /// One lookup: `None` when no route matches.
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut out = [0u64; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0] as u32)
    }

    /// Routes in the table.
    pub fn len(&self) -> usize {
        self.book.routes
    }

    pub fn is_empty(&self) -> bool {
        self.book.routes == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes allocated at creation: tbl24 (2^24 × 4 B) + tbl8
    /// groups (num_tbl8 rounded up to 64, plus one, × 256 × 4 B) + RIB nodes
    /// (2 × max_routes × 64 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = (self.cfg.num_tbl8 as usize).div_ceil(64) * 64 + 1;
        TBL24_ENTRIES * 4
            + tbl8s * TBL8_GROUP_ENTRIES * 4
            + 2 * self.cfg.max_routes as usize * RIB_NODE_BYTES
    }
}

impl RibRoutes for Fib4 {
    type Ip = u32;
    const TOP: u32 = u32::MAX;
    const MAX_DEPTH: u8 = 32;
    const MAX_NEXTHOP: u32 = Fib4::MAX_NEXTHOP;
    const ADD: &'static str = "rte_fib_add";
    const DELETE: &'static str = "rte_fib_delete";

    fn mask(ip: u32, depth: u8) -> u32 {
        mask4(ip, depth)
    }

    fn book(&self) -> &RibBook {
        &self.book
    }

    fn book_mut(&mut self) -> &mut RibBook {
        &mut self.book
    }

    fn max_routes(&self) -> usize {
        self.cfg.max_routes as usize
    }

    fn in_rib(&self, masked: u32, depth: u8) -> bool {
        // SAFETY: the RIB is live and only read here (no writer runs while
        // we hold &self or &mut self).
        unsafe { !dpdk_sys::rte_rib_lookup_exact(self.rib(), masked, depth).is_null() }
    }

    /// The routes strictly inside `ip/depth`: `(prefix, depth, next hop)`.
    fn inner_routes(&self, ip: u32, depth: u8) -> Vec<(u32, u8, u64)> {
        let rib = self.rib();
        let mut out = Vec::new();
        let mut node = std::ptr::null_mut();
        loop {
            // SAFETY: the RIB is live and not modified during the walk; node
            // is NULL or the node the previous call returned.
            node = unsafe {
                dpdk_sys::rte_rib_get_nxt(
                    rib,
                    ip,
                    depth,
                    node,
                    dpdk_sys::RTE_RIB_GET_NXT_ALL as i32,
                )
            };
            if node.is_null() {
                return out;
            }
            let (mut nip, mut nd, mut nh) = (0u32, 0u8, 0u64);
            // SAFETY: node is a valid node of the live RIB; the getters
            // write into locals.
            unsafe {
                dpdk_sys::rte_rib_get_ip(node, &mut nip);
                dpdk_sys::rte_rib_get_depth(node, &mut nd);
                dpdk_sys::rte_rib_get_nh(node, &mut nh);
            }
            out.push((nip, nd, nh));
        }
    }

    fn raw_add(&mut self, ip: u32, depth: u8, nh: u64) -> Result<(), DpdkError> {
        if depth > 24 && !self.contains(ip, depth) {
            // Count the tbl8 reservation (see the type's doc): first add with
            // a next hop no covering route has, then set the real one.
            self.raw_add_once(ip, depth, Self::MISS)?;
        }
        self.raw_add_once(ip, depth, nh)
    }

    fn raw_delete(&mut self, ip: u32, depth: u8) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib and we hold &mut self: no lookup runs.
        let rc = unsafe { dpdk_sys::rte_fib_delete(self.raw.as_ptr(), ip, depth) };
        error::check("rte_fib_delete", rc).map(|_| ())
    }
}

impl Drop for Fib4 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_fib_create and is freed once, here.
        unsafe { dpdk_sys::rte_fib_free(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Lpm4: rte_lpm.

/// IPv4 LPM over `rte_lpm`.
///
/// rte_lpm keeps its rules in one array sorted by prefix length and scans the
/// rules of the same length on every add, so adding is O(routes of that
/// length): fine for a few thousand routes, slow for a full table (see the
/// `tables` bench). It has no /0 rule; the default route lives here and fills
/// in misses.
pub struct Lpm4 {
    raw: NonNull<dpdk_sys::rte_lpm>,
    cfg: LpmConfig,
    /// The routes (masked prefix, length) other than /0. rte_lpm's own
    /// `is_rule_present` scans every rule of that length, which would double
    /// the O(n) cost of each add just to keep the count.
    routes: HashSet<(u32, u8)>,
    default_nh: Option<u32>,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Lpm4 {}
// SAFETY: as above.
unsafe impl Sync for Lpm4 {}

impl Lpm4 {
    /// What lookups return where no route matches.
    pub const MISS: u32 = u32::MAX;
    /// rte_lpm stores next hops in 24 bits.
    pub const MAX_NEXTHOP: u32 = (1 << 24) - 1;

    pub fn new(cfg: LpmConfig) -> Result<Lpm4, DpdkError> {
        cfg.check("rte_lpm_create")?;
        let name = unique_name("lpm4");
        let conf = dpdk_sys::rte_lpm_config {
            max_rules: cfg.max_routes,
            number_tbl8s: cfg.num_tbl8,
            flags: 0,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_lpm_create(name.as_ptr(), SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_lpm_create"))?;
        Ok(Lpm4 {
            raw,
            cfg,
            routes: HashSet::new(),
            default_nh: None,
        })
    }

    fn contains(&self, masked: u32, depth: u8) -> bool {
        if depth == 0 {
            return self.default_nh.is_some();
        }
        self.routes.contains(&(masked, depth))
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: u32, depth: u8, nh: u32) -> Result<(), DpdkError> {
        check_depth("rte_lpm_add", depth, 32)?;
        check_nh("rte_lpm_add", nh, Self::MAX_NEXTHOP)?;
        let ip = mask4(prefix, depth);
        if depth == 0 {
            self.default_nh = Some(nh);
        } else {
            // SAFETY: raw is a live lpm and we hold &mut self: no lookup runs.
            let rc = unsafe { dpdk_sys::rte_lpm_add(self.raw.as_ptr(), ip, depth, nh) };
            error::check("rte_lpm_add", rc)?;
            self.routes.insert((ip, depth));
        }
        Ok(())
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: u32, depth: u8) -> Result<bool, DpdkError> {
        check_depth("rte_lpm_delete", depth, 32)?;
        let ip = mask4(prefix, depth);
        if !self.contains(ip, depth) {
            return Ok(false);
        }
        if depth == 0 {
            self.default_nh = None;
        } else {
            // SAFETY: raw is a live lpm and we hold &mut self: no lookup runs.
            let rc = unsafe { dpdk_sys::rte_lpm_delete(self.raw.as_ptr(), ip, depth) };
            error::check("rte_lpm_delete", rc)?;
            self.routes.remove(&(ip, depth));
        }
        Ok(true)
    }

    /// Looks up every address of `ips` (host order) into `out`: the next hop,
    /// or [`Lpm4::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[u32], out: &mut [u32]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live lpm, only read; DPDK reads ips.len()
        // addresses and writes as many entries into out (long enough, checked
        // above).
        unsafe {
            dpdk_sys::shim_rte_lpm_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr(),
                out.as_mut_ptr(),
                ips.len() as u32,
            );
        }
        // Raw entries: 24-bit next hop, then the valid bit.
        let miss = self.default_nh.unwrap_or(Self::MISS);
        for e in out.iter_mut() {
            *e = if *e & dpdk_sys::RTE_LPM_LOOKUP_SUCCESS != 0 {
                *e & Self::MAX_NEXTHOP
            } else {
                miss
            };
        }
    }

    /// One lookup: `None` when no route matches.
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut out = [0u32; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0])
    }

    pub fn len(&self) -> usize {
        self.routes.len() + usize::from(self.default_nh.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes: tbl24 (2^24 × 4 B) + tbl8 groups (num_tbl8 × 256 ×
    /// 4 B) + the rule array (max_routes × 8 B), allocated at creation, plus
    /// the route set here (capacity × 9 B: 8-byte entry, 1 control byte).
    pub fn memory_bytes(&self) -> usize {
        TBL24_ENTRIES * 4
            + self.cfg.num_tbl8 as usize * TBL8_GROUP_ENTRIES * 4
            + self.cfg.max_routes as usize * 8
            + self.routes.capacity() * 9
    }
}

impl Drop for Lpm4 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_lpm_create and is freed once, here.
        unsafe { dpdk_sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Fib6: rte_fib6, trie, 4-byte next hops.

/// IPv6 FIB over `rte_fib6` (the 24-8-8-... trie, 4-byte next hops).
///
/// DPDK 22.11's trie rewrites a changed route's range the same way DIR-24-8
/// does (see [`Fib4`]) and has the same wrap at the top of the address
/// space: `::/0` added over `::/1` and `8000::/1` overwrote both halves. So
/// the same workaround applies: `::/0` is kept here and fills misses, and a
/// change to another prefix that ends at `ffff:...:ffff` first takes the
/// routes inside it out. (The trie's tbl8 count has no reservation bug: see
/// `fib6_same_nexthop_long_routes_keep_fitting`.)
pub struct Fib6 {
    raw: NonNull<dpdk_sys::rte_fib6>,
    cfg: LpmConfig,
    book: RibBook,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Fib6 {}
// SAFETY: as above.
unsafe impl Sync for Fib6 {}

impl Fib6 {
    /// The default next hop, returned where no route matches (largest value
    /// a 4-byte trie entry holds).
    pub const MISS: u64 = (1 << 31) - 1;
    pub const MAX_NEXTHOP: u32 = (1 << 31) - 2;

    pub fn new(cfg: LpmConfig) -> Result<Fib6, DpdkError> {
        cfg.check("rte_fib6_create")?;
        let name = unique_name("fib6");
        let mut conf = dpdk_sys::rte_fib6_conf {
            type_: dpdk_sys::RTE_FIB6_TRIE,
            default_nh: Self::MISS,
            max_routes: (cfg.max_routes * 2) as i32,
            rib_ext_sz: 0,
            ..Default::default()
        };
        conf.__bindgen_anon_1.trie = dpdk_sys::rte_fib6_conf__bindgen_ty_1__bindgen_ty_1 {
            nh_sz: dpdk_sys::RTE_FIB6_TRIE_4B,
            num_tbl8: cfg.num_tbl8,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_fib6_create(name.as_ptr(), SOCKET_ID_ANY, &mut conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_fib6_create"))?;
        Ok(Fib6 {
            raw,
            cfg,
            book: RibBook::default(),
        })
    }

    fn rib(&self) -> *mut dpdk_sys::rte_rib6 {
        // SAFETY: raw is a live fib6; its RIB lives as long as it does.
        let rib = unsafe { dpdk_sys::rte_fib6_get_rib(self.raw.as_ptr()) };
        debug_assert!(!rib.is_null());
        rib
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: [u8; 16], depth: u8, nh: u32) -> Result<(), DpdkError> {
        rib_add(self, prefix, depth, nh)
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: [u8; 16], depth: u8) -> Result<bool, DpdkError> {
        rib_delete(self, prefix, depth)
    }

    /// Looks up every address of `ips` into `out`: the next hop, or
    /// [`Fib6::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [u64]) {
        check_bulk(ips.len(), out.len());
        // SAFETY: raw is a live fib6, only read (the prototype's `ips` is not
        // const but is never written); DPDK reads ips.len() 16-byte addresses
        // and writes as many results into out (long enough, checked above).
        let rc = unsafe {
            dpdk_sys::rte_fib6_lookup_bulk(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut [u8; 16],
                out.as_mut_ptr(),
                ips.len() as i32,
            )
        };
        debug_assert_eq!(rc, 0);
        if let Some(d) = self.book.default_nh {
            for e in out[..ips.len()].iter_mut() {
                if *e == Self::MISS {
                    *e = u64::from(d);
                }
            }
        }
    }

    pub fn lookup(&self, ip: [u8; 16]) -> Option<u32> {
        let mut out = [0u64; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0] as u32)
    }

    pub fn len(&self) -> usize {
        self.book.routes
    }

    pub fn is_empty(&self) -> bool {
        self.book.routes == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes allocated at creation: tbl24 (2^24 × 4 B) + tbl8
    /// groups ((num_tbl8 + 1) × 256 × 4 B) + the tbl8 free list (num_tbl8 ×
    /// 4 B) + RIB nodes (2 × max_routes × 64 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = self.cfg.num_tbl8 as usize;
        TBL24_ENTRIES * 4
            + (tbl8s + 1) * TBL8_GROUP_ENTRIES * 4
            + tbl8s * 4
            + 2 * self.cfg.max_routes as usize * RIB_NODE_BYTES
    }
}

impl RibRoutes for Fib6 {
    type Ip = [u8; 16];
    const TOP: [u8; 16] = [0xff; 16];
    const MAX_DEPTH: u8 = 128;
    const MAX_NEXTHOP: u32 = Fib6::MAX_NEXTHOP;
    const ADD: &'static str = "rte_fib6_add";
    const DELETE: &'static str = "rte_fib6_delete";

    fn mask(ip: [u8; 16], depth: u8) -> [u8; 16] {
        mask6(ip, depth)
    }

    fn book(&self) -> &RibBook {
        &self.book
    }

    fn book_mut(&mut self) -> &mut RibBook {
        &mut self.book
    }

    fn max_routes(&self) -> usize {
        self.cfg.max_routes as usize
    }

    fn in_rib(&self, masked: [u8; 16], depth: u8) -> bool {
        // SAFETY: the RIB is live and only read; masked is 16 readable bytes.
        unsafe { !dpdk_sys::rte_rib6_lookup_exact(self.rib(), masked.as_ptr(), depth).is_null() }
    }

    /// The routes strictly inside `ip/depth`: `(prefix, depth, next hop)`.
    fn inner_routes(&self, ip: [u8; 16], depth: u8) -> Vec<([u8; 16], u8, u64)> {
        let rib = self.rib();
        let mut out = Vec::new();
        let mut node = std::ptr::null_mut();
        loop {
            // SAFETY: the RIB is live and not modified during the walk; node
            // is NULL or the node the previous call returned; ip is 16 bytes.
            node = unsafe {
                dpdk_sys::rte_rib6_get_nxt(
                    rib,
                    ip.as_ptr(),
                    depth,
                    node,
                    dpdk_sys::RTE_RIB6_GET_NXT_ALL as i32,
                )
            };
            if node.is_null() {
                return out;
            }
            let (mut nip, mut nd, mut nh) = ([0u8; 16], 0u8, 0u64);
            // SAFETY: node is a valid node of the live RIB; the getters
            // write into locals (nip has the 16 bytes get_ip writes).
            unsafe {
                dpdk_sys::rte_rib6_get_ip(node, nip.as_mut_ptr());
                dpdk_sys::rte_rib6_get_depth(node, &mut nd);
                dpdk_sys::rte_rib6_get_nh(node, &mut nh);
            }
            out.push((nip, nd, nh));
        }
    }

    fn raw_add(&mut self, ip: [u8; 16], depth: u8, nh: u64) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib6, we hold &mut self (no lookup runs); ip
        // is 16 readable bytes.
        let rc = unsafe { dpdk_sys::rte_fib6_add(self.raw.as_ptr(), ip.as_ptr(), depth, nh) };
        error::check("rte_fib6_add", rc).map(|_| ())
    }

    fn raw_delete(&mut self, ip: [u8; 16], depth: u8) -> Result<(), DpdkError> {
        // SAFETY: raw is a live fib6, we hold &mut self; ip is 16 bytes.
        let rc = unsafe { dpdk_sys::rte_fib6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
        error::check("rte_fib6_delete", rc).map(|_| ())
    }
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_fib6_create and is freed once, here.
        unsafe { dpdk_sys::rte_fib6_free(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Lpm6: rte_lpm6.

/// IPv6 LPM over `rte_lpm6`. Like [`Lpm4`] it has no /0 rule: the default
/// route lives here.
pub struct Lpm6 {
    raw: NonNull<dpdk_sys::rte_lpm6>,
    cfg: LpmConfig,
    routes: usize,
    default_nh: Option<u32>,
}

// SAFETY: as for Fib4: owned alone, lookups read only, writers need &mut.
unsafe impl Send for Lpm6 {}
// SAFETY: as above.
unsafe impl Sync for Lpm6 {}

impl Lpm6 {
    /// What lookups return where no route matches (rte_lpm6 writes -1).
    pub const MISS: u32 = u32::MAX;
    /// rte_lpm6 stores next hops in 21 bits (and does not check: larger
    /// values would be silently truncated, so they are refused here).
    pub const MAX_NEXTHOP: u32 = (1 << 21) - 1;

    pub fn new(cfg: LpmConfig) -> Result<Lpm6, DpdkError> {
        cfg.check("rte_lpm6_create")?;
        let name = unique_name("lpm6");
        let conf = dpdk_sys::rte_lpm6_config {
            max_rules: cfg.max_routes,
            number_tbl8s: cfg.num_tbl8,
            flags: 0,
        };
        // SAFETY: name and conf outlive the call; DPDK copies both. A NULL
        // result sets rte_errno.
        let p = unsafe { dpdk_sys::rte_lpm6_create(name.as_ptr(), SOCKET_ID_ANY, &conf) };
        let raw = NonNull::new(p).ok_or_else(|| error::last("rte_lpm6_create"))?;
        Ok(Lpm6 {
            raw,
            cfg,
            routes: 0,
            default_nh: None,
        })
    }

    fn contains(&self, masked: &[u8; 16], depth: u8) -> bool {
        if depth == 0 {
            return self.default_nh.is_some();
        }
        let mut nh = 0u32;
        // SAFETY: raw is a live lpm6, only read (the prototype is not const);
        // masked is 16 readable bytes; nh is a local.
        unsafe {
            dpdk_sys::rte_lpm6_is_rule_present(self.raw.as_ptr(), masked.as_ptr(), depth, &mut nh)
                == 1
        }
    }

    /// Adds `prefix/depth -> nh`, replacing the next hop of an existing route.
    pub fn add(&mut self, prefix: [u8; 16], depth: u8, nh: u32) -> Result<(), DpdkError> {
        check_depth("rte_lpm6_add", depth, 128)?;
        check_nh("rte_lpm6_add", nh, Self::MAX_NEXTHOP)?;
        let ip = mask6(prefix, depth);
        let new = !self.contains(&ip, depth);
        if depth == 0 {
            self.default_nh = Some(nh);
        } else {
            // SAFETY: raw is a live lpm6, we hold &mut self (no lookup runs);
            // ip is 16 readable bytes.
            let rc = unsafe { dpdk_sys::rte_lpm6_add(self.raw.as_ptr(), ip.as_ptr(), depth, nh) };
            error::check("rte_lpm6_add", rc)?;
        }
        self.routes += usize::from(new);
        Ok(())
    }

    /// Removes `prefix/depth`; `Ok(false)` when there was no such route.
    pub fn delete(&mut self, prefix: [u8; 16], depth: u8) -> Result<bool, DpdkError> {
        check_depth("rte_lpm6_delete", depth, 128)?;
        let ip = mask6(prefix, depth);
        if !self.contains(&ip, depth) {
            return Ok(false);
        }
        if depth == 0 {
            self.default_nh = None;
        } else {
            // SAFETY: raw is a live lpm6, we hold &mut self; ip is 16 bytes.
            let rc = unsafe { dpdk_sys::rte_lpm6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
            error::check("rte_lpm6_delete", rc)?;
        }
        self.routes -= 1;
        Ok(true)
    }

    /// Looks up every address of `ips` into `out`: the next hop, or
    /// [`Lpm6::MISS`].
    ///
    /// # Panics
    /// If `out` is shorter than `ips`.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[[u8; 16]], out: &mut [u32]) {
        check_bulk(ips.len(), out.len());
        let out = &mut out[..ips.len()];
        // SAFETY: raw is a live lpm6, only read (`ips` is never written
        // through, whatever the prototype says); DPDK reads ips.len()
        // addresses and writes as many i32 into out, which has room (checked
        // above) and the same size and alignment as i32.
        unsafe {
            dpdk_sys::rte_lpm6_lookup_bulk_func(
                self.raw.as_ptr(),
                ips.as_ptr() as *mut [u8; 16],
                out.as_mut_ptr() as *mut i32,
                ips.len() as u32,
            );
        }
        // A miss is -1, i.e. MISS; only the default route needs a pass.
        if let Some(d) = self.default_nh {
            for e in out.iter_mut() {
                if *e == Self::MISS {
                    *e = d;
                }
            }
        }
    }

    pub fn lookup(&self, ip: [u8; 16]) -> Option<u32> {
        let mut out = [0u32; 1];
        self.lookup_bulk(&[ip], &mut out);
        (out[0] != Self::MISS).then_some(out[0])
    }

    pub fn len(&self) -> usize {
        self.routes
    }

    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }

    pub fn config(&self) -> LpmConfig {
        self.cfg
    }

    /// Estimated bytes allocated at creation: tbl24 (2^24 × 4 B) + tbl8
    /// groups (num_tbl8 × 256 × 4 B) + tbl8 headers and free list (num_tbl8 ×
    /// 16 B) + the rule hash (max_routes × ~48 B).
    pub fn memory_bytes(&self) -> usize {
        let tbl8s = self.cfg.num_tbl8 as usize;
        TBL24_ENTRIES * 4
            + tbl8s * TBL8_GROUP_ENTRIES * 4
            + tbl8s * 16
            + self.cfg.max_routes as usize * LPM6_RULE_BYTES
    }
}

impl Drop for Lpm6 {
    fn drop(&mut self) {
        // SAFETY: raw came from rte_lpm6_create and is freed once, here.
        unsafe { dpdk_sys::rte_lpm6_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::route::{LinearRoutes, RouteAddr, RouteTable};
    use crate::tables::testing::test_lock;
    use proptest::prelude::*;

    /// A test-sized config: the 64 MiB first level is fixed, the rest small.
    const CFG: LpmConfig = LpmConfig::new(512, 2048);

    #[test]
    fn miss_sentinels_and_limits() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        let mut out = [0u64; 2];
        f.lookup_bulk(&[1, 2], &mut out);
        assert_eq!(out, [Fib4::MISS; 2]);
        f.add(0, 0, Fib4::MAX_NEXTHOP).unwrap();
        assert_eq!(f.lookup(5), Some(Fib4::MAX_NEXTHOP));
        assert!(f.add(0, 0, Fib4::MAX_NEXTHOP + 1).is_err());

        let mut l = Lpm4::new(CFG).unwrap();
        assert_eq!(l.lookup(1), None);
        l.add(0x0100_0000, 8, Lpm4::MAX_NEXTHOP).unwrap();
        assert_eq!(l.lookup(0x0102_0304), Some(Lpm4::MAX_NEXTHOP));
        assert!(l.add(0, 8, Lpm4::MAX_NEXTHOP + 1).is_err());
        drop((f, l));

        let mut f6 = Fib6::new(CFG).unwrap();
        let mut out = [0u64; 1];
        f6.lookup_bulk(&[[1; 16]], &mut out);
        assert_eq!(out, [Fib6::MISS]);
        assert!(f6.add([0; 16], 8, Fib6::MAX_NEXTHOP + 1).is_err());
        let mut l6 = Lpm6::new(CFG).unwrap();
        assert_eq!(l6.lookup([1; 16]), None);
        assert!(l6.add([1; 16], 8, Lpm6::MAX_NEXTHOP + 1).is_err());
        l6.add([1; 16], 8, Lpm6::MAX_NEXTHOP).unwrap();
        assert_eq!(l6.lookup([1; 16]), Some(Lpm6::MAX_NEXTHOP));
    }

    #[test]
    fn bad_depths_are_errors() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        assert!(f.add(0, 33, 1).is_err());
        assert!(f.delete(0, 33).is_err());
        let mut l = Lpm4::new(CFG).unwrap();
        assert!(l.add(0, 33, 1).is_err());
        assert!(l.delete(0, 255).is_err());
        drop((f, l));
        let mut f6 = Fib6::new(CFG).unwrap();
        assert!(f6.add([0; 16], 129, 1).is_err());
        let mut l6 = Lpm6::new(CFG).unwrap();
        assert!(l6.add([0; 16], 129, 1).is_err());
        assert!(l6.delete([0; 16], 129).is_err());
    }

    #[test]
    fn bad_configs_are_errors() {
        let _g = test_lock();
        for cfg in [
            LpmConfig::new(0, 16),
            LpmConfig::new(16, 0),
            LpmConfig::new(u32::MAX, 16),
        ] {
            assert!(Fib4::new(cfg).is_err());
            assert!(Lpm4::new(cfg).is_err());
            assert!(Fib6::new(cfg).is_err());
            assert!(Lpm6::new(cfg).is_err());
        }
    }

    #[test]
    #[should_panic(expected = "shorter")]
    fn short_output_panics() {
        let _g = test_lock();
        let f = Fib4::new(CFG).unwrap();
        f.lookup_bulk(&[1, 2], &mut [0u64; 1]);
    }

    #[test]
    fn memory_estimates() {
        let _g = test_lock();
        let f = Fib4::new(LpmConfig::new(1000, 100)).unwrap();
        // 64 MiB tbl24 + 129 tbl8 groups of 1 KiB + 2000 RIB nodes of 64 B.
        assert_eq!(f.memory_bytes(), (64 << 20) + 129 * 1024 + 2000 * 64);
        let l = Lpm4::new(LpmConfig::new(1000, 100)).unwrap();
        assert_eq!(l.memory_bytes(), (64 << 20) + 100 * 1024 + 1000 * 8);
    }

    /// DPDK 22.11 DIR-24-8 bugs the wrapper works around (see `Fib4`): a
    /// prefix ending at 255.255.255.255 whose inner routes reach the top,
    /// and `0/0` with a route inside 0.0.0.0/24.
    #[test]
    fn fib4_top_of_address_space() {
        let _g = test_lock();
        let mut f = Fib4::new(CFG).unwrap();
        f.add(0xffff_ff00, 25, 1).unwrap();
        f.add(0xffff_ff80, 25, 2).unwrap();
        f.add(0xffff_ff00, 24, 3).unwrap(); // fully covered by the /25s
        f.add(0x8000_0000, 1, 4).unwrap();
        f.add(0xffff_ffff, 32, 5).unwrap();
        f.add(0xf000_0000, 4, 6).unwrap();
        f.add(0, 25, 7).unwrap();
        f.add(0, 0, 8).unwrap();
        let probe = |f: &Fib4| {
            [
                0,
                0x80,
                0x0a00_0001,
                0x8000_0000,
                0xf000_0000,
                0xffff_fe01,
                0xffff_ff01,
                0xffff_ff81,
                0xffff_ffff,
            ]
            .map(|a| f.lookup(a))
        };
        assert_eq!(probe(&f), [7, 8, 8, 4, 6, 6, 1, 2, 5].map(Some));
        f.delete(0xf000_0000, 4).unwrap();
        f.delete(0, 0).unwrap();
        f.add(0x8000_0000, 1, 9).unwrap();
        assert_eq!(
            probe(&f),
            [
                Some(7),
                None,
                None,
                Some(9),
                Some(9),
                Some(9),
                Some(1),
                Some(2),
                Some(5)
            ]
        );
        assert_eq!(f.len(), 6);
    }

    /// DPDK 22.11 DIR-24-8 skips the tbl8 reservation of a long route whose
    /// covering route has the same next hop but releases it on delete; the
    /// wrapper keeps the count right, so long routes keep fitting.
    #[test]
    fn fib4_same_nexthop_long_routes_keep_fitting() {
        let _g = test_lock();
        let mut f = Fib4::new(LpmConfig::new(64, 1)).unwrap(); // 64 tbl8s
        f.add(0x0a00_0000, 8, 1).unwrap();
        for i in 0..200u32 {
            let p = 0x0a00_0000 | (i << 8);
            f.add(p, 25, 1).unwrap();
            assert!(f.delete(p, 25).unwrap());
        }
        for i in 0..32u32 {
            f.add(0x0b00_0000 | (i << 8), 30, 2).unwrap();
        }
        assert_eq!(f.lookup(0x0b00_1f01), Some(2));
    }

    /// The same churn on rte_fib6, whose trie keeps a similar tbl8 count.
    #[test]
    fn fib6_same_nexthop_long_routes_keep_fitting() {
        let _g = test_lock();
        // The /32 takes 1 tbl8 group, each /48 below 2 more: 81 of 128.
        let mut f = Fib6::new(LpmConfig::new(64, 128)).unwrap();
        let base = 0x2001_0db8u128 << 96;
        f.add(base.to_be_bytes(), 32, 1).unwrap();
        for i in 0..300u128 {
            let p = (base | (i << 64)).to_be_bytes();
            f.add(p, 64, 1).unwrap();
            assert!(f.delete(p, 64).unwrap());
        }
        // 40 routes in distinct /40s: each needs fresh tbl8 groups.
        for i in 0..40u128 {
            f.add((base | (i << 88)).to_be_bytes(), 48, 2).unwrap();
        }
        assert_eq!(f.lookup((base | (39 << 88) | 5).to_be_bytes()), Some(2));
    }

    /// DPDK 22.11's trie has DIR-24-8's top-of-address-space bug (found by
    /// `fib6_matches_linear` in CI): `::/0` added over `::/1` and `8000::/1`
    /// overwrote both halves with its own next hop.
    #[test]
    fn fib6_top_of_address_space() {
        let _g = test_lock();
        let mut f = Fib6::new(CFG).unwrap();
        let low = 0u128.to_be_bytes();
        let high = (1u128 << 127).to_be_bytes();
        f.add((0x07e0_1c66_0d5bu128 << 80).to_be_bytes(), 48, 488)
            .unwrap();
        f.add(high, 1, 0).unwrap();
        f.add(low, 1, 1).unwrap();
        f.add(low, 0, 3).unwrap();
        let probe = 0xfd00_0000_0000_716c_0000_0000_50d6_50dbu128.to_be_bytes();
        assert_eq!(f.lookup(probe), Some(0));
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(0));
        assert_eq!(f.lookup(low), Some(1));
        assert_eq!(
            f.lookup((0x07e0_1c66_0d5bu128 << 80 | 9).to_be_bytes()),
            Some(488)
        );
        // Changing and deleting top-ending prefixes keeps the others.
        f.add(u128::MAX.to_be_bytes(), 128, 7).unwrap();
        f.add(high, 1, 5).unwrap();
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(7));
        assert_eq!(f.lookup(probe), Some(5));
        assert!(f.delete(high, 1).unwrap());
        assert_eq!(f.lookup(probe), Some(3));
        assert_eq!(f.lookup(u128::MAX.to_be_bytes()), Some(7));
        assert!(f.delete(low, 0).unwrap());
        assert_eq!(f.lookup(probe), None);
        assert_eq!(f.lookup(low), Some(1));
    }

    // --- proptest: each backend against the linear scan --------------------

    /// Operations on a table: add (prefix, len, nh) or delete (prefix, len).
    #[derive(Debug, Clone)]
    enum Op<A> {
        Add(A, u8, u32),
        Delete(A, u8),
    }

    fn v4_addr() -> impl Strategy<Value = u32> + Clone {
        // A few shared leading bytes make prefixes overlap and nest.
        prop_oneof![
            any::<u32>(),
            (
                prop::sample::select(
                    &[
                        0x0a00_0000u32,
                        0x0a01_0000,
                        0xc0a8_0100,
                        0,
                        0xffff_ff00,
                        0xffff_fe00,
                        0x8000_0000
                    ][..]
                ),
                any::<u16>()
            )
                .prop_map(|(b, r)| b | u32::from(r & 0x3ff)),
        ]
    }

    fn v4_len() -> impl Strategy<Value = u8> + Clone {
        prop_oneof![Just(0u8), Just(32), Just(24), Just(25), 0u8..=32]
    }

    fn v6_addr() -> impl Strategy<Value = [u8; 16]> + Clone {
        prop_oneof![
            any::<u128>(),
            (
                prop::sample::select(
                    &[
                        0x2001_0db8u128 << 96,
                        (0x2001_0db8_0001u128) << 80,
                        0xfd00u128 << 112,
                        0,
                        u128::MAX << 32,
                        1 << 127
                    ][..]
                ),
                any::<u64>()
            )
                .prop_map(|(b, r)| b | u128::from(r & 0xffff_ffff) | (u128::from(r >> 48) << 64)),
        ]
        .prop_map(|v| v.to_be_bytes())
    }

    fn v6_len() -> impl Strategy<Value = u8> + Clone {
        prop_oneof![
            Just(0u8),
            Just(128),
            Just(24),
            Just(48),
            Just(64),
            0u8..=128
        ]
    }

    fn ops<A: std::fmt::Debug + Clone>(
        addr: impl Strategy<Value = A> + Clone,
        len: impl Strategy<Value = u8> + Clone,
    ) -> impl Strategy<Value = Vec<Op<A>>> {
        let op = prop_oneof![
            // Few distinct next hops: routes often share their parent's.
            6 => (addr.clone(), len.clone(), prop_oneof![0u32..4, 0u32..1000])
                .prop_map(|(a, l, n)| Op::Add(a, l, n)),
            1 => (addr, len).prop_map(|(a, l)| Op::Delete(a, l)),
        ];
        prop::collection::vec(op, 0..80)
    }

    /// Applies `ops` to `table` and the oracle, re-adding some routes (so
    /// duplicates overwrite) and deleting some that exist, then compares
    /// lookups of `probes` and of addresses inside every added prefix.
    fn check<T: RouteTable>(
        mut table: T,
        ops: &[Op<T::Addr>],
        probes: &[T::Addr],
        host_bits: impl Fn(T::Addr, u8, u64) -> T::Addr,
    ) -> Result<(), TestCaseError> {
        let mut oracle = LinearRoutes::<T::Addr>::new();
        let mut targets = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(a, l, nh) => {
                    table
                        .add(a, l, nh)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    oracle.add(a, l, nh).unwrap();
                    targets.push(a);
                    targets.push(host_bits(a, l, i as u64));
                    targets.push(host_bits(a, l, !(i as u64)));
                }
                Op::Delete(a, l) => {
                    // Half the deletes hit an existing route.
                    let (a, l) = match oracle.routes().get(i % (oracle.len() + 1)) {
                        Some(&(p, pl, _)) if i % 2 == 0 => (p, pl),
                        _ => (a, l),
                    };
                    let got = table
                        .delete(a, l)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(got, oracle.delete(a, l).unwrap(), "delete {:?}/{}", a, l);
                }
            }
            prop_assert_eq!(table.len(), oracle.len());
        }
        let addrs: Vec<T::Addr> = probes.iter().chain(&targets).copied().collect();
        let mut got = vec![0u32; addrs.len()];
        let mut want = vec![0u32; addrs.len()];
        table.lookup_bulk(&addrs, &mut got);
        oracle.lookup_bulk(&addrs, &mut want);
        for ((a, g), w) in addrs.iter().zip(&got).zip(&want) {
            prop_assert_eq!(g, w, "addr {:?}, routes {:?}", a, oracle.routes());
        }
        Ok(())
    }

    fn host4(a: u32, len: u8, r: u64) -> u32 {
        a.mask(len) | (r as u32 & u32::MAX.checked_shr(u32::from(len)).unwrap_or(0))
    }

    fn host6(a: [u8; 16], len: u8, r: u64) -> [u8; 16] {
        let r = u128::from(r) | (u128::from(r.rotate_left(17)) << 64);
        let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
        (u128::from_be_bytes(a.mask(len)) | (r & host)).to_be_bytes()
    }

    #[test]
    fn fib4_reader_finds_the_table() {
        let _g = test_lock();
        // A group count that is not a multiple of 64, as the daemon's are.
        let mut f = Fib4::new(LpmConfig::new(512, 1000)).unwrap();
        assert!(f.reader().is_some(), "DPDK 22.11's dir24_8 layout");
        let ip = 0xc633_6400; // 198.51.100.0
        f.add(ip, 24, 77).unwrap();
        f.add(ip + 128, 25, 78).unwrap();
        let r = f.reader().unwrap();
        assert_eq!(r.lookup(ip + 9), 77);
        assert_eq!(r.lookup(ip + 200), 78, "through tbl8");
        assert_eq!(r.lookup(ip + 256), Fib4::MISS);
        f.add(0, 0, 5).unwrap();
        assert_eq!(f.reader().unwrap().lookup(ip + 256), 5, "default route");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::tables::testing::proptest_cases(32)))]

        /// The direct reader answers exactly as rte_fib's bulk lookup, on
        /// random tables (default routes, tbl8 groups, deletions).
        #[test]
        fn fib4_reader_matches_rte_fib(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            let mut f = Fib4::new(CFG).unwrap();
            let mut targets = probes.clone();
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Add(a, l, nh) => {
                        f.add(a, l, nh).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        targets.extend([a, host4(a, l, i as u64), host4(a, l, !(i as u64))]);
                    }
                    Op::Delete(a, l) => {
                        f.delete(a, l).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    }
                }
            }
            let r = f.reader().unwrap();
            for c in targets.chunks(32) {
                let mut want = [0u64; 32];
                f.lookup_bulk(c, &mut want[..c.len()]);
                for (a, w) in c.iter().zip(&want) {
                    prop_assert_eq!(r.lookup(*a), *w, "address {:#x}", a);
                }
            }
        }

        #[test]
        fn fib4_matches_linear(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            check(Fib4::new(CFG).unwrap(), &ops, &probes, host4)?;
        }

        #[test]
        fn lpm4_matches_linear(ops in ops(v4_addr(), v4_len()), probes in prop::collection::vec(v4_addr(), 0..64)) {
            let _g = test_lock();
            check(Lpm4::new(CFG).unwrap(), &ops, &probes, host4)?;
        }

        #[test]
        fn fib6_matches_linear(ops in ops(v6_addr(), v6_len()), probes in prop::collection::vec(v6_addr(), 0..64)) {
            let _g = test_lock();
            check(Fib6::new(CFG).unwrap(), &ops, &probes, host6)?;
        }

        #[test]
        fn lpm6_matches_linear(ops in ops(v6_addr(), v6_len()), probes in prop::collection::vec(v6_addr(), 0..64)) {
            let _g = test_lock();
            check(Lpm6::new(CFG).unwrap(), &ops, &probes, host6)?;
        }
    }
}
