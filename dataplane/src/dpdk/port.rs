//! Ethernet ports: configure N rx/tx queues, start/stop, link, stats.
//!
//! A `Port` owns the device's lifecycle (stopped and closed on drop). The hot
//! path uses `RxQueue`/`TxQueue` tokens instead: each is handed out once, so a
//! queue is polled by exactly one worker, which is what DPDK's lock-free
//! burst functions require.
use super::af_packet::{KernelRx, KernelRxStats};
use super::error::{self, check, DpdkError};
use super::mbuf::{free_bulk, slots_as_raw, Mbuf};
use super::mempool::Mempool;
use crate::burst::Burst;
use std::ffi::{c_char, CStr, CString};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u16);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub u16);

// Offload bits from rte_ethdev.h (RTE_BIT64 macros bindgen cannot evaluate).
const RX_OFFLOAD_RSS_HASH: u64 = 1 << 19;
const RX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
pub const TX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
const TX_OFFLOAD_MBUF_FAST_FREE: u64 = 1 << 16;

/// The most ports DPDK can hold (`RTE_MAX_ETHPORTS` of the build); the
/// config check refuses more.
pub const MAX_PORTS: usize = dpdk_sys::RTE_MAX_ETHPORTS as usize;

/// What to ask of a port.
#[derive(Debug, Clone)]
pub struct PortConfig {
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: Option<u16>,
    pub promiscuous: bool,
    pub mac: Option<[u8; 6]>,
    /// Enable the device's IPv4 header checksum offload when it has one.
    pub ipv4_checksum_offload: bool,
    /// When to enable the device's IPv4 header checksum verification on
    /// receive (`RTE_ETH_RX_OFFLOAD_IPV4_CKSUM`), if it has one.
    pub rx_ipv4_checksum_offload: RxChecksumOffload,
}

/// When to let a port's device verify received IPv4 header checksums (the
/// config's `rx_checksum_offload`): a burst whose every frame it marked
/// good is not summed again in software.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RxChecksumOffload {
    /// Where the driver offers it and does not do it in software on the
    /// polling core ([`SOFTWARE_RX_CHECKSUM`]).
    #[default]
    Auto,
    /// Wherever the driver offers it.
    On,
    /// Never: every frame is summed in software.
    Off,
}

/// Drivers that offer RX checksum offload by summing in their own RX
/// function, on the core that polls them: net_tap verifies the L4
/// checksum over the payload too once any RX checksum offload is on,
/// more work than the lane's 20-byte header sum it would spare.
const SOFTWARE_RX_CHECKSUM: &[&str] = &["net_tap"];

/// What the device says it can do.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub driver: String,
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    pub rx_offload_capa: u64,
    pub tx_offload_capa: u64,
    pub flow_type_rss_offloads: u64,
    pub min_mtu: u16,
    pub max_mtu: u16,
    pub socket: i32,
    /// The kernel interface behind the port (af_packet, tap), else 0.
    pub if_index: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStatus {
    pub up: bool,
    pub speed_mbps: u32,
}

/// Basic ethdev counters (`rte_eth_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
    /// Packets received per RX queue (the first
    /// `RTE_ETHDEV_QUEUE_STAT_CNTRS`), as the driver counts them: 0 where
    /// it keeps no per-queue counts.
    pub q_ipackets: [u64; dpdk_sys::RTE_ETHDEV_QUEUE_STAT_CNTRS as usize],
}

pub struct Port {
    id: PortId,
    name: String,
    info: DeviceInfo,
    started: bool,
    rx_offloads: u64,
    tx_offloads: u64,
    /// The configured MAC when the device could not take it.
    soft_mac: Option<[u8; 6]>,
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
    /// `net_af_packet` only: the kernel's counters the PMD does not report.
    kernel_rx: Option<KernelRx>,
    _pool: Arc<Mempool>,
}

/// Looks up a probed device by name (`net_pcap0`, `0000:03:00.0`).
pub fn port_id_by_name(name: &str) -> Result<PortId, DpdkError> {
    let c = CString::new(name).map_err(|_| DpdkError::Invalid("port name".into()))?;
    let mut id = 0u16;
    // SAFETY: c outlives the call; id is a valid out pointer.
    check("rte_eth_dev_get_port_by_name", unsafe {
        dpdk_sys::rte_eth_dev_get_port_by_name(c.as_ptr(), &mut id)
    })?;
    Ok(PortId(id))
}

