//! The fast lane: what the pipeline's one parse sweep leaves for the stages
//! of a burst, so that every stage list runs at the speed of the plain
//! IPv4 path without a hand-fused variant per list.
//!
//! The sweep reads each frame once, in order. A *plain* frame — one
//! segment addressed to the input port's MAC, holding exactly an untagged
//! IPv4 packet without options whose header `parse` accepts
//! ([`Parse::fast_v4`]; a padded frame becomes plain once the full parse
//! trimmed it) and whose addresses pass the forwarder's martian screen
//! ([`Lane::screen`]) — gets its addresses (and, when a stage before the
//! forwarder reads them, its flow key) written here and its `Meta` left
//! alone; every other frame gets the full parse into its `Meta`, exactly
//! as the `parse` stage does.
//! Stages then read plain packets from the lane and everything else from
//! `Meta`. A stage that needs more of a plain packet than the lane holds
//! calls [`Lane::materialize`] (the full parse into its `Meta`), after which
//! the packet is an ordinary one: so a stage that knows nothing of the lane
//! still sees every packet exactly as on the stage-by-stage path.
//!
//! A plain packet is undecided: its `Meta` holds nothing, not even its
//! `verdict` and `in_port` (a plain packet's verdict is `Continue` by
//! definition). A stage that decides one (an ACL deny, a load balancer
//! without a backend) takes it off the lane with [`Lane::decide`], which
//! writes those two; every stage reads a packet's verdict before anything
//! else in its `Meta`, so a decided packet's other fields are never read.
//! So the stage that forwards knows that every packet still on the lane is
//! undecided without reading a `Meta`. When some stage runs between the
//! sweep and the forwarder (`early`), the sweep also writes each plain
//! packet's flow key, which such a stage reads.
use super::parse::{FastV4, Parse};
use super::route::martians::V4Screen;
use super::{FlowKeyV4, Meta, MetaBurst, PacketBuf, Verdict};
use crate::burst::{slots, Burst, SlotMask, BURST_SIZE};
use crate::tables::route::Fib4Reader;

/// Per-burst scratch of the fast lane (one per pipeline, reused).
pub struct Lane {
    /// What the sweep parsed with (and [`Lane::materialize`] parses with).
    pub parse: Parse,
    /// The port the burst came from.
    pub in_port: u16,
    /// Bit `i`: slot `i` is a plain packet whose `Meta` the parse did not fill.
    pub plain: SlotMask,
    /// A stage runs between the sweep and the forwarder: the sweep writes
    /// plain packets' flow keys (see the module doc).
    pub early: bool,
    /// Plain packets' addresses (host order), by slot: two arrays, so a
    /// lookup can read the destinations as they are.
    pub src: [u32; BURST_SIZE],
    pub dst: [u32; BURST_SIZE],
    /// Plain packets' flow keys, by slot (written only when `early`).
    pub keys: [FlowKeyV4; BURST_SIZE],
    /// Bit `i`: slot `i` holds a packet the router built itself, plain or
    /// not (an `lb` encapsulation): its source is the router's own by
    /// design, which `route` accepts from it alone (it drops received
    /// packets with such sources: `martians::Martians`). Cleared for
    /// every burst.
    pub built: SlotMask,
    /// The forwarder's martian screen ([`V4Screen`], set by the pipeline
    /// from its stages): a frame whose addresses it marks suspect does not
    /// take the lane but the full parse, and the forwarder decides it
    /// among the other packets. So a plain packet is never martian, and
    /// the forwarder's fast path checks no received packet's addresses.
    pub screen: V4Screen,
    /// The input port's device verified every frame's IPv4 header
    /// checksum and found it good (`Pipeline::set_rx_checksum_ports`):
    /// the sweep does not sum them again. Set before each sweep.
    pub device_verified: bool,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            parse: Parse::default(),
            in_port: 0,
            plain: 0,
            early: false,
            src: [0; BURST_SIZE],
            dst: [0; BURST_SIZE],
            keys: [FlowKeyV4::default(); BURST_SIZE],
            built: 0,
            screen: V4Screen::OPEN,
            device_verified: false,
        }
    }
}

impl Lane {
    #[inline(always)]
    pub fn is_plain(&self, i: usize) -> bool {
        self.plain & (1 << i) != 0
    }

    /// Plain packet `i`'s addresses.
    #[inline(always)]
    pub fn v4(&self, i: usize) -> FastV4 {
        FastV4 {
            src: self.src[i],
            dst: self.dst[i],
        }
    }

