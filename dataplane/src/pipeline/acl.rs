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
use super::tx::FastTx;
use super::{
    DropReason, FlowKeyV4, Lane, MetaBurst, PacketBuf, StageCounters, StageCtx, StageOps,
    StageSpec, TablesReport, Verdict, L3,
};
use crate::burst::Burst;
use crate::burst::{mask_below, SlotMask, BURST_SIZE};
use crate::stats::Counter;
use crate::tables::flow_cache::Probe;
use crate::tables::set::AclSnapshot;
use crate::tables::set::TableSet;
use crate::tables::{AclAction, AclTable, FlowCache};
use arc_swap::ArcSwap;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::tables::set::AclCounters;

impl StageOps for AclStage {
    const SPEC: StageSpec = StageSpec {
        name: "acl",
        section: Some("acl"),
        forwards: false,
        needs_later_forwarder: true,
        needs_headers: true,
        headerless: false,
        restart: crate::pipeline::RestartKeys::None,
    };

    fn build(b: &super::StageBuild) -> Self {
        let acl = b.tables.acl.as_ref().expect("ACL built for an acl stage");
        AclStage::from_snapshot(acl, b.worker)
    }

    /// Plain packets are classified by their lane keys, the others from
    /// `Meta`: same verdicts, counters and cache contents either way.
    #[inline(always)]
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        _ctx: &StageCtx,
        _tx: &mut F,
    ) {
        debug_assert!(
            lane.early || lane.plain == 0,
            "lane keys need an early lane"
        );
        let denied = self.process_keyed(pkts.len(), meta, lane.plain, &lane.keys);
        lane.take_decided(denied, meta);
    }

    fn rebind(&mut self, set: &TableSet, worker: usize) {
        if let Some(a) = &set.acl {
            self.rebind_acl(a, worker);
        }
    }

    fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        Some(self.report.clone())
    }

    fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        Some(&AclTablesReport)
    }
}

/// A worker's ACL counters as the report reads them: those of the ACL the
/// worker runs on, swapped at its rebind (a new ACL starts new counters),
/// so one reader serves across reloads. Hits per rule (the default last)
/// and the flow cache's hits and misses.
struct AclReport(ArcSwap<AclCounters>);

impl StageCounters for AclReport {
    fn report(&self) -> serde_json::Value {
        let c = self.0.load();
        serde_json::json!({
            "rule_hits": c.rules.iter().map(Counter::get).collect::<Vec<_>>(),
            "flow_cache": {
                "hits": c.cache_hits.get(),
                "misses": c.cache_misses.get(),
            },
        })
    }
}

/// The ACL's part of the report that is not per worker: the flow cache's
/// size, and the rule count in `tables`.
struct AclTablesReport;

impl TablesReport for AclTablesReport {
    fn report(&self, set: &TableSet) -> Option<serde_json::Value> {
        let a = set.acl.as_ref()?;
        Some(serde_json::json!({
            "flow_cache": { "entries_per_worker": a.flow_cache },
        }))
    }

    fn sizes(&self, set: &TableSet, out: &mut BTreeMap<String, u64>) {
        if let Some(a) = &set.acl {
            out.insert("acl_rules".into(), a.table.rules().len() as u64);
        }
    }
}

pub struct AclStage {
    table: Arc<AclTable>,
    /// Whether each rule denies, then the default: one load per packet.
    deny: Box<[bool]>,
    cache: Option<FlowCache>,
    counters: Arc<AclCounters>,
    /// `counters` for the report, kept across rebinds.
    report: Arc<AclReport>,
}

impl AclStage {
    /// A worker's instance over the shared table, with its own counters and,
    /// when `cache_entries > 0`, its own flow cache of that many entries.
    pub fn new(table: Arc<AclTable>, cache_entries: usize) -> Self {
        Self::from_snapshot(&AclSnapshot::new(table, cache_entries, 1), 0)
    }

    /// Worker `worker`'s instance over a published ACL.
    pub fn from_snapshot(snap: &AclSnapshot, worker: usize) -> Self {
        let counters = snap.counters_for(worker);
        AclStage {
            deny: deny_flags(&snap.table),
            table: snap.table.clone(),
            cache: (snap.flow_cache > 0).then(|| FlowCache::new(snap.flow_cache)),
            report: Arc::new(AclReport(ArcSwap::new(counters.clone()))),
            counters,
        }
    }

