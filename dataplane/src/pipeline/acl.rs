//! `acl`: the firewall stage. Classifies every IPv4/IPv6 packet of the burst
//! with rte_acl in one call per family (first matching rule wins, else the
//! default action) and drops denied packets as `acl_deny`. ARP and packets
//! already decided pass untouched. Each rule has a per-worker hit counter.
//!
//! Meta: reads `verdict`, `l3`, `key`; sets `verdict = Drop(acl_deny)`.
use super::{DropReason, MetaBurst, StageCtx, Verdict, L3};
use crate::burst::BURST_SIZE;
use crate::stats::Counter;
use crate::tables::{AclAction, AclTable};
use std::sync::Arc;

pub struct AclStage {
    table: Arc<AclTable>,
    /// Hits per rule index; the last slot counts default-action packets.
    hits: Arc<[Counter]>,
}

impl AclStage {
    /// A worker's instance over the shared table, with its own counters.
    pub fn new(table: Arc<AclTable>) -> Self {
        let n = table.rules().len() + 1;
        let hits: Arc<[Counter]> = (0..n).map(|_| Counter::default()).collect();
        AclStage { table, hits }
    }

    /// This worker's hit counters (read by the control thread).
    pub fn hits(&self) -> Arc<[Counter]> {
        self.hits.clone()
    }

    /// Classifies the first `len` packets of the burst.
    #[inline]
    pub fn process(&mut self, len: usize, meta: &mut MetaBurst, _ctx: &StageCtx) {
        let mut idx = [0u8; BURST_SIZE];
        let mut res = [0u32; BURST_SIZE];
        let mut n = 0;
        {
            let mut keys = [&meta[0].key; BURST_SIZE];
            let mut v6 = [false; BURST_SIZE];
            for (i, m) in meta[..len].iter().enumerate() {
                if m.verdict == Verdict::Continue && matches!(m.l3, L3::Ipv4 | L3::Ipv6) {
                    keys[n] = &m.key;
                    v6[n] = m.l3 == L3::Ipv6;
                    idx[n] = i as u8;
                    n += 1;
                }
            }
            if n == 0 {
                return;
            }
            self.table
                .classify_bulk(&keys[..n], &v6[..n], &mut res[..n]);
        }
        let default_slot = self.hits.len() - 1;
        for (&i, &r) in idx[..n].iter().zip(&res[..n]) {
            let slot = if r == AclTable::NONE {
                default_slot
            } else {
                (r as usize).min(default_slot)
            };
            self.hits[slot].add(1);
            if self.table.action(r) == AclAction::Deny {
                meta[i as usize].verdict = Verdict::Drop(DropReason::AclDeny);
            }
        }
    }
}
