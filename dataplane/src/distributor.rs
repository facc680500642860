//! Ring mode's receiving core (`[distributor]`): for devices with one RX
//! queue (pcap, af_packet, tap, memif), where RSS cannot spread flows over
//! cores, one pinned lcore receives, hashes each packet's flow and hands
//! the mbuf, zero-copy, to a worker through a single-producer/single-
//! consumer `rte_ring`; the workers run the pipeline and transmit on their
//! own TX queues.
//!
//! Promises:
//! * every packet of a flow goes to the same worker, through the same ring
//!   (one per input port and worker), so per-flow order is the order of
//!   arrival: a burst is split by worker in order and each ring is FIFO;
//! * the hash is the load balancer's flow hash ([`lb_hash_v4`],
//!   [`lb_hash_v6`]) over the 5-tuple the pipeline's own `parse` reads
//!   (the same [`Parse::parse_one`], so the same tags, extension headers
//!   and port rules), with ports left out of IP fragments (the first one
//!   included) so a datagram's fragments stay together; frames that are
//!   not IP, or that parse refuses, go to the first fed worker, which
//!   counts them as the pipeline would;
//! * a full ring never blocks: what did not fit is freed in bulk and
//!   counted as `ring_full` (per worker, and as a drop reason);
//! * each packet is counted once as `rx`, here, where it entered; a worker
//!   counts what it takes from its rings as `ring_rx`;
//! * at stop it stops receiving, then raises its `done` flag (release):
//!   each worker empties its rings through the pipeline before it exits,
//!   so no mbuf stays in a ring.
//!
//! No locks, allocation or logging in the loop; the one shared write it
//! reads is the relaxed stop flag.
use crate::burst::{Burst, BURST_SIZE};
use crate::config::DistributorHash;
use crate::dpdk::mbuf::free_bulk;
use crate::dpdk::port::RxQueue;
use crate::dpdk::ring::RingProducer;
use crate::dpdk::{rdtsc, Mbuf};
use crate::pipeline::parse::{fragment_v4, fragment_v6, Parse};
use crate::pipeline::{DropReason, Meta, L3};
use crate::stats::{DistributorCounters, DistributorStats};
use crate::tables::lb::{lb_hash_v4, lb_hash_v6};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Which worker a frame goes to: `(hash × workers) >> 32`, the hash's top
/// bits. (The load balancer's connection table picks buckets by the low
/// bits of the same hash, so each worker's table is used evenly.)
#[derive(Debug, Clone, Copy)]
pub struct Steering {
    parse: Parse,
    workers: u32,
}

impl Steering {
    /// Steering over `workers` workers (at least one).
    pub fn new(workers: usize, hash: DistributorHash) -> Steering {
        debug_assert!(workers > 0);
        Steering {
            parse: Parse {
                l4: hash == DistributorHash::FiveTuple,
                hash: false,
                // The worker verifies (and drops); a bad checksum needs no
                // particular worker.
                verify_checksum: false,
                // Any destination: the worker applies the L2 rule.
                port_mac: 0,
            },
            workers: workers as u32,
        }
    }

    /// The frame's flow hash, `None` for a frame that is not IP or that
    /// parse refuses. `m` is scratch space for the parse.
    #[inline]
    pub fn flow_hash(&self, data: &[u8], m: &mut Meta) -> Option<u32> {
        self.parse.parse_any_dst(data, m).ok()?;
        let k = &m.key;
        // An ICMP error goes where the flow it quotes goes (reversed: the
        // quoted packet left toward the sender of the flow), so that it
        // meets that flow's connection entry (`lb` steers it by it).
        if matches!(k.proto, 1 | 58) {
            if let Some(h) = self.quoted_hash(data, m) {
                return Some(h);
            }
        }
        match m.l3 {
            L3::Ipv4 => {
                let (sp, dp) = if self.parse.l4 && !fragment_v4(data, m) {
                    (k.sport(), k.dport())
                } else {
                    (0, 0)
                };
                Some(lb_hash_v4(k.src_v4(), k.dst_v4(), sp, dp, k.proto))
            }
            L3::Ipv6 => {
                let (sp, dp) = if self.parse.l4 && !fragment_v6(data, m) {
                    (k.sport(), k.dport())
                } else {
                    (0, 0)
                };
                let (s, d) = (u128::from_be_bytes(k.src), u128::from_be_bytes(k.dst));
                Some(lb_hash_v6(s, d, sp, dp, k.proto))
            }
            _ => None,
        }
    }

