//! `acl`: the firewall stage. Classifies every IPv4/IPv6 packet of the burst
//! (first matching rule wins, else the default action) and drops denied
//! packets as `acl_deny`. ARP and packets already decided pass untouched.
//! Each rule has a per-worker hit counter.
//!
//! A per-worker exact-match [`FlowCache`] answers for flows seen recently;
//! only the packets it misses go to rte_acl, in one call per family, and
//! their answers are cached. The cache is optional (`acl.flow_cache = 0`
//! turns it off) and never changes a verdict, only its cost.
//!
//! Meta: reads `verdict`, `l3`, `key`; sets `verdict = Drop(acl_deny)`.
use super::{DropReason, FlowKeyV4, MetaBurst, StageCtx, Verdict, L3};
use crate::burst::BURST_SIZE;
use crate::stats::Counter;
use crate::tables::flow_cache::Probe;
use crate::tables::{AclAction, AclTable, FlowCache};
use std::sync::Arc;

/// One worker's ACL counters (written by the worker, read by the control
/// thread).
#[derive(Debug)]
pub struct AclCounters {
    /// Hits per rule index; the last slot counts default-action packets.
    pub rules: Box<[Counter]>,
    /// Packets the flow cache answered.
    pub cache_hits: Counter,
    /// Packets the flow cache did not answer (classified by rte_acl).
    pub cache_misses: Counter,
}

pub struct AclStage {
    table: Arc<AclTable>,
    /// Whether each rule denies, then the default: one load per packet.
    deny: Box<[bool]>,
    cache: Option<FlowCache>,
    counters: Arc<AclCounters>,
}

impl AclStage {
    /// A worker's instance over the shared table, with its own counters and,
    /// when `cache_entries > 0`, its own flow cache of that many entries.
    pub fn new(table: Arc<AclTable>, cache_entries: usize) -> Self {
        let n = table.rules().len() + 1;
        let counters = Arc::new(AclCounters {
            rules: (0..n).map(|_| Counter::default()).collect(),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
        });
        let cache = (cache_entries > 0).then(|| FlowCache::new(cache_entries));
        let deny = table
            .rules()
            .iter()
            .map(|r| r.action)
            .chain([table.default_action()])
            .map(|a| a == AclAction::Deny)
            .collect();
        AclStage {
            table,
            deny,
            cache,
            counters,
        }
    }

    /// This worker's counters (read by the control thread).
    pub fn counters(&self) -> Arc<AclCounters> {
        self.counters.clone()
    }

    /// Counts a classification result (into `run`) and applies its action.
    #[inline(always)]
    fn apply(&self, rule: u32, verdict: &mut Verdict, run: &mut HitRun) {
        // A rule index, or NONE (u32::MAX): the default's slot.
        let slot = (rule as usize).min(self.deny.len() - 1);
        run.count(slot, &self.counters.rules);
        if self.deny[slot] {
            *verdict = Verdict::Drop(DropReason::AclDeny);
        }
    }

    /// Classifies the first `len` packets of the burst.
    #[inline]
    pub fn process(&mut self, len: usize, meta: &mut MetaBurst, _ctx: &StageCtx) {
        self.process_keyed(len, meta, 0, &NO_V4_KEYS);
    }