/// Number of ports EAL probed.
pub fn port_count() -> u16 {
    // SAFETY: no arguments; valid after EAL init.
    unsafe { dpdk_sys::rte_eth_dev_count_avail() }
}

fn device_info(id: PortId) -> Result<DeviceInfo, DpdkError> {
    let mut info = dpdk_sys::rte_eth_dev_info::default();
    // SAFETY: info is a valid out struct for this call.
    check("rte_eth_dev_info_get", unsafe {
        dpdk_sys::rte_eth_dev_info_get(id.0, &mut info)
    })?;
    let driver = if info.driver_name.is_null() {
        String::new()
    } else {
        // SAFETY: driver_name is a static NUL-terminated string in the PMD.
        unsafe { CStr::from_ptr(info.driver_name) }
            .to_string_lossy()
            .into_owned()
    };
    // SAFETY: id is a valid port.
    let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id.0) };
    Ok(DeviceInfo {
        driver,
        max_rx_queues: info.max_rx_queues,
        max_tx_queues: info.max_tx_queues,
        rx_offload_capa: info.rx_offload_capa,
        tx_offload_capa: info.tx_offload_capa,
        flow_type_rss_offloads: info.flow_type_rss_offloads,
        min_mtu: info.min_mtu,
        max_mtu: info.max_mtu,
        socket,
        if_index: info.if_index,
    })
}

