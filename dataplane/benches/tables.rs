//! Lookup-table benchmark: rte_fib vs rte_lpm (IPv4), rte_fib6 vs rte_lpm6
//! (IPv6), rte_acl vs a linear first-match scan.
//!
//! `cargo bench -p dataplane --bench tables` prints markdown tables: ns per
//! lookup in bulks of 32 (one burst), route-add time, ACL ns per packet and
//! build time. Set `TABLES_BENCH_QUICK=1` to skip the million-route runs
//! (rte_lpm takes minutes to load a million routes).
//!
//! Workload. IPv4 routes: random addresses, a BGP-like length mix (55 % /24,
//! 15 % /22–/23, 20 % /16–/21, 2 % /8–/15, 8 % /25–/32). IPv6 routes: 10 %
//! /32 "allocations" under 2000::/3, the rest /33–/64 (most /48) inside them
//! plus 5 % /65–/128. Lookups: 1 Mi addresses, half inside a random route,
//! half uniform, looked up 32 at a time in order (so the table, not the
//! address array, is what misses the cache), results summed so that every
//! lookup's result is waited for. Deletes: 1,000 of the routes.
//! ACL: firewall-like IPv4 rules (mostly /16–/32 prefixes drawn from 256 /16
//! "sites", TCP/UDP, exact service ports, some ranges and wildcards),
//! traffic half aimed at a random rule, half random.
use dataplane::dpdk::lpm::{Fib4, Fib6, Lpm4, Lpm6, LpmConfig};
use dataplane::dpdk::Eal;
use dataplane::pipeline::meta::FlowKey;
use dataplane::tables::{AclAction, AclRule, AclTable, Prefix, RouteTable};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const BURST: usize = 32;
const LOOKUPS: usize = 1 << 20;

fn main() {
    let quick = std::env::var_os("TABLES_BENCH_QUICK").is_some();
    // Up to ~500 MiB of tables at once (IPv6 at 100k routes). By default
    // without hugepages, so the numbers carry 4 KiB-page TLB misses (an upper
    // bound); TABLES_BENCH_HUGE=1 uses free 2 MiB hugepages instead.
    let huge = std::env::var_os("TABLES_BENCH_HUGE").is_some();
    let mut args: Vec<String> = ["tables-bench", "--no-pci", "--no-telemetry", "-l", "0"]
        .map(String::from)
        .to_vec();
    if huge {
        args.push("--in-memory".into());
    } else {
        args.extend(["--no-huge", "--no-shconf", "-m", "2048"].map(String::from));
    }
    args.push("--log-level=lib.eal:error".into());
    // No shared files either way, so runs can share the prefix.
    args.push("--file-prefix=tables-bench".into());
    let eal = Eal::init(&args).expect("EAL init");
    let ghz = eal.tsc_hz() as f64 / 1e9;
    let pages = if huge {
        "2 MiB hugepages"
    } else {
        "4 KiB pages (--no-huge)"
    };
    println!("# tables bench (TSC {ghz:.2} GHz, {pages})\n");

    ipv4(quick, ghz);
    ipv6(ghz);
    acl();
}

// --- helpers ---------------------------------------------------------------

/// Runs `f` (which processes `items` items) until at least 300 ms have
/// passed; returns ns per item.
fn ns_per_item(items: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm up
    let mut runs = 0u32;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(300) {
        f();
        runs += 1;
    }
    start.elapsed().as_nanos() as f64 / (f64::from(runs) * items as f64)
}

fn fmt_time(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

/// Adds every route to `t`, returning the total time.
fn load<T: RouteTable>(t: &mut T, routes: &[(T::Addr, u8, u32)]) -> Duration {
    let start = Instant::now();
    for &(a, l, nh) in routes {
        t.add(a, l, nh).expect("route add");
    }
    start.elapsed()
}

struct RouteRow {
    table: &'static str,
    routes: usize,
    add: Duration,
    /// ns per delete (of 1,000 routes, after the lookups).
    delete_ns: f64,
    lookup_ns: f64,
    mem: usize,
}

/// Deletes 1,000 of the routes (spread over the list); ns per delete.
fn delete_some<T: RouteTable>(t: &mut T, routes: &[(T::Addr, u8, u32)]) -> f64 {
    let step = (routes.len() / 1000).max(1);
    let victims: Vec<_> = routes.iter().step_by(step).take(1000).collect();
    let start = Instant::now();
    for &&(a, l, _) in &victims {
        t.delete(a, l).expect("route delete");
    }
    start.elapsed().as_nanos() as f64 / victims.len() as f64
}

fn print_routes(title: &str, rows: &[RouteRow], ghz: f64) {
    println!("## {title}\n");
    println!("| table | routes | load time | ns/add | cycles/add | ns/delete | ns/lookup (bulk 32) | memory (est.) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let per = r.add.as_nanos() as f64 / r.routes as f64;
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {} MiB |",
            r.table,
            r.routes,
            fmt_time(r.add),
            per,
            per * ghz,
            r.delete_ns,
            r.lookup_ns,
            r.mem >> 20
        );
    }
    println!();
}

