//! Table snapshots: everything a worker's stages read, as one immutable
//! [`TableSet`] published through one atomic pointer ([`Published`]).
//!
//! The control thread builds a new set off the hot path (a reload), stores
//! it, then bumps the generation. Each worker compares the generation once
//! per poll iteration (one relaxed load), and when it moved: flushes what it
//! decided under the old set, rebinds its stages to the new set at that
//! burst boundary, and acknowledges the generation. The control thread keeps
//! its own reference to the retired set until every worker has acknowledged
//! a newer one, so the retired set's last reference — and the DPDK frees of
//! its rte_fib/rte_acl tables — always drops on the control thread, never on
//! a worker. (rte_fib in DPDK 22.11 has no RCU integration: a table cannot
//! change under readers, so whole tables are swapped.)
//!
//! Learned state — neighbours and their MACs — does not live here: the
//! [`NeighborTable`](super::neighbor::NeighborTable) outlives every set and
//! each set's routing refers to the same one.
use super::acl::AclTable;
use super::lb::LbTables;
use super::routing::Routing;
use crate::stats::Counter;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One worker's ACL counters for one ACL (written by the worker, read by
/// the control thread). A new ACL starts new counters; an unchanged ACL
/// keeps its table and counters across reloads.
#[derive(Debug)]
pub struct AclCounters {
    /// Hits per rule index; the last slot counts default-action packets.
    pub rules: Box<[Counter]>,
    /// Packets the flow cache answered.
    pub cache_hits: Counter,
    /// Packets the flow cache did not answer (classified by rte_acl).
    pub cache_misses: Counter,
}

impl AclCounters {
    /// Zeroed counters for `rules` rules (plus the default's slot).
    pub fn new(rules: usize) -> Self {
        AclCounters {
            rules: (0..rules + 1).map(|_| Counter::default()).collect(),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
        }
    }
}

/// The ACL as the stages read it.
#[derive(Clone)]
pub struct AclSnapshot {
    pub table: Arc<AclTable>,
    /// Entries of each worker's flow cache (0 = none).
    pub flow_cache: usize,
    /// Counters, one per worker (index = worker).
    pub counters: Vec<Arc<AclCounters>>,
}

impl AclSnapshot {
    /// A snapshot of `table` with fresh counters for `workers` workers.
    pub fn new(table: Arc<AclTable>, flow_cache: usize, workers: usize) -> Self {
        let rules = table.rules().len();
        AclSnapshot {
            table,
            flow_cache,
            counters: (0..workers.max(1))
                .map(|_| Arc::new(AclCounters::new(rules)))
                .collect(),
        }
    }

    /// Worker `w`'s counters (the last worker's if out of range, so a test
    /// pipeline with no worker index still counts somewhere).
    pub fn counters_for(&self, w: usize) -> Arc<AclCounters> {
        self.counters[w.min(self.counters.len() - 1)].clone()
    }

    /// Hits per rule, summed over workers.
    pub fn hits(&self) -> Vec<u64> {
        let n = self.counters.first().map_or(0, |c| c.rules.len());
        (0..n)
            .map(|i| self.counters.iter().map(|c| c.rules[i].get()).sum())
            .collect()
    }
}

/// What the parse stage must extract for the tables of a set: L4 ports
/// (ECMP hashing, ACL port rules) and the flow hash (ECMP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseNeeds {
    pub l4: bool,
    pub hash: bool,
}

/// Everything the workers' stages read, immutable once published.
pub struct TableSet {
    /// 0 for the set built at start, then one more per accepted reload.
    pub generation: u64,
    pub parse: ParseNeeds,
    pub routing: Option<Arc<Routing>>,
    /// ICMP errors per second per worker.
    pub icmp_rate: u32,
    pub acl: Option<AclSnapshot>,
    /// The load balancer's services.
    pub lb: Option<Arc<LbTables>>,
}

impl TableSet {
    /// An empty set (a pipeline without tables: `forward`).
    pub fn empty() -> Self {
        TableSet {
            generation: 0,
            parse: ParseNeeds::default(),
            routing: None,
            icmp_rate: 0,
            acl: None,
            lb: None,
        }
    }
}

/// The current set and its generation, shared by the control thread (one
/// writer) and the workers (readers).
pub struct Published {
    generation: AtomicU64,
    set: ArcSwap<TableSet>,
}

impl Published {
    pub fn new(set: Arc<TableSet>) -> Self {
        Published {
            generation: AtomicU64::new(set.generation),
            set: ArcSwap::new(set),
        }
    }

    /// The generation last published: a worker's per-iteration check.
    #[inline(always)]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current set (a reference count taken: per reload, not per burst).
    pub fn load(&self) -> Arc<TableSet> {
        self.set.load_full()
    }

    /// Publishes `set` and returns the one it replaces. The caller keeps the
    /// returned set until every worker acknowledged `set.generation`.
    pub fn publish(&self, set: Arc<TableSet>) -> Arc<TableSet> {
        let g = set.generation;
        let old = self.set.swap(set);
        // After the set: a worker that sees the new generation loads the
        // new set (or a newer one).
        self.generation.store(g, Ordering::Release);
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_returns_the_retired_set_and_moves_the_generation() {
        let p = Published::new(Arc::new(TableSet::empty()));
        assert_eq!(p.generation(), 0);
        let next = Arc::new(TableSet {
            generation: 1,
            icmp_rate: 7,
            ..TableSet::empty()
        });
        let old = p.publish(next.clone());
        assert_eq!(old.generation, 0);
        assert_eq!(p.generation(), 1);
        assert_eq!(p.load().icmp_rate, 7);
        // The publisher, the caller and the reader hold it; the retired set
        // only the caller.
        assert_eq!(Arc::strong_count(&old), 1);
    }

    #[test]
    fn acl_counters_are_per_worker_and_summed() {
        let _e = crate::tables::testing::test_lock();
        let t = AclTable::build(Vec::new(), crate::tables::AclAction::Allow).unwrap();
        let s = AclSnapshot::new(Arc::new(t), 0, 2);
        s.counters_for(0).rules[0].add(2);
        s.counters_for(1).rules[0].add(3);
        s.counters_for(9).rules[0].add(1);
        assert_eq!(s.hits(), vec![6]);
    }
}
