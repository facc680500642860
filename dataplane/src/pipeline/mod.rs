//! The packet pipeline: an ordered list of stages run over whole bursts.
//!
//! Each stage looks at every packet still marked `Verdict::Continue` and
//! writes a verdict (next stage, output port, or drop with a reason) into
//! the packet's [`Meta`]. Stages decide; one final pass, [`dispatch`], moves
//! packets to their output buffers and drops. The pipeline runs over the
//! [`PacketBuf`] trait, so it is tested and fuzzed on plain byte vectors and
//! run by the daemon over mbufs.
//!
//! Every stage list takes the same fast lane ([`lane`]): `parse` runs as one
//! sweep that leaves plain IPv4 packets' header fields in the [`Lane`] and
//! fills `Meta` only for the others; each stage reads both, and the stage
//! that forwards (`route`) sends the plain packets its fast path rewrote
//! straight to the output when it is the last stage ([`tx::SendTx`]).
//! `Pipeline::set_lane(false)` runs the same stages one by one over fully
//! parsed `Meta` instead: the reference the tests compare the lane with.
pub mod acl;
pub mod count;
pub mod forward;
pub mod lane;
pub mod lb;
pub mod local;
pub mod meta;
pub mod packet;
pub mod parse;
pub mod report;
pub mod route;
pub mod tx;

pub use lane::Lane;
pub use meta::{DropReason, Event, FlowKey, FlowKeyV4, Meta, Verdict, L3};
pub use packet::{PacketBuf, VecPacket};

use crate::burst::{Burst, BURST_SIZE};
use crate::stats::WorkerCounters;
use crate::tables::route::Fib4Reader;
use crate::tables::set::TableSet;
use acl::AclStage;
use count::CountStage;
use forward::Forward;
use lb::LbStage;
use parse::Parse;
use route::martians::V4Screen;
use route::RouteStage;
use std::collections::BTreeMap;
use std::sync::Arc;
use tx::{FastTx, MarkTx};

/// What a stage may read or bump besides the packets: the time and the
/// worker's counters (single writer: the worker running the stage).
pub struct StageCtx<'a> {
    /// TSC at the start of the burst.
    pub now: u64,
    /// TSC ticks per second.
    pub tsc_hz: u64,
    pub counters: &'a WorkerCounters,
}

impl<'a> StageCtx<'a> {
    /// A context for tests and the fuzzer: a 1 GHz clock at t = 1 s.
    pub fn test(counters: &'a WorkerCounters) -> Self {
        StageCtx {
            now: 1_000_000_000,
            tsc_hz: 1_000_000_000,
            counters,
        }
    }
}

/// The clock per-stage profiling reads (`Pipeline::set_profile`): the
/// worker gives the TSC (`dpdk::rdtsc`), tests whatever they like. The
/// pipeline reads time only through it, or through `StageCtx::now`.
pub type Clock = fn() -> u64;

/// Per-burst scratch: one `Meta` per packet slot.
pub type MetaBurst = [Meta; BURST_SIZE];

/// A stage's counters as the control thread reads them for the report:
/// one instance per worker, summed by [`crate::stats::sum_reports`].
pub trait StageCounters: Send + Sync {
    fn report(&self) -> serde_json::Value;
}

/// What the control thread reads of a stage's tables in the set in force:
/// counters that start anew with new tables, what the config sized them
/// to. One per stage, not per worker ([`StageOps::tables_report`]); the
/// daemon asks each stage's and names none ([`report::StageReports`]).
pub trait TablesReport: Sync {
    /// Merged into the stage's entry of the report's `stages` (beside its
    /// workers' summed [`StageCounters`]), not summed over workers.
    fn report(&self, _set: &TableSet) -> Option<serde_json::Value> {
        None
    }

    /// The stage's entries in the report's `tables` (sizes, memory).
    fn sizes(&self, _set: &TableSet, _out: &mut BTreeMap<String, u64>) {}

    /// The stage's ` key=value` pairs on the periodic stats line;
    /// `workers` are its workers' counters.
    fn stats_line(&self, _set: &TableSet, _workers: &[Arc<dyn StageCounters>], _out: &mut String) {}
}

