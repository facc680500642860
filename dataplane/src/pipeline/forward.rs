//! `forward`: cross-connect ports in pairs, rewriting the Ethernet
//! addresses (source = output port's MAC, destination = the station on the
//! other end of the output link), like DPDK's l2fwd.
//!
//! It does not parse, and sends frames as received, chains included (a
//! PMD's frame larger than one mbuf), but one whose length disagrees with
//! its segments (`pkt_len` against their sum, `nb_segs` against their
//! number: net_pcap makes such chains of records over 65,535 bytes, and
//! its own TX crashed on one) is dropped as `bad_total_len`, as `parse`
//! drops it. A single-segment frame pays one compare for it.
//!
//! Meta: reads `in_port`, `verdict`; sets `verdict` (`Tx(out)`, or
//! `Drop(no_output)` for an unpaired port, `Drop(truncated)` for a runt,
//! `Drop(bad_total_len)` for a broken chain).
use super::tx::FastTx;
use super::{DropReason, Lane, MetaBurst, PacketBuf, StageCtx, StageOps, StageSpec, Verdict};
use crate::burst::Burst;

pub struct Forward {
    /// Output port per input port index.
    out: Vec<Option<u16>>,
    /// New Ethernet destination + source (12 bytes) per output port.
    l2_rewrite: Vec<[u8; 12]>,
}

impl StageOps for Forward {
    const SPEC: StageSpec = StageSpec {
        name: "forward",
        section: Some("forward"),
        forwards: true,
        needs_later_forwarder: false,
        needs_headers: false,
        headerless: true,
        // Its pairs wire ports at start.
        restart: crate::pipeline::RestartKeys::Section,
    };

    fn build(b: &super::StageBuild) -> Self {
        Forward::new(b.forward_out.to_vec(), b.port_macs, b.peer_macs)
    }

    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        _ctx: &StageCtx,
        _tx: &mut F,
    ) {
        // It reads `Meta` only (a forward pipeline has no parse and no lane).
        lane.materialize_all(pkts, meta);
        Forward::process(self, pkts, meta);
    }

    #[inline(always)]
    fn whole_burst<P: PacketBuf>(&self, pkts: &mut Burst<P>, in_port: u16) -> Option<u16> {
        self.process_whole(pkts, in_port)
    }
}

impl Forward {
    /// `out[i]` is the output of input port `i`; `port_mac[i]`/`peer_mac[i]`
    /// are port `i`'s own MAC and its link peer's.
    pub fn new(out: Vec<Option<u16>>, port_mac: &[[u8; 6]], peer_mac: &[[u8; 6]]) -> Self {
        let l2_rewrite = port_mac
            .iter()
            .zip(peer_mac)
            .map(|(src, dst)| {
                let mut h = [0u8; 12];
                h[..6].copy_from_slice(dst);
                h[6..].copy_from_slice(src);
                h
            })
            .collect();
        Forward { out, l2_rewrite }
    }

    /// The whole-burst fast path (`Pipeline::run_and_dispatch`): when the
    /// input port has an output and every frame holds an Ethernet header
    /// and is no broken chain ([`sendable`]), rewrites them all and returns
    /// the output port, without touching the metadata. Otherwise `None`,
    /// and the caller runs [`Forward::process`] (frames before the runt
    /// are rewritten already; `process` writes the same bytes again).
    #[inline]
    pub fn process_whole<P: PacketBuf>(&self, pkts: &mut Burst<P>, in_port: u16) -> Option<u16> {
        let n = pkts.len();
        let out = self.out.get(usize::from(in_port)).copied().flatten()?;
        let hdr = self.l2_rewrite[usize::from(out)];
        let slots = &mut pkts.slots_mut()[..n];
        // No prefetch, as in the fused route pass (`route::begin_fused`):
        // one in-order sweep over frames the PMD has just written.
        for slot in slots.iter_mut() {
            let p = slot.as_mut()?;
            if sendable(p).is_err() {
                return None;
            }
            p.data_mut()[..12].copy_from_slice(&hdr);
        }
        Some(out)
    }

