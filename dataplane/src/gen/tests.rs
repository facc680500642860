//! Black-box tests of the generator: frames are parsed back with etherparse
//! (or checked byte by byte where etherparse refuses them) and compared with
//! what the arguments asked for.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;
use etherparse::{NetHeaders, PacketHeaders, TransportHeader};

use super::*;

/// Arguments with defaults, adjusted by `f`.
fn with(f: impl FnOnce(&mut GenArgs)) -> GenArgs {
    let mut a = GenArgs::default();
    f(&mut a);
    a
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dataplane-gen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

type Tuple = (IpAddr, IpAddr, u8, u16, u16);

/// What a good frame says about itself, after checking every checksum.
#[derive(Debug)]
struct Good {
    tuple: Tuple,
    vlan: Option<u16>,
    ttl: u8,
    ident: Option<u16>,
}

/// Ones'-complement sum of a header including its checksum: 0xffff when the
/// checksum is right. Written independently of `build::ipv4_checksum`.
fn verifies(header: &[u8]) -> bool {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// Parses a frame that must be well formed and checks its checksums.
fn good(frame: &[u8]) -> Good {
    let h = PacketHeaders::from_ethernet_slice(frame).expect("good frame parses");
    let vlan = h.vlan.as_ref().map(|v| match v {
        etherparse::VlanHeader::Single(s) => s.vlan_id.value(),
        etherparse::VlanHeader::Double(_) => panic!("double tag"),
    });
    let payload = h.payload.slice();
    let (src, dst, ttl, ident, proto): (IpAddr, IpAddr, u8, Option<u16>, u8) = match &h.net {
        Some(NetHeaders::Ipv4(ip, _)) => {
            assert_eq!(
                ip.header_checksum,
                ip.calc_header_checksum(),
                "ipv4 checksum"
            );
            assert!(!ip.dont_fragment && !ip.more_fragments);
            assert_eq!(ip.fragment_offset.value(), 0);
            assert_eq!(ip.ihl(), 5);
            let l3 = frame.len() - usize::from(ip.total_len);
            assert!(verifies(&frame[l3..l3 + 20]));
            (
                ip.source.into(),
                ip.destination.into(),
                ip.time_to_live,
                Some(ip.identification),
                ip.protocol.0,
            )
        }
        Some(NetHeaders::Ipv6(ip, _)) => (
            ip.source.into(),
            ip.destination.into(),
            ip.hop_limit,
            None,
            ip.next_header.0,
        ),
        None => panic!("no IP header"),
    };
    let (sport, dport) = match (&h.transport, &h.net) {
        (Some(TransportHeader::Udp(u)), Some(NetHeaders::Ipv4(ip, _))) => {
            assert_eq!(u.checksum, u.calc_checksum_ipv4(ip, payload).unwrap());
            assert_eq!(usize::from(u.length), 8 + payload.len());
            (u.source_port, u.destination_port)
        }
        (Some(TransportHeader::Udp(u)), Some(NetHeaders::Ipv6(ip, _))) => {
            assert_eq!(u.checksum, u.calc_checksum_ipv6(ip, payload).unwrap());
            assert_eq!(usize::from(u.length), 8 + payload.len());
            (u.source_port, u.destination_port)
        }
        (Some(TransportHeader::Tcp(t)), Some(NetHeaders::Ipv4(ip, _))) => {
            assert_eq!(t.checksum, t.calc_checksum_ipv4(ip, payload).unwrap());
            (t.source_port, t.destination_port)
        }
        (Some(TransportHeader::Tcp(t)), Some(NetHeaders::Ipv6(ip, _))) => {
            assert_eq!(t.checksum, t.calc_checksum_ipv6(ip, payload).unwrap());
            (t.source_port, t.destination_port)
        }
        other => panic!("unexpected transport {other:?}"),
    };
    assert_eq!(proto, if payload_is_udp(&h) { 17 } else { 6 });
    Good {
        tuple: (src, dst, proto, sport, dport),
        vlan,
        ttl,
        ident,
    }
}

fn payload_is_udp(h: &PacketHeaders) -> bool {
    matches!(h.transport, Some(TransportHeader::Udp(_)))
}

fn l3_of(args: &GenArgs) -> usize {
    if args.vlan.is_some() {
        18
    } else {
        14
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    gen: GenArgs,
}

#[test]
fn default_matches_cli_defaults() {
    let cli = Cli::try_parse_from(["gen", "--out", "x.pcap"]).unwrap();
    assert_eq!(
        cli.gen,
        GenArgs {
            out: "x.pcap".into(),
            ..GenArgs::default()
        }
    );
    assert!(Cli::try_parse_from(["gen"]).is_err(), "--out is required");
}

#[test]
fn cli_parses_every_flag() {
    let cli = Cli::try_parse_from([
        "gen",
        "--out",
        "o.pcap",
        "--count",
        "10",
        "--flows",
        "3",
        "--size",
        "imix",
        "--ipv6-ratio",
        "0.5",
        "--dst-prefix",
        "203.0.113.0/24",
        "--dst-prefix",
        "2001:db8:9::/48",
        "--src-prefix",
        "192.0.2.0/24",
        "--proto",
        "mix",
        "--vlan",
        "100",
        "--ttl",
        "5",
        "--src-mac",
        "02:aa:00:00:00:01",
        "--dst-mac",
        "02:bb:00:00:00:02",
        "--malformed-ratio",
        "0.25",
        "--malformed",
        "bad-ihl,truncated-ipv6",
        "--seed",
        "9",
        "--corpus-dir",
        "c",
        "--summary-json",
        "s.json",
    ])
    .unwrap()
    .gen;
    assert_eq!(cli.count, 10);
    assert_eq!(cli.flows, 3);
    assert_eq!(cli.size, FrameSize::Imix);
    assert_eq!(cli.ipv6_ratio, 0.5);
    assert_eq!(cli.dst_prefix.len(), 2);
    assert_eq!(cli.src_prefix, vec!["192.0.2.0/24".parse().unwrap()]);
    assert_eq!(cli.proto, ProtoMix::Mix);
    assert_eq!(cli.vlan, Some(100));
    assert_eq!(cli.ttl, 5);
    assert_eq!(cli.src_mac.0, [2, 0xaa, 0, 0, 0, 1]);
    assert_eq!(cli.dst_mac.0, [2, 0xbb, 0, 0, 0, 2]);
    assert_eq!(cli.malformed_ratio, 0.25);
    assert_eq!(
        cli.malformed,
        vec![MalformedKind::BadIhl, MalformedKind::TruncatedIpv6]
    );
    assert_eq!(cli.seed, 9);
    assert_eq!(cli.corpus_dir, Some("c".into()));
    assert_eq!(cli.summary_json, Some("s.json".into()));
}

#[test]
fn cli_rejects_out_of_range_values() {
    for bad in [
        ["--size", "59"],
        ["--size", "9001"],
        ["--flows", "0"],
        ["--vlan", "4096"],
        ["--ipv6-ratio", "1.5"],
        ["--malformed-ratio", "-0.1"],
        ["--malformed", "bad-everything"],
        ["--dst-prefix", "198.18.0.0/33"],
        ["--src-mac", "02:00:00:00:00"],
        ["--proto", "sctp"],
    ] {
        let argv = ["gen", "--out", "o.pcap", bad[0], bad[1]];
        assert!(Cli::try_parse_from(argv).is_err(), "{bad:?}");
    }
}

#[test]
fn code_built_args_are_validated() {
    for a in [
        with(|a| a.ipv6_ratio = f64::NAN),
        with(|a| a.malformed_ratio = 2.0),
        with(|a| a.flows = 0),
        with(|a| a.vlan = Some(5000)),
        with(|a| a.size = FrameSize::Fixed(10)),
    ] {
        assert!(generate(&a).is_err(), "{a:?}");
    }
    assert!(run(&GenArgs::default()).is_err(), "run needs --out");
}

#[test]
fn count_and_fixed_sizes() {
    for size in [60u16, 64, 128, 1500, 9000] {
        let a = with(|a| {
            a.count = 37;
            a.size = FrameSize::Fixed(size);
            a.proto = ProtoMix::Mix;
        });
        let g = generate_detailed(&a).unwrap();
        assert_eq!(g.frames.len(), 37);
        assert_eq!(g.summary.frames, 37);
        assert_eq!(g.summary.bytes, 37 * u64::from(size));
        for f in &g.frames {
            assert_eq!(f.len(), usize::from(size));
            good(f);
        }
    }
    assert!(generate(&with(|a| a.count = 0)).unwrap().is_empty());
}

#[test]
fn ipv6_frames_are_at_least_78_bytes() {
    for (vlan, proto) in [(None, ProtoMix::Udp), (Some(7), ProtoMix::Tcp)] {
        let a = with(|a| {
            a.count = 20;
            a.ipv6_ratio = 0.5;
            a.vlan = vlan;
            a.proto = proto;
        });
        let g = generate_detailed(&a).unwrap();
        assert_eq!(g.summary.ipv6, 10);
        for f in &g.frames {
            let is_v6 = f[l3_of(&a) - 2..l3_of(&a)] == [0x86, 0xdd];
            assert_eq!(f.len(), if is_v6 { 78 } else { 64 });
            good(f);
        }
    }
    let a = with(|a| {
        a.ipv6_ratio = 1.0;
        a.size = FrameSize::Fixed(100);
    });
    assert!(generate(&a).unwrap().iter().all(|f| f.len() == 100));
}

#[test]
fn imix_distribution_is_7_4_1() {
    let a = with(|a| {
        a.count = 1200;
        a.size = FrameSize::Imix;
        a.proto = ProtoMix::Mix;
    });
    let frames = generate(&a).unwrap();
    let mut by_size: BTreeMap<usize, usize> = BTreeMap::new();
    for f in &frames {
        *by_size.entry(f.len()).or_default() += 1;
        good(f);
    }
    assert_eq!(
        by_size,
        BTreeMap::from([(64, 700), (570, 400), (1518, 100)])
    );
    // Every window of 12 frames holds the exact mix.
    for w in frames.chunks(12) {
        assert_eq!(w.iter().filter(|f| f.len() == 1518).count(), 1);
    }
}

#[test]
fn every_flow_appears_round_robin() {
    for ratio in [0.0, 0.2] {
        let a = with(|a| {
            a.count = 1000;
            a.flows = 16;
            a.ipv6_ratio = 0.25;
            a.proto = ProtoMix::Mix;
            a.malformed_ratio = ratio;
        });
        let g = generate_detailed(&a).unwrap();
        let mut seen: HashMap<Tuple, u64> = HashMap::new();
        for (f, info) in g.frames.iter().zip(&g.info) {
            if info.malformed.is_none() {
                *seen.entry(good(f).tuple).or_default() += 1;
            }
        }
        assert_eq!(seen.len(), 16);
        let good_total: u64 = seen.values().sum();
        let (lo, hi) = (good_total / 16, good_total.div_ceil(16));
        assert!(seen.values().all(|&n| n == lo || n == hi), "{seen:?}");
        // The flow plan matches what is on the wire.
        let planned: HashSet<Tuple> = g.flows.iter().map(tuple_of).collect();
        assert_eq!(planned, seen.keys().copied().collect());
        let tcp = g.flows.iter().filter(|f| f.l4 == L4::Tcp).count();
        assert_eq!(tcp, 8, "mix alternates within each family");
        let v6 = g.flows.iter().filter(|f| !f.is_ipv4());
        assert_eq!(v6.clone().count(), 4);
        assert_eq!(g.summary.ipv6, v6.map(|f| seen[&tuple_of(f)]).sum::<u64>());
    }
}

fn tuple_of(f: &Flow) -> Tuple {
    let proto = if f.l4 == L4::Udp { 17 } else { 6 };
    (f.src, f.dst, proto, f.sport, f.dport)
}

#[test]
fn flows_split_evenly_over_prefixes_and_stay_inside() {
    let dst: Vec<Prefix> = ["203.0.113.0/26", "203.0.113.64/26", "198.51.100.0/24"]
        .iter()
        .chain(&["2001:db8:a::/64", "2001:db8:b::/120"])
        .map(|s| s.parse().unwrap())
        .collect();
    let src: Vec<Prefix> = ["192.0.2.0/28", "fd00::/8"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let a = with(|a| {
        a.count = 500;
        a.flows = 20;
        a.ipv6_ratio = 0.5;
        a.dst_prefix = dst.clone();
        a.src_prefix = src.clone();
    });
    let g = generate_detailed(&a).unwrap();
    let mut flows_per_prefix: HashMap<Prefix, usize> = HashMap::new();
    let mut frames_per_prefix: BTreeMap<String, u64> = BTreeMap::new();
    for f in &g.frames {
        let t = good(f).tuple;
        let prefix = dst
            .iter()
            .find(|p| p.contains(t.1))
            .expect("dst inside a prefix");
        *frames_per_prefix.entry(prefix.to_string()).or_default() += 1;
        assert!(src.iter().any(|p| p.contains(t.0)), "src {} outside", t.0);
    }
    for flow in &g.flows {
        assert!(flow.dst_prefix.contains(flow.dst));
        assert!(flow.src_prefix.contains(flow.src));
        *flows_per_prefix.entry(flow.dst_prefix).or_default() += 1;
    }
    // 10 IPv4 flows over 3 prefixes, 10 IPv6 flows over 2.
    let counts: Vec<usize> = dst.iter().map(|p| flows_per_prefix[p]).collect();
    assert_eq!(counts, vec![4, 3, 3, 5, 5]);
    assert_eq!(g.summary.per_dst_prefix, frames_per_prefix);
    assert_eq!(g.summary.ipv4 + g.summary.ipv6, 500);
}

#[test]
fn default_prefixes_apply_per_family() {
    let a = with(|a| {
        a.flows = 8;
        a.ipv6_ratio = 0.5;
        a.dst_prefix = vec!["203.0.113.0/24".parse().unwrap()];
    });
    let g = generate_detailed(&a).unwrap();
    let keys: Vec<&str> = g
        .summary
        .per_dst_prefix
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, vec!["2001:db8:1::/64", "203.0.113.0/24"]);
    let src6: Prefix = DEFAULT_SRC_V6.parse().unwrap();
    let src4: Prefix = DEFAULT_SRC_V4.parse().unwrap();
    assert!(g
        .flows
        .iter()
        .all(|f| src4.contains(f.src) || src6.contains(f.src)));
    let v4_only = generate_detailed(&GenArgs::default()).unwrap();
    let keys: Vec<&str> = v4_only
        .summary
        .per_dst_prefix
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, DEFAULT_DST_V4.to_vec());
    assert_eq!(v4_only.summary.per_dst_prefix.values().sum::<u64>(), 1000);
}

#[test]
fn headers_carry_the_arguments() {
    let a = with(|a| {
        a.count = 64;
        a.ttl = 3;
        a.vlan = Some(42);
        a.ipv6_ratio = 0.5;
        a.proto = ProtoMix::Mix;
        a.src_mac = "02:12:34:56:78:9a".parse().unwrap();
        a.dst_mac = "02:00:de:ad:be:ef".parse().unwrap();
    });
    let g = generate_detailed(&a).unwrap();
    assert_eq!(g.summary.vlan, 64);
    for f in &g.frames {
        assert_eq!(f[..6], a.dst_mac.0);
        assert_eq!(f[6..12], a.src_mac.0);
        assert_eq!(f[12..14], [0x81, 0x00], "802.1Q TPID");
        assert_eq!(u16::from_be_bytes([f[14], f[15]]) & 0x0fff, 42);
        let p = good(f);
        assert_eq!(p.vlan, Some(42));
        assert_eq!(p.ttl, 3);
    }
    let untagged = generate_detailed(&with(|a| a.count = 5)).unwrap();
    assert_eq!(untagged.summary.vlan, 0);
    assert!(untagged.frames.iter().all(|f| f[12..14] == [0x08, 0x00]));
}

#[test]
fn ipv4_ident_increments_per_flow() {
    let a = with(|a| {
        a.count = 400;
        a.flows = 4;
    });
    let mut last: HashMap<Tuple, u16> = HashMap::new();
    for f in generate(&a).unwrap() {
        let p = good(&f);
        let ident = p.ident.unwrap();
        if let Some(prev) = last.insert(p.tuple, ident) {
            assert_eq!(ident, prev.wrapping_add(1));
        }
    }
    assert_eq!(last.len(), 4);
}

/// Checks that `frame` is broken exactly the way `kind` says.
fn assert_malformed(kind: MalformedKind, frame: &[u8], l3: usize) {
    // SlicedPacket checks lengths against each other (PacketHeaders does
    // not check the UDP length field).
    let parsed = etherparse::SlicedPacket::from_ethernet(frame);
    let ethertype = |f: &[u8]| u16::from_be_bytes([f[l3 - 2], f[l3 - 1]]);
    match kind {
        MalformedKind::TruncatedEth => {
            assert!((1..14).contains(&frame.len()), "len {}", frame.len());
            assert!(parsed.is_err());
        }
        MalformedKind::TruncatedIp => {
            assert_eq!(ethertype(frame), 0x0800);
            assert!((l3 + 1..l3 + 20).contains(&frame.len()));
            assert!(parsed.is_err());
        }
        MalformedKind::TruncatedIpv6 => {
            assert_eq!(ethertype(frame), 0x86dd);
            assert!((l3 + 1..l3 + 40).contains(&frame.len()));
            assert!(parsed.is_err());
        }
        MalformedKind::BadVersion => {
            assert_eq!(ethertype(frame), 0x0800);
            assert_ne!(frame[l3] >> 4, 4);
            assert_eq!(frame[l3] & 0x0f, 5);
            assert!(verifies(&frame[l3..l3 + 20]), "only the version is wrong");
            assert!(parsed.is_err());
        }
        MalformedKind::BadIhl => {
            assert_eq!(frame[l3] >> 4, 4);
            assert!(frame[l3] & 0x0f < 5);
            assert!(verifies(&frame[l3..l3 + 20]));
            assert!(parsed.is_err());
        }
        MalformedKind::BadTotalLen => {
            assert_eq!(frame[l3], 0x45);
            let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
            assert!(total > frame.len() - l3, "{total} vs {}", frame.len() - l3);
            assert!(verifies(&frame[l3..l3 + 20]));
            assert!(parsed.is_err());
        }
        MalformedKind::BadChecksum => {
            assert!(parsed.is_ok(), "only the checksum is wrong");
            let h = PacketHeaders::from_ethernet_slice(frame).unwrap();
            let Some(NetHeaders::Ipv4(ip, _)) = h.net else {
                panic!("not ipv4")
            };
            assert_ne!(ip.header_checksum, ip.calc_header_checksum());
            assert!(!verifies(&frame[l3..l3 + 20]));
        }
        MalformedKind::BadUdpLen => {
            let (l4, ip_payload) = match frame[l3] >> 4 {
                4 => {
                    let ip = etherparse::Ipv4HeaderSlice::from_slice(&frame[l3..]).unwrap();
                    assert!(verifies(&frame[l3..l3 + 20]));
                    assert_eq!(ip.protocol().0, 17);
                    assert_eq!(usize::from(ip.total_len()), frame.len() - l3);
                    // IPv4: checksum zeroed (absent), so only the length is wrong.
                    assert_eq!(frame[l3 + 26..l3 + 28], [0, 0]);
                    (l3 + 20, frame.len() - l3 - 20)
                }
                6 => {
                    let ip = etherparse::Ipv6HeaderSlice::from_slice(&frame[l3..]).unwrap();
                    assert_eq!(ip.next_header().0, 17);
                    assert_eq!(usize::from(ip.payload_length()), frame.len() - l3 - 40);
                    (l3 + 40, frame.len() - l3 - 40)
                }
                v => panic!("version {v}"),
            };
            let udp_len = usize::from(u16::from_be_bytes([frame[l4 + 4], frame[l4 + 5]]));
            assert_ne!(udp_len, ip_payload);
            assert!(udp_len < 8 || udp_len > ip_payload);
            // etherparse reads a zero length as "use the IP length" (the
            // RFC 2675 jumbogram rule); everything else it rejects.
            assert_eq!(parsed.is_err(), udp_len != 0);
        }
    }
}

#[test]
fn every_malformed_kind_is_malformed_as_named() {
    // All IPv4 UDP, IPv6-only TCP, and a mix with VLAN: the last two need
    // frames from outside the flow plan for some kinds.
    let setups = [
        with(|_| {}),
        with(|a| {
            a.ipv6_ratio = 1.0;
            a.proto = ProtoMix::Tcp;
        }),
        with(|a| {
            a.ipv6_ratio = 0.5;
            a.proto = ProtoMix::Mix;
            a.vlan = Some(9);
            a.size = FrameSize::Imix;
        }),
    ];
    for base in setups {
        let a = GenArgs {
            count: 400,
            malformed_ratio: 1.0,
            ..base
        };
        let g = generate_detailed(&a).unwrap();
        assert_eq!(g.summary.ipv4 + g.summary.ipv6, 0);
        let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
        for (i, (f, info)) in g.frames.iter().zip(&g.info).enumerate() {
            let kind = info.malformed.expect("all malformed");
            assert_eq!(kind, MalformedKind::ALL[i % 8], "kinds cycle");
            assert_malformed(kind, f, l3_of(&a));
            *per_kind.entry(kind.name().into()).or_default() += 1;
        }
        assert!(per_kind.values().all(|&n| n == 50));
        assert_eq!(g.summary.malformed, per_kind);
    }
}

#[test]
fn malformed_ratio_and_restriction() {
    let a = with(|a| {
        a.count = 1000;
        a.malformed_ratio = 0.1;
        a.malformed = vec![MalformedKind::BadChecksum, MalformedKind::TruncatedIpv6];
    });
    let g = generate_detailed(&a).unwrap();
    let bad: Vec<usize> = (0..1000)
        .filter(|&i| g.info[i].malformed.is_some())
        .collect();
    assert_eq!(bad.len(), 100);
    // Spread evenly: one in every ten.
    assert!(bad.windows(2).all(|w| w[1] - w[0] == 10));
    assert_eq!(
        g.summary.malformed,
        BTreeMap::from([("bad-checksum".into(), 50), ("truncated-ipv6".into(), 50)])
    );
    for &i in &bad {
        assert_malformed(g.info[i].malformed.unwrap(), &g.frames[i], 14);
    }
    // No IPv6 flow was planned, so truncated-ipv6 came from outside the plan.
    assert!(g
        .info
        .iter()
        .filter(|i| i.malformed == Some(MalformedKind::TruncatedIpv6))
        .all(|i| i.flow.is_none()));
    assert_eq!(g.summary.ipv4, 900);
    assert_eq!(g.summary.frames, 1000);
    // Good frames are still good.
    for (f, info) in g.frames.iter().zip(&g.info) {
        if info.malformed.is_none() {
            good(f);
        }
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = with(|a| {
        a.count = 300;
        a.ipv6_ratio = 0.3;
        a.proto = ProtoMix::Mix;
        a.malformed_ratio = 0.1;
        a.size = FrameSize::Imix;
    });
    let one = generate(&a).unwrap();
    assert_eq!(one, generate(&a).unwrap());
    let other = generate(&GenArgs {
        seed: 2,
        ..a.clone()
    })
    .unwrap();
    assert_eq!(one.len(), other.len());
    assert_ne!(one, other);
    // The written file is reproducible too, timestamps included.
    let dir = scratch("determinism");
    let (p1, p2) = (dir.join("1.pcap"), dir.join("2.pcap"));
    run(&GenArgs {
        out: p1.clone(),
        ..a.clone()
    })
    .unwrap();
    run(&GenArgs {
        out: p2.clone(),
        ..a
    })
    .unwrap();
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pcap_file_round_trip() {
    let dir = scratch("pcap");
    let path = dir.join("t.pcap");
    let frames = generate(&with(|a| {
        a.count = 50;
        a.size = FrameSize::Imix;
        a.malformed_ratio = 0.2;
    }))
    .unwrap();
    write_pcap(&path, &frames).unwrap();
    assert_eq!(read_pcap(&path).unwrap(), frames);
    assert!(matches!(
        read_pcap(dir.join("missing.pcap")),
        Err(GenError::Io { .. })
    ));
    std::fs::write(dir.join("junk.pcap"), b"junk").unwrap();
    assert!(matches!(
        read_pcap(dir.join("junk.pcap")),
        Err(GenError::Pcap { .. })
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn run_writes_pcap_summary_and_corpus() {
    let dir = scratch("run");
    let a = with(|a| {
        a.out = dir.join("out.pcap");
        a.count = 100;
        a.flows = 4;
        a.ipv6_ratio = 0.5;
        a.vlan = Some(1);
        a.malformed_ratio = 0.08;
        a.summary_json = Some(dir.join("summary.json"));
        a.corpus_dir = Some(dir.join("corpus"));
    });
    let s = run(&a).unwrap();
    let frames = read_pcap(&a.out).unwrap();
    assert_eq!(frames, generate(&a).unwrap());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    for key in [
        "frames",
        "bytes",
        "ipv4",
        "ipv6",
        "vlan",
        "malformed",
        "flows",
        "per_dst_prefix",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(serde_json::from_value::<GenSummary>(json).unwrap(), s);
    assert_eq!(s.frames, 100);
    assert_eq!(s.flows, 4);
    assert_eq!(s.bytes, frames.iter().map(|f| f.len() as u64).sum::<u64>());
    let bad: u64 = s.malformed.values().sum();
    assert_eq!(bad, 8);
    assert_eq!(s.malformed.len(), 8);
    assert_eq!(s.ipv4 + s.ipv6 + bad, 100);
    assert_eq!(s.ipv4, s.ipv6, "two flows of each family, round robin");
    // Every frame but the truncated-eth one carries the whole tag.
    assert_eq!(s.vlan, 99);
    let distinct: HashSet<&Vec<u8>> = frames.iter().collect();
    let files: Vec<_> = std::fs::read_dir(dir.join("corpus")).unwrap().collect();
    assert_eq!(files.len(), distinct.len());
    for f in files {
        let f = f.unwrap().path();
        assert!(distinct.contains(&std::fs::read(&f).unwrap()));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A million frames generate and serialise (functional; how long it takes
/// is printed, not asserted: speed belongs in benchmarks).
#[test]
fn million_64_byte_frames() {
    let a = with(|a| {
        a.count = 1_000_000;
        a.flows = 1024;
    });
    let start = std::time::Instant::now();
    let frames = generate(&a).unwrap();
    let gen = start.elapsed();
    let bytes = write_pcap_to(Vec::with_capacity(100 << 20), &frames).unwrap();
    println!(
        "generate {gen:?}, + pcap {:?} ({} bytes)",
        start.elapsed(),
        bytes.len()
    );
    assert_eq!(frames.len(), 1_000_000);
    assert!(frames.iter().all(|f| f.len() == 64));
    // pcap: 24-byte file header, then 16 bytes + 64 per record.
    assert_eq!(bytes.len(), 24 + 1_000_000 * (16 + 64));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn arb_args() -> impl Strategy<Value = GenArgs> {
        let size = prop_oneof![
            Just(FrameSize::Imix),
            (FRAME_MIN..=FRAME_MAX).prop_map(FrameSize::Fixed),
        ];
        let proto = prop_oneof![
            Just(ProtoMix::Udp),
            Just(ProtoMix::Tcp),
            Just(ProtoMix::Mix)
        ];
        let kinds = proptest::sample::subsequence(MalformedKind::ALL.to_vec(), 0..=8);
        (
            (0usize..150, 1u32..40, size, 0.0..=1.0f64, proto),
            (
                proptest::option::of(0u16..=4095),
                any::<u8>(),
                0.0..=1.0f64,
                kinds,
                any::<u64>(),
            ),
        )
            .prop_map(
                |((count, flows, size, v6, proto), (vlan, ttl, bad, kinds, seed))| GenArgs {
                    count,
                    flows,
                    size,
                    ipv6_ratio: v6,
                    proto,
                    vlan,
                    ttl,
                    malformed_ratio: bad,
                    malformed: kinds,
                    seed,
                    ..GenArgs::default()
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the arguments: good frames parse with valid checksums
        /// and the requested length, malformed ones break as named, and the
        /// summary adds up.
        #[test]
        fn any_arguments_give_consistent_frames(a in arb_args()) {
            let g = generate_detailed(&a).unwrap();
            prop_assert_eq!(g.frames.len(), a.count);
            let kinds = a.malformed_kinds();
            let mut bad = 0u64;
            for (i, (f, info)) in g.frames.iter().zip(&g.info).enumerate() {
                match info.malformed {
                    Some(kind) => {
                        prop_assert!(kinds.contains(&kind));
                        assert_malformed(kind, f, l3_of(&a));
                        bad += 1;
                    }
                    None => {
                        let p = good(f);
                        prop_assert_eq!(p.ttl, a.ttl);
                        prop_assert_eq!(p.vlan, a.vlan);
                        let want = usize::from(a.size.for_frame(i));
                        let v6 = p.tuple.0.is_ipv6();
                        prop_assert_eq!(f.len(), if v6 { want.max(78) } else { want });
                        let flow = &g.flows[info.flow.unwrap() as usize];
                        prop_assert_eq!(tuple_of(flow), p.tuple);
                        prop_assert!(flow.dst_prefix.contains(p.tuple.1));
                    }
                }
            }
            let s = &g.summary;
            prop_assert_eq!(s.malformed.values().sum::<u64>(), bad);
            prop_assert_eq!(s.ipv4 + s.ipv6 + bad, a.count as u64);
            prop_assert_eq!(s.per_dst_prefix.values().sum::<u64>(), s.ipv4 + s.ipv6);
            prop_assert_eq!(s.bytes, g.frames.iter().map(|f| f.len() as u64).sum::<u64>());
        }
    }
}
