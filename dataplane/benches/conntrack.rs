//! Connection-table benchmark: lookups per second on one core with 1 M
//! tracked flows in a 2 M-way table, random hits; and the time of a full
//! `retain_backends` scan, as a worker would run it at a rebind.
//!
//! `cargo bench -p dataplane --bench conntrack`. No EAL: the table is plain
//! Rust. Keys are IPv4 TCP 5-tuples with random addresses and ports; the
//! hash is a multiply-rotate over the key's words (as the pipeline's flow
//! hash). Lookups go in bursts of 32, in a random order of the flows, three
//! ways: `touch` one at a time; `prefetch` of the burst's buckets then
//! `touch`; and the three-step `prefetch` / `probe` / `touch_probed`.
use dataplane::tables::conntrack::{ConnKey, ConnTable, Timeouts};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const FLOWS: usize = 1 << 20;
const CAPACITY: usize = 2 << 20;
const BURST: usize = 32;

fn hash(k: &ConnKey) -> u32 {
    let x = k.words().iter().fold(0u64, |h, &w| {
        (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31)
    });
    (x >> 32) as u32 ^ x as u32
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs `f` over the whole lookup order until 1 s has passed; Mlookups/s.
fn rate(lookups: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut hits = f(); // warm up
    let mut runs = 0u32;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        hits = black_box(f());
        runs += 1;
    }
    let per_s = f64::from(runs) * lookups as f64 / start.elapsed().as_secs_f64();
    (per_s / 1e6, hits)
}

fn main() {
    let timeouts = Timeouts {
        tcp: u64::MAX / 2,
        udp: u64::MAX / 2,
        closing: 1000,
    };
    let mut t = ConnTable::new(CAPACITY, timeouts).expect("table");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut keys = Vec::with_capacity(FLOWS);
    let mut refused = 0;
    let start = Instant::now();
    while keys.len() < FLOWS {
        let r = rng.next();
        let k = ConnKey::v4(
            Ipv4Addr::from(r as u32),
            (r >> 32) as u16,
            Ipv4Addr::from(0xc000_0200 | (r >> 48) as u32 & 0xff),
            443,
            6,
            1,
        );
        let h = hash(&k);
        if t.lookup(&k, h, 0).is_some() {
            continue; // a repeated random key
        }
        match t.insert(&k, h, (r >> 56) as u32, 0) {
            Ok(()) => keys.push((k, h)),
            Err(_) => refused += 1,
        }
    }
    let fill = start.elapsed();
    // A random order of the flows.
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.next() as usize % (i + 1));
    }
    println!("# conntrack bench\n");
    println!(
        "{} flows in {} ways: filled in {:.0} ms ({:.0} ns per lookup+insert), {refused} inserts refused\n",
        keys.len(),
        t.capacity(),
        fill.as_secs_f64() * 1e3,
        fill.as_nanos() as f64 / (keys.len() + refused) as f64
    );
    println!("| lookup (random hits, bursts of 32) | Mlookups/s | ns/lookup |");
    println!("|---|---:|---:|");
    let mut now = 1u64;
    let (plain, hits) = rate(keys.len(), || {
        now += 1;
        let mut hits = 0;
        for burst in keys.chunks(BURST) {
            for (k, h) in burst {
                hits += usize::from(t.touch(k, *h, now).is_some());
            }
        }
        hits
    });
    assert_eq!(hits, keys.len());
    println!("| touch | {plain:.1} | {:.1} |", 1e3 / plain);
    let (pre, hits) = rate(keys.len(), || {
        now += 1;
        let mut hits = 0;
        for burst in keys.chunks(BURST) {
            for (_, h) in burst {
                t.prefetch(*h);
            }
            for (k, h) in burst {
                hits += usize::from(t.touch(k, *h, now).is_some());
            }
        }
        hits
    });
    assert_eq!(hits, keys.len());
    println!("| prefetch, touch | {pre:.1} | {:.1} |", 1e3 / pre);
    let (three, hits) = rate(keys.len(), || {
        now += 1;
        let mut hits = 0;
        let mut probes = [Default::default(); BURST];
        for burst in keys.chunks(BURST) {
            for (_, h) in burst {
                t.prefetch(*h);
            }
            for (p, (_, h)) in probes.iter_mut().zip(burst) {
                *p = t.probe(*h);
            }
            for (p, (k, h)) in probes.iter().zip(burst) {
                hits += usize::from(t.touch_probed(*p, k, *h, now).is_some());
            }
        }
        hits
    });
    assert_eq!(hits, keys.len());
    println!(
        "| prefetch, probe, touch_probed | {three:.1} | {:.1} |",
        1e3 / three
    );

    println!(
        "\n| retain_backends over {} live entries, {} ways | ms |",
        t.occupancy(),
        t.capacity()
    );
    println!("|---|---:|");
    for (what, gone) in [
        ("identity map (nothing changes)", u32::MAX),
        ("one of 256 backends removed, others shift", 7),
    ] {
        let start = Instant::now();
        let r = t.retain_backends(now, |b| match b {
            b if b == gone => None,
            b if b > gone => Some(b - 1),
            b => Some(b),
        });
        println!(
            "| {what}: kept {}, remapped {}, removed {} | {:.1} |",
            r.kept,
            r.remapped,
            r.removed,
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}
