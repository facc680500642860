//! What a reload may change, and what it changed.
//!
//! A reload swaps table sets (routes, neighbours, ACL rules and their
//! settings). Everything a worker, a port, the mempool or EAL was started
//! with stays: a new file that changes any of it is refused with the first
//! such field, located as `check` locates errors (file:line:column), and
//! the running config stays in force.
use super::socket::Answer;
use crate::config::{Config, Resolved, StageKind};
use crate::daemon::{
    acl_inputs_equal, build_table_set, route_inputs_equal, Learned, LearnedState, PortFacts, Reuse,
};
use crate::pipeline::RestartKeys;
use crate::stats::{Counter, ReloadReport, WorkerStats};
use crate::tables::lb::{BackendIds, BackendSpec, LbSpec, ServiceKey};
use crate::tables::neighbor::NeighborTable;
use crate::tables::set::{Published, TableSet};
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Top-level keys whose values are fixed for the daemon's lifetime; the
/// stages' sections declare their own (`StageSpec::restart`).
const RESTART_KEYS: &[&str] = &[
    "pipeline",
    "eal",
    "daemon",
    "mempool",
    "port",
    "worker",
    "distributor",
];

/// The first field that differs between the running config's source and
/// the new one among those a reload cannot apply, as
/// `file:line:col: field: ...` (the location in the new file, or its first
/// line when the field was removed). `None` when a reload can apply the
/// new file.
pub fn restart_needed(old_src: &str, new_src: &str, file: &str) -> Option<String> {
    let old: toml::Table = old_src.parse().ok()?;
    let new: toml::Table = new_src.parse().ok()?;
    let sub = |t: &toml::Table, sec: &str, k: &str| t.get(sec).and_then(|r| r.get(k)).cloned();
    let mut stage_sections = StageKind::ALL.iter().filter_map(|k| {
        let spec = k.spec();
        spec.section.map(|sec| (sec, spec.restart))
    });
    let path = RESTART_KEYS
        .iter()
        .find_map(|key| first_difference(key, old.get(*key), new.get(*key)))
        .or_else(|| {
            stage_sections.find_map(|(sec, restart)| match restart {
                RestartKeys::None => None,
                RestartKeys::Section => first_difference(sec, old.get(sec), new.get(sec)),
                RestartKeys::Keys(keys) => keys.iter().find_map(|key| {
                    let (a, b) = (sub(&old, sec, key), sub(&new, sec, key));
                    first_difference(&format!("{sec}.{key}"), a.as_ref(), b.as_ref())
                }),
            })
        })?;
    let (line, col) = locate(new_src, &path);
    Some(format!(
        "{file}:{line}:{col}: {path}: changed, and only a restart applies it \
         (a reload changes routes, neighbours, ACL rules and load-balancer services); the running config stays"
    ))
}

