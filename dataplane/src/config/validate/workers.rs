//! `[[worker]]` and `[distributor]`: cores, the RX queues each polls (every
//! queue polled once), the CPUs against the host.
use super::Poller;
use crate::config::location::Locator;
use crate::config::*;
use std::collections::{HashMap, HashSet};
use toml::Spanned;

impl Config {
    /// At least one worker.
    pub(super) fn check_worker_count(&self, loc: &Locator) -> Result<(), ConfigError> {
        if self.workers.is_empty() {
            return Err(loc.error(
                0..0,
                Some("worker".into()),
                "no [[worker]] is configured".into(),
            ));
        }
        Ok(())
    }

    /// Each worker's core and RX queues, the distributor's, and no RX queue
    /// left unpolled.
    pub(super) fn resolve_workers(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
    ) -> Result<(Vec<Vec<RxAssignment>>, Option<DistributorPlan>), ConfigError> {
        let mut cores = HashSet::new();
        let mut polled: HashMap<(usize, u16), Poller> = HashMap::new();
        let mut worker_rx = Vec::new();
        let mut fed = Vec::new();
        for (w, wk) in self.workers.iter().enumerate() {
            if !cores.insert(*wk.core.get_ref()) {
                return Err(loc.error(
                    wk.core.span(),
                    Some(format!("worker[{w}].core")),
                    format!("core {} is used by two workers", wk.core.get_ref()),
                ));
            }
            let Some(rx) = &wk.rx else {
                // Fed by the distributor (checked below that there is one).
                fed.push(w);
                worker_rx.push(Vec::new());
                continue;
            };
            if rx.get_ref().is_empty() {
                return Err(loc.error(
                    rx.span(),
                    Some(format!("worker[{w}].rx")),
                    "a worker must poll at least one rx queue (or, in ring mode, have no `rx` \
                     at all: the [distributor] feeds it)"
                        .into(),
                ));
            }
            let field = format!("worker[{w}].rx");
            let list =
                self.rx_assignments(loc, port_index, rx, &field, Poller::Worker(w), &mut polled)?;
            worker_rx.push(list);
        }
        let distributor = match &self.distributor {
            None => {
                if let Some(&w) = fed.first() {
                    let wk = &self.workers[w];
                    return Err(loc.error(
                        wk.core.span(),
                        Some(format!("worker[{w}].rx")),
                        "this worker has no `rx` and there is no [distributor] to feed it: list \
                         the RX queues it polls (rx = [\"port\"] or [\"port:queue\"]), or add a \
                         [distributor] section (ring mode)"
                            .into(),
                    ));
                }
                None
            }
            Some(d) => Some(self.resolve_distributor(loc, port_index, d, fed, &mut polled)?),
        };
        for (pi, p) in self.ports.iter().enumerate() {
            for q in 0..*p.rx_queues.get_ref() {
                if !polled.contains_key(&(pi, q)) {
                    return Err(loc.error(
                        p.rx_queues.span().start.max(p.name.span().start)..p.name.span().end,
                        Some(format!("port[{pi}].rx_queues")),
                        format!(
                            "rx queue {}:{q} is polled by no worker (its packets would be lost)",
                            p.name.get_ref()
                        ),
                    ));
                }
            }
        }
        Ok((worker_rx, distributor))
    }

