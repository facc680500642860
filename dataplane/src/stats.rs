//! Counters: per-worker, each on its own cache lines, written only by its
//! worker (plain load + store, no atomic read-modify-write) and read by the
//! control thread; plus the snapshots and reports built from them.
use crate::pipeline::{DropReason, Event, MAX_STAGES};
use crossbeam_utils::CachePadded;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// A counter with a single writer. `add` is a relaxed load and store: cheap,
/// and correct because no other thread writes it.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline(always)]
    pub fn add(&self, n: u64) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(n), Ordering::Relaxed);
    }
    #[inline(always)]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    /// A store that publishes the writer's earlier writes to a reader that
    /// sees it through [`Counter::get_acquire`] (a worker's acknowledgement:
    /// its references to the retired tables are gone before it).
    pub fn set_release(&self, v: u64) {
        self.0.store(v, Ordering::Release);
    }
    pub fn get_acquire(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// One worker's counters.
#[derive(Debug, Default)]
pub struct WorkerCounters {
    pub rx: Counter,
    pub tx: Counter,
    pub drops: [Counter; DropReason::COUNT],
    pub events: [Counter; Event::COUNT],
    /// TSC cycles spent in each pipeline stage (profiling only), and in the
    /// dispatch pass + TX (last slot).
    pub stage_cycles: [Counter; MAX_STAGES + 1],
    /// Loop iterations in which no queue had a packet.
    pub empty_polls: Counter,
    /// TSC cycles spent in iterations that had packets.
    pub busy_cycles: Counter,
    /// TSC cycles since the worker started.
    pub total_cycles: Counter,
    pub bursts: Counter,
    /// The table generation this worker runs on (its acknowledgement of a
    /// reload).
    pub generation: Counter,
}

/// Cache-line padded so workers never share a line.
pub type WorkerStats = CachePadded<WorkerCounters>;

impl WorkerCounters {
    #[inline(always)]
    pub fn count_drop(&self, reason: DropReason, n: u64) {
        self.drops[reason as usize].add(n);
    }

    #[inline(always)]
    pub fn count_event(&self, e: Event) {
        self.events[e as usize].add(1);
    }

    pub fn snapshot(&self) -> WorkerSnapshot {
        WorkerSnapshot {
            rx: self.rx.get(),
            tx: self.tx.get(),
            drops: DropReason::ALL
                .iter()
                .map(|r| (r.name().to_owned(), self.drops[*r as usize].get()))
                .filter(|(_, v)| *v != 0)
                .collect(),
            events: Event::ALL
                .iter()
                .map(|e| (e.name().to_owned(), self.events[*e as usize].get()))
                .filter(|(_, v)| *v != 0)
                .collect(),
            stage_cycles: self.stage_cycles.iter().map(Counter::get).collect(),
            empty_polls: self.empty_polls.get(),
            busy_cycles: self.busy_cycles.get(),
            total_cycles: self.total_cycles.get(),
            bursts: self.bursts.get(),
            generation: self.generation.get(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct WorkerSnapshot {
    pub rx: u64,
    pub tx: u64,
    /// Non-zero drop counters by reason name.
    pub drops: BTreeMap<String, u64>,
    /// Non-zero slow-path event counters by name.
    pub events: BTreeMap<String, u64>,
    /// Per-stage TSC cycles (profiling), dispatch last.
    pub stage_cycles: Vec<u64>,
    pub empty_polls: u64,
    pub busy_cycles: u64,
    pub total_cycles: u64,
    pub bursts: u64,
    pub generation: u64,
}

impl WorkerSnapshot {
    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PortReport {
    pub name: String,
    pub device: String,
    pub driver: String,
    pub mac: String,
    /// TX offloads enabled, by DPDK's names (`IPV4_CKSUM`, `MBUF_FAST_FREE`).
    pub tx_offloads: Vec<String>,
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkerReport {
    pub core: u32,
    #[serde(flatten)]
    pub counters: WorkerSnapshot,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MempoolReport {
    pub size: u32,
    /// Mbufs not returned to the pool: must be 0 at exit.
    pub in_use: u32,
}

/// Table reloads (SIGHUP, `dataplane reload`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReloadReport {
    /// The table generation in force (0: the set built at start).
    pub generation: u64,
    /// Reloads accepted (a reload that changed nothing included).
    pub reloads: u64,
    /// Reloads refused (invalid config, a field only a restart applies, a
    /// table that could not be built); the running tables stayed.
    pub refusals: u64,
}

/// What the daemon prints (and writes as JSON) when it stops.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FinalReport {
    pub duration_s: f64,
    pub rx: u64,
    pub tx: u64,
    pub dropped: u64,
    pub drops: BTreeMap<String, u64>,
    pub events: BTreeMap<String, u64>,
    pub rx_mpps: f64,
    /// Each stage's own counters, summed over workers, by stage name
    /// (`acl`: `rule_hits` in rule order, the default last, and
    /// `flow_cache`; `count`: `tx_packets`/`tx_bytes` by port, `dropped`,
    /// `undecided`).
    pub stages: BTreeMap<String, serde_json::Value>,
    /// Table sizes and memory.
    pub tables: BTreeMap<String, u64>,
    pub reloads: ReloadReport,
    /// With `daemon.profile_stages`: TSC cycles per received packet spent in
    /// each stage (and in `dispatch`, TX included), summed over workers.
    pub cycles_per_packet: BTreeMap<String, f64>,
    pub ports: Vec<PortReport>,
    pub workers: Vec<WorkerReport>,
    pub mempool: MempoolReport,
    pub hugepages: bool,
}

/// Sums worker snapshots into totals.
pub fn totals(workers: &[WorkerSnapshot]) -> (u64, u64, BTreeMap<String, u64>) {
    let mut drops = BTreeMap::new();
    let (mut rx, mut tx) = (0, 0);
    for w in workers {
        rx += w.rx;
        tx += w.tx;
        for (k, v) in &w.drops {
            *drops.entry(k.clone()).or_insert(0) += v;
        }
    }
    (rx, tx, drops)
}

/// Sums the event counters of all workers.
pub fn event_totals(workers: &[WorkerSnapshot]) -> BTreeMap<String, u64> {
    let mut ev = BTreeMap::new();
    for w in workers {
        for (k, v) in &w.events {
            *ev.entry(k.clone()).or_insert(0) += v;
        }
    }
    ev
}
