//! The route stage on literal packets: path-MTU errors (ICMP fragmentation
//! needed, ICMPv6 packet too big), the `too_big_no_df` drop, and the books
//! (`rx + originated = tx + dropped + consumed`) for each. On the
//! `linear` route backend and the Rust neighbour map: no EAL.
use super::RouteStage;
use crate::burst::Burst;
use crate::pipeline::parse::Parse;
use crate::pipeline::{
    dispatch, new_meta_burst, Collect, DropReason, Event, Pipeline, Stage, StageCtx, VecPacket,
    Verdict,
};
use crate::stats::{Originated, WorkerCounters};
use crate::tables::neighbor::{NeighborBackend, NeighborTable};
use crate::tables::routing::{PortAddrs, RouteSpec, RouteTarget, Routing};
use crate::tables::{Prefix, RouteBackend, RouteConfig};
use crate::wire::checksum::internet_checksum;
use crate::wire::Icmpv6Packet;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

const LAN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
const WAN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x01];
const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0xaa, 0x01];
const GW_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x02];

/// lan (port 0, MTU 1500) and wan (port 1, MTU 1400); 198.18.1.0/24 and
/// 2001:db8:100::/48 via resolved gateways on wan.
fn routing() -> Arc<Routing> {
    let port = |mac, v4: &str, v6: &str, mtu| PortAddrs {
        mac,
        v4: vec![(v4.parse().unwrap(), 24)],
        v6: vec![(v6.parse().unwrap(), 64)],
        mtu,
        ipv4_checksum_offload: false,
    };
    let gw4: IpAddr = "10.0.2.2".parse().unwrap();
    let gw6: IpAddr = "2001:db8:2::2".parse().unwrap();
    let routes = [
        RouteSpec {
            prefix: Prefix::new("198.18.1.0".parse().unwrap(), 24).unwrap(),
            target: RouteTarget::Via(vec![(gw4, 1)]),
        },
        RouteSpec {
            prefix: Prefix::new("2001:db8:100::".parse().unwrap(), 48).unwrap(),
            target: RouteTarget::Via(vec![(gw6, 1)]),
        },
    ];
    let small = RouteConfig {
        backend: RouteBackend::Linear,
        max_routes: 64,
        num_tbl8: 1,
    };
    Arc::new(
        Routing::build(
            vec![
                port(LAN_MAC, "10.0.1.1", "2001:db8:1::1", 1500),
                port(WAN_MAC, "10.0.2.1", "2001:db8:2::1", 1400),
            ],
            &routes,
            &[(1, gw4, GW_MAC), (1, gw6, GW_MAC)],
            small,
            small,
            Arc::new(NeighborTable::with_backend(NeighborBackend::Rust, 64).unwrap()),
        )
        .unwrap(),
    )
}

/// What a burst did.
struct Run {
    verdicts: Vec<Verdict>,
    out: Collect<VecPacket>,
    counters: WorkerCounters,
}

/// Runs `frames` in on lan through parse + route (`icmp_rate` errors per
/// second, as many at once), on the lane or stage by stage, and checks the
/// books as a worker keeps them.
fn run(frames: &[Vec<u8>], icmp_rate: u32, lane: bool) -> Run {
    let mut p = Pipeline::new(vec![
        Stage::Parse(Parse::default()),
        Stage::Route(Box::new(RouteStage::new(routing(), icmp_rate))),
    ]);
    p.set_port_macs(&[LAN_MAC, WAN_MAC]);
    p.set_lane(lane);
    let mut burst = Burst::<VecPacket>::new();
    for f in frames {
        burst.push(VecPacket::new(f.clone())).unwrap();
    }
    let n = burst.len();
    let mut meta = new_meta_burst();
    let counters = WorkerCounters::default();
    p.run(&mut burst, &mut meta, 0, &StageCtx::test(&counters));
    let mut out = Collect::default();
    dispatch(&mut burst, &meta, &mut out);
    let total = |c: &[crate::stats::Counter]| c.iter().map(|x| x.get()).sum::<u64>();
    crate::tables::testing::assert_no_eal();
    assert_eq!(
        n as u64 + total(&counters.originated),
        (out.sent.len() + out.dropped.len() + out.consumed.len()) as u64 + total(&counters.drops),
        "rx + originated = tx + dropped + consumed"
    );
    Run {
        verdicts: meta[..n].iter().map(|m| m.verdict).collect(),
        out,
        counters,
    }
}

