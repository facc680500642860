//! The packet pipeline: an ordered list of stages run over whole bursts.
//!
//! Each stage looks at every packet still marked `Verdict::Continue` and
//! writes a verdict (next stage, output port, or drop with a reason) into
//! the packet's [`Meta`]. Stages decide; one final pass, [`dispatch`], moves
//! packets to their output buffers and drops. The pipeline runs over the
//! [`PacketBuf`] trait, so it is tested and fuzzed on plain byte vectors and
//! run by the daemon over mbufs.
pub mod acl;
pub mod forward;
pub mod local;
pub mod meta;
pub mod packet;
pub mod parse;
pub mod route;

pub use meta::{DropReason, Event, FlowKey, FlowKeyV4, Meta, Verdict, L3};
pub use packet::{PacketBuf, VecPacket};

use crate::burst::{Burst, BURST_SIZE};
use crate::stats::WorkerCounters;
use crate::tables::set::TableSet;
use acl::AclStage;
use forward::Forward;
use parse::Parse;
use route::RouteStage;

/// What a stage may read or bump besides the packets: the time and the
/// worker's counters (single writer: the worker running the stage).
pub struct StageCtx<'a> {
    /// TSC at the start of the burst.
    pub now: u64,
    /// TSC ticks per second.
    pub tsc_hz: u64,
    pub counters: &'a WorkerCounters,
}

impl<'a> StageCtx<'a> {
    /// A context for tests and the fuzzer: a 1 GHz clock at t = 1 s.
    pub fn test(counters: &'a WorkerCounters) -> Self {
        StageCtx {
            now: 1_000_000_000,
            tsc_hz: 1_000_000_000,
            counters,
        }
    }
}

/// The clock per-stage profiling reads (`Pipeline::set_profile`): the
/// worker gives the TSC (`dpdk::rdtsc`), tests whatever they like. The
/// pipeline reads time only through it, or through `StageCtx::now`.
pub type Clock = fn() -> u64;

/// Per-burst scratch: one `Meta` per packet slot.
pub type MetaBurst = [Meta; BURST_SIZE];

/// The closed set of stages; one `match` per stage per burst.
pub enum Stage {
    Parse(Parse),
    Forward(Forward),
    Acl(AclStage),
    Route(Box<RouteStage>),
}

impl Stage {
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Parse(_) => "parse",
            Stage::Forward(_) => "forward",
            Stage::Acl(_) => "acl",
            Stage::Route(_) => "route",
        }
    }

    /// Takes worker `worker`'s view of a newly published table set, at a
    /// burst boundary (see [`crate::tables::set`]).
    pub fn rebind(&mut self, set: &TableSet, worker: usize) {
        match self {
            Stage::Parse(s) => s.rebind(set.parse),
            Stage::Forward(_) => {}
            Stage::Acl(s) => {
                if let Some(a) = &set.acl {
                    s.rebind(a, worker);
                }
            }
            Stage::Route(s) => {
                if let Some(r) = &set.routing {
                    s.rebind(r, set.icmp_rate);
                }
            }
        }
    }

    #[inline]
    fn process<P: PacketBuf>(&mut self, pkts: &mut Burst<P>, meta: &mut MetaBurst, ctx: &StageCtx) {
        match self {
            Stage::Parse(s) => s.process(pkts, meta),
            Stage::Forward(s) => s.process(pkts, meta),
            Stage::Acl(s) => s.process(pkts.len(), meta, ctx),
            Stage::Route(s) => s.process(pkts, meta, ctx),
        }
    }
}

/// A worker's pipeline instance (each worker owns one; tables inside are shared).
pub struct Pipeline {
    stages: Vec<Stage>,
    /// The clock to count cycles per stage with, when profiling (bench
    /// mode; costs two clock reads a stage). `None`: off, one test per
    /// burst as a flag would be.
    profile: Option<Clock>,
    /// The stages are exactly `parse`, `route` or `parse`, `acl`, `route`:
    /// run them as one pass ([`RouteStage::process_fused`],
    /// [`RouteStage::process_fused_acl`]).
    fused: bool,
}

/// Most stages a pipeline holds (for the per-stage cycle counters).
pub const MAX_STAGES: usize = 6;

impl Pipeline {
    pub fn new(stages: Vec<Stage>) -> Self {
        assert!(stages.len() <= MAX_STAGES);
        let fused = Self::can_fuse(&stages);
        Pipeline {
            stages,
            profile: None,
            fused,
        }
    }

    fn can_fuse(stages: &[Stage]) -> bool {
        matches!(
            stages,
            [Stage::Parse(_), Stage::Route(_)] | [Stage::Parse(_), Stage::Acl(_), Stage::Route(_)]
        )
    }

    /// Rebinds every stage to `set` (worker `worker`'s counters).
    pub fn rebind(&mut self, set: &TableSet, worker: usize) {
        for s in &mut self.stages {
            s.rebind(set, worker);
        }
    }