// --- IPv4 --------------------------------------------------------------------

fn v4_routes(n: usize, rng: &mut SmallRng) -> Vec<(u32, u8, u32)> {
    (0..n)
        .map(|i| {
            let len = match rng.gen_range(0..100) {
                0..55 => 24,
                55..70 => rng.gen_range(22..=23),
                70..90 => rng.gen_range(16..=21),
                90..92 => rng.gen_range(8..=15),
                _ => rng.gen_range(25..=32),
            };
            (rng.gen::<u32>(), len, (i % 4096) as u32)
        })
        .collect()
}

fn v4_traffic(routes: &[(u32, u8, u32)], rng: &mut SmallRng) -> Vec<u32> {
    (0..LOOKUPS)
        .map(|_| {
            if rng.gen() {
                let (a, l, _) = routes[rng.gen_range(0..routes.len())];
                let host = u32::MAX.checked_shr(u32::from(l)).unwrap_or(0);
                (a & !host) | (rng.gen::<u32>() & host)
            } else {
                rng.gen()
            }
        })
        .collect()
}

/// ns per lookup through [`RouteTable::lookup_bulk`], 32 at a time. The
/// results are summed: a lookup whose result nobody reads lets the CPU run
/// ahead into the next burst and looks cheaper than it is.
fn bulk_u32<T: RouteTable<Addr = A>, A: Copy>(t: &T, addrs: &[A]) -> f64 {
    let mut out = [0u32; BURST];
    ns_per_item(addrs.len(), || {
        let mut sum = 0u32;
        for c in addrs.chunks(BURST) {
            t.lookup_bulk(c, &mut out[..c.len()]);
            sum = out[..c.len()].iter().fold(sum, |s, &x| s.wrapping_add(x));
        }
        black_box(sum);
    })
}

fn ipv4(quick: bool, ghz: f64) {
    let mut rows = Vec::new();
    let sizes: &[usize] = if quick {
        &[1_000, 100_000]
    } else {
        &[1_000, 1_000_000]
    };
    for &n in sizes {
        let mut rng = SmallRng::seed_from_u64(4);
        let routes = v4_routes(n, &mut rng);
        let traffic = v4_traffic(&routes, &mut rng);
        let cfg = LpmConfig::new(n as u32, (n as u32 / 8).max(1024));

        let mut fib = Fib4::new(cfg).expect("fib4");
        let add = load(&mut fib, &routes);
        // The raw rte_fib call (8-byte results) and through RouteTable (u32
        // ids, as the pipeline sees them).
        let mut raw = [0u64; BURST];
        let raw_ns = ns_per_item(traffic.len(), || {
            let mut sum = 0u64;
            for c in traffic.chunks(BURST) {
                fib.lookup_bulk(c, &mut raw[..c.len()]);
                sum = raw[..c.len()].iter().fold(sum, |s, &x| s.wrapping_add(x));
            }
            black_box(sum);
        });
        let trait_ns = bulk_u32(&fib, &traffic);
        let (len, mem) = (fib.len(), fib.memory_bytes());
        let delete_ns = delete_some(&mut fib, &routes);
        rows.push(RouteRow {
            table: "rte_fib (raw, u64 results)",
            routes: len,
            add,
            delete_ns,
            lookup_ns: raw_ns,
            mem,
        });
        rows.push(RouteRow {
            table: "rte_fib via RouteTable (u32)",
            routes: len,
            add,
            delete_ns,
            lookup_ns: trait_ns,
            mem,
        });
        drop(fib);

        let mut lpm = Lpm4::new(cfg).expect("lpm4");
        let add = load(&mut lpm, &routes);
        let ns = bulk_u32(&lpm, &traffic);
        let (len, mem) = (lpm.len(), lpm.memory_bytes());
        let delete_ns = delete_some(&mut lpm, &routes);
        rows.push(RouteRow {
            table: "rte_lpm",
            routes: len,
            add,
            delete_ns,
            lookup_ns: ns,
            mem,
        });
    }
    print_routes("IPv4 routes", &rows, ghz);
}

