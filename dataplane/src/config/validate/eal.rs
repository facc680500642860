//! `[eal]` and `[mempool]`: file prefixes, the pool against DPDK's limits
//! and the ports' MTUs, EAL memory against the estimate.
use crate::config::location::Locator;
use crate::config::*;

impl Config {
    /// `eal.file_prefix` names no path and fits EAL's limits.
    pub(super) fn check_file_prefix(&self, loc: &Locator) -> Result<(), ConfigError> {
        let prefix = &self.eal.file_prefix;
        crate::config::check_file_prefix(prefix.get_ref())
            .map_err(|e| loc.error(prefix.span(), Some("eal.file_prefix".into()), e))?;
        Ok(())
    }

    /// `eal.args` are EAL options that the config does not set otherwise
    /// (`super::eal_args`); a `--file-prefix` among them (which wins) is
    /// checked as `eal.file_prefix` is.
    pub(super) fn check_eal_args(&self, loc: &Locator) -> Result<(), ConfigError> {
        super::eal_args::check(&self.eal.args).map_err(|(i, e)| {
            loc.error(self.eal.args[i].span(), Some(format!("eal.args[{i}]")), e)
        })?;
        let args = self.eal.arg_strings();
        let in_args = crate::dpdk::eal::file_prefix_of(&args);
        if let Some(i) = args.iter().position(|a| a.starts_with("--file-prefix")) {
            crate::config::check_file_prefix(&in_args).map_err(|e| {
                loc.error(self.eal.args[i].span(), Some(format!("eal.args[{i}]")), e)
            })?;
        }
        Ok(())
    }

    /// Pool size and cache against DPDK's limits, data room against the
    /// headroom and every port's MTU.
    pub(in crate::config) fn check_mempool(&self, loc: &Locator) -> Result<(), ConfigError> {
        let mp = &self.mempool;
        let (mbufs, cache) = (*mp.mbufs.get_ref(), *mp.cache.get_ref());
        if cache > MEMPOOL_CACHE_MAX {
            return Err(loc.error(
                mp.cache.span(),
                Some("mempool.cache".into()),
                format!(
                    "cache {cache} is above DPDK's per-lcore maximum of {MEMPOOL_CACHE_MAX} \
                     (RTE_MEMPOOL_CACHE_MAX_SIZE)"
                ),
            ));
        }
        // rte_mempool_create refuses a pool smaller than its cache's flush
        // threshold, 1.5 × cache (CALC_CACHE_FLUSHTHRESH).
        if mbufs != 0 && u64::from(cache) * 3 / 2 > u64::from(mbufs) {
            return Err(loc.error(
                mp.mbufs.span(),
                Some("mempool.mbufs".into()),
                format!(
                    "{mbufs} mbufs is less than 1.5 × mempool.cache ({cache}), which DPDK \
                     requires: raise mbufs to at least {} or lower cache",
                    u64::from(cache) * 3 / 2
                ),
            ));
        }
        let Some(set) = &mp.data_room else {
            // Sized from the MTUs: only an MTU no mbuf can hold is wrong.
            for (i, p) in self.ports.iter().enumerate() {
                let Some(m) = &p.mtu else { continue };
                let need = data_room_for(*m.get_ref());
                if need > u32::from(u16::MAX) {
                    return Err(loc.error(
                        m.span(),
                        Some(format!("port[{i}].mtu")),
                        format!(
                            "MTU {} needs mbufs with a data room of {need} bytes ({} + 14 \
                             Ethernet + 8 two VLAN tags + {PKTMBUF_HEADROOM} headroom), more \
                             than an mbuf holds ({}): lower the MTU",
                            m.get_ref(),
                            m.get_ref(),
                            u16::MAX
                        ),
                    ));
                }
            }
            return Ok(());
        };
        let room = *set.get_ref();
        if room <= PKTMBUF_HEADROOM {
            return Err(loc.error(
                set.span(),
                Some("mempool.data_room".into()),
                format!(
                    "data_room {room} leaves no room for packet data: it includes the \
                     {PKTMBUF_HEADROOM}-byte mbuf headroom (RTE_PKTMBUF_HEADROOM) and must be \
                     larger"
                ),
            ));
        }
        for (i, p) in self.ports.iter().enumerate() {
            let mtu = p.mtu.as_ref().map_or(1500, |m| *m.get_ref());
            let need = data_room_for(mtu);
            if u32::from(room) >= need {
                continue;
            }
            let what = format!(
                "needs mbufs with data_room ≥ {need} ({mtu} + 14 Ethernet + 8 two VLAN tags + \
                 {PKTMBUF_HEADROOM} headroom) but mempool.data_room is {room}: larger frames \
                 would not fit one mbuf; raise mempool.data_room (or leave it unset: it is then \
                 sized from the MTUs) or lower the MTU"
            );
            return Err(match &p.mtu {
                Some(m) => loc.error(
                    m.span(),
                    Some(format!("port[{i}].mtu")),
                    format!("MTU {mtu} {what}"),
                ),
                None => loc.error(
                    set.span(),
                    Some("mempool.data_room".into()),
                    format!(
                        "port `{}` (MTU {mtu}, the default) {what}",
                        p.name.get_ref()
                    ),
                ),
            });
        }
        Ok(())
    }

