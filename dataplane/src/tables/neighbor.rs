//! The neighbour cache (ARP for IPv4, NDP for IPv6): (port, IP) → MAC.
//!
//! Backed by `rte_hash` with lock-free readers: workers look up in bulk on
//! the data path and learn from ARP/NDP packets (rare; rte_hash serialises
//! writers). A value is either a resolved MAC or the TSC time of the last
//! solicitation sent for an unresolved address, which rate-limits requests.
use crate::dpdk::hash::Hash;
use crate::dpdk::DpdkError;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Learned state: lives as long as the daemon, across table reloads.
pub struct NeighborTable {
    map: Hash<20>,
    /// Neighbours that could not be stored (cache full): slow path only.
    learn_failures: AtomicU64,
}

impl NeighborTable {
    pub fn new(capacity: u32) -> Result<Self, DpdkError> {
        Ok(NeighborTable {
            map: Hash::new(capacity)?,
            learn_failures: AtomicU64::new(0),
        })
    }

    /// Records a resolved neighbour (static config or learned); false, and
    /// counted, when the cache is full.
    pub fn learn(&self, k: &NeighborKey, mac: [u8; 6]) -> bool {
        let ok = self.map.insert(k, RESOLVED | mac_to_u64(mac)).is_ok();
        if !ok {
            self.learn_failures.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// Neighbours not learned because the cache was full.
    pub fn learn_failures(&self) -> u64 {
        self.learn_failures.load(Ordering::Relaxed)
    }

    /// Notes that a solicitation went out at `tsc` (only if not resolved).
    pub fn mark_pending(&self, k: &NeighborKey, tsc: u64) -> bool {
        self.map.insert(k, tsc & !RESOLVED).is_ok()
    }

    pub fn get(&self, k: &NeighborKey) -> NeighborState {
        decode(self.map.get(k))
    }

    /// Bulk lookup of up to 64 keys.
    pub fn lookup_bulk(&self, keys: &[&NeighborKey], out: &mut [NeighborState]) {
        let mut raw = [None; crate::dpdk::hash::LOOKUP_BULK_MAX];
        let n = keys.len().min(raw.len());
        self.map.lookup_bulk(&keys[..n], &mut raw[..n]);
        for (o, r) in out.iter_mut().zip(&raw[..n]) {
            *o = decode(*r);
        }
    }

    /// Resolved entries as (port, ip, mac), for stats and dumps.
    pub fn resolved(&self) -> Vec<(u16, IpAddr, [u8; 6])> {
        self.map
            .entries()
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
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn memory_bytes(&self) -> usize {
        self.map.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learn_pending_lookup() {
        let _l = crate::tables::testing::test_lock();
        let t = NeighborTable::new(64).unwrap();
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
