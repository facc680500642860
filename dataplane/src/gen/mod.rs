//! Traffic generator: writes pcap files for tests, the demo and benchmarks.
//!
//! It owns the `dataplane gen` subcommand ([`GenArgs`], [`run`]) and a library
//! API ([`generate`], [`generate_detailed`], [`write_pcap`], [`read_pcap`]).
//! It promises deterministic output (same arguments and seed, same bytes),
//! valid IPv4 header and UDP/TCP checksums on every good frame, and malformed
//! frames that break exactly the rule their kind names. It builds frames with
//! etherparse and deliberately shares no code with `wire`, so that it can
//! serve as an independent oracle for the dataplane's parser.
//!
//! Prefixes are the tables' [`Prefix`](crate::tables::Prefix); `types` maps
//! its parse error into [`GenError::Cidr`], naming the input.
//!
//! Layout: `types` (CLI value types), `flows` (the 5-tuple plan), `build`
//! (per-flow frame templates), `malformed` (breaking frames), `pcap` (files),
//! `corpus` (fuzz seeds); this file holds the arguments, the frame loop and
//! the summary.

mod build;
mod corpus;
mod flows;
mod malformed;
mod pcap;
mod types;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

pub use corpus::write_corpus;
pub use flows::{
    Flow, DEFAULT_DST_V4, DEFAULT_DST_V6, DEFAULT_SRC_V4, DEFAULT_SRC_V6, FLOWS_MAX, L4,
};
pub use pcap::{read_pcap, read_pcap_from, write_pcap, write_pcap_to, ReadError, PCAP_EPOCH_SECS};
pub use types::{
    FrameSize, Mac, MalformedKind, ProtoMix, FRAME_MAX, FRAME_MIN, IMIX_PATTERN, IPV6_MIN_FRAME,
};

use crate::tables::prefix::{Prefix, PrefixParseError};
use build::{frame_len, Template, ETH_LEN, L2, VLAN_LEN};
use flows::{share, spread, Prefixes};
use malformed::Need;

/// Arguments of `dataplane gen`. `GenArgs::default()` equals the CLI
/// defaults, with `out` empty (only [`run`] needs it).
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(
    about = "Generate test traffic (Ethernet [+802.1Q] / IPv4|IPv6 / UDP|TCP) into a pcap file",
    long_about = None
)]
pub struct GenArgs {
    /// pcap file to write (Ethernet link type, microsecond timestamps, increasing)
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,

    /// Total frames
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub count: usize,

    /// Distinct flows (5-tuples); good frames cycle through them round-robin
    #[arg(long, value_name = "K", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(FLOWS_MAX)))]
    pub flows: u32,

    /// Frame length without FCS: 60..=9000, or `imix` (64/570/1518 by count
    /// 7:4:1). IPv6 frames are never shorter than 78 bytes (RFC 5180's minimum
    /// IPv6 test frame), so `64` gives 64-byte IPv4 and 78-byte IPv6 frames
    #[arg(long, value_name = "SIZE", default_value_t = FrameSize::Fixed(64))]
    pub size: FrameSize,