    /// The hash of the flow an ICMP error quotes, as that flow's own
    /// packets hash (its source and destination swapped back).
    #[cold]
    fn quoted_hash(&self, data: &[u8], m: &Meta) -> Option<u32> {
        let v6 = m.l3 == L3::Ipv6;
        let q = crate::pipeline::lb::icmp::quoted_flow(data, m, v6)?;
        let (sp, dp) = if self.parse.l4 {
            (q.dport, q.sport)
        } else {
            (0, 0)
        };
        Some(if v6 {
            lb_hash_v6(q.dst, q.src, sp, dp, q.proto)
        } else {
            lb_hash_v4(q.dst as u32, q.src as u32, sp, dp, q.proto)
        })
    }

    /// Index (among the fed workers) of the worker for this frame.
    #[inline]
    pub fn worker_of(&self, data: &[u8], m: &mut Meta) -> usize {
        match self.flow_hash(data, m) {
            Some(h) => ((u64::from(h) * u64::from(self.workers)) >> 32) as usize,
            None => 0,
        }
    }
}

/// Splits `burst` by worker, in order, into `outs` (one per fed worker,
/// empty on entry and on return) and enqueues each part into that
/// worker's ring in `rings`; what a full ring refused is freed in bulk and
/// counted. Leaves `burst` empty.
#[inline]
pub fn distribute(
    steering: &Steering,
    burst: &mut Burst<Mbuf>,
    meta: &mut Meta,
    outs: &mut [Burst<Mbuf>],
    rings: &mut [RingProducer],
    stats: &DistributorCounters,
) {
    const PREFETCH: usize = 3;
    for i in 0..PREFETCH.min(burst.len()) {
        if let Some(p) = burst.get(i) {
            p.prefetch_data();
        }
    }
    for i in 0..burst.len() {
        if let Some(p) = burst.get(i + PREFETCH) {
            p.prefetch_data();
        }
        let Some(m) = burst.take(i) else { continue };
        let w = steering.worker_of(m.data(), meta);
        // Cannot fail: `outs[w]` is emptied after every burst, and a burst
        // holds at most as many packets as it.
        if let Err(m) = outs[w].push(m) {
            debug_assert!(false, "an output burst overflowed");
            drop(m);
        }
    }
    burst.set_len(0);
    for (k, out) in outs.iter_mut().enumerate() {
        let len = out.len();
        if len == 0 {
            continue;
        }
        let sent = rings[k].enqueue_burst(out);
        stats.enqueued[k].add(sent as u64);
        if sent < len {
            refused(out, k, stats);
        }
    }
}

/// A full ring's leftovers: freed in bulk, counted.
#[cold]
#[inline(never)]
fn refused(out: &mut Burst<Mbuf>, k: usize, stats: &DistributorCounters) {
    let n = out.len() as u64;
    stats.ring_full[k].add(n);
    stats.base.count_drop(DropReason::RingFull, n);
    free_bulk(out);
}

/// Raised once the distributor enqueues no more (release store), also when
/// its job is dropped without running or unwinds: the workers it feeds
/// wait for it before their last pass over the rings.
pub struct DoneFlag(pub Arc<AtomicBool>);

