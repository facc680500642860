//! An A/B switch inside one run, for performance experiments (cargo feature
//! `ab`, built by `scripts/ab.sh`; without it [`on`] is `false` and every
//! hook here compiles to nothing).
//!
//! On this VM the same binary's speed swings by up to 2x between runs, and
//! by several percent between two runs of the same build, so two builds run
//! one after the other cannot tell a 1 % change from the noise. Here both
//! variants live in one binary: the worker flips [`on`] every 2^28 TSC
//! cycles (about a tenth of a second) and counts cycles and received
//! packets per half, so every slow or fast phase of the VM falls on both.
//! An experiment writes `if ab::on() { new } else { old }` at a burst
//! boundary (never per packet: the branch would be part of what is
//! measured) and reads the `ab-cycles` line the worker prints at its exit.
#[cfg(feature = "ab")]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "ab")]
static ON: AtomicBool = AtomicBool::new(false);

/// Whether the current phase runs the experiment's new variant.
#[inline(always)]
pub fn on() -> bool {
    #[cfg(feature = "ab")]
    {
        ON.load(Ordering::Relaxed)
    }
    #[cfg(not(feature = "ab"))]
    {
        false
    }
}

/// A worker's cycles and packets per phase.
#[derive(Default)]
pub struct Phases {
    #[cfg(feature = "ab")]
    cycles: [u64; 2],
    #[cfg(feature = "ab")]
    pkts: [u64; 2],
    #[cfg(feature = "ab")]
    last: u64,
    #[cfg(feature = "ab")]
    phase: usize,
}

impl Phases {
    /// Closes the poll iteration that ended at `now` (a TSC read) and
    /// picks the phase of the next one.
    #[inline(always)]
    pub fn tick(&mut self, now: impl FnOnce() -> u64) {
        #[cfg(feature = "ab")]
        {
            let now = now();
            if self.last != 0 {
                self.cycles[self.phase] += now.wrapping_sub(self.last);
            }
            self.last = now;
            self.phase = (now >> 28) as usize & 1;
            ON.store(self.phase == 1, Ordering::Relaxed);
        }
        #[cfg(not(feature = "ab"))]
        let _ = now;
    }

    /// Packets received in the current iteration.
    #[inline(always)]
    pub fn count(&mut self, _pkts: usize) {
        #[cfg(feature = "ab")]
        {
            self.pkts[self.phase] += _pkts as u64;
        }
    }

    /// Prints the `ab-cycles` line (cycles per received packet in each
    /// phase) for `scripts/ab.sh`.
    pub fn report(&self, _worker: usize) {
        #[cfg(feature = "ab")]
        {
            let per = |k: usize| self.cycles[k] as f64 / self.pkts[k].max(1) as f64;
            eprintln!(
                "ab-cycles worker={_worker} off={:.3} on={:.3} off_pkts={} on_pkts={}",
                per(0),
                per(1),
                self.pkts[0],
                self.pkts[1]
            );
        }
    }
}