    /// Fraction of flows that are IPv6 (0.0..=1.0), spread evenly among flows
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = parse_ratio)]
    pub ipv6_ratio: f64,

    /// Destination prefix, IPv4 or IPv6 (repeatable); a family's flows are
    /// spread evenly over its prefixes [default: 198.18.0.0/24,
    /// 198.18.1.0/24, 2001:db8:1::/64 for a family with none given]
    #[arg(long, value_name = "CIDR", value_parser = types::parse_prefix)]
    pub dst_prefix: Vec<Prefix>,

    /// Source prefix, IPv4 or IPv6 (repeatable) [default: 10.0.0.0/16,
    /// 2001:db8:ff::/64 for a family with none given]
    #[arg(long, value_name = "CIDR", value_parser = types::parse_prefix)]
    pub src_prefix: Vec<Prefix>,

    /// L4 protocol of flows; `mix` alternates UDP and TCP within each family
    #[arg(long, value_enum, default_value_t = ProtoMix::Udp)]
    pub proto: ProtoMix,

    /// 802.1Q VLAN ID tagged on every frame
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(u16).range(0..=4095))]
    pub vlan: Option<u16>,

    /// IPv4 TTL and IPv6 hop limit
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub ttl: u8,

    /// Source MAC of every frame
    #[arg(long, value_name = "MAC", default_value_t = Mac::DEFAULT_SRC)]
    pub src_mac: Mac,

    /// Destination MAC of every frame
    #[arg(long, value_name = "MAC", default_value_t = Mac::DEFAULT_DST)]
    pub dst_mac: Mac,

    /// Fraction of frames replaced by malformed ones (0.0..=1.0), spread
    /// evenly, cycling through the selected kinds
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = parse_ratio)]
    pub malformed_ratio: f64,

    /// Malformed kinds to use, comma-separated [default: all]
    #[arg(long, value_name = "KIND,...", value_enum, value_delimiter = ',')]
    pub malformed: Vec<MalformedKind>,

    /// Random seed: the same arguments and seed give the same bytes
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// Also write each distinct frame as a raw file here (fuzz seed corpus)
    #[arg(long, value_name = "DIR")]
    pub corpus_dir: Option<PathBuf>,

    /// Write the summary counts as JSON here
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,
}

impl Default for GenArgs {
    fn default() -> Self {
        GenArgs {
            out: PathBuf::new(),
            count: 1000,
            flows: 16,
            size: FrameSize::Fixed(64),
            ipv6_ratio: 0.0,
            dst_prefix: Vec::new(),
            src_prefix: Vec::new(),
            proto: ProtoMix::Udp,
            vlan: None,
            ttl: 64,
            src_mac: Mac::DEFAULT_SRC,
            dst_mac: Mac::DEFAULT_DST,
            malformed_ratio: 0.0,
            malformed: Vec::new(),
            seed: 1,
            corpus_dir: None,
            summary_json: None,
        }
    }
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not within 0.0..=1.0"))
    }
}

impl GenArgs {
    /// Checks what clap checks, for arguments built in code.
    pub fn validate(&self) -> Result<(), GenError> {
        for (field, value) in [
            ("ipv6-ratio", self.ipv6_ratio),
            ("malformed-ratio", self.malformed_ratio),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(GenError::Ratio { field, value });
            }
        }
        if !(1..=FLOWS_MAX).contains(&self.flows) {
            return Err(GenError::Flows { value: self.flows });
        }
        if let Some(id) = self.vlan.filter(|&id| id > 4095) {
            return Err(GenError::Vlan(id));
        }
        self.size.validate()
    }

    /// The malformed kinds in use, in cycling order, without repeats.
    pub fn malformed_kinds(&self) -> Vec<MalformedKind> {
        if self.malformed.is_empty() {
            return MalformedKind::ALL.to_vec();
        }
        let mut kinds = Vec::new();
        for &k in &self.malformed {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        kinds
    }
}