/// What a stage declares of itself, in its own file (`StageOps::SPEC`):
/// its name, and what the config's ordering rules check of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageSpec {
    /// The name in the config, the report and the profiler.
    pub name: &'static str,
    /// Its config section (the stage's name), if it has one: the stage
    /// needs it, and it needs the stage.
    pub section: Option<&'static str>,
    /// It sends packets to an output port. The pipeline hands its output
    /// to the first such stage; today's forwarders never share a pipeline
    /// (`forward` is `headerless`, `route` reads headers).
    pub forwards: bool,
    /// It only filters and needs a later stage that forwards.
    pub needs_later_forwarder: bool,
    /// It reads packet headers (the `parse` sweep runs before the first
    /// such stage).
    pub needs_headers: bool,
    /// It sends frames on without reading them, by input port (a
    /// cross-connect): no stage that reads headers may share its pipeline.
    pub headerless: bool,
    /// What of its config section only a restart applies (a reload
    /// refuses a change there, naming the key).
    pub restart: RestartKeys,
}

/// What of a stage's config section only a restart applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartKeys {
    /// Nothing: a reload applies the whole section.
    None,
    /// These keys of it (state sized once that outlives every table set).
    Keys(&'static [&'static str]),
    /// The whole section.
    Section,
}

/// What every stage is. Adding a stage: its file implementing this (its
/// `SPEC`, which the config's ordering rules read, and its `build`), its
/// line in the registration list (`with_registered_stages`, which makes
/// [`Stage`], [`StageKind`] and their matches), and its config section
/// (plus, for a stage with tables of its own, their field in `TableSet`,
/// their build in `daemon::build_table_set` and what makes a reload reuse
/// them in `control::reload`); the config checks, the daemon, the report,
/// the profiler and a reload's restart-only keys take it from here.
pub trait StageOps {
    /// The stage's declaration.
    const SPEC: StageSpec;

    /// A worker's instance of the stage, over the tables in force.
    fn build(b: &StageBuild) -> Self
    where
        Self: Sized;

    /// The name in the config, the report and the profiler.
    fn name(&self) -> &'static str {
        Self::SPEC.name
    }

    /// Decides the packets of a burst: plain ones from `lane` (see
    /// [`lane`]; [`Lane::materialize`] gives one its full `Meta`, and
    /// [`Lane::decide`] takes a decided one off the lane), the others from
    /// `Meta`. `tx` takes the packets a forwarding stage's fast
    /// path rewrote when this is the last stage (else it marks verdicts).
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        tx: &mut F,
    );

    /// Takes worker `worker`'s view of a newly published table set, at a
    /// burst boundary (see [`crate::tables::set`]).
    fn rebind(&mut self, _set: &TableSet, _worker: usize) {}

    /// This worker's counters for the report, if the stage keeps any.
    fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        None
    }

    /// What the report and the stats line take from the stage's tables.
    fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        None
    }

    /// Whether the stage sends packets to an output (only one per list).
    fn forwards(&self) -> bool {
        Self::SPEC.forwards
    }

    /// The screen the parse sweep keeps suspect addresses off the lane by
    /// ([`Lane::screen`]): the forwarder's, from its tables in force.
    fn lane_screen(&self) -> Option<V4Screen> {
        None
    }

    /// The IPv4 table whose lines the parse sweep prefetches for plain
    /// packets' destinations when no stage runs between it and the
    /// forwarder (the forwarder's own table, when it is too large for its
    /// lines to stay cached: `Routing::v4_table_is_large`).
    fn v4_prefetch(&self) -> Option<Fib4Reader<'_>> {
        None
    }

    /// When the stage is the whole pipeline: sends a burst whole to one
    /// port without any `Meta` (rewriting it as needed), returning the
    /// port, or `None` for the per-packet path (`run_and_dispatch`).
    fn whole_burst<P: PacketBuf>(&self, _pkts: &mut Burst<P>, _in_port: u16) -> Option<u16> {
        None
    }
}

/// What a worker's stages are built from ([`StageOps::build`]).
pub struct StageBuild<'a> {
    /// The tables in force.
    pub tables: &'a TableSet,
    /// The worker's index.
    pub worker: usize,
    /// The number of ports.
    pub ports: usize,
    /// By input port, the port `forward` sends to (its pairs).
    pub forward_out: &'a [Option<u16>],
    /// The ports' own MACs and their peers' (`forward`'s rewrite).
    pub port_macs: &'a [[u8; 6]],
    pub peer_macs: &'a [[u8; 6]],
}