/// The path of the first difference between `a` and `b` below `path`
/// (`port[1].mtu`), or `None` when they are equal.
fn first_difference(
    path: &str,
    a: Option<&toml::Value>,
    b: Option<&toml::Value>,
) -> Option<String> {
    use toml::Value;
    match (a, b) {
        (None, None) => None,
        (Some(Value::Table(x)), Some(Value::Table(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .find_map(|k| first_difference(&format!("{path}.{k}"), x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(&format!("{path}[{i}]"), Some(u), Some(v))),
        (Some(x), Some(y)) if x == y => None,
        _ => Some(path.to_owned()),
    }
}

/// Line and column (1-based) of `path` in `src`: the deepest part of it that
/// the new file still has.
fn locate(src: &str, path: &str) -> (usize, usize) {
    let Ok(doc) = src.parse::<toml_edit::ImDocument<String>>() else {
        return (1, 1);
    };
    let mut span = None;
    let mut item = doc.as_item();
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let Some(next) = item.get(key) else { break };
        item = next;
        span = item.span().or(span);
        if let Some(i) = index {
            let Some(next) = item.get(i) else { break };
            item = next;
            span = item.span().or(span);
        }
    }
    let at = span.map_or(0, |s| s.start);
    let before = &src[..at.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}

/// What a reload changed, for its log line and its answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub routes_added: usize,
    pub routes_removed: usize,
    /// ACL rules before and after, when the ACL changed.
    pub acl_rules: Option<(usize, usize)>,
    pub static_neighbors_added: usize,
    pub static_neighbors_removed: usize,
    /// Load-balancer services before and after, and backends added and
    /// removed over all services, when the `[lb]` section changed.
    pub lb: Option<LbChanges>,
}

/// What a reload changed in the load balancer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LbChanges {
    pub services: (usize, usize),
    pub backends_added: usize,
    pub backends_removed: usize,
}

impl LbChanges {
    fn between(old: Option<&LbSpec>, new: Option<&LbSpec>) -> Option<LbChanges> {
        if old == new {
            return None;
        }
        let backends = |s: Option<&LbSpec>| -> Vec<(ServiceKey, BackendSpec)> {
            s.iter()
                .flat_map(|s| s.services.iter())
                .flat_map(|s| s.backends.iter().map(move |b| (s.key, b.clone())))
                .collect()
        };
        let (added, removed) = set_difference(&backends(old), &backends(new));
        let count = |s: Option<&LbSpec>| s.map_or(0, |s| s.services.len());
        Some(LbChanges {
            services: (count(old), count(new)),
            backends_added: added,
            backends_removed: removed,
        })
    }
}

impl Changes {
    pub fn between(old: &Resolved, new: &Resolved) -> Changes {
        let (added, removed) = set_difference(&old.routes, &new.routes);
        let (n_added, n_removed) = set_difference(&old.neighbors, &new.neighbors);
        let acl_changed = old.acl_rules != new.acl_rules
            || old.acl_default != new.acl_default
            || old.acl_flow_cache != new.acl_flow_cache;
        Changes {
            routes_added: added,
            routes_removed: removed,
            acl_rules: acl_changed.then_some((old.acl_rules.len(), new.acl_rules.len())),
            static_neighbors_added: n_added,
            static_neighbors_removed: n_removed,
            lb: LbChanges::between(old.lb.as_ref(), new.lb.as_ref()),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Changes::default()
    }
}

impl std::fmt::Display for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "routes +{} -{}", self.routes_added, self.routes_removed)?;
        match self.acl_rules {
            Some((a, b)) => write!(f, ", acl rules {a} -> {b}")?,
            None => write!(f, ", acl unchanged")?,
        }
        write!(
            f,
            ", static neighbours +{} -{}",
            self.static_neighbors_added, self.static_neighbors_removed
        )?;
        if let Some(lb) = self.lb {
            write!(
                f,
                ", lb services {} -> {}, backends +{} -{}",
                lb.services.0, lb.services.1, lb.backends_added, lb.backends_removed
            )?;
        }
        Ok(())
    }
}

/// How many of `new` are not in `old`, and of `old` not in `new`. Only
/// for the reload's log line, but over a million routes it runs on every
/// reload, before the build: equal lists answer at once, and the sets hash
/// with FxHash (the std's SipHash, made to resist hostile keys that a
/// config file does not have, took seconds here).
fn set_difference<T: std::hash::Hash + Eq>(old: &[T], new: &[T]) -> (usize, usize) {
    if old == new {
        return (0, 0);
    }
    let a: FxHashSet<&T> = old.iter().collect();
    let b: FxHashSet<&T> = new.iter().collect();
    (b.difference(&a).count(), a.difference(&b).count())
}