/// Errors of the generator.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// A prefix did not parse.
    #[error("invalid CIDR `{input}`: {reason}")]
    Cidr {
        input: String,
        reason: PrefixParseError,
    },
    /// A MAC address did not parse.
    #[error("invalid MAC address `{input}`: expected six hex octets like 02:00:00:00:00:01")]
    Mac { input: String },
    /// A frame size outside `60..=9000` and not `imix`.
    #[error("invalid frame size `{input}`: expected `imix` or an integer in 60..=9000")]
    Size { input: String },
    /// A ratio outside `0.0..=1.0`.
    #[error("--{field} must be within 0.0..=1.0, got {value}")]
    Ratio { field: &'static str, value: f64 },
    /// A flow count outside `1..=FLOWS_MAX`.
    #[error("--flows must be within 1..={}, got {value}", FLOWS_MAX)]
    Flows { value: u32 },
    /// A VLAN ID above 4095.
    #[error("--vlan must be within 0..=4095, got {0}")]
    Vlan(u16),
    /// etherparse refused to serialise a frame.
    #[error("cannot build frame: {0}")]
    Build(String),
    /// A file could not be created, read or written.
    #[error("{}: I/O error", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A pcap file could not be read or written.
    #[error("{}: pcap error", path.display())]
    Pcap {
        path: PathBuf,
        #[source]
        source: pcap_file::PcapError,
    },
    /// A pcap file holds something other than Ethernet frames.
    #[error("{}: link type {link} is not Ethernet", path.display())]
    LinkType { path: PathBuf, link: String },
    /// The summary could not be written as JSON.
    #[error("{}: cannot write JSON", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Counts of what was generated; `--summary-json` writes it.
///
/// `frames = ipv4 + ipv6 + sum(malformed)`: `ipv4`, `ipv6` and
/// `per_dst_prefix` count well-formed frames only. `vlan` counts frames that
/// carry a whole 802.1Q tag (all but `truncated-eth` ones when `--vlan` is
/// set). `malformed` lists every selected kind, `per_dst_prefix` every
/// destination prefix of a family that has flows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenSummary {
    /// Frames written.
    pub frames: u64,
    /// Sum of frame lengths (no FCS).
    pub bytes: u64,
    /// Well-formed IPv4 frames.
    pub ipv4: u64,
    /// Well-formed IPv6 frames.
    pub ipv6: u64,
    /// Frames with an 802.1Q tag.
    pub vlan: u64,
    /// Malformed frames by kind name.
    pub malformed: BTreeMap<String, u64>,
    /// Distinct flows planned.
    pub flows: u64,
    /// Well-formed frames by destination prefix.
    pub per_dst_prefix: BTreeMap<String, u64>,
}

/// What one generated frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Index into [`Generated::flows`] of the flow the frame was built from;
    /// `None` for a malformed frame built from a flow outside the plan
    /// (because no planned flow had the family or protocol its kind needs).
    pub flow: Option<u32>,
    /// The way the frame is broken, if it is.
    pub malformed: Option<MalformedKind>,
}

/// Frames with their provenance.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The frames, in order.
    pub frames: Vec<Vec<u8>>,
    /// One entry per frame.
    pub info: Vec<FrameInfo>,
    /// The planned flows.
    pub flows: Vec<Flow>,
    /// The counts.
    pub summary: GenSummary,
}

/// Generates the frames `args` describe, in order. `args.out` and the
/// other output paths are ignored.
pub fn generate(args: &GenArgs) -> Result<Vec<Vec<u8>>, GenError> {
    generate_detailed(args).map(|g| g.frames)
}

