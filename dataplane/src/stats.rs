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

/// A packet the router sends that it did not receive as such: the buffer
/// of a received packet that was counted as a drop, rewritten into a
/// message of the router's own and sent (so it is counted in `tx` too).
/// Counting these makes the books balance exactly:
/// `rx + originated = tx + dropped + consumed`. Replies written over a
/// request that is *not* counted as a drop (echo reply, ARP reply,
/// neighbour advertisement) are neither originated nor dropped: one packet
/// in, one out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Originated {
    /// ARP request for an unresolved IPv4 next hop, written over the packet
    /// dropped as `neighbor_unresolved`.
    ArpRequest = 0,
    /// Neighbour solicitation for an unresolved IPv6 next hop, written over
    /// the packet dropped as `neighbor_unresolved`.
    NdSolicit,
    /// ICMP / ICMPv6 time exceeded, written over the packet dropped as
    /// `ttl_exceeded`.
    IcmpError,
    /// ICMP fragmentation needed (DF set) / ICMPv6 packet too big, written
    /// over the packet dropped as `too_big`.
    IcmpTooBig,
}

impl Originated {
    pub const COUNT: usize = Originated::IcmpTooBig as usize + 1;
    pub const ALL: [Originated; Originated::COUNT] = [
        Originated::ArpRequest,
        Originated::NdSolicit,
        Originated::IcmpError,
        Originated::IcmpTooBig,
    ];

    /// The counter's name.
    pub fn name(self) -> &'static str {
        match self {
            Originated::ArpRequest => "arp_request",
            Originated::NdSolicit => "nd_solicit",
            Originated::IcmpError => "icmp_error",
            Originated::IcmpTooBig => "icmp_too_big",
        }
    }
}

/// One worker's counters.
#[derive(Debug, Default)]
pub struct WorkerCounters {
    /// Packets received from RX queues (where they entered the daemon).
    pub rx: Counter,
    /// Ring mode: packets taken from the distributor's rings (counted as
    /// `rx` once, by the distributor, where they entered).
    pub ring_rx: Counter,
    pub tx: Counter,
    pub drops: [Counter; DropReason::COUNT],
    pub events: [Counter; Event::COUNT],
    /// Packets the router originated, by kind (see [`Originated`]).
    pub originated: [Counter; Originated::COUNT],
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

/// The distributor's counters (ring mode), written only by its lcore.
#[derive(Debug)]
pub struct DistributorCounters {
    /// `rx` (every port), `drops` (`ring_full`), `bursts`, `empty_polls`,
    /// `busy_cycles`, `total_cycles`; the other fields stay 0. Summed with
    /// the workers' for the totals, so `rx` counts each packet once, where
    /// it entered.
    pub base: WorkerCounters,
    /// Packets received per port it polls, in the plan's port order.
    pub port_rx: Box<[Counter]>,
    /// Packets handed to each fed worker, in the plan's worker order.
    pub enqueued: Box<[Counter]>,
    /// Packets dropped because that worker's ring was full.
    pub ring_full: Box<[Counter]>,
}

/// Padded like [`WorkerStats`].
pub type DistributorStats = CachePadded<DistributorCounters>;

impl DistributorCounters {
    pub fn new(ports: usize, workers: usize) -> DistributorCounters {
        let counters = |n: usize| (0..n).map(|_| Counter::default()).collect();
        DistributorCounters {
            base: WorkerCounters::default(),
            port_rx: counters(ports),
            enqueued: counters(workers),
            ring_full: counters(workers),
        }
    }
}

/// The distributor in the report: what it received per port and handed
/// to each worker. Its books: `rx = Σ feeds.enqueued + dropped`, and each
/// feed's `enqueued` is its worker's `ring_rx` once the workers have
/// drained their rings (at exit).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DistributorReport {
    pub core: u32,
    pub ring_size: u32,
    /// `five_tuple` or `three_tuple`.
    pub hash: String,
    pub rx: u64,
    /// Packets received per port name.
    pub rx_ports: BTreeMap<String, u64>,
    pub dropped: u64,
    /// Non-zero drop counters by reason (`ring_full`).
    pub drops: BTreeMap<String, u64>,
    pub feeds: Vec<FeedReport>,
    pub empty_polls: u64,
    pub busy_cycles: u64,
    pub total_cycles: u64,
    pub bursts: u64,
}