impl Port {
    /// Configures the device `name` with `cfg`; RX queues take mbufs from `pool`.
    pub fn configure(name: &str, cfg: &PortConfig, pool: Arc<Mempool>) -> Result<Port, DpdkError> {
        let id = port_id_by_name(name)?;
        let info = device_info(id)?;
        if cfg.rx_queues == 0 || cfg.rx_queues > info.max_rx_queues {
            return Err(DpdkError::Invalid(format!(
                "port {name}: {} rx queues requested, device {} supports 1..={}",
                cfg.rx_queues, info.driver, info.max_rx_queues
            )));
        }
        if cfg.tx_queues == 0 || cfg.tx_queues > info.max_tx_queues {
            return Err(DpdkError::Invalid(format!(
                "port {name}: {} tx queues requested, device {} supports 1..={}",
                cfg.tx_queues, info.driver, info.max_tx_queues
            )));
        }
        let mut conf = dpdk_sys::rte_eth_conf::default();
        if cfg.rx_queues > 1 && info.flow_type_rss_offloads != 0 {
            conf.rxmode.mq_mode = dpdk_sys::RTE_ETH_MQ_RX_RSS;
            conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads;
            conf.rxmode.offloads |= RX_OFFLOAD_RSS_HASH & info.rx_offload_capa;
        }
        let rx_checksum = match cfg.rx_ipv4_checksum_offload {
            RxChecksumOffload::On => true,
            RxChecksumOffload::Auto => !SOFTWARE_RX_CHECKSUM.contains(&info.driver.as_str()),
            RxChecksumOffload::Off => false,
        };
        if rx_checksum {
            conf.rxmode.offloads |= RX_OFFLOAD_IPV4_CKSUM & info.rx_offload_capa;
        }
        let rx_offloads = conf.rxmode.offloads;
        if let Some(mtu) = cfg.mtu {
            if mtu < info.min_mtu || mtu > info.max_mtu {
                return Err(DpdkError::Invalid(format!(
                    "port {name}: mtu {mtu} outside the device's range {}..={}",
                    info.min_mtu, info.max_mtu
                )));
            }
            conf.rxmode.mtu = mtu as u32;
        }
        // Every mbuf comes from one pool with refcount 1: fast free is safe.
        let wanted = if cfg.ipv4_checksum_offload {
            TX_OFFLOAD_MBUF_FAST_FREE | TX_OFFLOAD_IPV4_CKSUM
        } else {
            TX_OFFLOAD_MBUF_FAST_FREE
        };
        let tx_offloads = wanted & info.tx_offload_capa;
        conf.txmode.offloads = tx_offloads;
        // SAFETY: id is valid, conf fully initialised.
        check("rte_eth_dev_configure", unsafe {
            dpdk_sys::rte_eth_dev_configure(id.0, cfg.rx_queues, cfg.tx_queues, &conf)
        })?;
        let (mut rx_desc, mut tx_desc) = (cfg.rx_desc, cfg.tx_desc);
        // SAFETY: id valid; the desc counts are in/out parameters.
        check("rte_eth_dev_adjust_nb_rx_tx_desc", unsafe {
            dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id.0, &mut rx_desc, &mut tx_desc)
        })?;
        let socket = if info.socket < 0 {
            0
        } else {
            info.socket as u32
        };
        for q in 0..cfg.rx_queues {
            // SAFETY: id/q valid; NULL rxconf = driver defaults; pool outlives
            // the port (the Port holds an Arc to it).
            check("rte_eth_rx_queue_setup", unsafe {
                dpdk_sys::rte_eth_rx_queue_setup(
                    id.0,
                    q,
                    rx_desc,
                    socket,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            })?;
        }
        for q in 0..cfg.tx_queues {
            // SAFETY: id/q valid; NULL txconf = driver defaults + port offloads.
            check("rte_eth_tx_queue_setup", unsafe {
                dpdk_sys::rte_eth_tx_queue_setup(id.0, q, tx_desc, socket, std::ptr::null())
            })?;
        }
        let mut soft_mac = None;
        if let Some(mac) = cfg.mac {
            let mut a = dpdk_sys::rte_ether_addr { addr_bytes: mac };
            // SAFETY: id valid, a is a valid address struct.
            let rc = unsafe { dpdk_sys::rte_eth_dev_default_mac_addr_set(id.0, &mut a) };
            if rc == -libc::ENOTSUP {
                // Virtual devices such as net_pcap cannot change their MAC.
                // The dataplane writes source MACs itself, so the configured
                // address still works as the port's address in software.
                tracing::info!(
                    port = name,
                    "device cannot set its MAC; using it in software only"
                );
                soft_mac = Some(mac);
            } else {
                check("rte_eth_dev_default_mac_addr_set", rc)?;
            }
        }
        if cfg.promiscuous {
            // Not every virtual device supports it; a refusal is not fatal.
            // SAFETY: id valid.
            let rc = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id.0) };
            if rc < 0 && rc != -(libc::ENOTSUP) {
                tracing::warn!(port = name, "promiscuous mode: {}", error::strerror(-rc));
            }
        }
        // The af_packet PMD reports no receive drops at all: watch its
        // sockets and interface (see `af_packet`). Its sockets exist since
        // EAL probed the device, so counting starts here.
        let kernel_rx = (info.driver == "net_af_packet" && info.if_index != 0)
            .then(|| KernelRx::open(info.if_index))
            .flatten();
        if let Some(k) = &kernel_rx {
            tracing::debug!(
                port = name,
                iface = k.iface(),
                sockets = k.sockets(),
                "watching the kernel's receive counters"
            );
        }
        Ok(Port {
            id,
            name: name.to_owned(),
            info,
            started: false,
            rx_offloads,
            tx_offloads,
            soft_mac,
            rx_taken: vec![false; cfg.rx_queues as usize],
            tx_taken: vec![false; cfg.tx_queues as usize],
            kernel_rx,
            _pool: pool,
        })
    }

    pub fn id(&self) -> PortId {
        self.id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// TX offloads enabled on this port (subset of TX_OFFLOAD_*).
    pub fn tx_offloads(&self) -> u64 {
        self.tx_offloads
    }

    /// Whether the port fills in IPv4 header checksums on transmit.
    pub fn ipv4_checksum_offload(&self) -> bool {
        self.tx_offloads & TX_OFFLOAD_IPV4_CKSUM != 0
    }

    /// Whether the device verifies IPv4 header checksums on receive and
    /// says so in each mbuf's `ol_flags` ([`crate::dpdk::Mbuf`]'s
    /// `rx_ipv4_checksum_good`).
    pub fn rx_ipv4_checksum_offload(&self) -> bool {
        self.rx_offloads & RX_OFFLOAD_IPV4_CKSUM != 0
    }

    /// The enabled TX offloads by DPDK's names (`IPV4_CKSUM`, ...).
    pub fn tx_offload_names(&self) -> Vec<String> {
        // SAFETY: returns a static string (or "UNKNOWN") for any bit.
        offload_names(self.tx_offloads, |bit| unsafe {
            dpdk_sys::rte_eth_dev_tx_offload_name(bit)
        })
    }

    /// The enabled RX offloads by DPDK's names (`IPV4_CKSUM`, `RSS_HASH`).
    pub fn rx_offload_names(&self) -> Vec<String> {
        // SAFETY: returns a static string (or "UNKNOWN") for any bit.
        offload_names(self.rx_offloads, |bit| unsafe {
            dpdk_sys::rte_eth_dev_rx_offload_name(bit)
        })
    }

    pub fn start(&mut self) -> Result<(), DpdkError> {
        // SAFETY: configured port.
        check("rte_eth_dev_start", unsafe {
            dpdk_sys::rte_eth_dev_start(self.id.0)
        })?;
        self.started = true;
        Ok(())
    }

    /// Stops the port; queued RX mbufs go back to the pool on close.
    pub fn stop(&mut self) -> Result<(), DpdkError> {
        if self.started {
            self.started = false;
            // SAFETY: started port; workers using its queues have been joined
            // (and even if not, stopped ports switch to dummy burst functions).
            check("rte_eth_dev_stop", unsafe {
                dpdk_sys::rte_eth_dev_stop(self.id.0)
            })?;
        }
        Ok(())
    }

    /// The port's MAC: the device's, or the configured one it could not take.
    pub fn mac(&self) -> [u8; 6] {
        if let Some(m) = self.soft_mac {
            return m;
        }
        let mut a = dpdk_sys::rte_ether_addr::default();
        // SAFETY: id valid; a is a valid out struct.
        unsafe { dpdk_sys::rte_eth_macaddr_get(self.id.0, &mut a) };
        a.addr_bytes
    }

    pub fn link(&self) -> LinkStatus {
        let mut l = dpdk_sys::rte_eth_link::default();
        // SAFETY: id valid; l is a valid out struct.
        let rc = unsafe { dpdk_sys::rte_eth_link_get_nowait(self.id.0, &mut l) };
        if rc < 0 {
            return LinkStatus::default();
        }
        LinkStatus {
            up: l.link_status() != 0,
            speed_mbps: l.link_speed,
        }
    }

    pub fn stats(&self) -> PortStats {
        stats(self.id)
    }

    /// `net_af_packet` ports: the kernel interface's name and its receive
    /// counters since the port was configured, socket ring drops included
    /// (what the PMD leaves out of [`Port::stats`]); `None` for other
    /// drivers.
    pub fn kernel_rx(&self) -> Option<(&str, KernelRxStats)> {
        self.kernel_rx.as_ref().map(|k| (k.iface(), k.read()))
    }

    /// Extended statistics as (name, value) pairs.
    pub fn xstats(&self) -> Vec<(String, u64)> {
        // SAFETY: a NULL buffer asks for the count.
        let n = unsafe { dpdk_sys::rte_eth_xstats_get_names(self.id.0, std::ptr::null_mut(), 0) };
        if n <= 0 {
            return Vec::new();
        }
        let mut names = vec![dpdk_sys::rte_eth_xstat_name::default(); n as usize];
        let mut vals = vec![dpdk_sys::rte_eth_xstat::default(); n as usize];
        // SAFETY: both buffers hold n entries.
        let (a, b) = unsafe {
            (
                dpdk_sys::rte_eth_xstats_get_names(self.id.0, names.as_mut_ptr(), n as u32),
                dpdk_sys::rte_eth_xstats_get(self.id.0, vals.as_mut_ptr(), n as u32),
            )
        };
        if a != n || b != n {
            return Vec::new();
        }
        vals.iter()
            .map(|v| {
                let nm = &names[v.id as usize].name;
                // SAFETY: DPDK NUL-terminates xstat names within 64 bytes.
                let s = unsafe { CStr::from_ptr(nm.as_ptr()) }
                    .to_string_lossy()
                    .into_owned();
                (s, v.value)
            })
            .collect()
    }

    /// Hands out RX queue `q` once.
    pub fn take_rx_queue(&mut self, q: QueueId) -> Option<RxQueue> {
        let slot = self.rx_taken.get_mut(q.0 as usize)?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(RxQueue {
            port: self.id,
            queue: q,
        })
    }

    /// Hands out TX queue `q` once.
    pub fn take_tx_queue(&mut self, q: QueueId) -> Option<TxQueue> {
        let slot = self.tx_taken.get_mut(q.0 as usize)?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(TxQueue {
            port: self.id,
            queue: q,
        })
    }
}

