//! Tests of the safe wrappers against a real EAL (`--no-huge`): mbufs come
//! back to their pool, rings move packets without copying, bursts free in
//! bulk.
use super::mbuf::free_bulk;
use super::ring::{Ring, RingSync};
use super::Mempool;
use crate::burst::Burst;
use crate::tables::testing::test_lock;
use std::sync::atomic::{AtomicU32, Ordering};

fn pool(n: u32) -> Mempool {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let name = format!("t_pool{}", SEQ.fetch_add(1, Ordering::Relaxed));
    // Cache 0: counts are exact without per-lcore caches in the way.
    Mempool::new_pktmbuf(&name, n, 0, super::mempool::DEFAULT_DATA_ROOM, 0).unwrap()
}

#[test]
fn mbufs_return_to_their_pool() {
    let _l = test_lock();
    let p = pool(63);
    assert_eq!(p.in_use_count(), 0);
    let a = p.alloc().unwrap();
    let b = p.alloc_from(&[1, 2, 3]).unwrap();
    assert_eq!(p.in_use_count(), 2);
    assert_eq!(b.data(), &[1, 2, 3]);
    drop(a);
    drop(b);
    assert_eq!(p.in_use_count(), 0);
    assert_eq!(p.avail_count(), 63);
}

#[test]
fn pool_exhaustion_is_none_not_a_crash() {
    let _l = test_lock();
    let p = pool(15);
    let all: Vec<_> = (0..15).map(|_| p.alloc().unwrap()).collect();
    assert!(p.alloc().is_none());
    drop(all);
    assert_eq!(p.in_use_count(), 0);
}

#[test]
fn mbuf_length_changes() {
    let _l = test_lock();
    let p = pool(15);
    let mut m = p.alloc_from(&[0xaa; 60]).unwrap();
    assert_eq!((m.data_len(), m.pkt_len(), m.nb_segs()), (60, 60, 1));
    assert!(m.resize(100));
    assert_eq!(m.data_len(), 100);
    assert!(m.resize(42));
    assert_eq!(m.data(), &[0xaa; 42]);
    let head = m.prepend(4).unwrap();
    head.copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(&m.data()[..5], &[1, 2, 3, 4, 0xaa]);
    assert!(m.adj(4));
    assert_eq!(m.data_len(), 42);
    assert!(!m.trim(43), "cannot trim more than the packet");
    assert!(m.append(1 << 16).is_none(), "beyond the data room");
    let room = m.tailroom();
    assert!(m.append(room).is_some());
    assert!(m.append(1).is_none());
    m.data_mut()[0] = 7;
    assert_eq!(m.data()[0], 7);
    drop(m);
    assert_eq!(p.in_use_count(), 0);
}

/// A chain (what a PMD makes of a frame over one buffer): its length is
/// the sum of its segments; the pipeline sees the first segment; cutting it
/// frees the segments past the cut (back in the pool), also when the cut
/// falls on a segment boundary; it cannot grow; a chain whose length
/// disagrees with its segments is refused.
#[test]
fn chains_are_cut_and_freed() {
    use crate::pipeline::PacketBuf;
    let _l = test_lock();
    let p = pool(15);
    let chain = |lens: &[usize]| {
        let mut head = p.alloc_from(&vec![1u8; lens[0]]).unwrap();
        for (k, &n) in lens[1..].iter().enumerate() {
            assert!(head.chain(p.alloc_from(&vec![k as u8 + 2; n]).unwrap()));
        }
        head
    };
    let mut m = chain(&[100, 200, 300]);
    assert_eq!((m.pkt_len(), m.data_len(), m.nb_segs()), (600, 100, 3));
    assert!(m.chain_ok());
    assert_eq!(PacketBuf::data(&m).len(), 100, "the first segment");
    assert_eq!(p.in_use_count(), 3);
    assert!(!m.resize(601), "a chain does not grow");
    assert!(m.resize(250), "into the second segment");
    assert_eq!((m.pkt_len(), m.data_len(), m.nb_segs()), (250, 100, 2));
    assert!(m.chain_ok());
    assert_eq!(p.in_use_count(), 2, "the third segment is back in the pool");
    assert!(m.resize(100), "on the first segment's end");
    assert_eq!((m.pkt_len(), m.data_len(), m.nb_segs()), (100, 100, 1));
    assert_eq!(p.in_use_count(), 1);
    assert!(m.resize(150), "a single segment grows again");
    drop(m);
    assert_eq!(p.in_use_count(), 0);
    let mut m = chain(&[60, 2000, 2000, 2000]);
    assert!(m.truncate(42));
    assert_eq!((m.pkt_len(), m.data_len(), m.nb_segs()), (42, 42, 1));
    assert_eq!(p.in_use_count(), 1);
    drop(m);
    // pkt_len disagreeing with the segments: refused, nothing changed.
    let mut m = chain(&[100, 100]);
    // SAFETY: only the head's length field is changed, as a broken PMD
    // would leave it; the chain itself stays valid for the free.
    unsafe {
        (*m.clone_ptr_for_test()).pkt_len = 150;
    }
    assert!(!m.chain_ok());
    assert!(!m.resize(50));
    assert_eq!(m.nb_segs(), 2);
    drop(m);
    assert_eq!(p.in_use_count(), 0);
}

