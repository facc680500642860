//! Maglev table benchmark: build time, balance, disruption on removal and
//! lookup cost, at the paper's two table sizes.
//!
//! `cargo bench -p dataplane --bench maglev` prints markdown tables. No EAL:
//! the table is plain Rust. Backends are `10.0.x.y` with weight 1 (and a
//! weighted variant with weights 1..=10 cycling); each build is timed as
//! the best of a few runs, so the numbers are the build itself, not page
//! faults of the first allocation.
use dataplane::tables::maglev::{Backend, Maglev};
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

fn backends(n: u32, weighted: bool) -> Vec<Backend> {
    (1..=n)
        .map(|i| {
            let w = if weighted { i % 10 + 1 } else { 1 };
            Backend::new(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)), w)
        })
        .collect()
}

fn best_build(m: u32, b: &[Backend]) -> (Duration, Maglev) {
    let mut best = Duration::MAX;
    let mut table = None;
    for _ in 0..5 {
        let start = Instant::now();
        let t = Maglev::new(m, b.iter().cloned()).expect("build");
        best = best.min(start.elapsed());
        table = Some(t);
    }
    (best, table.unwrap())
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Largest relative deviation of a backend's count from M·w/Σw, and
/// largest absolute share error |count/M − w/Σw|.
fn balance(t: &Maglev) -> (f64, f64) {
    let total: f64 = t.backends().iter().map(|b| f64::from(b.weight)).sum();
    let m = f64::from(t.size());
    let (mut rel, mut abs) = (0.0f64, 0.0f64);
    for (&c, b) in t.entry_counts().iter().zip(t.backends()) {
        let ideal = m * f64::from(b.weight) / total;
        rel = rel.max((f64::from(c) - ideal).abs() / ideal);
        abs = abs.max((f64::from(c) / m - f64::from(b.weight) / total).abs());
    }
    (rel, abs)
}

/// Removing backends one at a time (`samples` of them, spread over the
/// list): (worst moved, mean moved, worst moved between survivors), each as
/// a multiple of 1/N of the table.
fn disruption(m: u32, n: u32, samples: u32) -> (f64, f64, f64) {
    let all = Maglev::new(m, backends(n, false)).expect("build");
    let (mut worst, mut sum, mut worst_between) = (0.0f64, 0.0, 0.0f64);
    let step = (n / samples).max(1);
    let mut runs = 0;
    for gone in (1..=n).step_by(step as usize).take(samples as usize) {
        let rest = Maglev::new(
            m,
            backends(n, false)
                .into_iter()
                .filter(|b| b.id.addr != IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + gone))),
        )
        .expect("build");
        let map = rest.index_map_from(&all);
        let (mut moved, mut between) = (0usize, 0usize);
        for (&x, &y) in all.entries().iter().zip(rest.entries()) {
            let now = map[usize::from(x)];
            if now != Some(u32::from(y)) {
                moved += 1;
                between += usize::from(now.is_some());
            }
        }
        let per = f64::from(n) / f64::from(m);
        worst = worst.max(moved as f64 * per);
        worst_between = worst_between.max(between as f64 * per);
        sum += moved as f64 * per;
        runs += 1;
    }
    (worst, sum / f64::from(runs), worst_between)
}

fn main() {
    println!("# maglev bench\n");
    println!("## build and balance\n");
    println!("| M | backends | weights | build (best of 5) | largest relative deviation | largest share error |");
    println!("|---:|---:|---|---:|---:|---:|");
    let mut tables = Vec::new();
    for m in [65_537u32, 655_373] {
        for n in [100u32, 1000] {
            for weighted in [false, true] {
                let (d, t) = best_build(m, &backends(n, weighted));
                let (rel, abs) = balance(&t);
                let w = if weighted { "1..=10" } else { "equal" };
                println!(
                    "| {m} | {n} | {w} | {} | {:.3} % | {abs:.7} |",
                    ms(d),
                    rel * 100.0
                );
                if !weighted {
                    tables.push(t);
                }
            }
        }
    }

    println!("\n## removing one backend (moved entries, × 1/N of the table)\n");
    println!("| M | backends | removals | worst moved | mean moved | worst between survivors |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (m, n, samples) in [
        (65_537u32, 10u32, 10u32),
        (65_537, 100, 100),
        (65_537, 1000, 20),
        (655_373, 100, 20),
        (655_373, 1000, 10),
    ] {
        let (worst, mean, between) = disruption(m, n, samples);
        println!("| {m} | {n} | {samples} | {worst:.3}/N | {mean:.3}/N | {between:.3}/N |");
    }

    println!("\n## lookup\n");
    // Hashes from a xorshift: the table (128 KiB or 1.3 MiB), not the
    // hashes, is what is measured.
    let hashes: Vec<u32> = {
        let mut x = 0x2545_f491u32;
        (0..1 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x
            })
            .collect()
    };
    println!("| M | backends | ns/lookup |");
    println!("|---:|---:|---:|");
    for t in &tables {
        let mut runs = 0u32;
        let start = Instant::now();
        let mut sum = 0usize;
        while start.elapsed() < Duration::from_millis(300) {
            for &h in &hashes {
                sum = sum.wrapping_add(t.backend(h).unwrap_or(0));
            }
            runs += 1;
        }
        black_box(sum);
        let ns = start.elapsed().as_nanos() as f64 / (f64::from(runs) * hashes.len() as f64);
        println!("| {} | {} | {ns:.2} |", t.size(), t.backends().len());
    }
}