    /// Turns the fused pass off (it is on wherever the stages allow it):
    /// tests compare the two.
    pub fn set_fused(&mut self, on: bool) {
        self.fused = on && Self::can_fuse(&self.stages);
    }

    /// Turns per-stage cycle accounting (`WorkerCounters::stage_cycles`) on
    /// with `clock` (the TSC in the worker), or off with `None`.
    pub fn set_profile(&mut self, clock: Option<Clock>) {
        self.profile = clock;
    }

    /// What each profiling slot counts: the stages, or the fused pass (and
    /// the ACL's part of it).
    pub fn stage_names(&self) -> Vec<&'static str> {
        if self.fused {
            return match self.stages[..] {
                [_, Stage::Acl(_), _] => vec!["parse+route", "acl"],
                _ => vec!["parse+route"],
            };
        }
        self.stages.iter().map(Stage::name).collect()
    }

    /// Runs every stage over a burst received on port index `in_port`.
    #[inline]
    pub fn run<P: PacketBuf>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
    ) {
        self.run_with(pkts, meta, in_port, ctx, &mut route::MarkTx);
    }

    /// [`Pipeline::run`], with the fused pass's fast-path packets handed to
    /// `fast_tx` (marked for dispatch, or sent at once).
    #[inline]
    fn run_with<P: PacketBuf, F: route::FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
        fast_tx: &mut F,
    ) {
        let n = pkts.len();
        if self.fused {
            let profile = self.profile;
            let t = profile.map_or(0, |now| now());
            // Cycles spent in the ACL, counted apart from the rest of the pass.
            let mut acl_cycles = 0;
            // The fused pass initialises each packet's metadata itself.
            match &mut self.stages[..] {
                [Stage::Parse(parse), Stage::Route(route)] => {
                    route.process_fused(parse, pkts, meta, in_port, ctx, fast_tx)
                }
                [Stage::Parse(parse), Stage::Acl(acl), Stage::Route(route)] => {
                    let acl_pass = |n: usize, meta: &mut MetaBurst, plain, keys: &_| {
                        let t = profile.map_or(0, |now| now());
                        acl.process_keyed(n, meta, plain, keys);
                        if let Some(now) = profile {
                            acl_cycles = now() - t;
                            ctx.counters.stage_cycles[1].add(acl_cycles);
                        }
                    };
                    route.process_fused_acl(parse, pkts, meta, in_port, ctx, acl_pass, fast_tx);
                }
                _ => unreachable!("fused only where can_fuse"),
            }
            if let Some(now) = profile {
                ctx.counters.stage_cycles[0].add(now() - t - acl_cycles);
            }
            return;
        }
        // Only what every stage relies on; parse initialises the rest.
        for m in &mut meta[..n] {
            m.verdict = Verdict::Continue;
            m.in_port = in_port;
        }
        if let Some(now) = self.profile {
            let mut t = now();
            for (k, s) in self.stages.iter_mut().enumerate() {
                s.process(pkts, meta, ctx);
                let t2 = now();
                ctx.counters.stage_cycles[k].add(t2 - t);
                t = t2;
            }
            return;
        }
        for s in &mut self.stages {
            s.process(pkts, meta, ctx);
        }
    }
}

impl Pipeline {
    /// [`Pipeline::run`] then [`dispatch`], as the worker runs them, with two
    /// shortcuts:
    /// - a pipeline that is just `forward` sends a whole burst whose frames
    ///   all hold an Ethernet header without writing or reading any metadata
    ///   (`Forward::process_whole`); same output as `run` + `dispatch`
    ///   (tests in `forward.rs`), profiled as the `forward` stage;
    /// - the fused pass sends its fast-path packets as it rewrites them
    ///   ([`route::SendTx`]), so they leave ahead of the burst's other
    ///   packets; the same packets, bytes and counters as `run` + `dispatch`
    ///   otherwise (test `dataplane/tests/fused_route.rs`).
    #[inline]
    pub fn run_and_dispatch<P: PacketBuf, O: Output<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
        out: &mut O,
        dispatch_slot: usize,
    ) {
        if let [Stage::Forward(f)] = &self.stages[..] {
            let t = self.profile.map_or(0, |now| now());
            if let Some(port) = f.process_whole(pkts, in_port) {
                if let Some(now) = self.profile {
                    let t2 = now();
                    ctx.counters.stage_cycles[0].add(t2 - t);
                    out.tx_all(port, pkts);
                    ctx.counters.stage_cycles[dispatch_slot].add(now() - t2);
                } else {
                    out.tx_all(port, pkts);
                }
                return;
            }
        }
        // The fused pass's fast-path packets go straight to `out`
        // (`route::SendTx`); profiling counts them in the pass.
        let mut send = route::SendTx {
            out: &mut *out,
            sent: 0,
        };
        self.run_with(pkts, meta, in_port, ctx, &mut send);
        if send.sent == pkts.len() {
            // All gone; the slots are empty.
            pkts.set_len(0);
            return;
        }
        // Packets sent early left empty slots whose `Meta` is not this
        // burst's: dispatch must not take its whole-burst shortcut then.
        let t = self.profile.map_or(0, |now| now());
        if send.sent == 0 {
            dispatch(pkts, meta, out);
        } else {
            dispatch_each(pkts, meta, out);
        }
        if let Some(now) = self.profile {
            ctx.counters.stage_cycles[dispatch_slot].add(now() - t);
        }
    }
}

