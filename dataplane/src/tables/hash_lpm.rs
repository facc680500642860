//! [`HashLpm`]: the `linear` route backend (`route.backend = "linear"`,
//! [`RouteBackend::Linear`](super::RouteBackend::Linear)), pure Rust, no EAL.
//!
//! One hash map per prefix length, from the masked prefix to its value; a
//! lookup probes the lengths that hold routes, longest first, and the first
//! hit is the longest match. It is linear in the number of distinct prefix
//! lengths (at most 33 or 129), not in the routes, and needs no DPDK memory,
//! so the pipeline's tests, the fuzzer and small tables can route without
//! starting EAL. It is not the daemon's default: rte_fib reads one or two
//! table entries per IPv4 lookup whatever the lengths.
//!
//! It answers exactly as the DPDK backends do: the same longest-prefix
//! match, the same errors for a bad length or next hop and for a full
//! table, [`MISS`] where nothing matches, and rte_fib's next-hop limit, so
//! that a raw lookup entry ([`RouteLookup::lookup_raw`](super::RouteLookup::lookup_raw))
//! keeps the encoding every backend shares (the value, or [`MISS`] at or
//! above [`RAW_MISS_FLOOR`](super::RAW_MISS_FLOOR)). The proptests below
//! check it against the linear-scan oracle [`LinearRoutes`](super::route::LinearRoutes).
use super::route::{RouteAddr, RouteTable, MISS};
use crate::dpdk::DpdkError;
use std::collections::HashMap;

/// Largest next hop a route may carry: rte_fib's (31-bit entries, one value
/// kept for its miss), so that a table that loads here loads in the default
/// backend too, and every value stays below a raw lookup's misses.
pub const MAX_NEXTHOP: u32 = (1 << 31) - 2;

/// Longest-prefix match over one hash map per prefix length (module doc).
#[derive(Debug, Clone)]
pub struct HashLpm<A: RouteAddr> {
    /// `maps[len]`: masked prefix of length `len` → value, for every length
    /// `0..=A::BITS`.
    maps: Vec<HashMap<A, u32>>,
    /// The lengths whose maps hold a route, longest first: what a lookup
    /// probes.
    lengths: Vec<u8>,
    routes: usize,
    max_routes: usize,
}

impl<A: RouteAddr> HashLpm<A> {
    /// An empty table for up to `max_routes` routes (1..=2^30, as the DPDK
    /// tables take).
    pub fn new(max_routes: u32) -> Result<HashLpm<A>, DpdkError> {
        if max_routes == 0 || max_routes > i32::MAX as u32 / 2 {
            return Err(DpdkError::Invalid(format!(
                "linear route table: max_routes {max_routes} out of range 1..={}",
                i32::MAX / 2
            )));
        }
        Ok(HashLpm {
            maps: (0..=A::BITS).map(|_| HashMap::new()).collect(),
            lengths: Vec::new(),
            routes: 0,
            max_routes: max_routes as usize,
        })
    }

    fn check_len(call: &str, len: u8) -> Result<(), DpdkError> {
        if len > A::BITS {
            return Err(DpdkError::Invalid(format!(
                "{call}: prefix length {len} > {}",
                A::BITS
            )));
        }
        Ok(())
    }

    /// The longest match for `a`: its value, or [`MISS`].
    #[inline]
    pub fn lookup_one(&self, a: A) -> u32 {
        for &len in &self.lengths {
            if let Some(&v) = self.maps[usize::from(len)].get(&a.mask(len)) {
                return v;
            }
        }
        MISS
    }
}

impl<A: RouteAddr> RouteTable for HashLpm<A> {
    type Addr = A;

    fn add(&mut self, prefix: A, len: u8, nh: u32) -> Result<(), DpdkError> {
        Self::check_len("linear route add", len)?;
        if nh > MAX_NEXTHOP {
            return Err(DpdkError::Invalid(format!(
                "linear route add: next hop {nh} > {MAX_NEXTHOP}"
            )));
        }
        let map = &mut self.maps[usize::from(len)];
        let p = prefix.mask(len);
        if let Some(v) = map.get_mut(&p) {
            *v = nh;
            return Ok(());
        }
        if self.routes >= self.max_routes {
            // What the DPDK tables report: ENOSPC.
            return Err(DpdkError::Call {
                call: "linear route add",
                errno: libc::ENOSPC,
                msg: format!("table full ({} routes)", self.max_routes),
            });
        }
        map.insert(p, nh);
        self.routes += 1;
        if map.len() == 1 {
            let at = self.lengths.partition_point(|&l| l > len);
            self.lengths.insert(at, len);
        }
        Ok(())
    }

