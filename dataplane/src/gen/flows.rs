//! The flow plan: which 5-tuples the generator emits. Flows are decided once,
//! up front, from the seed: the address family and protocol of each flow are
//! spread deterministically (no randomness in the mix), addresses and ports
//! are random within the configured prefixes, and every 5-tuple is distinct.

use std::collections::HashSet;
use std::net::IpAddr;

use rand::Rng;

use super::types::ProtoMix;
use super::GenArgs;
use crate::tables::Prefix;

/// Largest `--flows` accepted: each flow holds a template per frame size.
pub const FLOWS_MAX: u32 = 1 << 24;

/// Default destination prefixes when none of a family is given.
pub const DEFAULT_DST_V4: [&str; 2] = ["198.18.0.0/24", "198.18.1.0/24"];
/// Default IPv6 destination prefix.
pub const DEFAULT_DST_V6: &str = "2001:db8:1::/64";
/// Default IPv4 source prefix.
pub const DEFAULT_SRC_V4: &str = "10.0.0.0/16";
/// Default IPv6 source prefix.
pub const DEFAULT_SRC_V6: &str = "2001:db8:ff::/64";

/// Transport protocol of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4 {
    /// UDP (IP protocol 17).
    Udp,
    /// TCP (IP protocol 6), sent as PSH+ACK data segments.
    Tcp,
}

/// One generated flow: its 5-tuple and the per-flow constants of its frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Source address (inside `src_prefix`).
    pub src: IpAddr,
    /// Destination address (inside `dst_prefix`).
    pub dst: IpAddr,
    /// Transport protocol.
    pub l4: L4,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// The source prefix the source address was drawn from.
    pub src_prefix: Prefix,
    /// The destination prefix the destination address was drawn from.
    pub dst_prefix: Prefix,
    /// IPv4 identification of the flow's first frame; it increments per frame.
    pub ident_base: u16,
    /// TCP sequence number (constant: frames are replays of one segment).
    pub tcp_seq: u32,
    /// Payload pattern offset: payload byte `i` is `(i + pattern) as u8`.
    pub pattern: u8,
}

impl Flow {
    /// True for an IPv4 flow.
    pub fn is_ipv4(&self) -> bool {
        self.src.is_ipv4()
    }
}

/// The effective prefix lists, split by family, defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Prefixes {
    pub dst4: Vec<Prefix>,
    pub dst6: Vec<Prefix>,
    pub src4: Vec<Prefix>,
    pub src6: Vec<Prefix>,
}

impl Prefixes {
    pub fn from_args(args: &GenArgs) -> Prefixes {
        let split = |given: &[Prefix], v4: &[&str], v6: &[&str]| {
            let pick = |is4: bool, defaults: &[&str]| {
                let mut list: Vec<Prefix> = Vec::new();
                for c in given.iter().filter(|c| c.is_ipv4() == is4) {
                    if !list.contains(c) {
                        list.push(*c);
                    }
                }
                if list.is_empty() {
                    list = defaults
                        .iter()
                        .map(|s| s.parse().expect("default prefix parses"))
                        .collect();
                }
                list
            };
            (pick(true, v4), pick(false, v6))
        };
        let (dst4, dst6) = split(&args.dst_prefix, &DEFAULT_DST_V4, &[DEFAULT_DST_V6]);
        let (src4, src6) = split(&args.src_prefix, &[DEFAULT_SRC_V4], &[DEFAULT_SRC_V6]);
        Prefixes {
            dst4,
            dst6,
            src4,
            src6,
        }
    }

    fn dst(&self, v4: bool) -> &[Prefix] {
        if v4 {
            &self.dst4
        } else {
            &self.dst6
        }
    }

    fn src(&self, v4: bool) -> &[Prefix] {
        if v4 {
            &self.src4
        } else {
            &self.src6
        }
    }
}

/// Is item `i` of `n` among the `k` picked when `k` items are spread evenly
/// (Bresenham): exactly `k` of `0..n` answer true, at even spacing.
pub(crate) fn spread(i: u64, k: u64, n: u64) -> bool {
    let (i, k, n) = (u128::from(i), u128::from(k), u128::from(n));
    (i + 1) * k / n > i * k / n
}

/// `round(n * ratio)` for a ratio already checked to be in `0..=1`.
pub(crate) fn share(n: u64, ratio: f64) -> u64 {
    ((n as f64) * ratio).round().clamp(0.0, n as f64) as u64
}