    /// `eal.memory_mb` against the machine (when known): with
    /// `hugepages = "on"` EAL reserves it all from free hugepages at start,
    /// and fails there when they are fewer (an error here, unless `eal.args`
    /// turns hugepages off); more than the machine's memory is a warning
    /// (without hugepages EAL only reserves address space).
    fn check_memory_on_host(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        let Some(mem) = host.memory() else {
            return Ok(());
        };
        let have = u64::from(*self.eal.memory_mb.get_ref());
        let span = self.eal.memory_mb.span();
        let field = || Some("eal.memory_mb".to_string());
        let no_huge = self.eal.args.iter().any(|a| a.get_ref() == "--no-huge");
        if self.eal.hugepages == Hugepages::On && !no_huge && !mem.hugepages_fit(have) {
            let free = if mem.huge_mounted {
                format!("{} MB of hugepages are free", mem.huge_free_mb)
            } else {
                "no hugetlbfs is mounted".to_string()
            };
            return Err(loc.error(
                span,
                field(),
                format!(
                    "{have} MB with eal.hugepages = \"on\": EAL reserves it all from free \
                     hugepages at start, and {free}: reserve more (scripts/setup.sh), lower \
                     eal.memory_mb, or set eal.hugepages = \"auto\" (without hugepages when \
                     too few are free)"
                ),
            ));
        }
        if have > mem.total_mb {
            res.warnings.push(loc.error(
                span,
                field(),
                format!(
                    "{have} MB is more than this machine's memory ({} MB): EAL can only run \
                     without hugepages, and the tables and pool must fit in what there is",
                    mem.total_mb
                ),
            ));
        }
        Ok(())
    }

    /// Warns when `eal.memory_mb` is below the estimate: with hugepages EAL
    /// grows past `-m`, without them start-up fails.
    pub(in crate::config) fn check_memory(
        &self,
        loc: &Locator,
        host: &Host,
        res: &mut Resolved,
    ) -> Result<(), ConfigError> {
        self.check_memory_on_host(loc, host, res)?;
        let est = self.memory_estimate(res);
        let have = u64::from(*self.eal.memory_mb.get_ref());
        if have < est.total_mb {
            res.warnings.push(loc.error(
                self.eal.memory_mb.span(),
                Some("eal.memory_mb".into()),
                format!(
                    "{have} MB is below the ~{} MB this config needs (route tables ~{} MB, mbuf \
                     pool ~{} MB, EAL and the rest ~{} MB): without hugepages start-up will \
                     fail; raise eal.memory_mb to {}",
                    est.total_mb,
                    est.route_tables_mb,
                    est.mempool_mb,
                    MemoryEstimate::OTHER_MB,
                    est.total_mb
                ),
            ));
        }
        Ok(())
    }
}

/// RTE_MEMPOOL_CACHE_MAX_SIZE.
const MEMPOOL_CACHE_MAX: u32 = 512;
/// RTE_PKTMBUF_HEADROOM.
const PKTMBUF_HEADROOM: u16 = 128;
/// Bytes of a frame beyond its MTU: Ethernet header and two VLAN tags.
const FRAME_OVERHEAD: u32 = 14 + 8;

/// DPDK's default mbuf data room (`RTE_MBUF_DEFAULT_BUF_SIZE`): 2048 bytes
/// and the headroom; the least `Config::data_room` sizes.
pub(in crate::config) const DEFAULT_DATA_ROOM: u32 = 2048 + PKTMBUF_HEADROOM as u32;

/// The data room (headroom included) an mbuf needs for a frame of a port
/// with `mtu`: the IP packet, Ethernet and two VLAN tags, the headroom.
pub(in crate::config) fn data_room_for(mtu: u16) -> u32 {
    u32::from(mtu) + FRAME_OVERHEAD + u32::from(PKTMBUF_HEADROOM)
}