    fn delete(&mut self, prefix: A, len: u8) -> Result<bool, DpdkError> {
        Self::check_len("linear route delete", len)?;
        let map = &mut self.maps[usize::from(len)];
        if map.remove(&prefix.mask(len)).is_none() {
            return Ok(false);
        }
        self.routes -= 1;
        if map.is_empty() {
            self.lengths.retain(|&l| l != len);
        }
        Ok(true)
    }

    #[inline]
    fn lookup_bulk(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "lookup_bulk: output too short");
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self.lookup_one(a);
        }
    }

    fn len(&self) -> usize {
        self.routes
    }

    /// The maps' allocations: per slot the key, the value and hashbrown's
    /// control byte.
    fn memory_bytes(&self) -> usize {
        let slot = std::mem::size_of::<A>() + std::mem::size_of::<u32>() + 1;
        std::mem::size_of::<Self>()
            + self.maps.len() * std::mem::size_of::<HashMap<A, u32>>()
            + self.maps.iter().map(|m| m.capacity() * slot).sum::<usize>()
    }

    fn max_nexthop(&self) -> u32 {
        MAX_NEXTHOP
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::route::LinearRoutes;
    use crate::tables::testing::proptest_cases;
    use proptest::prelude::*;

    #[test]
    fn longest_match_replace_delete_and_miss() {
        let mut t = HashLpm::<u32>::new(8).unwrap();
        assert!(t.is_empty());
        t.add(0x0a00_0000, 8, 1).unwrap();
        t.add(0x0a01_ffff, 16, 2).unwrap(); // host bits ignored
        t.add(0x0a01_0203, 32, 3).unwrap();
        assert_eq!(t.lookup(0x0a01_0203), Some(3));
        assert_eq!(t.lookup(0x0a01_0204), Some(2));
        assert_eq!(t.lookup(0x0a02_0000), Some(1));
        assert_eq!(t.lookup(0x0b00_0000), None);
        t.add(0x0a01_0000, 16, 4).unwrap(); // replaces
        assert_eq!((t.len(), t.lookup(0x0a01_0204)), (3, Some(4)));
        t.add(0, 0, 9).unwrap();
        assert_eq!(t.lookup(0x0b00_0000), Some(9));
        assert!(t.delete(0x0a01_0000, 16).unwrap());
        assert!(!t.delete(0x0a01_0000, 16).unwrap());
        assert_eq!(t.lookup(0x0a01_0204), Some(1));
        assert!(t.delete(0, 0).unwrap());
        assert_eq!(t.lookup(0x0b00_0000), None);
        assert_eq!(t.lengths, [32, 8]);
    }

    #[test]
    fn bad_inputs_and_a_full_table_are_errors() {
        assert!(HashLpm::<u32>::new(0).is_err());
        let mut t = HashLpm::<u32>::new(2).unwrap();
        assert!(t.add(0, 33, 1).is_err());
        assert!(t.delete(0, 33).is_err());
        assert!(t.add(0, 8, MISS).is_err());
        assert!(t.add(0, 8, MAX_NEXTHOP + 1).is_err());
        t.add(0, 8, MAX_NEXTHOP).unwrap();
        t.add(1 << 24, 8, 1).unwrap();
        let e = t.add(2 << 24, 8, 1).unwrap_err();
        assert!(
            matches!(e, DpdkError::Call { errno, .. } if errno == libc::ENOSPC),
            "{e}"
        );
        t.add(0, 8, 5).unwrap(); // replacing still works when full
        assert_eq!(t.len(), 2);
        let mut t6 = HashLpm::<[u8; 16]>::new(2).unwrap();
        assert!(t6.add([0; 16], 129, 1).is_err());
        assert_eq!(t6.lookup([0; 16]), None);
    }

    /// Operations on a table: add `(prefix, len, nh)` or delete `(prefix, len)`.
    #[derive(Debug, Clone)]
    enum Op<A> {
        Add(A, u8, u32),
        Delete(A, u8),
    }

    fn ops<A: std::fmt::Debug + Clone>(
        addr: impl Strategy<Value = A> + Clone,
        len: impl Strategy<Value = u8> + Clone,
    ) -> impl Strategy<Value = Vec<Op<A>>> {
        let op = prop_oneof![
            6 => (addr.clone(), len.clone(), prop_oneof![0u32..4, 0..=MAX_NEXTHOP])
                .prop_map(|(a, l, n)| Op::Add(a, l, n)),
            1 => (addr, len).prop_map(|(a, l)| Op::Delete(a, l)),
        ];
        prop::collection::vec(op, 0..120)
    }

    fn v4_addr() -> impl Strategy<Value = u32> + Clone {
        // Shared leading bytes make prefixes nest.
        prop_oneof![
            any::<u32>(),
            (
                prop::sample::select(&[0x0a00_0000u32, 0xc0a8_0100, 0, 0xffff_ff00][..]),
                any::<u16>()
            )
                .prop_map(|(b, r)| b | u32::from(r & 0x3ff)),
        ]
    }

    fn v6_addr() -> impl Strategy<Value = [u8; 16]> + Clone {
        prop_oneof![
            any::<u128>(),
            (
                prop::sample::select(&[0x2001_0db8u128 << 96, 0, u128::MAX << 32][..]),
                any::<u64>()
            )
                .prop_map(|(b, r)| b | u128::from(r & 0xffff_ffff) | (u128::from(r >> 48) << 64)),
        ]
        .prop_map(|v| v.to_be_bytes())
    }

    /// Applies `ops` to a [`HashLpm`] and the linear-scan oracle (half the
    /// deletes aimed at a route that exists) and compares every result,
    /// then lookups of `probes` and of addresses inside every added prefix.
    fn check<A: RouteAddr>(
        ops: &[Op<A>],
        probes: &[A],
        inside: impl Fn(A, u8, u64) -> A,
    ) -> Result<(), TestCaseError> {
        let mut t = HashLpm::<A>::new(1 << 20).unwrap();
        let mut oracle = LinearRoutes::<A>::new();
        let mut targets = probes.to_vec();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(a, l, nh) => {
                    prop_assert_eq!(t.add(a, l, nh).is_ok(), oracle.add(a, l, nh).is_ok());
                    targets.extend([a, inside(a, l, i as u64), inside(a, l, !(i as u64))]);
                }
                Op::Delete(a, l) => {
                    let (a, l) = match oracle.routes().get(i % (oracle.len() + 1)) {
                        Some(&(p, pl, _)) if i % 2 == 0 => (p, pl),
                        _ => (a, l),
                    };
                    prop_assert_eq!(t.delete(a, l).unwrap(), oracle.delete(a, l).unwrap());
                }
            }
            prop_assert_eq!(t.len(), oracle.len());
        }
        let mut got = vec![0u32; targets.len()];
        let mut want = vec![0u32; targets.len()];
        t.lookup_bulk(&targets, &mut got);
        oracle.lookup_bulk(&targets, &mut want);
        for ((a, g), w) in targets.iter().zip(&got).zip(&want) {
            prop_assert_eq!(g, w, "addr {:?}, routes {:?}", a, oracle.routes());
        }
        Ok(())
    }

    fn inside4(a: u32, len: u8, r: u64) -> u32 {
        a.mask(len) | (r as u32 & u32::MAX.checked_shr(u32::from(len)).unwrap_or(0))
    }

    fn inside6(a: [u8; 16], len: u8, r: u64) -> [u8; 16] {
        let r = u128::from(r) | (u128::from(r.rotate_left(17)) << 64);
        let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
        (u128::from_be_bytes(a.mask(len)) | (r & host)).to_be_bytes()
    }

    proptest! {
        // No EAL and no 64 MiB first level: many more cases than the DPDK
        // tables' proptests can afford.
        #![proptest_config(ProptestConfig::with_cases(proptest_cases(256)))]

        #[test]
        fn hash_lpm4_matches_linear(
            ops in ops(v4_addr(), prop_oneof![Just(0u8), Just(32), Just(24), 0u8..=32]),
            probes in prop::collection::vec(v4_addr(), 0..64),
        ) {
            check(&ops, &probes, inside4)?;
        }

        #[test]
        fn hash_lpm6_matches_linear(
            ops in ops(v6_addr(), prop_oneof![Just(0u8), Just(128), Just(64), 0u8..=128]),
            probes in prop::collection::vec(v6_addr(), 0..64),
        ) {
            check(&ops, &probes, inside6)?;
        }
    }
}