/// Carries out reloads: a helper thread reads and checks the new file and
/// builds the new table set (keeping what did not change) while the
/// control thread keeps ticking (stats, signals, the control socket); the
/// control thread then publishes the set, waits until every worker runs on
/// it and frees the retired one. One reload at a time.
pub struct Reloader<'a> {
    /// The file a reload re-reads (a request may name another, which then
    /// becomes it).
    path: Option<PathBuf>,
    started: (&'a Config, &'a Resolved),
    /// The config in force since the last accepted reload (shared with a
    /// build in progress, which diffs against it).
    replaced: Option<Arc<(Config, Resolved)>>,
    /// The source text of the config in force.
    source: String,
    tables: Arc<Published>,
    facts: PortFacts,
    /// The neighbour table and the stable backend ids (the ids are with
    /// the helper thread while it builds).
    learned: LearnedState,
    workers: Vec<Arc<WorkerStats>>,
    /// Retired sets a worker never acknowledged: freed when the reloader
    /// drops, after the workers stopped.
    unacknowledged: Vec<Arc<TableSet>>,
    pub counters: Arc<ReloadCounters>,
    /// The daemon's stop flag: raised during a build, it abandons the
    /// reload, so a stop request is honoured at once, not after seconds of
    /// building tables nothing will use.
    stop: Arc<AtomicBool>,
    /// The reload being built, if any.
    pending: Option<Pending>,
}

/// A reload on its helper thread.
struct Pending {
    handle: std::thread::JoinHandle<Prepared>,
    t0: Instant,
}

/// What a reload's helper thread is given: everything it reads, owned.
struct Job {
    path: PathBuf,
    /// The source text and the config in force (what the new file is
    /// checked and diffed against).
    source: String,
    current: Arc<(Config, Resolved)>,
    old: Arc<TableSet>,
    facts: PortFacts,
    neighbors: Arc<NeighborTable>,
    workers: usize,
    stop: Arc<AtomicBool>,
}

/// What the helper thread hands back: the checked config and its tables,
/// or why the reload is refused; and the stable backend ids, which the
/// build may have extended.
struct Prepared {
    outcome: Result<Built, String>,
    lb_ids: BackendIds,
}

struct Built {
    path: PathBuf,
    src: String,
    cfg: Config,
    res: Resolved,
    changes: Changes,
    /// The new set; `None` when nothing the workers read differs.
    set: Option<TableSet>,
}

impl Job {
    /// Runs on the helper thread. A panic in the build is caught here, so
    /// the backend ids always come back (an id is never handed out twice).
    fn run(self, mut lb_ids: BackendIds) -> Prepared {
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.prepare(&mut lb_ids)))
                .unwrap_or_else(|_| Err("the table build panicked (a bug: see the log)".into()));
        Prepared { outcome, lb_ids }
    }

    fn stopping(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(STOPPING.into());
        }
        Ok(())
    }

    fn prepare(&self, lb_ids: &mut BackendIds) -> Result<Built, String> {
        let path = &self.path;
        let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = path.display().to_string();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let (cfg, res) = Config::parse_in(&src, &file, &dir).map_err(|e| e.to_string())?;
        // As at start-up: what the new file says that is valid but likely
        // not meant (an ACL rule an earlier one hides, say).
        for w in &res.warnings {
            tracing::warn!("reload: {w}");
        }
        self.stopping()?;
        if let Some(e) = restart_needed(&self.source, &src, &file) {
            return Err(e);
        }
        let (cur_cfg, cur_res) = (&self.current.0, &self.current.1);
        let changes = Changes::between(cur_res, &res);
        self.stopping()?;
        let old = &self.old;
        let mut reuse = Reuse::default();
        if route_inputs_equal((cur_cfg, cur_res), (&cfg, &res)) {
            reuse.routing = old.routing.clone();
        }
        if acl_inputs_equal(cur_res, &res) {
            reuse.acl = old.acl.clone();
        }
        // Services are built over the routes (paths' MTUs): new routes, new
        // services.
        if cur_res.lb == res.lb && reuse.routing.is_some() {
            reuse.lb = old.lb.clone();
        }
        let icmp_rate = cfg.route.as_ref().map_or(0, |r| r.get_ref().icmp_rate);
        let unchanged = reuse.routing.is_some() == old.routing.is_some()
            && reuse.acl.is_some() == old.acl.is_some()
            && reuse.lb.is_some() == old.lb.is_some()
            && icmp_rate == old.icmp_rate;
        let set = if unchanged {
            None
        } else {
            let learned = Learned {
                neighbors: &self.neighbors,
                lb_ids,
            };
            let g = old.generation + 1;
            let set = build_table_set(
                &cfg,
                &res,
                &self.facts,
                learned,
                g,
                self.workers,
                reuse,
                &self.stop,
            )
            .map_err(|e| {
                if self.stop.load(Ordering::Relaxed) {
                    STOPPING.to_string()
                } else {
                    format!("building the new tables: {e:#}")
                }
            })?;
            Some(set)
        };
        Ok(Built {
            path: path.clone(),
            src,
            cfg,
            res,
            changes,
            set,
        })
    }
}

