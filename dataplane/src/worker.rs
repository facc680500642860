//! A poll-mode worker: one per configured core, pinned by EAL, owning its RX
//! queues, one TX queue on every port, its pipeline instance and its counters.
//!
//! Loop: for each RX queue, pull a burst of up to `BURST_SIZE`, run the
//! pipeline, dispatch. Packets wait in per-port TX buffers until a buffer
//! fills or the drain timer (TSC) expires. No locks, allocation, syscalls
//! or logging here; the shared writes it reads are the relaxed stop flag
//! and the published table generation (one load per iteration). When the generation moved, the
//! worker sends what it decided under the old tables, rebinds its pipeline
//! to the new set at that burst boundary and acknowledges the generation in
//! its counters (see [`crate::tables::set`]).
//!
//! In ring mode a worker's input is the distributor's rings instead (one
//! per input port, polled like RX queues; what comes out of them is
//! counted as `ring_rx`, the distributor having counted it as `rx`). At
//! stop it keeps taking from its rings until the distributor has raised
//! its done flag and the rings are empty, so every packet handed to it is
//! sent, dropped or consumed, and none is left in a ring.
use crate::burst::{Burst, BURST_SIZE};
use crate::dpdk::mbuf::free_bulk;
use crate::dpdk::port::{RxQueue, TxQueue, MAX_PORTS};
use crate::dpdk::ring::RingConsumer;
use crate::dpdk::{rdtsc, Mbuf};
use crate::pipeline::{new_meta_burst, DropReason, Output, Pipeline, StageCtx};
use crate::stats::WorkerStats;
use crate::tables::set::Published;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Everything a worker needs, moved onto its lcore.
pub struct Worker {
    /// (port index, queue) pairs this worker polls.
    pub rx: Vec<(u16, RxQueue)>,
    /// Ring mode: (input port index, ring) pairs the distributor feeds.
    pub rings: Vec<(u16, RingConsumer)>,
    /// Ring mode: raised by the distributor once it enqueues no more.
    pub feeder_done: Option<Arc<AtomicBool>>,
    /// This worker's TX queue on each port, by port index.
    pub tx: Vec<TxQueue>,
    pub pipeline: Pipeline,
    /// This worker's index (its counters in per-worker table state).
    pub index: usize,
    /// The table sets the pipeline reads; `pipeline` starts bound to the
    /// current one.
    pub tables: Arc<Published>,
    pub stats: Arc<WorkerStats>,
    pub stop: Arc<AtomicBool>,
    /// TSC ticks a partly filled TX buffer may wait.
    pub drain_tsc: u64,
    /// TSC ticks per second.
    pub tsc_hz: u64,
    /// Count cycles per stage and in dispatch.
    pub profile: bool,
    /// Index of the dispatch slot in `stage_cycles`.
    pub dispatch_slot: usize,
}

/// The worker's TX buffers and drop bin: the `Output` of its dispatch pass.
struct TxBuffers {
    /// By port index, in a fixed array inside the struct (not boxed): `tx`
    /// indexes it with the port masked to the array's size, so a packet's
    /// hand-over loads no vector header or box pointer and checks no bound
    /// (ports past `queues` stay empty).
    bufs: [Burst<Mbuf>; MAX_PORTS],
    queues: Vec<TxQueue>,
    drops: Burst<Mbuf>,
    stats: Arc<WorkerStats>,
}

impl TxBuffers {
    // Out of line: once per burst's worth of a port's packets, and keeps
    // `tx` small enough to inline into the dispatch loop.
    #[inline(never)]
    fn flush(&mut self, port: usize) {
        let (sent, refused) = self.queues[port].tx_burst_or_free(&mut self.bufs[port]);
        self.stats.tx.add(sent as u64);
        if refused != 0 {
            self.stats.count_drop(DropReason::TxFull, refused as u64);
        }
    }

    fn flush_all(&mut self) {
        for p in 0..self.queues.len() {
            if !self.bufs[p].is_empty() {
                self.flush(p);
            }
        }
    }

    #[inline]
    fn free_drops(&mut self) {
        free_bulk(&mut self.drops);
    }
}