    /// Takes a newly published ACL (at a burst boundary). A new table gets
    /// new counters and an empty flow cache: no cached verdict outlives its
    /// rules. The same table (a reload that left the ACL alone) keeps both.
    pub fn rebind_acl(&mut self, snap: &AclSnapshot, worker: usize) {
        if Arc::ptr_eq(&self.table, &snap.table) {
            return;
        }
        // Reuse the cache's memory when its size stays (no allocation).
        let cache = match self.cache.take() {
            _ if snap.flow_cache == 0 => None,
            Some(mut c) if c.made_for(snap.flow_cache) => {
                c.clear();
                Some(c)
            }
            _ => Some(FlowCache::new(snap.flow_cache)),
        };
        let counters = snap.counters_for(worker);
        self.report.0.store(counters.clone());
        self.deny = deny_flags(&snap.table);
        self.table = snap.table.clone();
        self.cache = cache;
        self.counters = counters;
    }

    /// This worker's counters.
    pub fn acl_counters(&self) -> Arc<AclCounters> {
        self.counters.clone()
    }

    /// What a classification result `rule` (a rule index, or NONE =
    /// u32::MAX for the default) means here: its counter slot, with
    /// [`DENIES`] set when its action denies. This is what the flow cache
    /// holds, so that a hit needs no second load to know its action.
    #[inline(always)]
    fn outcome(&self, rule: u32) -> u32 {
        let slot = (rule as usize).min(self.deny.len() - 1);
        debug_assert!(slot < DENIES as usize);
        slot as u32 | if self.deny[slot] { DENIES } else { 0 }
    }

    /// Counts an [`AclStage::outcome`] (into `run`) and applies its action:
    /// whether it denied (as a bit, 0 or 1).
    #[inline(always)]
    fn apply(&self, outcome: u32, verdict: &mut Verdict, run: &mut HitRun) -> u32 {
        run.count((outcome & !DENIES) as usize, &self.counters.rules);
        let deny = outcome >> DENIES.trailing_zeros();
        if deny != 0 {
            *verdict = Verdict::Drop(DropReason::AclDeny);
        }
        deny
    }

    /// Classifies the first `len` packets of the burst.
    #[inline]
    pub fn process(&mut self, len: usize, meta: &mut MetaBurst, _ctx: &StageCtx) {
        self.process_keyed(len, meta, 0, &NO_V4_KEYS);
    }

    /// [`AclStage::process`] for the lane: the packets whose bit is set in
    /// `v4` are plain IPv4 whose key is `v4_keys[slot]` (undecided, their
    /// `Meta` unwritten); the others are classified from their `Meta` as
    /// in `process`. Same verdicts, counters and cache contents as
    /// `process` over fully parsed metadata (test `tests/lane.rs`). Returns
    /// the plain packets it denied (their verdict written into `Meta`, to
    /// be taken off the lane).
    #[inline]
    pub fn process_keyed(
        &mut self,
        len: usize,
        meta: &mut MetaBurst,
        v4: SlotMask,
        v4_keys: &[FlowKeyV4; BURST_SIZE],
    ) -> SlotMask {
        let plain = |i: usize| v4 & (1 << i) != 0;
        if len > 0 && v4 == mask_below(len) {
            if let Some(denied) = self.process_all_plain(len, meta, v4_keys) {
                return denied;
            }
        }
        // The packets to classify: positions, families and cache hashes.
        let mut c = Candidates::new();
        // With a cache, in three sweeps so that memory loads overlap: pick
        // the packets, hash them and start loading each bucket; match tags
        // and start loading each key; compare keys.
        for (i, m) in meta[..len].iter().enumerate() {
            let v6 = if plain(i) {
                false
            } else if m.verdict == Verdict::Continue && matches!(m.l3, L3::Ipv4 | L3::Ipv6) {
                m.l3 == L3::Ipv6
            } else {
                continue;
            };
            let mut hash = 0;
            if let Some(cache) = &self.cache {
                hash = if plain(i) {
                    FlowCache::hash_v4(v4_keys[i])
                } else {
                    FlowCache::hash(&m.key, v6)
                };
                cache.prefetch(hash, v6);
            }
            c.push(i, v6, hash);
        }
        if c.n == 0 {
            return 0;
        }
        let mut run = HitRun::default();
        let mut denied: SlotMask = 0;
        if let Some(cache) = &self.cache {
            let n = c.n;
            let mut probe = [Probe::default(); BURST_SIZE];
            for (j, p) in probe[..n].iter_mut().enumerate() {
                *p = cache.probe(c.hash[j], c.v6[j]);
            }
            // What misses is compacted to the front of the candidates.
            c.n = 0;
            for (j, &p) in probe[..n].iter().enumerate() {
                let i = c.idx[j] as usize;
                let m = &mut meta[i];
                let hit = if plain(i) {
                    cache.resolve(p, &v4_keys[i])
                } else {
                    cache.resolve(p, &m.key)
                };
                match hit {
                    Some(outcome) => {
                        denied |= SlotMask::from(self.apply(outcome, &mut m.verdict, &mut run)) << i
                    }
                    None => c.keep(j),
                }
            }
            self.counters.cache_hits.add((n - c.n) as u64);
            self.counters.cache_misses.add(c.n as u64);
        }
        denied |= self.classify_misses(&c, meta, v4, v4_keys, &mut run);
        run.flush(&self.counters.rules);
        denied & v4
    }