// --- IPv6 --------------------------------------------------------------------

fn v6_routes(n: usize, rng: &mut SmallRng) -> Vec<([u8; 16], u8, u32)> {
    let allocs: Vec<u128> = (0..(n / 10).max(1))
        .map(|_| (0x2000u128 << 112 | (rng.gen::<u128>() >> 3)) & (u128::MAX << 96))
        .collect();
    (0..n)
        .map(|i| {
            let base = allocs[i % allocs.len()];
            let (len, addr) = if i < allocs.len() {
                (32, base)
            } else {
                let len = match rng.gen_range(0..100) {
                    0..15 => rng.gen_range(33..=47),
                    15..75 => 48,
                    75..95 => rng.gen_range(49..=64),
                    _ => rng.gen_range(65..=128),
                };
                (len, base | (rng.gen::<u128>() >> 32))
            };
            (addr.to_be_bytes(), len, (i % 4096) as u32)
        })
        .collect()
}

fn v6_traffic(routes: &[([u8; 16], u8, u32)], rng: &mut SmallRng) -> Vec<[u8; 16]> {
    (0..LOOKUPS)
        .map(|_| {
            if rng.gen() {
                let (a, l, _) = routes[rng.gen_range(0..routes.len())];
                let host = u128::MAX.checked_shr(u32::from(l)).unwrap_or(0);
                ((u128::from_be_bytes(a) & !host) | (rng.gen::<u128>() & host)).to_be_bytes()
            } else {
                (0x2000u128 << 112 | (rng.gen::<u128>() >> 3)).to_be_bytes()
            }
        })
        .collect()
}

fn ipv6(ghz: f64) {
    let mut rows = Vec::new();
    for &n in &[1_000usize, 100_000] {
        let mut rng = SmallRng::seed_from_u64(6);
        let routes = v6_routes(n, &mut rng);
        let traffic = v6_traffic(&routes, &mut rng);
        let cfg = LpmConfig::new(n as u32, (n as u32 * 4).max(8192));

        let mut fib = Fib6::new(cfg).expect("fib6");
        let add = load(&mut fib, &routes);
        let ns = bulk_u32(&fib, &traffic);
        let (len, mem) = (fib.len(), fib.memory_bytes());
        let delete_ns = delete_some(&mut fib, &routes);
        rows.push(RouteRow {
            table: "rte_fib6 trie",
            routes: len,
            add,
            delete_ns,
            lookup_ns: ns,
            mem,
        });
        drop(fib);

        let mut lpm = Lpm6::new(cfg).expect("lpm6");
        let add = load(&mut lpm, &routes);
        let ns = bulk_u32(&lpm, &traffic);
        let (len, mem) = (lpm.len(), lpm.memory_bytes());
        let delete_ns = delete_some(&mut lpm, &routes);
        rows.push(RouteRow {
            table: "rte_lpm6",
            routes: len,
            add,
            delete_ns,
            lookup_ns: ns,
            mem,
        });
    }
    print_routes("IPv6 routes", &rows, ghz);
}

// --- ACL -----------------------------------------------------------------------

const SERVICES: [u16; 8] = [22, 25, 53, 80, 123, 443, 3306, 8080];

fn acl_rules(n: usize, sites: &[u32], rng: &mut SmallRng) -> Vec<AclRule> {
    // Mostly specific rules, as in a firewall with a default deny: hosts and
    // subnets (/16–/32, some /8–/15), a protocol and a service port.
    let prefix = |rng: &mut SmallRng| {
        let len = if rng.gen_bool(0.9) {
            rng.gen_range(16..=32)
        } else {
            rng.gen_range(8..=15)
        };
        let a = sites[rng.gen_range(0..sites.len())] | (rng.gen::<u32>() & 0xffff);
        Prefix::v4(Ipv4Addr::from(a), len).unwrap()
    };
    (0..n)
        .map(|_| AclRule {
            src: rng.gen_bool(0.7).then(|| prefix(rng)),
            dst: rng.gen_bool(0.95).then(|| prefix(rng)),
            proto: rng
                .gen_bool(0.95)
                .then(|| if rng.gen_bool(0.7) { 6 } else { 17 }),
            sport: match rng.gen_range(0..20) {
                0..18 => (0, u16::MAX),
                18 => (1024, u16::MAX),
                _ => {
                    let p = SERVICES[rng.gen_range(0..SERVICES.len())];
                    (p, p)
                }
            },
            dport: match rng.gen_range(0..20) {
                0..12 => {
                    let p = SERVICES[rng.gen_range(0..SERVICES.len())];
                    (p, p)
                }
                12..16 => {
                    let p = rng.gen_range(1..50000);
                    (p, p)
                }
                16..18 => {
                    let lo = rng.gen_range(1024..60000);
                    (lo, lo + rng.gen_range(1..5000))
                }
                _ => (0, u16::MAX),
            },
            vlan: rng.gen_bool(0.05).then(|| rng.gen_range(1..16)),
            action: if rng.gen_bool(0.5) {
                AclAction::Allow
            } else {
                AclAction::Deny
            },
        })
        .collect()
}