/// Counters of any port by id (for the stats thread).
pub fn stats(id: PortId) -> PortStats {
    let mut s = dpdk_sys::rte_eth_stats::default();
    // SAFETY: s is a valid out struct; an invalid id returns an error code.
    if unsafe { dpdk_sys::rte_eth_stats_get(id.0, &mut s) } != 0 {
        return PortStats::default();
    }
    PortStats {
        ipackets: s.ipackets,
        opackets: s.opackets,
        ibytes: s.ibytes,
        obytes: s.obytes,
        imissed: s.imissed,
        ierrors: s.ierrors,
        oerrors: s.oerrors,
        rx_nombuf: s.rx_nombuf,
        q_ipackets: s.q_ipackets,
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let _ = self.stop();
        // SAFETY: the port is stopped; close releases its queues and the mbufs
        // still held in RX rings.
        unsafe { dpdk_sys::rte_eth_dev_close(self.id.0) };
    }
}

/// The right to poll one RX queue. Not Clone: one poller per queue.
#[derive(Debug)]
pub struct RxQueue {
    pub port: PortId,
    pub queue: QueueId,
}

impl RxQueue {
    /// Fills the free tail of `burst`; returns how many packets arrived.
    #[inline(always)]
    pub fn rx_burst<const N: usize>(&mut self, burst: &mut Burst<Mbuf, N>) -> usize {
        let len = burst.len();
        let room = (N - len) as u16;
        let slots = slots_as_raw(burst);
        // SAFETY: slots[len..N] are empty (NULL); the PMD writes up to `room`
        // owned mbuf pointers there. This token is the queue's only poller.
        #[cfg(feature = "pmd-cycles")]
        let t0 = super::rdtsc();
        let n = unsafe {
            dpdk_sys::shim_rte_eth_rx_burst(self.port.0, self.queue.0, slots.add(len), room)
        } as usize;
        #[cfg(feature = "pmd-cycles")]
        if n != 0 {
            super::pmd_cycles::add_rx(super::rdtsc() - t0, n);
        }
        burst.set_len(len + n);
        n
    }
}