    /// `process_keyed` for the common case of a burst of nothing but plain
    /// IPv4 packets, with a cache: the same steps without picking packets
    /// (slot = candidate) or telling families apart; the packets it denied.
    /// `None`, having done nothing, when there is no cache.
    #[inline(always)]
    fn process_all_plain(
        &mut self,
        len: usize,
        meta: &mut MetaBurst,
        v4_keys: &[FlowKeyV4; BURST_SIZE],
    ) -> Option<SlotMask> {
        let cache = self.cache.as_ref()?;
        let mut hash = [0u32; BURST_SIZE];
        for (h, &k) in hash[..len].iter_mut().zip(v4_keys) {
            *h = FlowCache::hash_v4(k);
            cache.prefetch(*h, false);
        }
        let mut c = Candidates::new();
        let mut run = HitRun::default();
        let mut denied: SlotMask = 0;
        // An IPv4 probe only names the bucket (it reads nothing), so it is
        // made where it is resolved: no array of probes between the two.
        for i in 0..len {
            match cache.resolve(cache.probe(hash[i], false), &v4_keys[i]) {
                Some(outcome) => {
                    let deny = self.apply(outcome, &mut meta[i].verdict, &mut run);
                    denied |= SlotMask::from(deny) << i;
                }
                None => c.push(i, false, hash[i]),
            }
        }
        self.counters.cache_hits.add((len - c.n) as u64);
        self.counters.cache_misses.add(c.n as u64);
        denied |= self.classify_misses(&c, meta, SlotMask::MAX, v4_keys, &mut run);
        run.flush(&self.counters.rules);
        Some(denied)
    }

    /// Classifies the candidates with rte_acl (one call for both families),
    /// caches and applies the answers; the slots it denied.
    #[inline(always)]
    fn classify_misses(
        &mut self,
        c: &Candidates,
        meta: &mut MetaBurst,
        v4: SlotMask,
        v4_keys: &[FlowKeyV4; BURST_SIZE],
        run: &mut HitRun,
    ) -> SlotMask {
        let misses = c.n;
        if misses == 0 {
            return 0;
        }
        // rte_acl classifies from the metadata: plain packets that missed
        // get their key written there (the rest of their `Meta` stays unset;
        // the fused pass does not read it).
        for &i in &c.idx[..misses] {
            let i = usize::from(i);
            if v4 & (1 << i) != 0 {
                meta[i].key = v4_keys[i].to_flow_key();
            }
        }
        let mut res = [0u32; BURST_SIZE];
        let keys: [_; BURST_SIZE] =
            std::array::from_fn(|j| &meta[c.idx[j.min(misses - 1)] as usize].key);
        self.table
            .classify_bulk(&keys[..misses], &c.v6[..misses], &mut res[..misses]);
        let mut denied: SlotMask = 0;
        for (j, &rule) in res[..misses].iter().enumerate() {
            let i = usize::from(c.idx[j]);
            let m = &mut meta[i];
            let outcome = self.outcome(rule);
            if let Some(cache) = &mut self.cache {
                cache.insert(c.hash[j], &m.key, c.v6[j], outcome);
            }
            denied |= SlotMask::from(self.apply(outcome, &mut m.verdict, run)) << i;
        }
        denied
    }
}

/// [`AclStage::outcome`]'s flag for a denying rule (above any slot: rule
/// counts are far below 2^31).
const DENIES: u32 = 1 << 31;

/// Whether each rule denies, then the default.
fn deny_flags(table: &AclTable) -> Box<[bool]> {
    table
        .rules()
        .iter()
        .map(|r| r.action)
        .chain([table.default_action()])
        .map(|a| a == AclAction::Deny)
        .collect()
}

/// Packets to classify: positions in the burst, families and cache hashes.
struct Candidates {
    idx: [u8; BURST_SIZE],
    v6: [bool; BURST_SIZE],
    hash: [u32; BURST_SIZE],
    n: usize,
}

impl Candidates {
    #[inline(always)]
    fn new() -> Self {
        Candidates {
            idx: [0; BURST_SIZE],
            v6: [false; BURST_SIZE],
            hash: [0; BURST_SIZE],
            n: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, slot: usize, v6: bool, hash: u32) {
        let n = self.n;
        self.idx[n] = slot as u8;
        self.v6[n] = v6;
        self.hash[n] = hash;
        self.n += 1;
    }

    /// Moves candidate `j` (at or after the end) to the end of the list.
    #[inline(always)]
    fn keep(&mut self, j: usize) {
        self.push(usize::from(self.idx[j]), self.v6[j], self.hash[j]);
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