fn acl_traffic(rules: &[AclRule], sites: &[u32], n: usize, rng: &mut SmallRng) -> Vec<FlowKey> {
    let v4 = |a: u32| {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&a.to_be_bytes());
        b
    };
    let inside = |p: Option<Prefix>, rng: &mut SmallRng| -> u32 {
        match p {
            Some(p) => {
                let net = u32::from_be_bytes(p.key_bytes()[..4].try_into().unwrap());
                let host = u32::MAX.checked_shr(u32::from(p.prefix_len())).unwrap_or(0);
                net | (rng.gen::<u32>() & host)
            }
            None => sites[rng.gen_range(0..sites.len())] | (rng.gen::<u32>() & 0xffff),
        }
    };
    let port = |(lo, hi): (u16, u16), rng: &mut SmallRng| rng.gen_range(lo..=hi);
    (0..n)
        .map(|_| {
            let mut k = FlowKey::default();
            if rng.gen() {
                let r = &rules[rng.gen_range(0..rules.len())];
                k.proto = r.proto.unwrap_or(6);
                k.vlan_be = r.vlan.unwrap_or(0).to_be();
                k.sport_be = port(r.sport, rng).to_be();
                k.dport_be = port(r.dport, rng).to_be();
                k.src = v4(inside(r.src, rng));
                k.dst = v4(inside(r.dst, rng));
            } else {
                k.proto = [6, 17, 1][rng.gen_range(0..3)];
                k.sport_be = rng.gen::<u16>().to_be();
                k.dport_be = SERVICES[rng.gen_range(0..SERVICES.len())].to_be();
                k.src = v4(inside(None, rng));
                k.dst = v4(inside(None, rng));
            }
            k
        })
        .collect()
}

fn acl() {
    println!("## ACL (IPv4, first match wins)\n");
    println!(
        "| rules | build | rte_acl ns/pkt (bulk 32) | linear scan ns/pkt | speed-up | matched |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for &n in &[10usize, 1_000, 10_000] {
        let mut rng = SmallRng::seed_from_u64(10);
        let sites: Vec<u32> = (0..256).map(|_| rng.gen::<u32>() & 0xffff_0000).collect();
        let rules = acl_rules(n, &sites, &mut rng);
        let keys = acl_traffic(&rules, &sites, 1 << 16, &mut rng);
        let start = Instant::now();
        let table = AclTable::build(rules, AclAction::Deny).expect("acl build");
        let build = start.elapsed();

        let refs: Vec<&FlowKey> = keys.iter().collect();
        let mut out = [0u32; BURST];
        let acl_ns = ns_per_item(refs.len(), || {
            let mut sum = 0u32;
            for c in refs.chunks(BURST) {
                table.classify_v4(c, &mut out[..c.len()]);
                sum = out[..c.len()].iter().fold(sum, |s, &x| s.wrapping_add(x));
            }
            black_box(sum);
        });
        // The scan costs ~rules × a few ns per packet: time a slice of the
        // traffic big enough to measure.
        let m = (keys.len() * 10 / n).clamp(256, keys.len());
        let naive_ns = ns_per_item(m, || {
            for k in &keys[..m] {
                black_box(table.classify_naive(k, false));
            }
        });
        // Cross-check on the same slice, and report the hit rate.
        let mut res = vec![0u32; m];
        table.classify_v4(&refs[..m], &mut res);
        let mut hits = 0;
        for (k, &r) in keys[..m].iter().zip(&res) {
            assert_eq!(
                r,
                table.classify_naive(k, false),
                "rte_acl disagrees with the scan"
            );
            hits += usize::from(r != AclTable::NONE);
        }
        println!(
            "| {n} | {} | {acl_ns:.1} | {naive_ns:.1} | {:.0}× | {:.0} % |",
            fmt_time(build),
            naive_ns / acl_ns,
            100.0 * hits as f64 / m as f64
        );
    }
    println!();
}