    /// Every packet of a burst came in on the same port (`Pipeline::run`
    /// receives one queue's burst), so the output and the new Ethernet
    /// addresses are looked up once per burst.
    #[inline]
    pub fn process<P: PacketBuf>(&self, pkts: &mut Burst<P>, meta: &mut MetaBurst) {
        let n = pkts.len();
        if n == 0 {
            return;
        }
        let in_port = meta[0].in_port as usize;
        let Some(Some(out)) = self.out.get(in_port).copied() else {
            for m in &mut meta[..n] {
                if m.verdict == Verdict::Continue {
                    m.verdict = Verdict::Drop(DropReason::NoOutput);
                }
            }
            return;
        };
        let hdr = self.l2_rewrite[out as usize];
        let slots = &mut pkts.slots_mut()[..n];
        for i in 0..n {
            let m = &mut meta[i];
            if m.verdict != Verdict::Continue {
                continue;
            }
            let Some(pkt) = slots[i].as_mut() else {
                continue;
            };
            if let Err(reason) = sendable(pkt) {
                m.verdict = Verdict::Drop(reason);
                continue;
            }
            pkt.data_mut()[..12].copy_from_slice(&hdr);
            m.verdict = Verdict::Tx(out);
        }
    }
}

/// Whether `pkt` may be sent as it is: it holds an Ethernet header
/// (`truncated` if not) and, when chained, its length agrees with its
/// segments (`bad_total_len` if not: see the module doc). A single segment
/// costs the one compare of its two lengths.
#[inline(always)]
fn sendable<P: PacketBuf>(pkt: &P) -> Result<(), DropReason> {
    let seg = pkt.data().len();
    if seg < 14 {
        return Err(DropReason::Truncated);
    }
    if pkt.pkt_len() != seg && !pkt.chain_ok() {
        return Err(DropReason::BadTotalLen);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{
        dispatch, new_meta_burst, Collect, Pipeline, Stage, StageCtx, VecPacket, MAX_STAGES,
    };
    use crate::stats::WorkerCounters;

    fn frame(fill: u8) -> VecPacket {
        let mut f = vec![fill; 60];
        f[12] = 0x08;
        f[13] = 0x00;
        VecPacket::new(f)
    }

    fn pipeline() -> Pipeline {
        let macs = [
            [0x02, 0, 0, 0, 0, 0xa0],
            [0x02, 0, 0, 0, 0, 0xa1],
            [0x02, 0, 0, 0, 0, 0xa2],
        ];
        let peers = [
            [0x02, 0, 0, 0, 0, 0xb0],
            [0x02, 0, 0, 0, 0, 0xb1],
            [0x02, 0, 0, 0, 0, 0xb2],
        ];
        Pipeline::new(vec![Stage::Forward(Forward::new(
            vec![Some(1), Some(0), None],
            &macs,
            &peers,
        ))])
    }

    #[test]
    fn cross_connects_and_rewrites_macs() {
        let mut p = pipeline();
        let mut b = Burst::<VecPacket>::new();
        for k in 0..5 {
            b.push(frame(k)).unwrap();
        }
        let mut meta = new_meta_burst();
        let c = WorkerCounters::default();
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        let mut out = Collect::default();
        dispatch(&mut b, &meta, &mut out);
        assert!(b.is_empty());
        assert_eq!(out.sent.len(), 5);
        for (k, (port, pkt)) in out.sent.iter().enumerate() {
            assert_eq!(*port, 1);
            assert_eq!(&pkt.bytes[..6], &[0x02, 0, 0, 0, 0, 0xb1]);
            assert_eq!(&pkt.bytes[6..12], &[0x02, 0, 0, 0, 0, 0xa1]);
            assert!(
                pkt.bytes[14..].iter().all(|&x| x == k as u8),
                "payload untouched"
            );
        }
    }

    type Out = (Vec<(u16, Vec<u8>)>, Vec<(DropReason, Vec<u8>)>);

    fn outputs(c: Collect<VecPacket>) -> Out {
        (
            c.sent.into_iter().map(|(p, v)| (p, v.bytes)).collect(),
            c.dropped.into_iter().map(|(r, v)| (r, v.bytes)).collect(),
        )
    }

    /// The worker's `run_and_dispatch` (whole-burst shortcut) sends and drops
    /// exactly what `run` + `dispatch` do: plain bursts, bursts with a runt,
    /// an unpaired input port, an empty burst.
    #[test]
    fn whole_burst_shortcut_matches_run_and_dispatch() {
        let bursts: Vec<(u16, Vec<VecPacket>)> = vec![
            (0, (0..crate::burst::BURST_SIZE as u8).map(frame).collect()),
            (1, (0..7).map(frame).collect()),
            (0, vec![frame(1), VecPacket::new(vec![9u8; 13]), frame(2)]),
            (1, vec![VecPacket::new(vec![]), frame(3)]),
            (2, (0..4).map(frame).collect()),
            (0, vec![]),
        ];
        let c = WorkerCounters::default();
        for (in_port, frames) in bursts {
            let run = |shortcut: bool| {
                let mut p = pipeline();
                let mut b = Burst::<VecPacket>::new();
                for f in &frames {
                    b.push(f.clone()).unwrap();
                }
                let mut meta = new_meta_burst();
                let mut out = Collect::default();
                let ctx = StageCtx::test(&c);
                if shortcut {
                    p.run_and_dispatch(&mut b, &mut meta, in_port, &ctx, &mut out, MAX_STAGES);
                } else {
                    p.run(&mut b, &mut meta, in_port, &ctx);
                    dispatch(&mut b, &meta, &mut out);
                }
                assert!(b.is_empty());
                outputs(out)
            };
            assert_eq!(
                run(true),
                run(false),
                "in_port {in_port}, {} frames",
                frames.len()
            );
        }
    }

    /// A chain whose length disagrees with its segments is `bad_total_len`,
    /// on the whole-burst shortcut and through `process` alike; a sound
    /// chain and single segments beside it are sent as they are.
    #[test]
    fn broken_chains_are_dropped() {
        let mut big = vec![7u8; 2048];
        big[12] = 0x08;
        let frames = vec![
            frame(1),
            VecPacket::broken_chain(big.clone(), 4000),
            VecPacket::chained(big.clone(), 4000),
            frame(2),
        ];
        let c = WorkerCounters::default();
        for shortcut in [true, false] {
            let mut p = pipeline();
            let mut b = Burst::<VecPacket>::new();
            for f in &frames {
                b.push(f.clone()).unwrap();
            }
            let mut meta = new_meta_burst();
            let mut out = Collect::default();
            let ctx = StageCtx::test(&c);
            if shortcut {
                p.run_and_dispatch(&mut b, &mut meta, 0, &ctx, &mut out, MAX_STAGES);
            } else {
                p.run(&mut b, &mut meta, 0, &ctx);
                dispatch(&mut b, &meta, &mut out);
            }
            let reasons: Vec<DropReason> = out.dropped.iter().map(|(r, _)| *r).collect();
            assert_eq!(reasons, [DropReason::BadTotalLen], "shortcut {shortcut}");
            assert!(out.dropped[0].1.broken);
            let sent: Vec<usize> = out.sent.iter().map(|(_, p)| p.pkt_len()).collect();
            assert_eq!(sent, [60, 6048, 60], "shortcut {shortcut}");
            assert!(out.sent.iter().all(|(port, _)| *port == 1));
        }
    }

    #[test]
    fn unpaired_port_and_runts_are_dropped_with_reasons() {
        let mut p = pipeline();
        let mut b = Burst::<VecPacket>::new();
        b.push(frame(1)).unwrap();
        let mut meta = new_meta_burst();
        let c = WorkerCounters::default();
        p.run(&mut b, &mut meta, 2, &StageCtx::test(&c));
        let mut out = Collect::default();
        dispatch(&mut b, &meta, &mut out);
        assert_eq!(out.dropped.len(), 1);
        assert_eq!(out.dropped[0].0, DropReason::NoOutput);

        b.push(VecPacket::new(vec![0u8; 13])).unwrap();
        b.push(frame(2)).unwrap();
        p.run(&mut b, &mut meta, 1, &StageCtx::test(&c));
        let mut out = Collect::default();
        dispatch(&mut b, &meta, &mut out);
        assert_eq!(out.dropped.len(), 1);
        assert_eq!(out.dropped[0].0, DropReason::Truncated);
        assert_eq!(out.sent.len(), 1);
        assert_eq!(out.sent[0].0, 0);
    }
}