/// The registration list: one line a stage the config can name (its
/// variant in [`Stage`] and [`StageKind`], and its type), handed to the
/// macro `$m` (after `$args`). Everything per stage kind below is made
/// from it; `parse` is not in it (the pipeline puts it before the first
/// stage that reads headers).
macro_rules! with_registered_stages {
    ($m:ident ! ( $($args:tt)* )) => {
        $m! { $($args)* ;
            /// Cross-connect port pairs with MAC rewrite.
            Forward(Forward),
            /// Firewall: ordered rules, first match wins.
            Acl(AclStage),
            /// IPv4/IPv6 routing with ARP/NDP and ICMP.
            Route(Box<RouteStage>),
            /// L4 load balancer: Maglev to backend pools, IP-in-IP or L2 DSR.
            Lb(Box<LbStage>),
            /// Counts what the stages before it decided (no section).
            Count(CountStage),
        }
    };
}

/// [`Stage`], [`StageKind`], `StageKind::spec` and `Stage::build` from
/// the registration list.
macro_rules! define_stages {
    ( ; $( $(#[$doc:meta])* $v:ident($t:ty), )* ) => {
        /// The closed set of stages; one `match` per stage per burst.
        pub enum Stage {
            Parse(Parse),
            $( $v($t), )*
        }

        /// The stages a pipeline (the config's `pipeline`) can name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum StageKind {
            $( $(#[$doc])* $v, )*
        }

        impl StageKind {
            /// Every kind, in registration order.
            pub const ALL: &'static [StageKind] = &[ $( StageKind::$v, )* ];

            /// Each kind's declaration ([`StageOps::SPEC`]).
            pub fn spec(&self) -> &'static StageSpec {
                match self {
                    $( StageKind::$v => &<$t as StageOps>::SPEC, )*
                }
            }
        }

        impl Stage {
            /// A worker's stage of `kind` ([`StageOps::build`]).
            pub fn build(kind: StageKind, b: &StageBuild) -> Stage {
                match kind {
                    $( StageKind::$v => Stage::$v(<$t as StageOps>::build(b)), )*
                }
            }
        }
    };
}

with_registered_stages!(define_stages!());

/// The arms of [`each_stage`].
macro_rules! each_stage_arms {
    ($stage:expr, $s:ident, $body:expr ; $( $(#[$doc:meta])* $v:ident($t:ty), )* ) => {
        match $stage {
            Stage::Parse($s) => $body,
            $( Stage::$v($s) => $body, )*
        }
    };
}

/// `$body` with `$s` bound to the stage inside whichever variant `$stage` is.
macro_rules! each_stage {
    ($stage:expr, $s:ident => $body:expr) => {
        with_registered_stages!(each_stage_arms!($stage, $s, $body))
    };
}

impl Stage {
    pub fn name(&self) -> &'static str {
        each_stage!(self, s => StageOps::name(s))
    }

    pub fn rebind(&mut self, set: &TableSet, worker: usize) {
        each_stage!(self, s => StageOps::rebind(s, set, worker))
    }

    pub fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        each_stage!(self, s => StageOps::counters(s))
    }

    pub fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        each_stage!(self, s => StageOps::tables_report(s))
    }

    fn forwards(&self) -> bool {
        each_stage!(self, s => StageOps::forwards(s))
    }

    fn lane_screen(&self) -> Option<V4Screen> {
        each_stage!(self, s => StageOps::lane_screen(s))
    }

    fn v4_prefetch(&self) -> Option<Fib4Reader<'_>> {
        each_stage!(self, s => StageOps::v4_prefetch(s))
    }

    #[inline(always)]
    fn whole_burst<P: PacketBuf>(&self, pkts: &mut Burst<P>, in_port: u16) -> Option<u16> {
        each_stage!(self, s => StageOps::whole_burst(s, pkts, in_port))
    }

    /// [`Stage::process`] for a stage that is not the last: it marks the
    /// verdicts of what it forwards. Out of line, so that only the last
    /// stage's `process` (with the worker's direct TX) is inlined into the
    /// pipeline: one copy of each stage's code instead of two.
    #[inline(never)]
    fn process_marking<P: PacketBuf>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
    ) {
        let mut mark = MarkTx {
            in_port: lane.in_port,
        };
        self.process(pkts, meta, lane, ctx, &mut mark);
    }

    #[inline(always)]
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        tx: &mut F,
    ) {
        each_stage!(self, s => StageOps::process(s, pkts, meta, lane, ctx, tx))
    }
}