/// Reload outcomes, written by the control thread and read by the stats
/// line, the report and telemetry (`/dataplane/reloads`).
#[derive(Debug, Default)]
pub struct ReloadCounters {
    /// The table generation in force.
    pub generation: Counter,
    /// Reloads accepted (one that changed nothing included).
    pub reloads: Counter,
    /// Reloads refused; the running tables stayed.
    pub refusals: Counter,
}

impl ReloadCounters {
    pub fn report(&self) -> ReloadReport {
        ReloadReport {
            generation: self.generation.get(),
            reloads: self.reloads.get(),
            refusals: self.refusals.get(),
        }
    }
}

/// Longest wait for every worker to acknowledge a new set before the reload
/// answers without it (a worker that stopped polling; the retired set is
/// then kept until the daemon exits).
const ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a reload was given up: a stop request came while it was built.
const STOPPING: &str = "abandoned: the daemon is stopping";

impl<'a> Reloader<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &'a Config,
        res: &'a Resolved,
        path: Option<PathBuf>,
        tables: Arc<Published>,
        facts: PortFacts,
        learned: LearnedState,
        workers: Vec<Arc<WorkerStats>>,
        stop: Arc<AtomicBool>,
    ) -> Self {
        // The text the running config was parsed from, not the file read
        // again: it may have been edited since.
        let source = cfg.source.clone();
        Reloader {
            path,
            started: (cfg, res),
            replaced: None,
            source,
            tables,
            facts,
            learned,
            workers,
            unacknowledged: Vec::new(),
            counters: Arc::default(),
            stop,
            pending: None,
        }
    }

    /// The generation in force.
    pub fn generation(&self) -> u64 {
        self.tables.generation()
    }

    /// Whether a reload is being built.
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// Starts a reload from `path` (or the daemon's config file) on a
    /// helper thread; [`Reloader::poll`] gives its answer. `Some` is the
    /// answer at once: refused, because another reload is being built or
    /// there is no file to read.
    pub fn start(&mut self, path: Option<PathBuf>) -> Option<Answer> {
        if self.pending.is_some() {
            return Some(self.refuse("another reload is being built".into()));
        }
        let Some(path) = path.or_else(|| self.path.clone()) else {
            return Some(
                self.refuse("the daemon was started without a config file to re-read".into()),
            );
        };
        let current = match &self.replaced {
            Some(c) => Arc::clone(c),
            None => {
                // The first reload: the start-up config, copied once.
                let c = Arc::new((self.started.0.clone(), self.started.1.clone()));
                self.replaced = Some(Arc::clone(&c));
                c
            }
        };
        let job = Job {
            path,
            source: self.source.clone(),
            current,
            old: self.tables.load(),
            facts: self.facts.clone(),
            neighbors: Arc::clone(&self.learned.neighbors),
            workers: self.workers.len(),
            stop: Arc::clone(&self.stop),
        };
        let lb_ids = std::mem::take(&mut self.learned.lb_ids);
        let t0 = Instant::now();
        let handle = std::thread::Builder::new()
            .name("dp-reload".into())
            .spawn(move || job.run(lb_ids));
        match handle {
            Ok(handle) => {
                self.pending = Some(Pending { handle, t0 });
                None
            }
            Err(e) => Some(self.refuse(format!("cannot start the build thread: {e}"))),
        }
    }

    /// The answer of the reload being built once its build is done (the
    /// new set published and acknowledged, or the refusal); `None` while
    /// it builds or when none was started.
    pub fn poll(&mut self) -> Option<Answer> {
        if !self.pending.as_ref()?.handle.is_finished() {
            return None;
        }
        let Pending { handle, t0 } = self.pending.take()?;
        let build = t0.elapsed();
        let prepared = match handle.join() {
            Ok(p) => p,
            // Unreachable: the thread catches the build's panics, and the
            // ids are lost only if that fails.
            Err(_) => return Some(self.refuse("the build thread died".into())),
        };
        self.learned.lb_ids = prepared.lb_ids;
        Some(match prepared.outcome {
            Ok(built) => self.apply(built, build),
            Err(message) => self.refuse(message),
        })
    }

    /// At stop: waits for a reload still being built (a raised stop flag
    /// makes it give up at its next look) and drops it, so that no thread
    /// touches EAL memory after the daemon's cleanup.
    /// Its answer (refused) is for the reload's client.
    pub fn finish(&mut self) -> Option<Answer> {
        let Pending { handle, .. } = self.pending.take()?;
        if let Ok(p) = handle.join() {
            self.learned.lb_ids = p.lb_ids;
        }
        Some(self.refuse(STOPPING.into()))
    }

    fn refuse(&mut self, message: String) -> Answer {
        self.counters.refusals.add(1);
        tracing::warn!(generation = self.generation(), "reload refused: {message}");
        Answer {
            ok: false,
            message: format!("reload refused: {message}"),
            generation: self.generation(),
            data: None,
        }
    }

    /// Publishes a built set, waits for the workers, retires the old set.
    fn apply(&mut self, built: Built, build: Duration) -> Answer {
        let Built {
            path,
            src,
            cfg,
            res,
            changes,
            set,
        } = built;
        let Some(set) = set else {
            // Nothing the workers read differs: no new generation, nothing
            // to swap; logged as every reload is.
            self.accept(path, src, cfg, res);
            let g = self.generation();
            self.counters.reloads.add(1);
            self.counters.generation.set(g);
            let (build_ms, swap_ms) = (ms(build), 0.0);
            tracing::info!(
                generation = g,
                %changes,
                build_ms,
                swap_ms,
                "reload: no table changed"
            );
            return Answer {
                ok: true,
                message: format!(
                    "generation {g}: no table changed: {changes} (build {build_ms:.1} ms, swap {swap_ms:.3} ms)"
                ),
                generation: g,
                data: None,
            };
        };
        let g = set.generation;
        let t1 = Instant::now();
        let retired = self.tables.publish(Arc::new(set));
        let acked = self.wait_for_workers(g);
        let swap = t1.elapsed();
        // What workers learned while the set was being built.
        if let Some(r) = &self.tables.load().routing {
            r.sync_gateway_macs();
        }
        if acked {
            // The last reference: the old tables' memory goes back here.
            drop(retired);
        } else {
            if !self.stop.load(Ordering::Relaxed) {
                tracing::warn!(
                    generation = g,
                    "a worker did not acknowledge the new tables within {ACK_TIMEOUT:?}; the old ones stay allocated until exit"
                );
            }
            self.unacknowledged.push(retired);
        }
        self.accept(path, src, cfg, res);
        self.counters.reloads.add(1);
        self.counters.generation.set(g);
        let (build_ms, swap_ms) = (ms(build), ms(swap));
        tracing::info!(
            generation = g,
            %changes,
            build_ms,
            swap_ms,
            "reload applied"
        );
        // Published either way (the workers pick it up when they next
        // poll), but the client hears that one had not within the timeout.
        let unacked = if acked {
            String::new()
        } else {
            format!("; not acknowledged by every worker within {ACK_TIMEOUT:?}")
        };
        Answer {
            ok: true,
            message: format!(
                "generation {g}: {changes} (build {build_ms:.1} ms, swap {swap_ms:.3} ms){unacked}"
            ),
            generation: g,
            data: None,
        }
    }

    fn accept(&mut self, path: PathBuf, src: String, cfg: Config, res: Resolved) {
        self.path = Some(path);
        self.source = src;
        self.replaced = Some(Arc::new((cfg, res)));
    }

    /// Waits until every worker runs on generation `g` or later (false
    /// after [`ACK_TIMEOUT`], or at once when the daemon is stopping: its
    /// workers may leave their loops without acknowledging).
    fn wait_for_workers(&self, g: u64) -> bool {
        let t = Instant::now();
        while self.workers.iter().any(|w| w.generation.get_acquire() < g) {
            if t.elapsed() > ACK_TIMEOUT || self.stop.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        true
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"pipeline = ["route"]

[eal]
memory_mb = 512

[[port]]
name = "a"
device = "net_null0"
mtu = 1500

[[port]]
name = "b"
device = "net_null1"

[route]
icmp_rate = 10
neighbor_capacity = 64
"#;

    #[test]
    fn tables_may_change_ports_may_not() {
        assert_eq!(restart_needed(BASE, BASE, "x.toml"), None);
        let routes = BASE.replace("icmp_rate = 10", "icmp_rate = 20\nroutes_file = \"r\"");
        assert_eq!(restart_needed(BASE, &routes, "x.toml"), None);
        let mtu = BASE.replace("mtu = 1500", "mtu = 9000");
        let e = restart_needed(BASE, &mtu, "x.toml").unwrap();
        assert!(e.starts_with("x.toml:9:7: port[0].mtu: changed"), "{e}");
        let added = format!("{BASE}\n[[worker]]\ncore = 1\nrx = [\"a\"]\n");
        let e = restart_needed(BASE, &added, "x.toml").unwrap();
        assert!(
            e.starts_with("x.toml:") && e.contains(": worker: changed"),
            "{e}"
        );
        let cap = BASE.replace("neighbor_capacity = 64", "neighbor_capacity = 128");
        let e = restart_needed(BASE, &cap, "x.toml").unwrap();
        assert!(
            e.starts_with("x.toml:17:21: route.neighbor_capacity"),
            "{e}"
        );
        let pipe = BASE.replace(r#"["route"]"#, r#"["acl", "route"]"#);
        let e = restart_needed(BASE, &pipe, "x.toml").unwrap();
        assert!(e.starts_with("x.toml:1:12: pipeline"), "{e}");
        // A removed field is located at its section in the new file.
        let gone = BASE.replace("memory_mb = 512\n", "");
        let e = restart_needed(BASE, &gone, "x.toml").unwrap();
        assert!(e.starts_with("x.toml:3:1: eal.memory_mb"), "{e}");
        // Ring mode (cores, rings) is fixed until a restart too.
        let ring = format!("{BASE}\n[distributor]\ncore = 1\nrx = [\"a\"]\nring_size = 1024\n");
        let bigger = ring.replace("ring_size = 1024", "ring_size = 4096");
        let e = restart_needed(&ring, &bigger, "x.toml").unwrap();
        assert!(e.contains(": distributor.ring_size: changed"), "{e}");
        let e = restart_needed(BASE, &ring, "x.toml").unwrap();
        assert!(e.contains(": distributor: changed"), "{e}");
        // The stages' own declarations (`StageSpec::restart`): lb's
        // connection tables are sized once, forward's pairs wire ports.
        let lb = format!(
            "{BASE}
[lb]
conntrack_capacity = 1024
"
        );
        let e = restart_needed(&lb, &lb.replace("= 1024", "= 2048"), "x.toml").unwrap();
        assert!(e.contains(": lb.conntrack_capacity: changed"), "{e}");
        let fwd = format!(
            "{BASE}
[forward]
pairs = [[\"a\", \"b\"]]
"
        );
        let swapped = fwd.replace(r#"[["a", "b"]]"#, r#"[["b", "a"]]"#);
        let e = restart_needed(&fwd, &swapped, "x.toml").unwrap();
        assert!(e.contains(": forward.pairs[0][0]: changed"), "{e}");
    }

    #[test]
    fn changes_count_both_ways() {
        let (a, r) = set_difference(&[1, 2, 3], &[2, 3, 4, 5]);
        assert_eq!((a, r), (2, 1));
        let c = Changes {
            routes_added: 2,
            routes_removed: 1,
            acl_rules: Some((3, 4)),
            ..Changes::default()
        };
        assert_eq!(
            c.to_string(),
            "routes +2 -1, acl rules 3 -> 4, static neighbours +0 -0"
        );
        assert!(Changes::default().is_empty());
    }
}