#[test]
fn ipv4_checksum_request_sets_what_the_pmd_reads() {
    let _l = test_lock();
    let p = pool(15);
    let mut m = p.alloc_from(&[0; 64]).unwrap();
    assert_eq!(m.ipv4_checksum_request(), None, "a fresh mbuf asks nothing");
    m.request_ipv4_checksum(18, 24);
    assert_eq!(m.ipv4_checksum_request(), Some((18, 24)));
    let want = dpdk_sys::RTE_MBUF_F_TX_IPV4 | dpdk_sys::RTE_MBUF_F_TX_IP_CKSUM;
    assert_eq!(m.ol_flags() & want, want);
    // Read back through bindgen's own bit-field accessors, which follow
    // the C declaration: l2_len and l3_len where a PMD reads them.
    let raw = m.into_raw();
    // SAFETY: raw is the live mbuf just taken from `m`; it is handed back
    // to an Mbuf (and freed) right after.
    let (l2, l3) = unsafe {
        let f = &raw.as_ref().__bindgen_anon_3.__bindgen_anon_1;
        (f.l2_len(), f.l3_len())
    };
    assert_eq!((l2, l3), (18, 24));
    // SAFETY: raw came from into_raw above and is owned by nobody else.
    drop(unsafe { super::Mbuf::from_raw(raw) });
    assert_eq!(p.in_use_count(), 0);
}

/// Only the RX flag "IP checksum good" reads as good: bad, unknown and
/// "none" (header not verified, e.g. by a virtual device) are summed by
/// the pipeline itself.
#[test]
fn only_a_good_rx_ip_checksum_flag_reads_as_good() {
    let _l = test_lock();
    let p = pool(15);
    let mut m = p.alloc_from(&[0; 64]).unwrap();
    assert!(!m.rx_ipv4_checksum_good(), "a fresh mbuf");
    for (flag, good) in [
        (dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_GOOD, true),
        (dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_BAD, false),
        (dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_NONE, false),
        (dpdk_sys::RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, false),
    ] {
        m.set_ol_flags(u64::from(flag) | u64::from(dpdk_sys::RTE_MBUF_F_RX_L4_CKSUM_BAD));
        assert_eq!(m.rx_ipv4_checksum_good(), good, "flag {flag:#x}");
    }
    drop(m);
    assert_eq!(p.in_use_count(), 0);
}

#[test]
fn free_bulk_empties_the_burst_and_skips_holes() {
    let _l = test_lock();
    let p = pool(63);
    let mut b: Burst<super::Mbuf> = Burst::new();
    for i in 0..20u8 {
        b.push(p.alloc_from(&[i]).unwrap()).map_err(|_| ()).unwrap();
    }
    let kept = b.take(3).unwrap();
    assert_eq!(p.in_use_count(), 20);
    free_bulk(&mut b);
    assert!(b.is_empty());
    assert_eq!(p.in_use_count(), 1);
    assert_eq!(kept.data(), &[3]);
    drop(kept);
    assert_eq!(p.in_use_count(), 0);
}