/// The right to transmit on one TX queue. Not Clone: one sender per queue.
#[derive(Debug)]
pub struct TxQueue {
    pub port: PortId,
    pub queue: QueueId,
}

impl TxQueue {
    /// Sends the burst; the driver owns what it accepted. Packets it refused
    /// are freed in bulk and their count returned as `(sent, dropped)`.
    #[inline(always)]
    pub fn tx_burst_or_free<const N: usize>(
        &mut self,
        burst: &mut Burst<Mbuf, N>,
    ) -> (usize, usize) {
        let len = burst.len();
        if len == 0 {
            return (0, 0);
        }
        let slots = slots_as_raw(burst);
        // SAFETY: slots[..len] are owned mbufs; the PMD takes the first n.
        #[cfg(feature = "pmd-cycles")]
        let t0 = super::rdtsc();
        let n = unsafe {
            dpdk_sys::shim_rte_eth_tx_burst(self.port.0, self.queue.0, slots, len as u16)
        } as usize;
        #[cfg(feature = "pmd-cycles")]
        super::pmd_cycles::add_tx(super::rdtsc() - t0, len);
        let s = burst.slots_mut();
        for slot in &mut s[..n] {
            // SAFETY: the driver owns these now: clear without freeing.
            unsafe { std::ptr::write(slot, None) };
        }
        let dropped = len - n;
        if dropped == 0 {
            burst.set_len(0);
        } else {
            free_bulk(burst);
        }
        (n, dropped)
    }
}

/// The set bits of `offloads` by the names `name_of` gives them (ethdev's
/// `rte_eth_dev_{rx,tx}_offload_name`), or in hex where it gives none.
fn offload_names(offloads: u64, name_of: impl Fn(u64) -> *const c_char) -> Vec<String> {
    (0..64)
        .map(|b| 1u64 << b)
        .filter(|bit| offloads & bit != 0)
        .map(|bit| {
            let p = name_of(bit);
            if p.is_null() {
                format!("{bit:#x}")
            } else {
                // SAFETY: a NUL-terminated static string in librte_ethdev.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        })
        .collect()
}
