//! The packet pipeline: an ordered list of stages run over whole bursts.
//!
//! Each stage looks at every packet still marked `Verdict::Continue` and
//! writes a verdict (next stage, output port, or drop with a reason) into
//! the packet's [`Meta`]. Stages decide; one final pass, [`dispatch`], moves
//! packets to their output buffers and drops. The pipeline runs over the
//! [`PacketBuf`] trait, so it is tested and fuzzed on plain byte vectors and
//! run by the daemon over mbufs.
pub mod forward;
pub mod meta;
pub mod packet;

pub use meta::{DropReason, FlowKey, Meta, Verdict, L3};
pub use packet::{PacketBuf, VecPacket};

use crate::burst::{Burst, BURST_SIZE};
use forward::Forward;

/// Per-burst scratch: one `Meta` per packet slot.
pub type MetaBurst = [Meta; BURST_SIZE];

/// The closed set of stages; one `match` per stage per burst.
pub enum Stage {
    Forward(Forward),
}

impl Stage {
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Forward(_) => "forward",
        }
    }

    #[inline]
    fn process<P: PacketBuf>(&mut self, pkts: &mut Burst<P>, meta: &mut MetaBurst) {
        match self {
            Stage::Forward(s) => s.process(pkts, meta),
        }
    }
}

/// A worker's pipeline instance (each worker owns one; tables inside are shared).
pub struct Pipeline {
    stages: Vec<Stage>,
}

impl Pipeline {
    pub fn new(stages: Vec<Stage>) -> Self {
        Pipeline { stages }
    }

    pub fn stage_names(&self) -> Vec<&'static str> {
        self.stages.iter().map(Stage::name).collect()
    }

    /// Runs every stage over a burst received on port index `in_port`.
    #[inline]
    pub fn run<P: PacketBuf>(&mut self, pkts: &mut Burst<P>, meta: &mut MetaBurst, in_port: u16) {
        let n = pkts.len();
        for m in &mut meta[..n] {
            m.verdict = Verdict::Continue;
            m.in_port = in_port;
            m.flags = 0;
            m.l3 = L3::Unparsed;
        }
        for s in &mut self.stages {
            s.process(pkts, meta);
        }
    }
}

/// Where dispatched packets go: the worker's TX buffers and drop bin, or a
/// collector in tests.
pub trait Output<P> {
    fn tx(&mut self, port: u16, pkt: P);
    fn drop(&mut self, pkt: P, reason: DropReason);
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
    for (i, m) in meta[..n].iter().enumerate() {
        let Some(pkt) = pkts.take(i) else { continue };
        match m.verdict {
            Verdict::Tx(port) => out.tx(port, pkt),
            Verdict::Drop(reason) => out.drop(pkt, reason),
            Verdict::Continue => out.drop(pkt, DropReason::NoOutput),
        }
    }
    pkts.set_len(0);
}

/// An `Output` that keeps everything, for tests and the fuzzer.
#[derive(Debug)]
pub struct Collect<P> {
    pub sent: Vec<(u16, P)>,
    pub dropped: Vec<(DropReason, P)>,
}

impl<P> Default for Collect<P> {
    fn default() -> Self {
        Collect {
            sent: Vec::new(),
            dropped: Vec::new(),
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
}

/// A fresh metadata burst.
pub fn new_meta_burst() -> MetaBurst {
    [Meta::default(); BURST_SIZE]
}
