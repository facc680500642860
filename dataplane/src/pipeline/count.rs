//! `count`: counts what the stages before it decided, per burst slot:
//! packets and bytes sent to each output port, packets dropped, packets no
//! stage has decided yet (still `Continue`). It changes nothing, so it may
//! stand anywhere in a pipeline: after `route` it sees every packet the
//! router forwards (the router then marks its fast path's packets instead
//! of sending them itself: only the last stage sends directly).
//!
//! Meta: reads `verdict`. Plain packets still on the lane are `Continue`.
use super::tx::FastTx;
use super::{Lane, MetaBurst, PacketBuf, StageCounters, StageCtx, StageOps, StageSpec, Verdict};
use crate::burst::Burst;
use crate::stats::Counter;
use std::sync::Arc;

/// One worker's `count` counters.
#[derive(Debug)]
pub struct CountCounters {
    /// Packets and bytes with a `Tx(port)` verdict, by port index.
    pub tx_packets: Box<[Counter]>,
    pub tx_bytes: Box<[Counter]>,
    pub dropped: Counter,
    pub undecided: Counter,
}

impl StageCounters for CountCounters {
    fn report(&self) -> serde_json::Value {
        let all = |c: &[Counter]| c.iter().map(Counter::get).collect::<Vec<_>>();
        serde_json::json!({
            "tx_packets": all(&self.tx_packets),
            "tx_bytes": all(&self.tx_bytes),
            "dropped": self.dropped.get(),
            "undecided": self.undecided.get(),
        })
    }
}

pub struct CountStage {
    counters: Arc<CountCounters>,
}

impl CountStage {
    /// Counters for `ports` output ports.
    pub fn new(ports: usize) -> Self {
        let zero = || (0..ports).map(|_| Counter::default()).collect();
        CountStage {
            counters: Arc::new(CountCounters {
                tx_packets: zero(),
                tx_bytes: zero(),
                dropped: Counter::default(),
                undecided: Counter::default(),
            }),
        }
    }
}

impl StageOps for CountStage {
    const SPEC: StageSpec = StageSpec {
        name: "count",
        section: None,
        forwards: false,
        needs_later_forwarder: false,
        needs_headers: false,
        headerless: false,
        restart: crate::pipeline::RestartKeys::None,
    };

    fn build(b: &super::StageBuild) -> Self {
        CountStage::new(b.ports)
    }

    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        _ctx: &StageCtx,
        _tx: &mut F,
    ) {
        let c = &*self.counters;
        let (mut dropped, mut undecided) = (0, 0);
        for (i, m) in meta[..pkts.len()].iter().enumerate() {
            let Some(p) = pkts.get(i) else { continue };
            if lane.is_plain(i) {
                undecided += 1;
                continue;
            }
            match m.verdict {
                Verdict::Tx(port) => {
                    if let Some(t) = c.tx_packets.get(usize::from(port)) {
                        t.add(1);
                        c.tx_bytes[usize::from(port)].add(p.data().len() as u64);
                    }
                }
                Verdict::Drop(_) => dropped += 1,
                Verdict::Continue => undecided += 1,
                Verdict::Consumed => {}
            }
        }
        c.dropped.add(dropped);
        c.undecided.add(undecided);
    }

    fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        Some(self.counters.clone())
    }
}