impl DoneFlag {
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Drop for DoneFlag {
    fn drop(&mut self) {
        self.raise();
    }
}

/// Everything the distributor needs, moved onto its lcore.
pub struct Distributor {
    /// (port slot, queue): the slot indexes `rings` and `stats.port_rx`.
    pub rx: Vec<(usize, RxQueue)>,
    /// `rings[slot][k]`: from port slot `slot` to fed worker `k`.
    pub rings: Vec<Vec<RingProducer>>,
    pub steering: Steering,
    pub stats: Arc<DistributorStats>,
    pub stop: Arc<AtomicBool>,
    pub done: DoneFlag,
}

impl Distributor {
    /// The poll loop; returns 0 when stopped by the flag.
    pub fn run(self) -> i32 {
        let Distributor {
            mut rx,
            mut rings,
            steering,
            stats,
            stop,
            done,
        } = self;
        let workers = rings.first().map_or(0, Vec::len);
        let mut outs: Vec<Burst<Mbuf>> = (0..workers).map(|_| Burst::new()).collect();
        let mut burst: Burst<Mbuf, BURST_SIZE> = Burst::new();
        let mut meta = Meta::default();
        let c = &stats.base;
        // As the worker: the TSC after every empty poll, every 4th busy one.
        const TSC_EVERY: u32 = 4;
        let start = rdtsc();
        let mut t0 = start;
        let mut busy_run = 0u32;
        let mut span_busy = false;
        let mut last_total = start;
        while !stop.load(Ordering::Relaxed) {
            let mut got = 0usize;
            for (slot, q) in rx.iter_mut() {
                let n = q.rx_burst(&mut burst);
                if n == 0 {
                    continue;
                }
                got += n;
                stats.port_rx[*slot].add(n as u64);
                distribute(
                    &steering,
                    &mut burst,
                    &mut meta,
                    &mut outs,
                    &mut rings[*slot],
                    &stats,
                );
            }
            if got == 0 {
                c.empty_polls.add(1);
                busy_run = 0;
            } else {
                c.rx.add(got as u64);
                c.bursts.add(1);
                span_busy = true;
                busy_run += 1;
                if busy_run < TSC_EVERY {
                    continue;
                }
                busy_run = 0;
            }
            let t1 = rdtsc();
            if span_busy {
                c.busy_cycles.add(t1 - t0);
                span_busy = false;
            }
            if t1.wrapping_sub(last_total) > 1 << 20 {
                c.total_cycles.set(t1 - start);
                last_total = t1;
            }
            t0 = t1;
        }
        c.total_cycles.set(rdtsc() - start);
        // Everything enqueued so far is visible to a worker that sees this.
        done.raise();
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(src, dst, 64)
            .udp(sport, dport)
            .write(&mut v, &[0; 18])
            .unwrap();
        v
    }

    /// An untagged IPv4/UDP frame, written out field by field.
    #[rustfmt::skip]
    const UDP4: [u8; 46] = [
        2, 0, 0, 0, 0, 2,           // destination MAC
        2, 0, 0, 0, 0, 1,           // source MAC
        0x08, 0x00,                 // EtherType IPv4
        0x45, 0x00,                 // version 4, IHL 5; DSCP/ECN
        0x00, 0x20,                 // total length 32
        0x00, 0x00, 0x00, 0x00,     // id; flags/fragment offset 0
        64, 17,                     // TTL; protocol UDP
        0x00, 0x00,                 // header checksum (not verified here)
        10, 0, 0, 1,                // source 10.0.0.1
        198, 18, 0, 10,             // destination 198.18.0.10
        0x04, 0xd2, 0x00, 0x50,     // ports 1234 -> 80
        0x00, 0x0c, 0x00, 0x00,     // UDP length 12, checksum 0
        0, 0, 0, 0,                 // payload
    ];