/// Like [`generate`], with per-frame provenance, the flow plan and counts.
pub fn generate_detailed(args: &GenArgs) -> Result<Generated, GenError> {
    args.validate()?;
    let prefixes = Prefixes::from_args(args);
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut src = Sources::new(args);
    for flow in flows::plan(args, &prefixes, &mut rng) {
        src.add(flow)?;
    }
    let planned = src.flows.len();

    let total = args.count as u64;
    let n_bad = share(total, args.malformed_ratio);
    let kinds = args.malformed_kinds();
    // Per need, the flows a malformed frame may start from (empty for
    // `Need::Any`: every planned flow). A need no planned flow meets gets a
    // flow outside the plan.
    let mut bases: BTreeMap<Need, Vec<usize>> = BTreeMap::new();
    for need in kinds.iter().map(|k| k.need()).filter(|_| n_bad > 0) {
        if need == Need::Any || bases.contains_key(&need) {
            bases.entry(need).or_default();
            continue;
        }
        let fits = |f: &Flow| match need {
            Need::Ipv4 => f.is_ipv4(),
            Need::Ipv6 => !f.is_ipv4(),
            Need::Udp => f.l4 == L4::Udp,
            Need::Any => true,
        };
        let mut list: Vec<usize> = (0..planned).filter(|&i| fits(&src.flows[i])).collect();
        if list.is_empty() {
            // UDP of the family the plan uses; IPv4 otherwise.
            let v4 =
                need != Need::Ipv6 && (need != Need::Udp || src.flows.iter().any(Flow::is_ipv4));
            list.push(src.add(flows::synthetic(&prefixes, v4, L4::Udp, &mut rng))?);
        }
        bases.insert(need, list);
    }

    let mut frames = Vec::with_capacity(args.count);
    let mut info = Vec::with_capacity(args.count);
    let mut good_per_flow = vec![0u64; planned];
    let mut bad_per_kind = [0u64; MalformedKind::ALL.len()];
    let mut next_good = 0usize;
    let mut next_bad = 0usize;
    for i in 0..args.count {
        let bad = n_bad > 0 && spread(i as u64, n_bad, total);
        let frame = if bad {
            let kind = kinds[next_bad % kinds.len()];
            next_bad += 1;
            // The n-th frame of a kind starts from the n-th fitting flow.
            let turn = &mut bad_per_kind[kind_index(kind)];
            let list = &bases[&kind.need()];
            let fi = match list.len() {
                0 => *turn as usize % planned,
                n => list[*turn as usize % n],
            };
            *turn += 1;
            let (mut frame, template) = src.frame(fi, i);
            let (l3, l4) = (template.l3(), template.l4());
            malformed::corrupt(kind, &mut frame, l3, l4, &mut rng);
            info.push(FrameInfo {
                flow: (fi < planned).then_some(fi as u32),
                malformed: Some(kind),
            });
            frame
        } else {
            let fi = next_good % planned;
            next_good += 1;
            good_per_flow[fi] += 1;
            info.push(FrameInfo {
                flow: Some(fi as u32),
                malformed: None,
            });
            src.frame(fi, i).0
        };
        frames.push(frame);
    }
    let mut flows = src.flows;
    flows.truncate(planned);

    let summary = summarise(
        &frames,
        &flows,
        &prefixes,
        &good_per_flow,
        &kinds,
        &bad_per_kind,
        args.vlan.is_some(),
    );
    Ok(Generated {
        frames,
        info,
        flows,
        summary,
    })
}

/// The flows frames are made from, with one template per (flow, distinct
/// frame size) and each flow's next IPv4 identification.
struct Sources<'a> {
    args: &'a GenArgs,
    l2: L2,
    /// The distinct requested sizes; frame `i` uses the template of
    /// `args.size.for_frame(i)`.
    sizes: Vec<u16>,
    flows: Vec<Flow>,
    /// `templates[flow * sizes.len() + size slot]`.
    templates: Vec<Template>,
    idents: Vec<u16>,
}

impl<'a> Sources<'a> {
    fn new(args: &'a GenArgs) -> Self {
        let sizes = match args.size {
            FrameSize::Fixed(n) => vec![n],
            FrameSize::Imix => {
                let mut s = IMIX_PATTERN.to_vec();
                s.sort_unstable();
                s.dedup();
                s
            }
        };
        let n = args.flows as usize;
        Sources {
            args,
            l2: L2 {
                src: args.src_mac,
                dst: args.dst_mac,
                vlan: args.vlan,
            },
            templates: Vec::with_capacity(n * sizes.len()),
            sizes,
            flows: Vec::with_capacity(n),
            idents: Vec::with_capacity(n),
        }
    }

    /// Adds a flow and builds its templates; returns its index.
    fn add(&mut self, flow: Flow) -> Result<usize, GenError> {
        for &size in &self.sizes {
            let len = frame_len(flow.is_ipv4(), size);
            let template = Template::build(&flow, &self.l2, self.args.ttl, len)?;
            self.templates.push(template);
        }
        self.idents.push(flow.ident_base);
        self.flows.push(flow);
        Ok(self.flows.len() - 1)
    }