impl Output<Mbuf> for TxBuffers {
    #[inline(always)]
    fn tx(&mut self, port: u16, pkt: Mbuf) {
        // Ports come from the config, which `check` keeps below MAX_PORTS:
        // the mask never folds one port onto another's buffer.
        debug_assert!(usize::from(port) < self.queues.len(), "port {port}");
        let p = usize::from(port) % MAX_PORTS;
        match self.bufs[p].push_len(pkt) {
            Ok(BURST_SIZE) => self.flush(p),
            Ok(_) => {}
            // Unreachable: buffers are flushed as soon as they fill.
            Err(pkt) => self.drop(pkt, DropReason::TxFull),
        }
    }

    #[inline]
    fn drop(&mut self, pkt: Mbuf, reason: DropReason) {
        self.stats.count_drop(reason, 1);
        if let Err(pkt) = self.drops.push(pkt) {
            self.free_drops();
            let _ = self.drops.push(pkt);
        }
    }

    #[inline]
    fn consume(&mut self, pkt: Mbuf) {
        if let Err(pkt) = self.drops.push(pkt) {
            self.free_drops();
            let _ = self.drops.push(pkt);
        }
    }

    #[inline]
    fn tx_all(&mut self, port: u16, pkts: &mut Burst<Mbuf>) {
        debug_assert!(usize::from(port) < self.queues.len(), "port {port}");
        let p = usize::from(port) % MAX_PORTS;
        if self.bufs[p].is_empty() {
            // Nothing waiting on this port: send the burst as it is, no copy.
            let (sent, refused) = self.queues[p].tx_burst_or_free(pkts);
            self.stats.tx.add(sent as u64);
            if refused != 0 {
                self.stats.count_drop(DropReason::TxFull, refused as u64);
            }
            return;
        }
        for i in 0..pkts.len() {
            if let Some(m) = pkts.take(i) {
                self.tx(port, m);
            }
        }
        pkts.set_len(0);
    }
}

/// Moves the pipeline to the current table set at a burst boundary: what
/// the old set decided leaves first (so after the acknowledgement no packet
/// goes out by the old tables), then the stages rebind, then the new
/// generation is acknowledged. The stages drop their references to the old
/// tables here, but the control thread still holds the retired set, so its
/// memory is freed there, never on a worker.
#[cold]
#[inline(never)]
fn rebind(
    pipeline: &mut Pipeline,
    out: &mut TxBuffers,
    tables: &Published,
    index: usize,
    stats: &WorkerStats,
) -> u64 {
    out.flush_all();
    out.free_drops();
    let set = tables.load();
    pipeline.rebind(&set, index);
    let g = set.generation;
    drop(set);
    stats.generation.set_release(g);
    g
}

