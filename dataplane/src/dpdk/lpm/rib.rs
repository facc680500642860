//! The top-of-address-space workaround shared by [`Fib4`](super::Fib4) and [`Fib6`](super::Fib6):
//! DPDK 22.11's DIR-24-8 and trie mishandle prefixes that end at the top
//! address (see [`Fib4`](super::Fib4)'s doc), so `/0` stays here and a change to any other
//! top-ending prefix is made with the routes inside it taken out.
use super::{check_depth, check_nh};
use crate::dpdk::error::{self, DpdkError};

/// What a table keeps beside DPDK: its route count, and the default route
/// (which never reaches DPDK: see [`Fib4`](super::Fib4)'s doc).
#[derive(Debug, Default)]
pub(super) struct RibBook {
    pub(super) routes: usize,
    pub(super) default_nh: Option<u32>,
}

/// What the shared add/delete ([`rib_add`], [`rib_delete`]) need of a
/// RIB-backed table (`Fib4`, `Fib6`).
pub(super) trait RibRoutes {
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
pub(super) fn rib_add<T: RibRoutes>(
    t: &mut T,
    prefix: T::Ip,
    depth: u8,
    nh: u32,
) -> Result<(), DpdkError> {
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
pub(super) fn rib_delete<T: RibRoutes>(
    t: &mut T,
    prefix: T::Ip,
    depth: u8,
) -> Result<bool, DpdkError> {
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
/// removed), then puts them back (shallowest first); see [`Fib4`](super::Fib4)'s doc.
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