/// Both ways (lane and stage by stage): the same verdicts and bytes out.
fn run_both(frames: &[Vec<u8>], icmp_rate: u32) -> Run {
    let a = run(frames, icmp_rate, true);
    let b = run(frames, icmp_rate, false);
    assert_eq!(a.verdicts, b.verdicts);
    let bytes = |r: &Run| -> Vec<(u16, Vec<u8>)> {
        r.out
            .sent
            .iter()
            .map(|(p, k)| (*p, k.bytes.clone()))
            .collect()
    };
    assert_eq!(bytes(&a), bytes(&b));
    a
}

/// UDP from 10.0.1.5 (on lan) to 198.18.1.7 (via wan), IPv4 total length
/// 1420 (over wan's 1400), DF set; the IPv4 header checksum is 0x510f.
#[rustfmt::skip]
const UDP4_1420_DF: [u8; 42] = [
    // Ethernet: dst = lan's MAC, src = the host, type IPv4
    0x02, 0x00, 0x00, 0x00, 0x01, 0x01,
    0x02, 0x00, 0x00, 0x00, 0xaa, 0x01,
    0x08, 0x00,
    // IPv4: version 4 IHL 5, DSCP/ECN 0, total length 1420
    0x45, 0x00, 0x05, 0x8c,
    // identification 0x1234, flags DF, fragment offset 0
    0x12, 0x34, 0x40, 0x00,
    // TTL 64, protocol UDP, header checksum
    0x40, 0x11, 0x51, 0x0f,
    // source 10.0.1.5
    0x0a, 0x00, 0x01, 0x05,
    // destination 198.18.1.7
    0xc6, 0x12, 0x01, 0x07,
    // UDP: source port 4000, destination port 5000
    0x0f, 0xa0, 0x13, 0x88,
    // UDP length 1400, checksum 0 (none)
    0x05, 0x78, 0x00, 0x00,
];

/// The frame whose headers are `head`, its payload filled to `len` bytes.
fn frame(head: &[u8], len: usize) -> Vec<u8> {
    let mut f = head.to_vec();
    f.resize(len, 0x5a);
    f
}

/// The router's answer to [`UDP4_1420_DF`], built independently (Python):
/// back to the host from lan's address, quoting the IP header and 8 bytes.
#[rustfmt::skip]
const FRAG_NEEDED: [u8; 70] = [
    // Ethernet: dst = the host, src = lan's MAC, type IPv4
    0x02, 0x00, 0x00, 0x00, 0xaa, 0x01,
    0x02, 0x00, 0x00, 0x00, 0x01, 0x01,
    0x08, 0x00,
    // IPv4: version 4 IHL 5, DSCP/ECN 0, total length 56
    0x45, 0x00, 0x00, 0x38,
    // identification 0, flags DF, fragment offset 0
    0x00, 0x00, 0x40, 0x00,
    // TTL 64, protocol ICMP, header checksum
    0x40, 0x01, 0x24, 0xc0,
    // source 10.0.1.1 (lan's), destination 10.0.1.5 (the sender)
    0x0a, 0x00, 0x01, 0x01,
    0x0a, 0x00, 0x01, 0x05,
    // ICMP: type 3 (destination unreachable), code 4 (fragmentation
    // needed and DF set), checksum
    0x03, 0x04, 0xce, 0xe3,
    // unused, next-hop MTU 1400
    0x00, 0x00, 0x05, 0x78,
    // quote: the IPv4 header as received
    0x45, 0x00, 0x05, 0x8c, 0x12, 0x34, 0x40, 0x00,
    0x40, 0x11, 0x51, 0x0f, 0x0a, 0x00, 0x01, 0x05,
    0xc6, 0x12, 0x01, 0x07,
    // quote: the first 8 payload bytes (the UDP header)
    0x0f, 0xa0, 0x13, 0x88, 0x05, 0x78, 0x00, 0x00,
];