impl Worker {
    /// The poll loop; returns 0 when stopped by the flag.
    pub fn run(self) -> i32 {
        let Worker {
            mut rx,
            mut rings,
            feeder_done,
            tx,
            mut pipeline,
            index,
            tables,
            stats,
            stop,
            drain_tsc,
            tsc_hz,
            profile,
            dispatch_slot,
        } = self;
        pipeline.set_profile(profile.then_some(rdtsc as fn() -> u64));
        let mut out = TxBuffers {
            bufs: std::array::from_fn(|_| Burst::new()),
            queues: tx,
            drops: Burst::new(),
            stats: stats.clone(),
        };
        let mut burst: Burst<Mbuf, BURST_SIZE> = Burst::new();
        let mut meta = new_meta_burst();
        let start = rdtsc();
        let mut last_drain = start;
        // The TSC is read after every empty poll but only after every
        // `TSC_EVERY`-th busy iteration: under load a read costs as much as
        // the whole forward stage of a burst (it showed in the profile of
        // `forward`). A read closes a span; a span with packets counts
        // as busy (it may end with one empty poll). `now` and the drain
        // timer lag by at most TSC_EVERY - 1 busy iterations (well under a
        // microsecond), and full TX buffers flush on their own.
        const TSC_EVERY: u32 = 4;
        let mut t0 = start;
        let mut busy_run = 0u32;
        let mut span_busy = false;
        let mut generation = tables.load().generation;
        stats.generation.set(generation);
        let mut ab = crate::ab::Phases::default();
        while !stop.load(Ordering::Relaxed) {
            ab.tick(rdtsc);
            if tables.generation() != generation {
                generation = rebind(&mut pipeline, &mut out, &tables, index, &stats);
            }
            // One burst from `port` through the pipeline and out.
            let mut process = |burst: &mut Burst<Mbuf>, port: u16| {
                let ctx = StageCtx {
                    now: t0,
                    tsc_hz,
                    counters: &stats,
                };
                pipeline.run_and_dispatch(burst, &mut meta, port, &ctx, &mut out, dispatch_slot);
            };
            let mut got = 0usize;
            for (port, q) in rx.iter_mut() {
                let n = q.rx_burst(&mut burst);
                if n != 0 {
                    got += n;
                    process(&mut burst, *port);
                }
            }
            let mut from_rings = 0usize;
            for (port, r) in rings.iter_mut() {
                let n = r.dequeue_burst(&mut burst);
                if n != 0 {
                    from_rings += n;
                    process(&mut burst, *port);
                }
            }
            ab.count(got);
            if got == 0 && from_rings == 0 {
                stats.empty_polls.add(1);
                busy_run = 0;
            } else {
                stats.rx.add(got as u64);
                if from_rings != 0 {
                    stats.ring_rx.add(from_rings as u64);
                }
                stats.bursts.add(1);
                out.free_drops();
                span_busy = true;
                busy_run += 1;
                if busy_run < TSC_EVERY {
                    continue;
                }
                busy_run = 0;
            }
            let t1 = rdtsc();
            if span_busy {
                stats.busy_cycles.add(t1 - t0);
                span_busy = false;
            }
            if t1.wrapping_sub(last_drain) > drain_tsc {
                out.flush_all();
                last_drain = t1;
                stats.total_cycles.set(t1 - start);
            }
            t0 = t1;
        }
        if let Some(done) = feeder_done {
            drain_rings(
                &mut rings,
                &done,
                &mut pipeline,
                &mut burst,
                &mut meta,
                &mut out,
                &stats,
                tsc_hz,
                dispatch_slot,
            );
        }
        out.flush_all();
        out.free_drops();
        stats.total_cycles.set(rdtsc() - start);
        ab.report(index);
        #[cfg(feature = "pmd-cycles")]
        report_pmd_cycles(index, rdtsc() - start);
        0
    }
}

/// The worker's PMD cycles ([`crate::dpdk::pmd_cycles`]) at its exit, as
/// the line `scripts/pmd-cycles.sh` reads.
#[cfg(feature = "pmd-cycles")]
fn report_pmd_cycles(index: usize, loop_cycles: u64) {
    let c = crate::dpdk::pmd_cycles::get();
    println!(
        "pmd-cycles app=dataplane worker={index} loop_cycles={loop_cycles} rx_pkts={} rx_cycles={} tx_pkts={} tx_cycles={}",
        c.rx_pkts, c.rx_cycles, c.tx_pkts, c.tx_cycles
    );
}

/// Ring mode's last pass at stop: everything the distributor enqueued goes
/// through the pipeline (the distributor stops receiving first; once its
/// done flag is seen, acquire, and the rings are empty, nothing more can
/// come). Bounded by what the rings hold.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn drain_rings(
    rings: &mut [(u16, RingConsumer)],
    done: &AtomicBool,
    pipeline: &mut Pipeline,
    burst: &mut Burst<Mbuf, BURST_SIZE>,
    meta: &mut crate::pipeline::MetaBurst,
    out: &mut TxBuffers,
    stats: &WorkerStats,
    tsc_hz: u64,
    dispatch_slot: usize,
) {
    loop {
        let finished = done.load(Ordering::Acquire);
        let mut got = 0u64;
        for (port, r) in rings.iter_mut() {
            loop {
                let n = r.dequeue_burst(burst);
                if n == 0 {
                    break;
                }
                got += n as u64;
                let ctx = StageCtx {
                    now: rdtsc(),
                    tsc_hz,
                    counters: stats,
                };
                pipeline.run_and_dispatch(burst, meta, *port, &ctx, out, dispatch_slot);
                out.free_drops();
            }
        }
        stats.ring_rx.add(got);
        if finished && got == 0 {
            return;
        }
        if got == 0 {
            std::hint::spin_loop();
        }
    }
}