    /// An ICMP error about a reply of a flow (VIP:80 -> client) steers as
    /// the flow (client -> VIP:80) itself.
    #[test]
    fn icmp_errors_go_where_their_flow_goes() {
        let s = Steering::new(4, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        let flow = udp4([198, 51, 100, 7], [198, 18, 0, 10], 4000, 80);
        let reply = {
            let mut v = Vec::new();
            PacketBuilder::ipv4([198, 18, 0, 10], [198, 51, 100, 7], 64)
                .udp(80, 4000)
                .write(&mut v, &[0; 18])
                .unwrap();
            v
        };
        let mut err = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([203, 0, 113, 1], [198, 18, 0, 10], 64)
            .icmpv4(etherparse::Icmpv4Type::DestinationUnreachable(
                etherparse::icmpv4::DestUnreachableHeader::FragmentationNeeded {
                    next_hop_mtu: 1280,
                },
            ))
            .write(&mut err, &reply[..28])
            .unwrap();
        let want = s.flow_hash(&flow, &mut m).unwrap();
        assert_eq!(s.flow_hash(&err, &mut m), Some(want));
        // An echo request is no error: hashed by its own addresses.
        let mut echo = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([203, 0, 113, 1], [198, 18, 0, 10], 64)
            .icmpv4_echo_request(1, 1)
            .write(&mut echo, &[0; 8])
            .unwrap();
        assert_eq!(
            s.flow_hash(&echo, &mut m),
            Some(lb_hash_v4(0xcb00_7101, 0xc612_000a, 0, 0, 1))
        );
    }

    #[test]
    fn hash_is_the_load_balancers_over_the_five_tuple() {
        let s = Steering::new(4, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        assert_eq!(
            s.flow_hash(&UDP4, &mut m),
            Some(lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 17))
        );
        let three = Steering::new(4, DistributorHash::ThreeTuple);
        assert_eq!(
            three.flow_hash(&UDP4, &mut m),
            Some(lb_hash_v4(0x0a00_0001, 0xc612_000a, 0, 0, 17))
        );
    }

    #[test]
    fn a_flow_always_reaches_one_worker_and_flows_spread() {
        let s = Steering::new(3, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        let mut per = [0usize; 3];
        for f in 0..3000u16 {
            let frame = udp4(
                [10, 0, (f >> 8) as u8, f as u8],
                [198, 18, 0, 1],
                1000 + f,
                53,
            );
            let w = s.worker_of(&frame, &mut m);
            assert!(w < 3);
            for _ in 0..3 {
                assert_eq!(s.worker_of(&frame, &mut m), w, "flow {f}");
            }
            per[w] += 1;
        }
        // 1,000 expected each; far outside ±15 % would mean a broken mix.
        assert!(per.iter().all(|&n| (850..=1150).contains(&n)), "{per:?}");
    }

    #[test]
    fn vlan_tag_and_ipv6_parse_as_the_pipeline_does() {
        let s = Steering::new(8, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        let mut tagged = Vec::new();
        PacketBuilder::ethernet2([2; 6], [4; 6])
            .single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv4([10, 0, 0, 1], [198, 18, 0, 10], 64)
            .udp(1234, 80)
            .write(&mut tagged, &[0; 18])
            .unwrap();
        assert_eq!(
            s.flow_hash(&tagged, &mut m),
            Some(lb_hash_v4(0x0a00_0001, 0xc612_000a, 1234, 80, 17))
        );
        let mut v6 = Vec::new();
        let (src, dst) = (
            "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap(),
            "2001:db8:1::9".parse::<std::net::Ipv6Addr>().unwrap(),
        );
        PacketBuilder::ethernet2([2; 6], [4; 6])
            .ipv6(src.octets(), dst.octets(), 64)
            .tcp(4000, 443, 1, 100)
            .write(&mut v6, &[0; 8])
            .unwrap();
        assert_eq!(
            s.flow_hash(&v6, &mut m),
            Some(lb_hash_v6(src.into(), dst.into(), 4000, 443, 6))
        );
    }

    #[test]
    fn fragments_hash_without_ports_so_a_datagram_stays_together() {
        let s = Steering::new(8, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        let three = Some(lb_hash_v4(0x0a00_0001, 0xc612_000a, 0, 0, 17));
        // First fragment: MF set, offset 0 (ports present).
        let mut first = UDP4;
        first[20] = 0x20;
        assert_eq!(s.flow_hash(&first, &mut m), three);
        // A later one: offset 8 bytes, no ports.
        let mut later = UDP4;
        later[21] = 1;
        assert_eq!(s.flow_hash(&later, &mut m), three);
        // IPv6: a Fragment header right after the fixed one, offset 0, M set.
        let (src, dst) = (
            [0x20, 1, 0xd, 0xb8].repeat(4),
            [0x20, 1, 0xd, 0xb9].repeat(4),
        );
        let mut v6 = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        v6.extend_from_slice(&[0x60, 0, 0, 0, 0, 16, 44, 64]); // payload 16, next: Fragment
        v6.extend_from_slice(&src);
        v6.extend_from_slice(&dst);
        v6.extend_from_slice(&[17, 0, 0x00, 0x01, 0, 0, 0, 9]); // UDP, offset 0, M, id 9
        v6.extend_from_slice(&[0x04, 0xd2, 0x00, 0x50, 0, 8, 0, 0]); // UDP 1234 -> 80
        let a = |b: &[u8]| u128::from_be_bytes(b.try_into().unwrap());
        assert_eq!(
            s.flow_hash(&v6, &mut m),
            Some(lb_hash_v6(a(&src), a(&dst), 0, 0, 17))
        );
    }

    /// Over real mbufs and rings: a burst split in order by flow, zero
    /// copy; a full ring's leftovers freed and counted as `ring_full`; what
    /// was enqueued comes out of the right ring in arrival order.
    #[test]
    fn distribute_keeps_flow_order_and_counts_a_full_ring() {
        use crate::dpdk::mempool::DEFAULT_DATA_ROOM;
        use crate::dpdk::{Mempool, Ring};
        let _l = crate::tables::testing::test_lock();
        let pool = Mempool::new_pktmbuf("t_dist_pool", 255, 0, DEFAULT_DATA_ROOM, 0).unwrap();
        let (r0, p0, mut c0) = Ring::spsc("t_dist_r0", 64, 0).unwrap();
        let (r1, p1, mut c1) = Ring::spsc("t_dist_r1", 64, 0).unwrap();
        let mut producers = vec![p0, p1];
        let steering = Steering::new(2, DistributorHash::FiveTuple);
        let stats = DistributorCounters::new(1, 2);
        let mut outs: Vec<Burst<Mbuf>> = (0..2).map(|_| Burst::new()).collect();
        let mut meta = Meta::default();
        // 8 flows, 4 bursts of 32 (4 packets per flow per burst); the
        // payload's first byte is the sequence number within its flow.
        let frames = |f: u16, seq: u8| {
            let mut v = Vec::new();
            PacketBuilder::ethernet2([2; 6], [4; 6])
                .ipv4([10, 0, 0, f as u8], [198, 18, 0, 1], 64)
                .udp(2000 + f, 53)
                .write(&mut v, &[seq; 18])
                .unwrap();
            v
        };
        let mut want: [Vec<(u16, u8)>; 2] = Default::default();
        for b in 0..4u8 {
            let mut burst: Burst<Mbuf> = Burst::new();
            for i in 0..32u8 {
                let (f, seq) = (u16::from(i % 8), b * 4 + i / 8);
                let frame = frames(f, seq);
                let w = steering.worker_of(&frame, &mut meta);
                want[w].push((f, seq));
                burst
                    .push(pool.alloc_from(&frame).unwrap())
                    .map_err(|_| ())
                    .unwrap();
            }
            distribute(
                &steering,
                &mut burst,
                &mut meta,
                &mut outs,
                &mut producers,
                &stats,
            );
            assert!(burst.is_empty() && outs.iter().all(|o| o.is_empty()));
        }
        let enq = [stats.enqueued[0].get(), stats.enqueued[1].get()];
        let full = [stats.ring_full[0].get(), stats.ring_full[1].get()];
        assert_eq!(enq[0] + enq[1] + full[0] + full[1], 128);
        assert_eq!(
            stats.base.drops[DropReason::RingFull as usize].get(),
            full[0] + full[1]
        );
        for (k, c) in [&mut c0, &mut c1].into_iter().enumerate() {
            // 63 usable slots: the rest of that worker's packets were refused.
            assert_eq!(enq[k], (want[k].len() as u64).min(63), "worker {k}");
            assert_eq!(full[k], want[k].len() as u64 - enq[k]);
            let mut got = Vec::new();
            let mut out: Burst<Mbuf> = Burst::new();
            while c.dequeue_burst(&mut out) > 0 {
                for m in out.iter() {
                    let d = m.data();
                    got.push((u16::from(d[14 + 15]), d[42]));
                }
                free_bulk(&mut out);
            }
            // What was enqueued is a prefix of the arrivals, in order.
            assert_eq!(got, want[k][..enq[k] as usize], "worker {k}");
        }
        assert!(full.iter().any(|&n| n > 0), "a ring overflowed: {full:?}");
        assert_eq!(pool.in_use_count(), 0, "refused packets were freed");
        drop((r0, r1));
    }

    #[test]
    fn non_ip_and_malformed_frames_go_to_the_first_worker() {
        let s = Steering::new(8, DistributorHash::FiveTuple);
        let mut m = Meta::default();
        let mut arp = vec![0xff; 6];
        arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(s.flow_hash(&arp, &mut m), None);
        assert_eq!(s.worker_of(&arp, &mut m), 0);
        assert_eq!(s.worker_of(&UDP4[..20], &mut m), 0, "truncated");
        let mut lldp = UDP4;
        lldp[12..14].copy_from_slice(&[0x88, 0xcc]);
        assert_eq!(s.worker_of(&lldp, &mut m), 0);
    }
}