/// Where dispatched packets go: the worker's TX buffers and drop bin, or a
/// collector in tests.
pub trait Output<P> {
    fn tx(&mut self, port: u16, pkt: P);
    fn drop(&mut self, pkt: P, reason: DropReason);
    /// Frees a packet the daemon used up (not a drop).
    fn consume(&mut self, pkt: P);
    /// The whole burst goes to `port` (the common case of a cross-connect or
    /// a one-route burst); implementations may send it without copying.
    fn tx_all(&mut self, port: u16, pkts: &mut Burst<P>) {
        for i in 0..pkts.len() {
            if let Some(p) = pkts.take(i) {
                self.tx(port, p);
            }
        }
        pkts.set_len(0);
    }
}

/// The final pass: moves each packet to its output or drops it with its
/// reason. A packet still at `Continue` after the last stage had no stage
/// choose an output: dropped as `no_output`. Leaves the burst empty.
#[inline]
pub fn dispatch<P, O: Output<P>>(pkts: &mut Burst<P>, meta: &MetaBurst, out: &mut O) {
    let n = pkts.len();
    if n == 0 {
        return;
    }
    let first = meta[0].verdict;
    if let Verdict::Tx(port) = first {
        if meta[1..n].iter().all(|m| m.verdict == first) {
            out.tx_all(port, pkts);
            return;
        }
    }
    dispatch_each(pkts, meta, out);
}

/// [`dispatch`] packet by packet, reading the `Meta` of occupied slots only.
fn dispatch_each<P, O: Output<P>>(pkts: &mut Burst<P>, meta: &MetaBurst, out: &mut O) {
    let n = pkts.len();
    for (i, m) in meta[..n].iter().enumerate() {
        let Some(pkt) = pkts.take(i) else { continue };
        match m.verdict {
            Verdict::Tx(port) => out.tx(port, pkt),
            Verdict::Drop(reason) => out.drop(pkt, reason),
            Verdict::Continue => out.drop(pkt, DropReason::NoOutput),
            Verdict::Consumed => out.consume(pkt),
        }
    }
    pkts.set_len(0);
}

/// An `Output` that keeps everything, for tests and the fuzzer.
#[derive(Debug)]
pub struct Collect<P> {
    pub sent: Vec<(u16, P)>,
    pub dropped: Vec<(DropReason, P)>,
    pub consumed: Vec<P>,
}

impl<P> Default for Collect<P> {
    fn default() -> Self {
        Collect {
            sent: Vec::new(),
            dropped: Vec::new(),
            consumed: Vec::new(),
        }
    }
}

impl<P> Output<P> for Collect<P> {
    fn tx(&mut self, port: u16, pkt: P) {
        self.sent.push((port, pkt));
    }
    fn drop(&mut self, pkt: P, reason: DropReason) {
        self.dropped.push((reason, pkt));
    }
    fn consume(&mut self, pkt: P) {
        self.consumed.push(pkt);
    }
}

/// A fresh metadata burst.
pub fn new_meta_burst() -> MetaBurst {
    [Meta::default(); BURST_SIZE]
}

#[cfg(test)]
mod tests {
    use super::forward::Forward;
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static TICKS: Cell<u64> = const { Cell::new(0) };
    }

    /// A clock that advances 10 ticks a read.
    fn fake_clock() -> u64 {
        TICKS.with(|t| {
            t.set(t.get() + 10);
            t.get()
        })
    }

    /// Profiling reads the clock it is given, not the TSC: one span of 10
    /// ticks per stage, and nothing at all when it is off.
    #[test]
    fn profiling_reads_the_given_clock() {
        let macs = [[0x02, 0, 0, 0, 0, 0xa0], [0x02, 0, 0, 0, 0, 0xa1]];
        let mut p = Pipeline::new(vec![Stage::Forward(Forward::new(
            vec![Some(1), Some(0)],
            &macs,
            &macs,
        ))]);
        let c = WorkerCounters::default();
        let mut meta = new_meta_burst();
        let mut b = Burst::<VecPacket>::new();
        b.push(VecPacket::new(vec![0u8; 60])).unwrap();
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 0, "off");
        p.set_profile(Some(fake_clock));
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 20);
        p.set_profile(None);
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 20);
    }
}