#[test]
fn df_packet_over_the_mtu_gets_fragmentation_needed() {
    let r = run_both(&[frame(&UDP4_1420_DF, 14 + 1420)], 100);
    assert_eq!(r.verdicts, [Verdict::Tx(0)], "back out of lan");
    let (port, reply) = &r.out.sent[0];
    assert_eq!(*port, 0);
    assert_eq!(reply.bytes, FRAG_NEEDED);
    assert_eq!(internet_checksum(&reply.bytes[34..70]), 0, "ICMP checksum");
    assert_eq!(internet_checksum(&reply.bytes[14..34]), 0, "IP checksum");
    let c = &r.counters;
    assert_eq!(c.drops[DropReason::TooBig as usize].get(), 1);
    assert_eq!(c.events[Event::IcmpError as usize].get(), 1);
    assert_eq!(c.originated[Originated::IcmpTooBig as usize].get(), 1);
    assert_eq!(c.originated[Originated::IcmpError as usize].get(), 0);
}

#[test]
fn packet_at_the_mtu_is_forwarded() {
    // Total length 1400 (= wan's MTU), header checksum 0x5123.
    let mut head = UDP4_1420_DF;
    head[16..18].copy_from_slice(&1400u16.to_be_bytes());
    head[24..26].copy_from_slice(&[0x51, 0x23]);
    head[38..40].copy_from_slice(&1380u16.to_be_bytes());
    let r = run_both(&[frame(&head, 14 + 1400)], 100);
    assert_eq!(r.verdicts, [Verdict::Tx(1)]);
    let f = &r.out.sent[0].1.bytes;
    assert_eq!(f.len(), 14 + 1400);
    assert_eq!(&f[..6], &GW_MAC);
    assert_eq!(f[22], 63, "TTL decremented");
}

#[test]
fn packet_over_the_mtu_without_df_is_dropped_as_too_big_no_df() {
    // Flags 0, header checksum 0x910f.
    let mut head = UDP4_1420_DF;
    head[20] = 0x00;
    head[24..26].copy_from_slice(&[0x91, 0x0f]);
    let r = run_both(&[frame(&head, 14 + 1420)], 100);
    assert_eq!(r.verdicts, [Verdict::Drop(DropReason::TooBigNoDf)]);
    assert!(r.out.sent.is_empty());
    let c = &r.counters;
    assert_eq!(c.events[Event::IcmpError as usize].get(), 0);
    assert_eq!(c.originated.iter().map(|x| x.get()).sum::<u64>(), 0);
}

#[test]
fn fragmentation_needed_is_rate_limited() {
    // icmp_rate 2: a bucket of two errors, then none (the clock stands).
    let f = frame(&UDP4_1420_DF, 14 + 1420);
    let r = run_both(&[f.clone(), f.clone(), f.clone(), f], 2);
    assert_eq!(
        r.verdicts,
        [
            Verdict::Tx(0),
            Verdict::Tx(0),
            Verdict::Drop(DropReason::TooBig),
            Verdict::Drop(DropReason::TooBig)
        ]
    );
    let c = &r.counters;
    assert_eq!(c.events[Event::IcmpRateLimited as usize].get(), 2);
    assert_eq!(c.originated[Originated::IcmpTooBig as usize].get(), 2);
    // Two counted by the stage (their buffers carry the errors), two by
    // dispatch.
    assert_eq!(c.drops[DropReason::TooBig as usize].get(), 2);
    assert_eq!(r.out.dropped.len(), 2);
}

#[test]
fn no_fragmentation_needed_about_an_icmp_error() {
    // A 1420-byte ICMP destination unreachable with DF from the host:
    // dropped as too_big, never answered with another error.
    let mut head = UDP4_1420_DF[..34].to_vec();
    head[23] = 1; // protocol ICMP
    head.extend_from_slice(&[3, 1, 0, 0, 0, 0, 0, 0]);
    let mut f = frame(&head, 14 + 1420);
    f[24..26].fill(0);
    let c = internet_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let r = run_both(&[f], 100);
    assert_eq!(r.verdicts, [Verdict::Drop(DropReason::TooBig)]);
    assert_eq!(r.counters.events[Event::IcmpError as usize].get(), 0);
}