    /// [`AclStage::process`] for the fused pass: the packets whose bit is set
    /// in `v4` are plain IPv4 whose key is `v4_keys[slot]` (their `Meta`
    /// holds only `verdict`); the others are classified from their `Meta`
    /// as in `process`. Same verdicts, counters and cache contents as
    /// `process` over fully parsed metadata (test `tests/fused_route.rs`).
    #[inline]
    pub fn process_keyed(
        &mut self,
        len: usize,
        meta: &mut MetaBurst,
        v4: u32,
        v4_keys: &[FlowKeyV4; BURST_SIZE],
    ) {
        let plain = |i: usize| v4 & (1 << i) != 0;
        // The packets to classify: positions, families and cache hashes.
        let mut idx = [0u8; BURST_SIZE];
        let mut v6 = [false; BURST_SIZE];
        let mut hash = [0u32; BURST_SIZE];
        let mut n = 0;
        // With a cache, in three sweeps so that memory loads overlap: pick
        // the packets, hash them and start loading each bucket; match tags
        // and start loading each key; compare keys.
        for (i, m) in meta[..len].iter().enumerate() {
            if plain(i) {
                idx[n] = i as u8;
                if let Some(cache) = &self.cache {
                    hash[n] = FlowCache::hash_v4(v4_keys[i]);
                    cache.prefetch(hash[n]);
                }
                n += 1;
            } else if m.verdict == Verdict::Continue && matches!(m.l3, L3::Ipv4 | L3::Ipv6) {
                idx[n] = i as u8;
                v6[n] = m.l3 == L3::Ipv6;
                if let Some(cache) = &self.cache {
                    hash[n] = FlowCache::hash(&m.key, v6[n]);
                    cache.prefetch(hash[n]);
                }
                n += 1;
            }
        }
        if n == 0 {
            return;
        }
        // What misses is compacted to the front of idx/v6/hash.
        let mut misses = n;
        let mut run = HitRun::default();
        if let Some(cache) = &self.cache {
            let mut probe = [Probe::default(); BURST_SIZE];
            for j in 0..n {
                probe[j] = cache.probe(hash[j], v6[j]);
            }
            misses = 0;
            for j in 0..n {
                let i = idx[j] as usize;
                let m = &mut meta[i];
                let hit = if plain(i) {
                    cache.resolve(probe[j], &v4_keys[i])
                } else {
                    cache.resolve(probe[j], &m.key)
                };
                match hit {
                    Some(rule) => self.apply(rule, &mut m.verdict, &mut run),
                    None => {
                        idx[misses] = idx[j];
                        v6[misses] = v6[j];
                        hash[misses] = hash[j];
                        misses += 1;
                    }
                }
            }
            self.counters.cache_hits.add((n - misses) as u64);
            self.counters.cache_misses.add(misses as u64);
        }
        if misses > 0 {
            // rte_acl classifies from the metadata: plain packets that
            // missed get their key written there (the rest of their `Meta`
            // stays unset; the fused pass does not read it).
            for &i in &idx[..misses] {
                let i = usize::from(i);
                if plain(i) {
                    meta[i].key = v4_keys[i].to_flow_key();
                }
            }
            let mut res = [0u32; BURST_SIZE];
            let keys: [_; BURST_SIZE] =
                std::array::from_fn(|j| &meta[idx[j.min(misses - 1)] as usize].key);
            self.table
                .classify_bulk(&keys[..misses], &v6[..misses], &mut res[..misses]);
            for j in 0..misses {
                let m = &mut meta[idx[j] as usize];
                if let Some(cache) = &mut self.cache {
                    cache.insert(hash[j], &m.key, v6[j], res[j]);
                }
                self.apply(res[j], &mut m.verdict, &mut run);
            }
        }
        run.flush(&self.counters.rules);
    }
}

/// `process_keyed`'s keys when no packet is plain (never read).
static NO_V4_KEYS: [FlowKeyV4; BURST_SIZE] = [FlowKeyV4 { head: 0, addrs: 0 }; BURST_SIZE];

/// Consecutive hits of one rule, added to its counter in one go: a burst of
/// one flow (or one rule) costs one counter update, not one per packet.
#[derive(Default)]
struct HitRun {
    slot: usize,
    n: u64,
}

impl HitRun {
    #[inline(always)]
    fn count(&mut self, slot: usize, counters: &[Counter]) {
        if slot != self.slot {
            self.flush(counters);
            self.slot = slot;
        }
        self.n += 1;
    }

    #[inline(always)]
    fn flush(&mut self, counters: &[Counter]) {
        if self.n != 0 {
            counters[self.slot].add(self.n);
            self.n = 0;
        }
    }
}
