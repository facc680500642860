//! Replays every saved input in `tests/fuzz_regressions/` through the
//! `pipeline` fuzz harness (`fuzz/harness.rs`, the same code the fuzz target
//! runs): crashes the fuzzer found, kept once fixed, and hand-made inputs
//! (`hand-*`, written by `fuzz/seeds.py hand`) for the tricky paths. Every
//! input must pass the harness invariants; the hand-made ones also have
//! their expected outcome checked here.
//!
//! One test function replays the files in name order: the router's
//! neighbour cache is shared and learns as it goes, so a fixed order keeps
//! the outcomes reproducible. `FUZZ_VERBOSE=1` prints each input's verdicts
//! (with `--nocapture`); `FUZZ_REPLAY_DIR=DIR` replays DIR instead (say,
//! `fuzz/corpus/pipeline`, to see which verdicts a corpus reaches).
#[path = "../../fuzz/harness.rs"]
mod harness;

use dataplane::pipeline::{DropReason, Event, Verdict};
use dataplane::stats::Originated;
use harness::Outcome;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// The saved inputs, or `FUZZ_REPLAY_DIR` (e.g. a fuzz corpus) instead.
fn dir() -> PathBuf {
    match std::env::var_os("FUZZ_REPLAY_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions"),
    }
}

fn ethertype(f: &[u8], l3_off: usize) -> u16 {
    u16::from_be_bytes([f[l3_off - 2], f[l3_off - 1]])
}

/// The one frame sent, with its port; panics unless exactly one was.
fn only_sent(o: &Outcome) -> (u16, &[u8]) {
    assert_eq!(o.out.sent.len(), 1, "verdicts {:?}", verdicts(o));
    let (p, pkt) = &o.out.sent[0];
    (*p, &pkt.bytes)
}

fn verdicts(o: &Outcome) -> Vec<Verdict> {
    o.meta.iter().map(|m| m.verdict).collect()
}