#[test]
fn ring_moves_mbufs_without_copying() {
    let _l = test_lock();
    let p = pool(127);
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let r = Ring::new(
        &format!("t_ring{}", SEQ.fetch_add(1, Ordering::Relaxed)),
        64,
        0,
        RingSync::Spsc,
    )
    .unwrap();
    // Bursts of 32 on a ring of 64, whatever the worker's burst size.
    let mut b: Burst<super::Mbuf, 32> = Burst::new();
    let mut addrs = Vec::new();
    for i in 0..32u8 {
        let m = p.alloc_from(&[i, i]).unwrap();
        addrs.push(m.data().as_ptr() as usize);
        b.push(m).map_err(|_| ()).unwrap();
    }
    assert_eq!(r.enqueue_burst(&mut b), 32);
    assert!(b.is_empty());
    assert_eq!(r.count(), 32);
    // A second burst does not fit entirely (63 usable slots).
    for i in 0..32u8 {
        b.push(p.alloc_from(&[i]).unwrap()).map_err(|_| ()).unwrap();
    }
    assert_eq!(r.enqueue_burst(&mut b), 31);
    assert_eq!(b.len(), 1, "what did not fit stays with the caller");
    free_bulk(&mut b);
    let mut out: Burst<super::Mbuf, 32> = Burst::new();
    assert_eq!(r.dequeue_burst(&mut out), 32);
    for (i, m) in out.iter().enumerate() {
        assert_eq!(m.data(), &[i as u8, i as u8]);
        assert_eq!(
            m.data().as_ptr() as usize,
            addrs[i],
            "same buffer, not a copy"
        );
    }
    free_bulk(&mut out);
    assert_eq!(r.drain(), 31);
    assert_eq!(p.in_use_count(), 0);
}

#[test]
fn eal_cannot_start_twice() {
    let _l = test_lock();
    let err = super::Eal::init(&["again", "--no-huge"]).err().unwrap();
    assert!(err.to_string().contains("already initialised"), "{err}");
}

/// `PacketBuf::prepend`/`adj` on an mbuf behave as on the pipeline's
/// `VecPacket`: headroom in front, refused (unchanged) past it.
#[test]
fn packetbuf_prepend_and_adj_on_an_mbuf() {
    use crate::pipeline::{PacketBuf, VecPacket};
    let _l = test_lock();
    let p = pool(15);
    let mut m = p.alloc_from(&[7; 30]).unwrap();
    let mut v = VecPacket::new(vec![7; 30]);
    let room = m.headroom();
    assert_eq!(
        room,
        usize::from(crate::pipeline::packet::VEC_PACKET_HEADROOM),
        "the models agree"
    );
    for pkt in [&mut m as &mut dyn PacketBufDyn, &mut v] {
        assert!(pkt.prepend_(20));
        assert_eq!(pkt.len_(), 50);
        assert!(!pkt.prepend_(room), "past the headroom");
        assert_eq!(pkt.len_(), 50);
        assert!(pkt.adj_(20));
        assert_eq!(pkt.len_(), 30);
        assert!(!pkt.adj_(31));
    }
    drop(m);
    assert_eq!(p.in_use_count(), 0);

    /// Object-safe view of the two calls, to run both carriers through one loop.
    trait PacketBufDyn {
        fn prepend_(&mut self, n: usize) -> bool;
        fn adj_(&mut self, n: usize) -> bool;
        fn len_(&self) -> usize;
    }
    impl<T: PacketBuf> PacketBufDyn for T {
        fn prepend_(&mut self, n: usize) -> bool {
            self.prepend(n)
        }
        fn adj_(&mut self, n: usize) -> bool {
            self.adj(n)
        }
        fn len_(&self) -> usize {
            self.data().len()
        }
    }
}