impl<T: StageOps> StageOps for Box<T> {
    const SPEC: StageSpec = T::SPEC;

    fn build(b: &StageBuild) -> Self {
        Box::new(T::build(b))
    }

    #[inline(always)]
    fn process<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        lane: &mut Lane,
        ctx: &StageCtx,
        tx: &mut F,
    ) {
        (**self).process(pkts, meta, lane, ctx, tx)
    }
    fn rebind(&mut self, set: &TableSet, worker: usize) {
        (**self).rebind(set, worker)
    }
    fn counters(&self) -> Option<Arc<dyn StageCounters>> {
        (**self).counters()
    }
    fn tables_report(&self) -> Option<&'static dyn TablesReport> {
        (**self).tables_report()
    }
    fn whole_burst<P: PacketBuf>(&self, pkts: &mut Burst<P>, in_port: u16) -> Option<u16> {
        (**self).whole_burst(pkts, in_port)
    }
    fn lane_screen(&self) -> Option<V4Screen> {
        (**self).lane_screen()
    }
    fn v4_prefetch(&self) -> Option<Fib4Reader<'_>> {
        (**self).v4_prefetch()
    }
}

/// A worker's pipeline instance (each worker owns one; tables inside are shared).
pub struct Pipeline {
    stages: Vec<Stage>,
    /// The clock to count cycles per stage with, when profiling (bench
    /// mode; costs two clock reads a stage). `None`: off, one test per
    /// burst as a flag would be.
    profile: Option<Clock>,
    /// The list starts with `parse`: the lane is possible.
    parse_leads: bool,
    /// Run on the fast lane (the default wherever `parse` leads); false:
    /// stage by stage over fully parsed `Meta`.
    lane_on: bool,
    /// A stage runs between the parse sweep and the forwarder (see
    /// [`lane`]).
    early: bool,
    lane: Lane,
    /// Each port's MAC ([`parse::mac_word`]), by port index: the parse's
    /// L2 destination check for a burst takes its input port's.
    port_macs: Vec<u64>,
    /// Bit `p`: port `p` verifies IPv4 header checksums on receive
    /// ([`PacketBuf::rx_ipv4_checksum_good`]).
    rx_checksum_ports: u64,
}

/// Whether the device marked every frame of the burst good
/// ([`PacketBuf::rx_ipv4_checksum_good`]); asked only of bursts from ports
/// with the offload, so out of line.
#[inline(never)]
fn device_verified_all<P: PacketBuf>(pkts: &Burst<P>) -> bool {
    (0..pkts.len()).all(|i| pkts.get(i).is_none_or(|p| p.rx_ipv4_checksum_good()))
}

/// Most stages a pipeline holds (for the per-stage cycle counters).
pub const MAX_STAGES: usize = 6;

impl Pipeline {
    pub fn new(stages: Vec<Stage>) -> Self {
        assert!(stages.len() <= MAX_STAGES);
        let parse_leads = matches!(stages.first(), Some(Stage::Parse(_)));
        // Stages after the sweep up to and including the forwarder.
        let forwarder = stages.iter().position(Stage::forwards);
        let early = forwarder.is_none_or(|f| f > 1);
        let mut p = Pipeline {
            stages,
            profile: None,
            parse_leads,
            lane_on: parse_leads,
            early,
            lane: Lane::default(),
            port_macs: Vec::new(),
            rx_checksum_ports: 0,
        };
        p.take_screen();
        p
    }

    /// The lane's screen from the stages' tables in force.
    fn take_screen(&mut self) {
        self.lane.screen = self
            .stages
            .iter()
            .find_map(Stage::lane_screen)
            .unwrap_or(V4Screen::OPEN);
    }

