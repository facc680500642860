//! What the kernel counts for a `net_af_packet` port that the PMD does not
//! report.
//!
//! DPDK 22.11's af_packet PMD (`drivers/net/af_packet/rte_eth_af_packet.c`)
//! fills `ipackets`/`ibytes` from what it read out of each queue's
//! `PACKET_RX_RING`, `opackets`/`obytes`/`oerrors` from its TX ring, and
//! nothing else: no `imissed`, no `rx_nombuf` (an mbuf allocation failure
//! just ends the burst), no xstats of its own (ethdev's generic ones repeat
//! the above), and it never asks the kernel for the sockets'
//! `PACKET_STATISTICS` (the library does not even import `getsockopt`). So a
//! frame the kernel could not put into a full RX ring — the ring overrun a
//! slow or descheduled poller causes — is counted nowhere in DPDK.
//!
//! The kernel counts it, per socket: `PACKET_STATISTICS` (`tp_drops`).
//! The PMD's sockets are file descriptors of this process, opened when EAL
//! probed the device, bound to the interface and kept until the port stops,
//! so [`KernelRx`] finds them in `/proc/self/fd` (an `AF_PACKET` socket
//! whose bound `sll_ifindex` is the port's) and reads them. The interface's
//! own counters (`/sys/class/net/<iface>/statistics/`) come beside them:
//! `rx_packets` (what the link delivered to the interface) and
//! `rx_dropped` + `rx_missed_errors` (what the kernel dropped before any
//! socket saw it, e.g. a full backlog queue). A ring overrun is in neither
//! of the latter: the interface received the frame fine.
//!
//! Reading `PACKET_STATISTICS` resets the socket's counters; the PMD never
//! reads them, so keeping running sums here loses nothing.
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::Mutex;

/// The kernel's receive counters of an af_packet port, since the port was
/// configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelRxStats {
    /// Frames the interface received (`statistics/rx_packets`).
    pub rx_packets: u64,
    /// Frames the interface dropped before a socket saw them
    /// (`statistics/rx_dropped` + `statistics/rx_missed_errors`).
    pub rx_dropped: u64,
    /// Frames the PMD's sockets dropped, nearly all because the RX ring was
    /// full (`tp_drops`).
    pub ring_dropped: u64,
}

/// Reads the kernel's counters of one af_packet port (see the module doc).
#[derive(Debug)]
pub struct KernelRx {
    iface: String,
    ifindex: u32,
    /// The PMD's sockets for this interface (one per queue pair).
    fds: Vec<RawFd>,
    /// Interface counters when the port was configured.
    base: (u64, u64),
    /// Running sum of the sockets' `tp_drops`, which each read resets.
    ring_dropped: Mutex<u64>,
}

/// The interface counter `name` of `iface` (`/sys/class/net/<iface>/statistics/<name>`).
pub fn sysfs_counter(iface: &str, name: &str) -> Option<u64> {
    if iface.is_empty() || iface.contains('/') || iface.starts_with('.') {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{iface}/statistics/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The name of interface `ifindex` in this network namespace.
pub fn ifindex_name(ifindex: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf holds IF_NAMESIZE bytes, as if_indextoname requires; it
    // writes a NUL-terminated name there or returns NULL.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: on success buf holds a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// Whether `fd` is an `AF_PACKET` socket bound to `ifindex`.
fn is_packet_socket_on(fd: RawFd, ifindex: u32) -> bool {
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: domain and len are valid out pointers of the sizes given; on a
    // descriptor that is not a socket the call fails with ENOTSOCK.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut domain as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 || domain != libc::AF_PACKET {
        return false;
    }
    // SAFETY: sockaddr_ll is plain old data; all zeroes is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: sll and len are valid out pointers; an AF_PACKET socket's
    // address is a sockaddr_ll, and the kernel writes at most `len` bytes.
    let rc =
        unsafe { libc::getsockname(fd, (&mut sll as *mut libc::sockaddr_ll).cast(), &mut len) };
    rc == 0 && sll.sll_ifindex > 0 && sll.sll_ifindex as u32 == ifindex
}

/// This process's `AF_PACKET` sockets bound to `ifindex`.
fn packet_sockets_on(ifindex: u32) -> Vec<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<RawFd> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| is_packet_socket_on(fd, ifindex))
        .collect();
    fds.sort_unstable();
    fds
}