/// What the hand-made inputs must do, beyond the invariants.
fn expect(name: &str, o: &Outcome) {
    match name {
        "hand-arp-request-ours" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(ethertype(f, 14), 0x0806);
            assert_eq!(&f[20..22], &[0, 2], "ARP reply");
            assert_eq!(&f[28..32], &[10, 0, 1, 1], "sender is our address");
            assert_eq!(&f[..6], &[2, 0, 0, 0, 1, 2], "to the requester");
        }
        "hand-qinq-arp-ours" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(&f[12..14], &[0x88, 0xa8], "outer tag kept");
            assert_eq!(&f[16..18], &[0x81, 0x00], "inner tag kept");
            assert_eq!(&f[28..30], &[0, 2], "ARP reply");
        }
        "hand-qinq-udp4" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 1);
            assert_eq!(&f[..6], &[2, 0, 0, 0, 2, 2], "to the wan gateway");
            assert_eq!(&f[12..14], &[0x88, 0xa8], "tags kept");
            assert_eq!(f[22 + 8], 63, "TTL decremented");
        }
        "hand-ns-ours" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(ethertype(f, 14), 0x86dd);
            assert_eq!(f[14 + 40], 136, "neighbour advertisement");
        }
        "hand-ns-bad-option" | "hand-ns-option-overruns" => {
            assert!(o.out.sent.is_empty(), "no answer: {:?}", verdicts(o));
            assert!(o.out.dropped.len() == 1, "{:?}", verdicts(o));
        }
        "hand-echo4-ours" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(&f[26..30], &[10, 0, 1, 1], "from our address");
            assert_eq!(f[34], 0, "echo reply");
        }
        "hand-echo4-all-zero" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(&f[34..38], &[0, 0, 0xff, 0xff], "echo reply, checksum -0");
        }
        "hand-ttl1-udp4" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0, "back where it came from");
            assert_eq!(f[14 + 9], 1, "ICMP");
            assert_eq!(f[34], 11, "time exceeded");
        }
        "hand-ttl1-burst-rate-limited" => {
            // icmp_rate = 8: the first 8 get a time exceeded, the rest not.
            assert_eq!(o.out.sent.len(), 8, "{:?}", verdicts(o));
            assert_eq!(o.out.dropped.len(), 12);
            assert_eq!(o.counters.events[Event::IcmpRateLimited as usize].get(), 12);
        }
        "hand-too-big" => {
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::TooBigNoDf)]);
        }
        "hand-too-big-df4" | "hand-too-big-df4-vlan" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0, "back where it came from");
            let l3 = if name.ends_with("vlan") { 18 } else { 14 };
            assert_eq!(ethertype(f, l3), 0x0800);
            assert_eq!(&f[l3 + 12..l3 + 16], &[10, 0, 1, 1], "from lan's address");
            assert_eq!(&f[l3 + 20..l3 + 22], &[3, 4], "fragmentation needed");
            assert_eq!(&f[l3 + 26..l3 + 28], &1400u16.to_be_bytes(), "wan's MTU");
            assert_eq!(
                o.counters.originated[Originated::IcmpTooBig as usize].get(),
                1
            );
        }
        "hand-too-big6" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(f.len(), 14 + 1280, "a minimum-MTU reply");
            assert_eq!(f[54], 2, "packet too big");
            assert_eq!(&f[58..62], &1400u32.to_be_bytes(), "wan's MTU");
        }
        "hand-too-big-df4-burst-rate-limited" => {
            // icmp_rate = 8, as for time exceeded.
            assert_eq!(o.out.sent.len(), 8, "{:?}", verdicts(o));
            assert_eq!(o.out.dropped.len(), 4);
            assert_eq!(o.counters.events[Event::IcmpRateLimited as usize].get(), 4);
            assert_eq!(o.counters.drops[DropReason::TooBig as usize].get(), 8);
        }
        "hand-hop1-udp6" => {
            let (port, f) = only_sent(o);
            assert_eq!(port, 0);
            assert_eq!(f[14 + 6], 58, "ICMPv6");
            assert_eq!(f[54], 3, "time exceeded");
        }
        "hand-v6-ext-truncated" | "hand-v6-frag-truncated" => {
            assert!(o.out.sent.is_empty(), "{:?}", verdicts(o));
            assert!(
                matches!(
                    o.out.dropped[..],
                    [(DropReason::Truncated | DropReason::BadTotalLen, _)]
                ),
                "{:?}",
                verdicts(o)
            );
        }
        "hand-forward-src-eq-dst6" => {
            // The NS is answered, then the packet goes to the learned MAC.
            assert_eq!(verdicts(o), [Verdict::Tx(0), Verdict::Tx(0)]);
            let f = &o.out.sent[1].1.bytes;
            assert_eq!(&f[..6], &[2, 0, 0, 0, 1, 2]);
            assert_eq!(f[14 + 7], 63, "hop limit decremented");
        }
        "hand-hop0-from-our-address6" => {
            // Our own address is no source (once a time exceeded went back
            // to it, from it).
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::BadAddress)]);
        }
        "hand-echo4-from-ourselves" => {
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::BadAddress)]);
        }
        "hand-impossible-sources" => {
            let mut want = vec![Verdict::Drop(DropReason::BadAddress); 7];
            want.push(Verdict::Tx(1));
            assert_eq!(verdicts(o), want);
        }
        "hand-l2-group-source" => {
            let mut want = vec![Verdict::Drop(DropReason::BadAddress); 4];
            want.push(Verdict::Tx(1));
            assert_eq!(verdicts(o), want);
        }
        "hand-arp-other-formats" => {
            let mut want = vec![Verdict::Drop(DropReason::Unsupported); 5];
            want.push(Verdict::Drop(DropReason::Truncated));
            assert_eq!(verdicts(o), want);
        }
        "hand-l2-foreign-mac" => {
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::NotForUs); 2]);
        }
        "hand-l2-group-unicast-ip" => {
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::L2Multicast); 4]);
        }
        "hand-broadcast-subnet" => {
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::Broadcast); 6]);
            assert_eq!(o.counters.events[Event::ArpRequest as usize].get(), 0);
        }
        "hand-v6-scope" => {
            assert_eq!(
                verdicts(o),
                [
                    Verdict::Drop(DropReason::BadAddress),
                    Verdict::Drop(DropReason::BadAddress),
                    Verdict::Drop(DropReason::BadAddress),
                    Verdict::Tx(0),
                ]
            );
            let f = &o.out.sent[0].1.bytes;
            assert_eq!(f[54], 129, "echo reply to the link-local source");
        }
        "hand-padded-and-short" => {
            assert_eq!(
                verdicts(o),
                [
                    Verdict::Tx(1),
                    Verdict::Tx(1),
                    Verdict::Drop(DropReason::BadTotalLen)
                ]
            );
            let ip_end = |f: &[u8]| match ethertype(f, 14) {
                0x0800 => 14 + usize::from(u16::from_be_bytes([f[16], f[17]])),
                _ => 54 + usize::from(u16::from_be_bytes([f[18], f[19]])),
            };
            for (k, (_, f)) in o.out.sent.iter().enumerate() {
                let input = &o.input.frames[k];
                assert!(input.len() >= ip_end(input) + 300);
                assert_eq!(f.bytes.len(), ip_end(input), "frame {k}: padding trimmed");
            }
        }
        "hand-chain-padded" => {
            // Trimmed to their IP packets, out of the chain, and forwarded.
            assert_eq!(verdicts(o), [Verdict::Tx(1), Verdict::Tx(1)]);
            for (k, (_, f)) in o.out.sent.iter().enumerate() {
                assert!(o.input.chains[k].more > 0, "frame {k} is a chain");
                assert_eq!(f.more, 0, "frame {k}: sent as one segment");
                assert!(f.bytes.len() < 100, "frame {k}: trimmed");
            }
        }
        "hand-chain-too-big" => assert_eq!(
            verdicts(o),
            [
                Verdict::Drop(DropReason::TooBig),
                Verdict::Drop(DropReason::TooBig),
                Verdict::Drop(DropReason::BadTotalLen)
            ]
        ),
        "hand-chain-broken" => {
            assert!(o.input.chains[0].broken);
            assert_eq!(verdicts(o), [Verdict::Drop(DropReason::BadTotalLen)]);
        }
        "hand-burst-mixed" => {
            assert_eq!(o.meta.len(), 32);
            assert!(!o.out.sent.is_empty());
            assert!(o
                .out
                .dropped
                .iter()
                .any(|(r, _)| *r == DropReason::Truncated));
        }
        _ => {}
    }
}