    /// The ports' own (unicast) MACs, by port index: a unicast frame that
    /// comes in on a port to any other MAC is dropped as `not_for_us` by
    /// the parse. Until set, or for a port beyond the list, every unicast
    /// frame is (the all-zero MAC matches nothing real).
    pub fn set_port_macs(&mut self, macs: &[[u8; 6]]) {
        debug_assert!(
            macs.iter().all(|m| m[0] & 1 == 0),
            "a port MAC must be unicast (config check)"
        );
        self.port_macs = macs.iter().map(|m| parse::mac_word(*m)).collect();
    }

    /// The ports (by index) whose device verifies IPv4 header checksums on
    /// receive: for a burst from one of them whose every frame the device
    /// marked good, the lane takes that as the verification RFC 1812 asks
    /// for and skips its own sum ([`Lane::device_verified`]); every other
    /// burst is summed in software. Per burst, not per frame: a per-frame
    /// test in the sweep's loop slowed the software sweep of every other
    /// port (`docs/perf-log.md`).
    pub fn set_rx_checksum_ports(&mut self, ports: &[bool]) {
        self.rx_checksum_ports = ports
            .iter()
            .enumerate()
            .filter(|&(p, &on)| on && p < 64)
            .fold(0, |mask, (p, _)| mask | 1 << p);
    }

    /// Sets [`Lane::device_verified`] for a burst from `in_port`: decided
    /// here, before [`Pipeline::run_with`], so that the sweep only reads a
    /// flag (the software path's code stays as it was).
    #[inline(always)]
    fn note_device_verified<P: PacketBuf>(&mut self, pkts: &Burst<P>, in_port: u16) {
        self.lane.device_verified =
            self.rx_checksum_ports >> (in_port % 64) & 1 != 0 && device_verified_all(pkts);
    }

    /// Rebinds every stage to `set` (worker `worker`'s counters).
    pub fn rebind(&mut self, set: &TableSet, worker: usize) {
        for s in &mut self.stages {
            s.rebind(set, worker);
        }
        self.take_screen();
    }

    /// Runs the stages on the fast lane (default, where `parse` leads) or
    /// one by one over fully parsed `Meta` (`false`): tests compare the two.
    pub fn set_lane(&mut self, on: bool) {
        self.lane_on = on && self.parse_leads;
    }

    /// Turns per-stage cycle accounting (`WorkerCounters::stage_cycles`) on
    /// with `clock` (the TSC in the worker), or off with `None`.
    pub fn set_profile(&mut self, clock: Option<Clock>) {
        self.profile = clock;
    }

    /// What each profiling slot counts: the stages, in order.
    pub fn stage_names(&self) -> Vec<&'static str> {
        self.stages.iter().map(Stage::name).collect()
    }

    /// Every stage's counters for the report, by stage name.
    pub fn counters(&self) -> Vec<(&'static str, Arc<dyn StageCounters>)> {
        self.stages
            .iter()
            .filter_map(|s| s.counters().map(|c| (s.name(), c)))
            .collect()
    }

    /// Every stage's reader of its tables, by stage name.
    pub fn tables_reports(&self) -> Vec<(&'static str, &'static dyn TablesReport)> {
        self.stages
            .iter()
            .filter_map(|s| s.tables_report().map(|t| (s.name(), t)))
            .collect()
    }

    /// Runs every stage over a burst received on port index `in_port`.
    #[inline]
    pub fn run<P: PacketBuf>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
    ) {
        self.note_device_verified(pkts, in_port);
        self.run_with(pkts, meta, in_port, ctx, &mut MarkTx { in_port });
    }

    /// [`Pipeline::run`], with the last stage's fast-path packets handed to
    /// `tx` (marked for dispatch, or sent at once).
    #[inline]
    fn run_with<P: PacketBuf, F: FastTx<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
        tx: &mut F,
    ) {
        let profile = self.profile;
        let mut t = profile.map_or(0, |now| now());
        let port_mac = self
            .port_macs
            .get(usize::from(in_port))
            .copied()
            .unwrap_or(0);
        let first = match self.stages.first() {
            Some(Stage::Parse(parse)) if self.lane_on => {
                // Not early: the stage after parse is the forwarder.
                let prefetch = if self.early {
                    None
                } else {
                    self.stages.get(1).and_then(Stage::v4_prefetch)
                };
                self.lane
                    .sweep(parse, self.early, pkts, meta, in_port, port_mac, prefetch);
                1
            }
            _ => {
                // Only what every stage relies on; parse fills the rest.
                for m in &mut meta[..pkts.len()] {
                    m.verdict = Verdict::Continue;
                    m.in_port = in_port;
                }
                if let Some(Stage::Parse(parse)) = self.stages.first() {
                    self.lane.parse = *parse;
                }
                self.lane.parse.port_mac = port_mac;
                self.lane.in_port = in_port;
                self.lane.plain = 0;
                self.lane.built = 0;
                self.lane.early = true;
                0
            }
        };
        if let Some(now) = profile {
            if first == 1 {
                let t2 = now();
                ctx.counters.stage_cycles[0].add(t2 - t);
                t = t2;
            }
        }
        let last = self.stages.len() - 1;
        for (k, s) in self.stages.iter_mut().enumerate().skip(first) {
            if k == last {
                s.process(pkts, meta, &mut self.lane, ctx, tx);
            } else {
                s.process_marking(pkts, meta, &mut self.lane, ctx);
            }
            if let Some(now) = profile {
                let t2 = now();
                ctx.counters.stage_cycles[k].add(t2 - t);
                t = t2;
            }
        }
        // No forwarder took what is left on the lane (a stage list without
        // one): dispatch reads every packet's verdict from its `Meta`.
        if self.lane.plain != 0 {
            self.lane.undecided_to_meta(meta);
        }
    }
}