/// `tp_drops` of socket `fd`'s `PACKET_STATISTICS` since the last read.
fn socket_drops(fd: RawFd) -> Option<u64> {
    let mut st = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: st and len are valid out pointers; for a TPACKET_V1/V2 socket
    // (the PMD sets V2) the kernel writes a struct tpacket_stats, at most
    // `len` bytes in any case.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(u64::from(st.tp_drops))
}

impl KernelRx {
    /// Starts counting for the af_packet port on interface `ifindex` (the
    /// PMD's `dev_info.if_index`): reads the interface counters as a base
    /// and resets the sockets' counters. `None` when the interface has no
    /// name here.
    pub fn open(ifindex: u32) -> Option<KernelRx> {
        let iface = ifindex_name(ifindex)?;
        let fds = packet_sockets_on(ifindex);
        for &fd in &fds {
            let _ = socket_drops(fd);
        }
        let base = Self::iface_counters(&iface);
        Some(KernelRx {
            iface,
            ifindex,
            fds,
            base,
            ring_dropped: Mutex::new(0),
        })
    }

    /// The interface's name.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// How many of the PMD's sockets were found (its queue pairs).
    pub fn sockets(&self) -> usize {
        self.fds.len()
    }

    fn iface_counters(iface: &str) -> (u64, u64) {
        let c = |n| sysfs_counter(iface, n).unwrap_or(0);
        (c("rx_packets"), c("rx_dropped") + c("rx_missed_errors"))
    }

    /// The counters since [`KernelRx::open`]. The sockets are read only
    /// while they still are the PMD's (it closes them when the port stops;
    /// afterwards the sums stay as last read).
    pub fn read(&self) -> KernelRxStats {
        let mut ring_dropped = self.ring_dropped.lock().unwrap_or_else(|e| e.into_inner());
        for &fd in &self.fds {
            if !is_packet_socket_on(fd, self.ifindex) {
                continue;
            }
            *ring_dropped += socket_drops(fd).unwrap_or(0);
        }
        let now = Self::iface_counters(&self.iface);
        KernelRxStats {
            rx_packets: now.0.saturating_sub(self.base.0),
            rx_dropped: now.1.saturating_sub(self.base.1),
            ring_dropped: *ring_dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every network namespace has `lo`: its counters read as numbers, and
    /// names that would leave the sysfs directory are refused.
    #[test]
    fn sysfs_counters_of_loopback() {
        assert!(sysfs_counter("lo", "rx_packets").is_some());
        assert!(sysfs_counter("lo", "rx_dropped").is_some());
        assert_eq!(sysfs_counter("lo", "no_such_counter"), None);
        assert_eq!(sysfs_counter("../lo", "rx_packets"), None);
        assert_eq!(sysfs_counter("", "rx_packets"), None);
        assert_eq!(sysfs_counter("dp-no-such-if", "rx_packets"), None);
    }

    #[test]
    fn loopback_index_has_its_name() {
        // SAFETY: if_nametoindex reads a NUL-terminated string.
        let idx = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_ne!(idx, 0);
        assert_eq!(ifindex_name(idx).as_deref(), Some("lo"));
        assert_eq!(ifindex_name(0), None);
    }

    /// No packet socket of ours is bound to `lo`, and descriptors that are
    /// not sockets (stdin, files) are passed over.
    #[test]
    fn no_packet_sockets_found_where_there_are_none() {
        // SAFETY: as above.
        let idx = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        let _f = std::fs::File::open("/proc/self/status").unwrap();
        assert!(packet_sockets_on(idx).is_empty());
        let k = KernelRx::open(idx).unwrap();
        assert_eq!(k.iface(), "lo");
        assert_eq!(k.sockets(), 0);
        let s = k.read();
        assert_eq!(s.ring_dropped, 0);
    }
}
