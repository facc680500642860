//! The driver's share of a worker's cycles, without hardware counters
//! (feature `pmd-cycles`, for `scripts/pmd-cycles.sh`): TSC cycles spent
//! inside `rte_eth_rx_burst` (calls that returned packets) and
//! `rte_eth_tx_burst`, summed per thread. With the same sums from an
//! instrumented l3fwd, a worker's cycles per packet split into the PMD's
//! and the app's own, app by app on the same feed: what `perf-share` can
//! only assume equal. Off by default: two TSC reads per call are not free.
use std::cell::Cell;

/// Cycles and packets inside the PMD's burst calls, for one thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct PmdCycles {
    pub rx_cycles: u64,
    pub rx_pkts: u64,
    pub tx_cycles: u64,
    pub tx_pkts: u64,
}

thread_local! {
    // Const-initialised and `Copy`: no lazy set-up or destructor on the
    // burst path.
    static CYCLES: Cell<PmdCycles> = const {
        Cell::new(PmdCycles { rx_cycles: 0, rx_pkts: 0, tx_cycles: 0, tx_pkts: 0 })
    };
}

/// One RX call that returned `pkts` packets in `cycles`.
#[inline(always)]
pub fn add_rx(cycles: u64, pkts: usize) {
    update(|v| {
        v.rx_cycles += cycles;
        v.rx_pkts += pkts as u64;
    });
}

/// One TX call offered `pkts` packets, in `cycles`.
#[inline(always)]
pub fn add_tx(cycles: u64, pkts: usize) {
    update(|v| {
        v.tx_cycles += cycles;
        v.tx_pkts += pkts as u64;
    });
}

#[inline(always)]
fn update(f: impl FnOnce(&mut PmdCycles)) {
    CYCLES.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

/// This thread's sums so far.
pub fn get() -> PmdCycles {
    CYCLES.with(Cell::get)
}