/// Decides every flow. Flow `i` is IPv6 when picked by [`spread`] with
/// `round(flows * ipv6_ratio)` picks; the `j`-th flow of a family uses
/// destination prefix `j % n` and source prefix `j % m` of that family, and
/// under `--proto mix` is TCP when `j` is odd.
pub(crate) fn plan<R: Rng>(args: &GenArgs, prefixes: &Prefixes, rng: &mut R) -> Vec<Flow> {
    let n = u64::from(args.flows);
    let n6 = share(n, args.ipv6_ratio);
    let mut seen = HashSet::with_capacity(args.flows as usize);
    let mut flows = Vec::with_capacity(args.flows as usize);
    let mut per_family = [0usize; 2];
    for i in 0..n {
        let v4 = !spread(i, n6, n);
        let j = &mut per_family[usize::from(!v4)];
        let l4 = match args.proto {
            ProtoMix::Udp => L4::Udp,
            ProtoMix::Tcp => L4::Tcp,
            ProtoMix::Mix if *j % 2 == 1 => L4::Tcp,
            ProtoMix::Mix => L4::Udp,
        };
        let src_prefix = prefixes.src(v4)[*j % prefixes.src(v4).len()];
        let dst_prefix = prefixes.dst(v4)[*j % prefixes.dst(v4).len()];
        *j += 1;
        // Redraw on a repeated 5-tuple; with random 16-bit ports a repeat is
        // rare even when both prefixes are single hosts.
        let flow = loop {
            let flow = draw(src_prefix, dst_prefix, l4, rng);
            if seen.insert((flow.src, flow.dst, flow.l4, flow.sport, flow.dport)) {
                break flow;
            }
        };
        flows.push(flow);
    }
    flows
}

/// A flow outside the plan, used as the base of malformed frames whose kind
/// needs a family or protocol that no planned flow has.
pub(crate) fn synthetic<R: Rng>(prefixes: &Prefixes, v4: bool, l4: L4, rng: &mut R) -> Flow {
    draw(prefixes.src(v4)[0], prefixes.dst(v4)[0], l4, rng)
}

fn draw<R: Rng>(src_prefix: Prefix, dst_prefix: Prefix, l4: L4, rng: &mut R) -> Flow {
    Flow {
        src: random_host(src_prefix, rng),
        dst: random_host(dst_prefix, rng),
        l4,
        sport: rng.gen_range(1024..=u16::MAX),
        dport: rng.gen_range(1024..=u16::MAX),
        src_prefix,
        dst_prefix,
        ident_base: rng.gen(),
        tcp_seq: rng.gen(),
        pattern: rng.gen(),
    }
}

/// A random address inside `prefix`, avoiding the all-zeros host (the
/// network / subnet-router anycast address) and, for IPv4, the all-ones host
/// (broadcast) whenever the prefix has room for other hosts.
fn random_host<R: Rng>(prefix: Prefix, rng: &mut R) -> IpAddr {
    let bits = prefix.host_bits();
    let avoid_zero = if prefix.is_ipv4() {
        bits >= 2
    } else {
        bits >= 1
    };
    let avoid_ones = prefix.is_ipv4() && bits >= 2;
    let mask = if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let host = rng.gen::<u128>() & mask;
        if (avoid_zero && host == 0) || (avoid_ones && host == mask) {
            continue;
        }
        return prefix.host(host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn spread_picks_exactly_k_evenly() {
        for (k, n) in [(0, 10), (3, 10), (10, 10), (1, 1), (5, 16)] {
            let picks: Vec<u64> = (0..n).filter(|&i| spread(i, k, n)).collect();
            assert_eq!(picks.len() as u64, k);
            // Gaps between picks differ by at most one.
            let gaps: Vec<u64> = picks.windows(2).map(|w| w[1] - w[0]).collect();
            if let (Some(lo), Some(hi)) = (gaps.iter().min(), gaps.iter().max()) {
                assert!(hi - lo <= 1, "{k}/{n}: {gaps:?}");
            }
        }
    }

    #[test]
    fn random_host_stays_inside_and_avoids_edges() {
        let mut rng = StdRng::seed_from_u64(7);
        let p: Prefix = "192.0.2.0/30".parse().unwrap();
        for _ in 0..200 {
            let ip = random_host(p, &mut rng);
            assert!(p.contains(ip));
            assert_ne!(ip, "192.0.2.0".parse::<IpAddr>().unwrap());
            assert_ne!(ip, "192.0.2.3".parse::<IpAddr>().unwrap());
        }
        let p31: Prefix = "192.0.2.0/31".parse().unwrap();
        let p32: Prefix = "192.0.2.9/32".parse().unwrap();
        let p6: Prefix = "2001:db8::/127".parse().unwrap();
        for p in [p31, p32, p6] {
            assert!(p.contains(random_host(p, &mut rng)));
        }
        assert_eq!(
            random_host(p6, &mut rng),
            "2001:db8::1".parse::<IpAddr>().unwrap()
        );
    }
}
