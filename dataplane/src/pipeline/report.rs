//! The stages as the control thread reports them: each stage's workers'
//! counters ([`StageCounters`], summed) and its tables' part
//! ([`TablesReport`], read from the set in force), gathered from the
//! workers' pipelines by stage name. Nothing here names a stage: a new
//! stage reaches the report, the `tables` sizes and the stats line through
//! its own [`super::StageOps`] implementation.
use super::{Pipeline, StageCounters, TablesReport};
use crate::stats::sum_reports;
use crate::tables::set::TableSet;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One stage's readers.
struct Entry {
    name: &'static str,
    /// One per worker.
    workers: Vec<Arc<dyn StageCounters>>,
    tables: Option<&'static dyn TablesReport>,
}

/// Every stage's readers, in pipeline order (that of the stats line).
#[derive(Default)]
pub struct StageReports {
    stages: Vec<Entry>,
}

impl StageReports {
    /// Adds a worker's pipeline (every worker runs the same stage list).
    pub fn add(&mut self, p: &Pipeline) {
        let tables = p.tables_reports();
        for name in p.stage_names() {
            if !self.stages.iter().any(|e| e.name == name) {
                self.stages.push(Entry {
                    name,
                    workers: Vec::new(),
                    tables: tables.iter().find(|(n, _)| *n == name).map(|(_, t)| *t),
                });
            }
        }
        for (name, c) in p.counters() {
            if let Some(e) = self.stages.iter_mut().find(|e| e.name == name) {
                e.workers.push(c);
            }
        }
    }

    /// Every stage's counters, summed over workers, with its tables' part
    /// from `set`, by stage name (stages with neither left out).
    pub fn report(&self, set: &TableSet) -> BTreeMap<String, serde_json::Value> {
        let mut m = BTreeMap::new();
        for e in &self.stages {
            let workers: Vec<_> = e.workers.iter().map(|c| c.report()).collect();
            let tables = e.tables.and_then(|t| t.report(set));
            // The workers' counters and the tables' side by side (their
            // keys are apart: merged key by key, nothing added twice).
            let parts: Vec<_> = (!workers.is_empty())
                .then(|| sum_reports(&workers))
                .into_iter()
                .chain(tables)
                .collect();
            if !parts.is_empty() {
                m.insert(e.name.to_owned(), sum_reports(&parts));
            }
        }
        m
    }

    /// The report's `tables`: what each stage's tables in `set` hold.
    pub fn sizes(&self, set: &TableSet) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for t in self.stages.iter().filter_map(|e| e.tables) {
            t.sizes(set, &mut m);
        }
        m
    }

    /// The stages' part of the stats line (` key=value` pairs; empty when
    /// no stage adds any).
    pub fn stats_line(&self, set: &TableSet) -> String {
        let mut s = String::new();
        for e in &self.stages {
            if let Some(t) = e.tables {
                t.stats_line(set, &e.workers, &mut s);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::acl::AclStage;
    use crate::pipeline::Stage;
    use crate::tables::set::AclSnapshot;
    use crate::tables::{AclAction, AclTable};

    fn acl_set(workers: usize) -> TableSet {
        let t = AclTable::build(Vec::new(), AclAction::Allow).unwrap();
        TableSet {
            acl: Some(AclSnapshot::new(Arc::new(t), 64, workers)),
            ..TableSet::empty()
        }
    }

    fn pipeline(set: &TableSet, worker: usize) -> Pipeline {
        let acl = set.acl.as_ref().unwrap();
        Pipeline::new(vec![Stage::Acl(AclStage::from_snapshot(acl, worker))])
    }

    /// The workers' ACL counters are summed, the tables' part is not, and
    /// after a rebind to a new ACL the report reads the new ACL's counters
    /// through the same readers.
    #[test]
    fn acl_counters_reach_the_report_across_a_rebind() {
        let _e = crate::tables::testing::test_lock();
        let set = acl_set(2);
        let mut p = [pipeline(&set, 0), pipeline(&set, 1)];
        let mut r = StageReports::default();
        for p in &p {
            r.add(p);
        }
        let acl = set.acl.as_ref().unwrap();
        acl.counters_for(0).rules[0].add(2);
        acl.counters_for(1).rules[0].add(3);
        acl.counters_for(1).cache_hits.add(4);
        let rep = &r.report(&set)["acl"];
        assert_eq!(rep["rule_hits"], serde_json::json!([5]));
        assert_eq!(rep["flow_cache"]["hits"], 4);
        assert_eq!(rep["flow_cache"]["misses"], 0);
        assert_eq!(rep["flow_cache"]["entries_per_worker"], 64, "not summed");
        assert_eq!(r.sizes(&set).get("acl_rules"), Some(&0));
        assert_eq!(r.stats_line(&set), "");

        let next = acl_set(2);
        for (w, p) in p.iter_mut().enumerate() {
            p.rebind(&next, w);
        }
        next.acl.as_ref().unwrap().counters_for(1).rules[0].add(7);
        assert_eq!(r.report(&next)["acl"]["rule_hits"], serde_json::json!([7]));
    }
}