#[test]
fn fuzz_regressions_replay() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/fuzz_regressions exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "hand-made inputs missing: {files:?}");
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(path).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            if let Some(o) = harness::PIPELINE.run_and_check(&data) {
                if std::env::var_os("FUZZ_VERBOSE").is_some() {
                    eprintln!("{name}: {:?}", verdicts(&o));
                }
                for v in verdicts(&o) {
                    *seen.entry(format!("{v:?}")).or_default() += 1;
                }
                expect(&name, &o);
            } else {
                assert!(!name.starts_with("hand-"), "holds no frame");
            }
        }));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{name}: {msg}"));
        }
    }
    // Then every input again with its frames addressed to the router (the
    // fuzz target runs both): inputs written before the L2 destination
    // check still reach what lies past it. After all of the above, so the
    // neighbours these learn do not change the expected outcomes.
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = harness::PIPELINE.addressed_to_us(&std::fs::read(path).unwrap());
        let r = catch_unwind(AssertUnwindSafe(|| {
            if let Some(o) = harness::PIPELINE.run_and_check(&data) {
                for v in verdicts(&o) {
                    *seen.entry(format!("{v:?}")).or_default() += 1;
                }
            }
        }));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{name} (addressed to us): {msg}"));
        }
    }
    eprintln!("{} inputs, verdicts: {seen:?}", files.len());
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
}

/// The input format round-trips and is cut at the limits.
#[test]
fn input_format() {
    let a = [1u8; 20];
    let b = [2u8; 70];
    let data = harness::encode(1, 3, &[&a, &b]);
    let i = harness::decode(&data).unwrap();
    assert_eq!(i.in_port, 1);
    assert_eq!(i.now, 1_000_000_000 + 3 * 50_000_000);
    assert_eq!(i.frames, vec![a.to_vec(), b.to_vec()]);
    assert!(harness::decode(&[0]).is_none());
    assert!(harness::decode(&[]).is_none());
    // A length past the end takes what is left.
    assert_eq!(
        harness::decode(&[0, 0, 9, 7]).unwrap().frames,
        vec![vec![7]]
    );
    // A length over VEC_PACKET_MAX: a chain, its first segment the next
    // VEC_PACKET_MAX bytes (zero-padded), the rest in later segments; the
    // top bit breaks it. Frames after it follow its first segment.
    let max = dataplane::pipeline::packet::VEC_PACKET_MAX;
    let mut data = harness::encode(0, 0, &[&a]);
    data.extend(harness::encode_chain(&b, 1000, false));
    data.extend(harness::encode_chain(&b, 7, true));
    data.extend(&harness::encode(0, 0, &[&a])[1..]);
    let i = harness::decode(&data).unwrap();
    assert_eq!(i.frames.len(), 4);
    assert_eq!(i.frames[1].len(), max);
    assert_eq!(i.frames[1][..70], b);
    assert_eq!(i.frames[3], a);
    let chain = |more, broken| harness::Chain { more, broken };
    assert_eq!(
        i.chains,
        [
            chain(0, false),
            chain(1000, false),
            chain(7, true),
            chain(0, false)
        ]
    );
    // ... cut short by the end of the input: still a full first segment.
    let i = harness::decode(&[0, 0x08, 0x01, 5]).unwrap();
    assert_eq!((i.frames[0].len(), i.chains[0]), (max, chain(1, false)));
    // The top bit of a length up to VEC_PACKET_MAX means nothing.
    assert_eq!(
        harness::decode(&[0, 0x80, 1, 9, 8]).unwrap().frames,
        vec![vec![9]]
    );
    // No more than a burst.
    let many = harness::encode(0, 0, &[&a[..]; harness::MAX_FRAMES + 8]);
    assert_eq!(
        harness::decode(&many).unwrap().frames.len(),
        harness::MAX_FRAMES
    );
}