/// UDP from 2001:db8:1::5 (on lan) to 2001:db8:100::7 (via wan): an IPv6
/// payload of 1361 bytes, 1401 in all (over wan's 1400).
#[rustfmt::skip]
const UDP6_1401: [u8; 62] = [
    // Ethernet: dst = lan's MAC, src = the host, type IPv6
    0x02, 0x00, 0x00, 0x00, 0x01, 0x01,
    0x02, 0x00, 0x00, 0x00, 0xaa, 0x01,
    0x86, 0xdd,
    // IPv6: version 6, traffic class 0, flow label 0
    0x60, 0x00, 0x00, 0x00,
    // payload length 1361, next header UDP, hop limit 64
    0x05, 0x51, 0x11, 0x40,
    // source 2001:db8:1::5
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
    // destination 2001:db8:100::7
    0x20, 0x01, 0x0d, 0xb8, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
    // UDP: source port 4000, destination port 5000
    0x0f, 0xa0, 0x13, 0x88,
    // UDP length 1361, checksum (not checked by a router)
    0x05, 0x51, 0x12, 0x34,
];

#[test]
fn ipv6_packet_over_the_mtu_gets_packet_too_big() {
    let input = frame(&UDP6_1401, 14 + 1401);
    let r = run_both(std::slice::from_ref(&input), 100);
    assert_eq!(r.verdicts, [Verdict::Tx(0)]);
    let f = &r.out.sent[0].1.bytes;
    // A minimum-MTU reply: 40 + 8 + 1232 quoted bytes.
    assert_eq!(f.len(), 14 + 1280);
    assert_eq!(&f[..6], &HOST_MAC);
    assert_eq!(&f[6..12], &LAN_MAC);
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    #[rustfmt::skip]
    let ip: [u8; 8] = [
        // version 6, traffic class 0, flow label 0
        0x60, 0x00, 0x00, 0x00,
        // payload length 1240, next header ICMPv6, hop limit 64
        0x04, 0xd8, 0x3a, 0x40,
    ];
    assert_eq!(&f[14..22], &ip);
    let from: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
    let to: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
    assert_eq!(&f[22..38], &from.octets(), "from lan's address");
    assert_eq!(&f[38..54], &to.octets(), "to the sender");
    #[rustfmt::skip]
    let head: [u8; 8] = [
        // type 2 (packet too big), code 0, checksum (checked below)
        0x02, 0x00, f[56], f[57],
        // MTU 1400
        0x00, 0x00, 0x05, 0x78,
    ];
    assert_eq!(&f[54..62], &head);
    let icmp = Icmpv6Packet::new_checked(&f[54..]).unwrap();
    assert!(icmp.verify_checksum(&from, &to), "ICMPv6 checksum");
    assert_eq!(
        &f[62..],
        &input[14..14 + 1232],
        "the packet's first 1232 bytes"
    );
    let c = &r.counters;
    assert_eq!(c.drops[DropReason::TooBig as usize].get(), 1);
    assert_eq!(c.originated[Originated::IcmpTooBig as usize].get(), 1);
}

#[test]
fn ipv6_packet_at_the_mtu_is_forwarded() {
    let mut head = UDP6_1401;
    head[18..20].copy_from_slice(&1360u16.to_be_bytes());
    let r = run_both(&[frame(&head, 14 + 1400)], 100);
    assert_eq!(r.verdicts, [Verdict::Tx(1)]);
    assert_eq!(r.out.sent[0].1.bytes[21], 63, "hop limit decremented");
}

#[test]
fn no_packet_too_big_about_an_icmpv6_error() {
    // The same size, but an ICMPv6 packet too big itself (type 2).
    let mut head = UDP6_1401[..54].to_vec();
    head[20] = 58;
    head.extend_from_slice(&[2, 0, 0, 0, 0, 0, 5, 0]);
    let r = run_both(&[frame(&head, 14 + 1401)], 100);
    assert_eq!(r.verdicts, [Verdict::Drop(DropReason::TooBig)]);
    assert!(r.out.sent.is_empty());
    assert_eq!(r.counters.events[Event::IcmpError as usize].get(), 0);
}