/// One fed worker, as the distributor saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FeedReport {
    /// Worker index (`workers[i]` in the report).
    pub worker: usize,
    pub enqueued: u64,
    pub ring_full: u64,
}

impl WorkerCounters {
    #[inline(always)]
    pub fn count_drop(&self, reason: DropReason, n: u64) {
        self.drops[reason as usize].add(n);
    }

    #[inline(always)]
    pub fn count_event(&self, e: Event) {
        self.events[e as usize].add(1);
    }

    /// A dropped packet's buffer is going out as a message of the router's
    /// own (`kind`): counted once here, and again in `tx` when sent.
    #[inline(always)]
    pub fn count_originated(&self, kind: Originated) {
        self.originated[kind as usize].add(1);
    }

    pub fn snapshot(&self) -> WorkerSnapshot {
        WorkerSnapshot {
            rx: self.rx.get(),
            ring_rx: self.ring_rx.get(),
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
            originated: Originated::ALL
                .iter()
                .map(|o| (o.name().to_owned(), self.originated[*o as usize].get()))
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
    /// From RX queues.
    pub rx: u64,
    /// From the distributor's rings (ring mode); a worker's books are
    /// `rx + ring_rx + originated = tx + dropped + consumed`.
    pub ring_rx: u64,
    pub tx: u64,
    /// Non-zero drop counters by reason name.
    pub drops: BTreeMap<String, u64>,
    /// Non-zero slow-path event counters by name.
    pub events: BTreeMap<String, u64>,
    /// Non-zero originated-packet counters by kind ([`Originated`]).
    pub originated: BTreeMap<String, u64>,
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

    /// Packets the router originated (every kind).
    pub fn originated_total(&self) -> u64 {
        self.originated.values().sum()
    }

    /// Packets the router used up (ARP replies, neighbour advertisements
    /// it learned from): freed, neither sent nor dropped.
    pub fn consumed(&self) -> u64 {
        self.events
            .get(Event::Consumed.name())
            .copied()
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PortReport {
    pub name: String,
    pub device: String,
    pub driver: String,
    pub mac: String,
    /// RX offloads enabled, by DPDK's names (`IPV4_CKSUM`, `RSS_HASH`).
    pub rx_offloads: Vec<String>,
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
    /// Packets received per RX queue, as the driver counts them (0 where
    /// it keeps no per-queue counts): with several workers, each queue's
    /// count is what its worker received.
    pub rx_queue_packets: Vec<u64>,
    /// `net_af_packet` ports only (the PMD reports no receive drops): the
    /// kernel interface, and its counters since the port was configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_iface: Option<String>,
    /// Frames the interface received (`statistics/rx_packets`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_rx_packets: Option<u64>,
    /// Frames the interface dropped before any socket saw them
    /// (`statistics/rx_dropped` + `rx_missed_errors`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_rx_dropped: Option<u64>,
    /// Frames the PMD's sockets dropped because their RX ring was full
    /// (`PACKET_STATISTICS` `tp_drops`): the receive drops `imissed` would
    /// count on a NIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_ring_dropped: Option<u64>,
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
    /// Packets the router sent in the buffer of a packet it dropped, by
    /// kind (non-zero only); see [`Originated`].
    pub originated: BTreeMap<String, u64>,
    /// Sum of `originated`.
    pub originated_total: u64,
    /// Packets the router used up (= `events.consumed`).
    pub consumed: u64,
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
    /// Ring mode only: the receiving core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributor: Option<DistributorReport>,
    pub mempool: MempoolReport,
    pub hugepages: bool,
}

/// Sums the per-worker reports of one stage: numbers add, arrays add
/// element by element, objects key by key; anything else is kept from the
/// first.
pub fn sum_reports(parts: &[serde_json::Value]) -> serde_json::Value {
    use serde_json::Value;
    fn add(a: &mut Value, b: &Value) {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                if let (Some(p), Some(q)) = (x.as_u64(), y.as_u64()) {
                    *x = (p + q).into();
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for (u, v) in x.iter_mut().zip(y) {
                    add(u, v);
                }
            }
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in y {
                    match x.get_mut(k) {
                        Some(u) => add(u, v),
                        None => {
                            x.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut it = parts.iter();
    let Some(first) = it.next() else {
        return Value::Null;
    };
    let mut sum = first.clone();
    for p in it {
        add(&mut sum, p);
    }
    sum
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

/// Packets by where they came from and went, summed over workers (and the
/// distributor's counters, in ring mode: its `rx` and `ring_full`): what
/// the accounting identity `rx + originated = tx + dropped + consumed`
/// relates. Exact once the workers have stopped (while they run, packets
/// in their TX buffers, and in ring mode in the rings, are in neither `tx`
/// nor a drop yet). `ring_rx` is a hand-over between cores, not an
/// arrival: it is not in `rx`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Balance {
    pub rx: u64,
    pub tx: u64,
    pub dropped: u64,
    pub originated: u64,
    pub consumed: u64,
}

impl Balance {
    pub fn of(workers: &[WorkerSnapshot]) -> Balance {
        let mut b = Balance::default();
        for w in workers {
            b.rx += w.rx;
            b.tx += w.tx;
            b.dropped += w.dropped();
            b.originated += w.originated_total();
            b.consumed += w.consumed();
        }
        b
    }

    /// Whether every packet is accounted for.
    pub fn holds(&self) -> bool {
        self.rx + self.originated == self.tx + self.dropped + self.consumed
    }
}

/// Sums the originated-packet counters of all workers, by kind.
pub fn originated_totals(workers: &[WorkerSnapshot]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for w in workers {
        for (k, v) in &w.originated {
            *m.entry(k.clone()).or_insert(0) += v;
        }
    }
    m
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that received 5 packets, forwarded 2, dropped 3 of which
    /// one became an ARP request and one a time exceeded (both sent), and
    /// consumed none: 5 + 2 = 4 + 3. Without the originated count the
    /// books are 2 short.
    #[test]
    fn originated_packets_balance_the_books() {
        let c = WorkerCounters::default();
        c.rx.add(5);
        c.tx.add(4);
        c.count_drop(DropReason::NoRoute, 1);
        c.count_drop(DropReason::NeighborUnresolved, 1);
        c.count_originated(Originated::ArpRequest);
        c.count_drop(DropReason::TtlExceeded, 1);
        c.count_originated(Originated::IcmpError);
        let s = c.snapshot();
        assert_eq!(
            s.originated,
            BTreeMap::from([("arp_request".into(), 1), ("icmp_error".into(), 1)])
        );
        let b = Balance::of(&[s.clone(), s]);
        assert_eq!(
            (b.rx, b.tx, b.dropped, b.originated, b.consumed),
            (10, 8, 6, 4, 0)
        );
        assert!(b.holds());
        assert!(!Balance { originated: 0, ..b }.holds());
    }

    /// A consumed packet (an ARP reply learned from) leaves by neither door.
    #[test]
    fn consumed_packets_are_counted_from_the_event() {
        let c = WorkerCounters::default();
        c.rx.add(1);
        c.count_event(Event::Consumed);
        let b = Balance::of(&[c.snapshot()]);
        assert_eq!(b.consumed, 1);
        assert!(b.holds());
    }
}