impl Pipeline {
    /// [`Pipeline::run`] then [`dispatch`], as the worker runs them, with two
    /// shortcuts:
    /// - a stage alone may send a whole burst without writing or reading
    ///   any metadata (`StageOps::whole_burst`: `forward`, when the frames
    ///   all hold an Ethernet header); same output as `run` + `dispatch`
    ///   (tests in `forward.rs`), profiled as the `forward` stage;
    /// - the last stage sends its fast-path packets as it rewrites them
    ///   ([`tx::SendTx`]), so they leave ahead of the burst's other
    ///   packets; the same packets, bytes and counters as `run` + `dispatch`
    ///   otherwise (test `dataplane/tests/lane.rs`).
    #[inline]
    pub fn run_and_dispatch<P: PacketBuf, O: Output<P>>(
        &mut self,
        pkts: &mut Burst<P>,
        meta: &mut MetaBurst,
        in_port: u16,
        ctx: &StageCtx,
        out: &mut O,
        dispatch_slot: usize,
    ) {
        if let [only] = &self.stages[..] {
            // A stage alone may send a burst whole to one port (`forward`).
            let t = self.profile.map_or(0, |now| now());
            if let Some(port) = only.whole_burst(pkts, in_port) {
                if let Some(now) = self.profile {
                    let t2 = now();
                    ctx.counters.stage_cycles[0].add(t2 - t);
                    out.tx_all(port, pkts);
                    ctx.counters.stage_cycles[dispatch_slot].add(now() - t2);
                } else {
                    out.tx_all(port, pkts);
                }
                return;
            }
        }
        // The last stage's fast-path packets go straight to `out`
        // (`tx::SendTx`); profiling counts them in that stage.
        let mut send = tx::SendTx { out: &mut *out };
        self.note_device_verified(pkts, in_port);
        self.run_with(pkts, meta, in_port, ctx, &mut send);
        // What is left is counted here, once per burst, not by `SendTx`
        // per packet: a count kept there was a load, an add and a store in
        // the forwarder's loop (the counter could not stay in a register
        // across the loop's calls; `docs/perf-log.md`).
        let left = pkts.slots().iter().filter(|s| s.is_some()).count();
        if left == 0 {
            // All gone; the slots are empty.
            pkts.set_len(0);
            return;
        }
        // Packets sent early left empty slots whose `Meta` is not this
        // burst's: dispatch must not take its whole-burst shortcut then.
        let t = self.profile.map_or(0, |now| now());
        if left == pkts.len() {
            dispatch(pkts, meta, out);
        } else {
            dispatch_each(pkts, meta, out);
        }
        if let Some(now) = self.profile {
            ctx.counters.stage_cycles[dispatch_slot].add(now() - t);
        }
    }
}