    /// Frame number `index` of flow `fi` (consuming one identification) and
    /// the template it came from.
    fn frame(&mut self, fi: usize, index: usize) -> (Vec<u8>, &Template) {
        let want = self.args.size.for_frame(index);
        let slot = self.sizes.iter().position(|&s| s == want).unwrap_or(0);
        let template = &self.templates[fi * self.sizes.len() + slot];
        let frame = template.instantiate(self.idents[fi]);
        self.idents[fi] = self.idents[fi].wrapping_add(1);
        (frame, template)
    }
}

fn kind_index(kind: MalformedKind) -> usize {
    MalformedKind::ALL
        .iter()
        .position(|&k| k == kind)
        .expect("ALL lists every kind")
}

fn summarise(
    frames: &[Vec<u8>],
    flows: &[Flow],
    prefixes: &Prefixes,
    good_per_flow: &[u64],
    kinds: &[MalformedKind],
    bad_per_kind: &[u64],
    vlan: bool,
) -> GenSummary {
    let mut s = GenSummary {
        frames: frames.len() as u64,
        bytes: frames.iter().map(|f| f.len() as u64).sum(),
        flows: flows.len() as u64,
        vlan: if vlan {
            frames
                .iter()
                .filter(|f| f.len() >= ETH_LEN + VLAN_LEN)
                .count() as u64
        } else {
            0
        },
        ..GenSummary::default()
    };
    for &k in kinds {
        s.malformed
            .insert(k.name().to_owned(), bad_per_kind[kind_index(k)]);
    }
    let has_v4 = flows.iter().any(Flow::is_ipv4);
    let has_v6 = flows.iter().any(|f| !f.is_ipv4());
    let families = [(has_v4, &prefixes.dst4), (has_v6, &prefixes.dst6)];
    for (_, list) in families.iter().filter(|(has, _)| *has) {
        for p in list.iter() {
            s.per_dst_prefix.insert(p.to_string(), 0);
        }
    }
    for (flow, &n) in flows.iter().zip(good_per_flow) {
        if flow.is_ipv4() {
            s.ipv4 += n;
        } else {
            s.ipv6 += n;
        }
        *s.per_dst_prefix
            .entry(flow.dst_prefix.to_string())
            .or_default() += n;
    }
    s
}

/// `dataplane gen`: generates, writes `args.out` (and the corpus and JSON
/// summary when asked), prints a one-line summary and returns the counts.
pub fn run(args: &GenArgs) -> anyhow::Result<GenSummary> {
    anyhow::ensure!(!args.out.as_os_str().is_empty(), "gen: --out is required");
    let generated = generate_detailed(args).context("gen: bad arguments")?;
    write_pcap(&args.out, &generated.frames).context("gen: writing the pcap")?;
    let mut corpus_files = None;
    if let Some(dir) = &args.corpus_dir {
        corpus_files = Some(
            write_corpus(dir, &generated.frames, &generated.info)
                .context("gen: writing the corpus")?,
        );
    }
    let s = generated.summary;
    if let Some(path) = &args.summary_json {
        write_summary(path, &s).context("gen: writing the summary")?;
    }
    let bad: u64 = s.malformed.values().sum();
    println!(
        "gen: wrote {} frames ({} bytes) to {}: {} flows, {} ipv4, {} ipv6, {} vlan, {} malformed{}",
        s.frames,
        s.bytes,
        args.out.display(),
        s.flows,
        s.ipv4,
        s.ipv6,
        s.vlan,
        bad,
        corpus_files.map_or(String::new(), |n| format!(", {n} corpus files")),
    );
    Ok(s)
}

fn write_summary(path: &std::path::Path, summary: &GenSummary) -> Result<(), GenError> {
    let file = File::create(path).map_err(|source| GenError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut out = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, summary).map_err(|source| GenError::Json {
        path: path.to_owned(),
        source,
    })?;
    std::io::Write::write_all(&mut out, b"\n")
        .and_then(|()| std::io::Write::flush(&mut out))
        .map_err(|source| GenError::Io {
            path: path.to_owned(),
            source,
        })
}