    /// One `rx` list (a worker's or the distributor's): each entry a known
    /// port's existing queue, polled by nobody else; recorded in `polled`.
    fn rx_assignments(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
        rx: &Spanned<Vec<Spanned<String>>>,
        field: &str,
        who: Poller,
        polled: &mut HashMap<(usize, u16), Poller>,
    ) -> Result<Vec<RxAssignment>, ConfigError> {
        let mut list = Vec::new();
        for r in rx.get_ref() {
            let field = Some(field.to_owned());
            let (pname, q) = match r.get_ref().split_once(':') {
                Some((p, q)) => {
                    let q: u16 = q.parse().map_err(|_| {
                        loc.error(
                            r.span(),
                            field.clone(),
                            format!("`{}`: queue `{q}` is not a number", r.get_ref()),
                        )
                    })?;
                    (p, q)
                }
                None => (r.get_ref().as_str(), 0),
            };
            let Some(&pi) = port_index.get(pname) else {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("unknown port `{pname}` (ports: {})", self.port_names()),
                ));
            };
            let nq = *self.ports[pi].rx_queues.get_ref();
            if q >= nq {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("port `{pname}` has {nq} rx queue(s); queue {q} does not exist"),
                ));
            }
            if let Some(other) = polled.insert((pi, q), who) {
                return Err(loc.error(
                    r.span(),
                    field,
                    format!("rx queue {pname}:{q} is already polled by {other}"),
                ));
            }
            list.push(RxAssignment { port: pi, queue: q });
        }
        Ok(list)
    }

    /// `[distributor]`: its queues, ring size, and the workers it feeds
    /// (there must be some).
    fn resolve_distributor(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
        d: &Spanned<DistributorSection>,
        fed: Vec<usize>,
        polled: &mut HashMap<(usize, u16), Poller>,
    ) -> Result<DistributorPlan, ConfigError> {
        let sec = d.get_ref();
        if fed.is_empty() {
            return Err(loc.error(
                d.span(),
                Some("distributor".into()),
                "[distributor] feeds the workers that have no `rx`, and every [[worker]] has \
                 one: remove `rx` from the workers it should feed, or remove [distributor]"
                    .into(),
            ));
        }
        if sec.rx.get_ref().is_empty() {
            return Err(loc.error(
                sec.rx.span(),
                Some("distributor.rx".into()),
                "the distributor must poll at least one rx queue".into(),
            ));
        }
        let rx = self.rx_assignments(
            loc,
            port_index,
            &sec.rx,
            "distributor.rx",
            Poller::Distributor,
            polled,
        )?;
        let size = *sec.ring_size.get_ref();
        let (lo, hi) = (
            DistributorSection::MIN_RING_SIZE,
            DistributorSection::MAX_RING_SIZE,
        );
        if !size.is_power_of_two() || !(lo..=hi).contains(&size) {
            return Err(loc.error(
                sec.ring_size.span(),
                Some("distributor.ring_size".into()),
                format!(
                    "ring_size {size} must be a power of two from {lo} to {hi} (rte_ring; a \
                     ring holds ring_size - 1 packets)"
                ),
            ));
        }
        let mut ports = Vec::new();
        for a in &rx {
            if !ports.contains(&a.port) {
                ports.push(a.port);
            }
        }
        Ok(DistributorPlan {
            core: *sec.core.get_ref(),
            rx,
            ports,
            workers: fed,
            ring_size: size,
            hash: sec.hash,
        })
    }

    /// Worker and control cores against the CPUs this process can use
    /// (online and in its affinity); a worker on the
    /// control core is a warning.
    pub(in crate::config) fn check_cores(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        let control = &self.eal.control_core;
        if let Some(why) = host.cpu_problem(*control.get_ref()) {
            return Err(loc.error(control.span(), Some("eal.control_core".into()), why));
        }
        for (w, wk) in self.workers.iter().enumerate() {
            let core = *wk.core.get_ref();
            if let Some(why) = host.cpu_problem(core) {
                return Err(loc.error(wk.core.span(), Some(format!("worker[{w}].core")), why));
            }
            if core == *control.get_ref() {
                res.warnings.push(loc.error(
                    wk.core.span(),
                    Some(format!("worker[{w}].core")),
                    format!(
                        "CPU {core} is also eal.control_core: the control thread's stats and \
                         signal handling take time from this worker's poll loop"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The distributor's core against the CPUs this process can use; sharing a CPU with
    /// the control thread or a worker is a warning (two busy loops then
    /// split one CPU's time: fine for a test, slow for traffic).
    pub(in crate::config) fn check_distributor_core(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        let Some(d) = &self.distributor else {
            return Ok(());
        };
        let core = &d.get_ref().core;
        let cpu = *core.get_ref();
        let field = Some("distributor.core".to_owned());
        if let Some(why) = host.cpu_problem(cpu) {
            return Err(loc.error(core.span(), field, why));
        }
        if cpu == *self.eal.control_core.get_ref() {
            res.warnings.push(loc.error(
                core.span(),
                field.clone(),
                format!(
                    "CPU {cpu} is also eal.control_core: the control thread's stats and signal \
                     handling take time from the distributor's poll loop"
                ),
            ));
        }
        if let Some(w) = self.workers.iter().position(|w| *w.core.get_ref() == cpu) {
            res.warnings.push(loc.error(
                core.span(),
                field,
                format!(
                    "CPU {cpu} is also worker[{w}].core: the distributor and that worker \
                     busy-poll one CPU and split its time (fine for a test, slow for traffic)"
                ),
            ));
        }
        Ok(())
    }
}