/// Where dispatched packets go: the worker's TX buffers and drop bin, or a
/// collector in tests.
pub trait Output<P> {
    fn tx(&mut self, port: u16, pkt: P);
    fn drop(&mut self, pkt: P, reason: DropReason);
    /// Frees a packet the daemon used up (not a drop).
    fn consume(&mut self, pkt: P);
    /// The whole burst goes to `port` (the common case of a cross-connect or
    /// a one-route burst); implementations may send it without copying.
    fn tx_all(&mut self, port: u16, pkts: &mut Burst<P>) {
        for i in 0..pkts.len() {
            if let Some(p) = pkts.take(i) {
                self.tx(port, p);
            }
        }
        pkts.set_len(0);
    }
}

/// The final pass: moves each packet to its output or drops it with its
/// reason. A packet still at `Continue` after the last stage had no stage
/// choose an output: dropped as `no_output`. Leaves the burst empty.
#[inline]
pub fn dispatch<P, O: Output<P>>(pkts: &mut Burst<P>, meta: &MetaBurst, out: &mut O) {
    let n = pkts.len();
    if n == 0 {
        return;
    }
    let first = meta[0].verdict;
    if let Verdict::Tx(port) = first {
        if meta[1..n].iter().all(|m| m.verdict == first) {
            out.tx_all(port, pkts);
            return;
        }
    }
    dispatch_each(pkts, meta, out);
}

/// [`dispatch`] packet by packet, reading the `Meta` of occupied slots only.
fn dispatch_each<P, O: Output<P>>(pkts: &mut Burst<P>, meta: &MetaBurst, out: &mut O) {
    let n = pkts.len();
    for (i, m) in meta[..n].iter().enumerate() {
        let Some(pkt) = pkts.take(i) else { continue };
        match m.verdict {
            Verdict::Tx(port) => out.tx(port, pkt),
            Verdict::Drop(reason) => out.drop(pkt, reason),
            Verdict::Continue => out.drop(pkt, DropReason::NoOutput),
            Verdict::Consumed => out.consume(pkt),
        }
    }
    pkts.set_len(0);
}

/// An `Output` that keeps everything, for tests and the fuzzer.
#[derive(Debug)]
pub struct Collect<P> {
    pub sent: Vec<(u16, P)>,
    pub dropped: Vec<(DropReason, P)>,
    pub consumed: Vec<P>,
}

impl<P> Default for Collect<P> {
    fn default() -> Self {
        Collect {
            sent: Vec::new(),
            dropped: Vec::new(),
            consumed: Vec::new(),
        }
    }
}

impl<P> Output<P> for Collect<P> {
    fn tx(&mut self, port: u16, pkt: P) {
        self.sent.push((port, pkt));
    }
    fn drop(&mut self, pkt: P, reason: DropReason) {
        self.dropped.push((reason, pkt));
    }
    fn consume(&mut self, pkt: P) {
        self.consumed.push(pkt);
    }
}

/// A fresh metadata burst.
pub fn new_meta_burst() -> MetaBurst {
    [Meta::default(); BURST_SIZE]
}

#[cfg(test)]
mod tests {
    use super::forward::Forward;
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static TICKS: Cell<u64> = const { Cell::new(0) };
    }

    /// A clock that advances 10 ticks a read.
    fn fake_clock() -> u64 {
        TICKS.with(|t| {
            t.set(t.get() + 10);
            t.get()
        })
    }

    /// Profiling reads the clock it is given, not the TSC: one span of 10
    /// ticks per stage, and nothing at all when it is off.
    #[test]
    fn profiling_reads_the_given_clock() {
        let macs = [[0x02, 0, 0, 0, 0, 0xa0], [0x02, 0, 0, 0, 0, 0xa1]];
        let mut p = Pipeline::new(vec![Stage::Forward(Forward::new(
            vec![Some(1), Some(0)],
            &macs,
            &macs,
        ))]);
        let c = WorkerCounters::default();
        let mut meta = new_meta_burst();
        let mut b = Burst::<VecPacket>::new();
        b.push(VecPacket::new(vec![0u8; 60])).unwrap();
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 0, "off");
        p.set_profile(Some(fake_clock));
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 20);
        p.set_profile(None);
        p.run(&mut b, &mut meta, 0, &StageCtx::test(&c));
        assert_eq!(c.stage_cycles[0].get(), 20);
    }
}