    /// The parse sweep over a burst received on `in_port`. `early`: a stage
    /// runs before the forwarder (see the module doc). `port_mac`: the
    /// input port's MAC ([`Parse::port_mac`]). `prefetch`: the forwarder's
    /// IPv4 table when it follows the sweep directly (not `early`) and is
    /// large: each plain packet's line of it is hinted here, so that the
    /// lookup after the sweep finds it on its way. In a large table most
    /// of those lines are far from the core, and their latency is the
    /// lookup's cost; the forwarder offers no table whose lines stay
    /// cached, where the hint would only cost (`docs/perf-log.md`). An
    /// early sweep does not hint: the stages in between bring their own
    /// memory traffic.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn sweep<P: PacketBuf>(
        &mut self,
        parse: &Parse,
        early: bool,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        port_mac: u64,
        prefetch: Option<Fib4Reader<'_>>,
    ) {
        self.parse = Parse { port_mac, ..*parse };
        let parse = &{ self.parse };
        self.in_port = in_port;
        self.early = early;
        self.built = 0;
        // RFC 1812 5.2.2's check, in software unless the device made it
        // for the whole burst (`device_verified`).
        let verify = parse.verify_checksum && !self.device_verified;
        // Compiled once per setting: no packet tests them.
        self.plain = match (verify, parse.l4, early) {
            (true, false, false) => {
                self.sweep_as::<P, true, false, false>(parse, pkts, meta, prefetch)
            }
            (true, true, false) => {
                self.sweep_as::<P, true, true, false>(parse, pkts, meta, prefetch)
            }
            (true, false, true) => {
                self.sweep_as::<P, true, false, true>(parse, pkts, meta, prefetch)
            }
            (true, true, true) => self.sweep_as::<P, true, true, true>(parse, pkts, meta, prefetch),
            (false, false, false) => {
                self.sweep_as::<P, false, false, false>(parse, pkts, meta, prefetch)
            }
            (false, true, false) => {
                self.sweep_as::<P, false, true, false>(parse, pkts, meta, prefetch)
            }
            (false, false, true) => {
                self.sweep_as::<P, false, false, true>(parse, pkts, meta, prefetch)
            }
            (false, true, true) => {
                self.sweep_as::<P, false, true, true>(parse, pkts, meta, prefetch)
            }
        };
    }

    /// [`Lane::sweep`] for `VERIFY` (`parse.verify_checksum`, unless the
    /// device verified the burst), `parse.l4` (`L4`) and `EARLY`; returns
    /// the plain mask.
    ///
    /// No data prefetch a few packets on: the sweep reads each header once,
    /// in order, as l3fwd's x86 LPM path does.
    #[inline(always)]
    fn sweep_as<P: PacketBuf, const VERIFY: bool, const L4: bool, const EARLY: bool>(
        &mut self,
        parse: &Parse,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        prefetch: Option<Fib4Reader<'_>>,
    ) -> SlotMask {
        debug_assert!((parse.verify_checksum || !VERIFY) && parse.l4 == L4);
        let in_port = self.in_port;
        let mut plain: SlotMask = 0;
        for (i, m) in meta[..pkts.len()].iter_mut().enumerate() {
            // Only checked builds write a plain packet's verdict: the
            // forwarder asserts that no stage changed it without taking
            // the packet off the lane.
            if cfg!(debug_assertions) {
                m.verdict = Verdict::Continue;
            }
            let Some(pkt) = pkts.get_mut(i) else {
                m.verdict = Verdict::Continue;
                m.in_port = in_port;
                continue;
            };
            if self.take_plain::<P, VERIFY, L4, EARLY>(i, pkt, prefetch) {
                plain |= 1 << i;
                continue;
            }
            m.verdict = Verdict::Continue;
            m.in_port = in_port;
            let len = pkt.pkt_len();
            match parse.parse_packet(pkt, m) {
                Err(reason) => m.verdict = Verdict::Drop(reason),
                // Trimmed (Ethernet padding, say): the frame may be plain
                // now, and a plain packet's `Meta` is simply not read.
                Ok(()) if pkt.pkt_len() < len => {
                    if self.take_plain::<P, VERIFY, L4, EARLY>(i, pkt, prefetch) {
                        plain |= 1 << i;
                    }
                }
                Ok(()) => {}
            }
        }
        plain
    }

    /// Puts packet `i` on the lane if it is plain ([`Parse::fast_v4`]).
    #[inline(always)]
    fn take_plain<P: PacketBuf, const VERIFY: bool, const L4: bool, const EARLY: bool>(
        &mut self,
        i: usize,
        pkt: &P,
        prefetch: Option<Fib4Reader<'_>>,
    ) -> bool {
        let port_mac = self.parse.port_mac;
        if EARLY {
            if let Some((h, k)) =
                Parse::fast_v4_keyed_as(pkt.data(), pkt.pkt_len(), port_mac, VERIFY, L4)
            {
                if self.screen.suspect(h.src, h.dst) != 0 {
                    return false;
                }
                self.keys[i] = k;
                self.src[i] = h.src;
                self.dst[i] = h.dst;
                return true;
            }
        } else if let Some(h) = Parse::fast_v4_as(pkt.data(), pkt.pkt_len(), port_mac, VERIFY, L4) {
            if self.screen.suspect(h.src, h.dst) != 0 {
                return false;
            }
            if let Some(t) = prefetch {
                t.prefetch(h.dst);
            }
            self.src[i] = h.src;
            self.dst[i] = h.dst;
            return true;
        }
        false
    }

    /// Gives plain packet `i` its full `Meta` (the parse's, as for any other
    /// packet) and takes it off the lane. `fast_v4` accepted the frame
    /// (one segment, exactly its IP packet), so the parse does too and
    /// trims nothing.
    #[inline(always)]
    pub fn materialize<P: PacketBuf>(&mut self, pkt: &P, meta: &mut MetaBurst, i: usize) {
        self.materialize_meta(pkt, &mut meta[i], i);
    }

    /// [`Lane::materialize`] for a stage holding slot `i`'s `Meta` alone.
    #[inline(never)]
    pub fn materialize_meta<P: PacketBuf>(&mut self, pkt: &P, m: &mut Meta, i: usize) {
        let parse = self.parse;
        m.verdict = Verdict::Continue;
        m.in_port = self.in_port;
        if let Err(reason) = parse.parse_one(pkt.data(), m) {
            m.verdict = Verdict::Drop(reason);
        }
        self.plain &= !(1 << i);
    }

    /// Decides plain packet `i` (its `Meta` is `m`): writes `verdict` and
    /// the input port there and takes it off the lane. Nothing else of its
    /// `Meta` is written (see the module doc).
    #[inline(always)]
    pub fn decide(&mut self, m: &mut Meta, i: usize, verdict: Verdict) {
        m.verdict = verdict;
        m.in_port = self.in_port;
        self.plain &= !(1 << i);
    }

    /// Writes packet `i`'s verdict: through [`Lane::decide`] if it is
    /// plain, else into its `Meta` alone.
    #[inline(always)]
    pub fn set_verdict(&mut self, m: &mut Meta, i: usize, verdict: Verdict) {
        if self.is_plain(i) {
            self.decide(m, i, verdict);
        } else {
            m.verdict = verdict;
        }
    }

    /// Takes the plain packets of `decided` off the lane, each with the
    /// verdict its stage wrote into its `Meta` ([`Lane::decide`]).
    #[inline]
    pub fn take_decided(&mut self, decided: SlotMask, meta: &mut MetaBurst) {
        for i in slots(decided & self.plain) {
            let v = meta[i].verdict;
            self.decide(&mut meta[i], i, v);
        }
    }

    /// Writes `Continue` and the input port for the packets still on the
    /// lane and empties it: after the last stage, when no forwarder took
    /// them, so that dispatch reads a verdict for every packet.
    #[cold]
    pub fn undecided_to_meta(&mut self, meta: &mut MetaBurst) {
        for i in slots(self.plain) {
            self.decide(&mut meta[i], i, Verdict::Continue);
        }
    }

    /// Checked builds: every packet on the lane still has the verdict the
    /// sweep wrote, i.e. no stage decided one without [`Lane::decide`].
    #[inline(always)]
    pub fn debug_check_undecided(&self, meta: &MetaBurst) {
        if cfg!(debug_assertions) {
            for i in slots(self.plain) {
                assert_eq!(
                    meta[i].verdict,
                    Verdict::Continue,
                    "slot {i} decided but left on the lane"
                );
            }
        }
    }

    /// Takes every plain packet off the lane (a stage that reads only `Meta`).
    pub fn materialize_all<P: PacketBuf>(&mut self, pkts: &Burst<P>, meta: &mut MetaBurst) {
        for i in slots(self.plain) {
            if let Some(p) = pkts.get(i) {
                self.materialize(p, meta, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::parse::mac_word;
    use crate::pipeline::{new_meta_burst, DropReason, VecPacket, L3};

    const US: [u8; 6] = [2, 0, 0, 0, 1, 1];

    /// UDP over IPv4 to `dst`, 46 bytes of IP (a 60-byte frame).
    fn udp4(dst: [u8; 6]) -> Vec<u8> {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], dst)
            .ipv4([10, 0, 1, 5], [198, 18, 1, 7], 64)
            .udp(4000, 53)
            .write(&mut v, &[7; 18])
            .unwrap();
        v
    }

    /// The sweep puts on the lane exactly the frames addressed to the
    /// port that hold their IP packet exactly, in one segment — padded
    /// ones once the parse has trimmed them — and drops or flags the rest
    /// as the parse does, in both sweep variants.
    #[test]
    fn only_frames_for_us_are_plain_and_padding_is_trimmed() {
        let exact = udp4(US);
        let mut padded = exact.clone();
        padded.resize(1000, 0xee);
        let frames = [
            VecPacket::new(exact.clone()),
            VecPacket::new(padded),
            VecPacket::new(udp4([2, 0, 0, 0, 2, 1])),
            VecPacket::new(udp4([0xff; 6])),
            VecPacket::chained(exact.clone(), 3000),
            VecPacket::new(exact[..50].to_vec()),
        ];
        for early in [false, true] {
            let mut pkts = Burst::<VecPacket>::new();
            for f in &frames {
                assert!(pkts.push(f.clone()).is_ok());
            }
            let mut meta = new_meta_burst();
            let mut lane = Lane::default();
            let parse = Parse::default();
            lane.sweep(&parse, early, &mut pkts, &mut meta, 0, mac_word(US), None);
            assert_eq!(lane.plain, 0b10011, "early {early}");
            assert_eq!(lane.dst[1], u32::from_be_bytes([198, 18, 1, 7]));
            assert_eq!(pkts.get(1).unwrap().bytes, exact, "padding trimmed");
            assert_eq!(pkts.get(4).unwrap().pkt_len(), exact.len(), "chain cut");
            assert_eq!(meta[2].verdict, Verdict::Drop(DropReason::NotForUs));
            assert_eq!(meta[3].verdict, Verdict::Continue);
            assert_eq!(meta[3].l3, L3::Ipv4);
            assert_ne!(
                meta[3].flags & crate::pipeline::meta::flags::L2_MULTICAST,
                0
            );
            assert_eq!(meta[5].verdict, Verdict::Drop(DropReason::BadTotalLen));
        }
    }

    /// A frame whose addresses the screen marks suspect (here a loopback
    /// source, by RFC 1812's tables) stays off the lane with its full
    /// parse, for the forwarder to decide; without a screen it is plain.
    #[test]
    fn screened_addresses_stay_off_the_lane() {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 9], US)
            .ipv4([127, 0, 0, 9], [198, 18, 1, 7], 64)
            .udp(4000, 53)
            .write(&mut v, &[7; 18])
            .unwrap();
        let screens = [
            (
                *crate::pipeline::route::martians::Martians::none().screen(),
                0b01,
            ),
            (V4Screen::OPEN, 0b11),
        ];
        for (screen, want) in screens {
            for early in [false, true] {
                let mut pkts = Burst::<VecPacket>::new();
                assert!(pkts.push(VecPacket::new(udp4(US))).is_ok());
                assert!(pkts.push(VecPacket::new(v.clone())).is_ok());
                let mut meta = new_meta_burst();
                let mut lane = Lane {
                    screen,
                    ..Lane::default()
                };
                lane.sweep(
                    &Parse::default(),
                    early,
                    &mut pkts,
                    &mut meta,
                    0,
                    mac_word(US),
                    None,
                );
                assert_eq!(lane.plain, want, "early {early}");
                if want & 2 == 0 {
                    assert_eq!(meta[1].verdict, Verdict::Continue);
                    assert_eq!(meta[1].l3, L3::Ipv4);
                    assert_eq!(meta[1].key.src_v4(), 0x7f00_0009);
                }
            }
        }
    }

    /// A burst whose checksums the device verified (`device_verified`)
    /// is not summed again (shown with a header the device could not
    /// truly have passed: its checksum is wrong); any other burst is, and
    /// a frame summed and found bad is dropped as `bad_checksum`, in every
    /// sweep variant.
    #[test]
    fn a_device_verified_burst_is_not_summed_again() {
        let good = udp4(US);
        let mut bad = good.clone();
        bad[24] ^= 0x55; // the IPv4 header checksum's first byte
        for (verified, want) in [(true, 0b11), (false, 0b10)] {
            for (l4, early) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut pkts = Burst::<VecPacket>::new();
                for f in [&bad, &good] {
                    assert!(pkts.push(VecPacket::new(f.clone())).is_ok());
                }
                let mut meta = new_meta_burst();
                let mut lane = Lane {
                    device_verified: verified,
                    ..Lane::default()
                };
                let parse = Parse {
                    l4,
                    ..Parse::default()
                };
                lane.sweep(&parse, early, &mut pkts, &mut meta, 0, mac_word(US), None);
                let case = format!("verified {verified} l4 {l4} early {early}");
                assert_eq!(lane.plain, want, "{case}");
                if !verified {
                    let bad = Verdict::Drop(DropReason::BadChecksum);
                    assert_eq!(meta[0].verdict, bad, "{case}");
                }
            }
        }
    }
}
