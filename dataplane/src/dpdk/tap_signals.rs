//! Keeps the tap PMD's signal storm off the control thread.
//!
//! DPDK 22.11's `net_tap` has an "Rx trigger": its RX burst skips the
//! `readv` until a counter moved, and a signal handler moves it. Each queue's
//! file descriptor is put in `O_ASYNC` mode owned by the process
//! (`F_SETOWN getpid()`), with the first free real-time signal from
//! `SIGRTMIN + 1` as its signal (`F_SETSIG`; "Using rt-signal N" in its debug
//! log). So the kernel queues one signal for every frame it puts on a tap —
//! real-time signals are queued, not merged, and when the queue is full the
//! kernel sends `SIGIO` instead. A process-directed signal goes to the main
//! thread whenever that thread does not block it: here the control thread.
//! Under a flood that is a wake-up and a handler per frame on the control
//! thread, its whole CPU share on a busy control core spent entering and
//! leaving the handler: the stats line went silent for seconds and a stop
//! request waited as long (measured: `tests/tests/stop_under_flood.rs`).
//!
//! [`SignalSink`] fixes where those signals land, not the signals: the main
//! thread blocks `SIGIO` and every real-time signal (`SIGRTMIN..=SIGRTMAX`;
//! nothing in the daemon, EAL or glibc waits for them) *before* EAL starts,
//! so every thread EAL creates (workers, interrupt, telemetry,
//! multi-process) inherits the block; then one parked thread of ours
//! unblocks them and takes them all. The handler still runs — the trigger
//! must move, or tap RX stalls — on a thread with nothing else to do.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// `SIGIO` and the real-time signals (glibc's `SIGRTMIN..=SIGRTMAX`).
fn trigger_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; every number
    // added is a valid signal (SIGIO, and glibc's real-time range).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGIO);
        for sig in libc::SIGRTMIN()..=libc::SIGRTMAX() {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks (or unblocks) the trigger signals in the calling thread.
fn mask(block: bool) {
    let set = trigger_signals();
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: set is an initialised sigset; a NULL old set is allowed.
    // pthread_sigmask only fails for an invalid `how`, which it is not.
    unsafe { libc::pthread_sigmask(how, &set, std::ptr::null_mut()) };
}

/// Whether the calling thread blocks every trigger signal.
pub fn blocked_here() -> bool {
    // SAFETY: a zeroed sigset is a valid out buffer; a NULL new set only
    // reads the mask.
    let cur = unsafe {
        let mut cur: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
        cur
    };
    let all = trigger_signals();
    (1..=libc::SIGRTMAX()).all(|sig| {
        // SAFETY: both sets are initialised; sig is in range.
        unsafe { libc::sigismember(&all, sig) == 0 || libc::sigismember(&cur, sig) == 1 }
    })
}

/// The one thread that takes the trigger signals (see the module doc).
/// Dropping it stops the thread and unblocks them in the dropping thread.
#[derive(Debug)]
pub struct SignalSink {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The sink thread's name (`/proc/<pid>/task/*/comm`).
pub const SINK_THREAD: &str = "dp-tap-signals";

impl SignalSink {
    /// Blocks the trigger signals in the calling thread, and so in every
    /// thread it creates from now on: call it before EAL starts, then
    /// [`SignalSink::spawn`].
    pub fn block_here() {
        mask(true);
    }

    /// Starts the thread that takes the trigger signals. It inherits the
    /// caller's CPU affinity (after EAL init, the control core's) and mask,
    /// unblocks them and parks. Signals raised while every thread blocked
    /// them are pending, and handled once this thread unblocks them.
    pub fn spawn() -> std::io::Result<SignalSink> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(SINK_THREAD.into())
            .spawn(move || {
                mask(false);
                // A handled signal may end a park early: park again.
                while !flag.load(Ordering::Acquire) {
                    std::thread::park();
                }
                mask(true);
            })?;
        Ok(SignalSink {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        mask(false);
    }
}

/// Whether thread `comm` of this process blocks `sig`, from
/// `/proc/self/task/<tid>/status` (`SigBlk`); `None` when no thread has that
/// name. For tests and diagnostics.
pub fn thread_blocks(comm: &str, sig: libc::c_int) -> Option<bool> {
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = t.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if name.trim_end() != comm {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        let blk = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
        let mask = u64::from_str_radix(blk.trim(), 16).ok()?;
        return Some(mask & (1 << (sig - 1)) != 0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocking thread and the threads it starts later block SIGIO and
    /// the real-time signals; the sink does not; dropping the sink ends it
    /// and unblocks the caller.
    #[test]
    fn trigger_signals_are_blocked_everywhere_but_the_sink() {
        // On a thread of our own: the test harness's threads keep their masks.
        std::thread::Builder::new()
            .name("blocker".into())
            .spawn(|| {
                let rt1 = libc::SIGRTMIN() + 1;
                SignalSink::block_here();
                assert!(blocked_here());
                let child = std::thread::Builder::new()
                    .name("child".into())
                    .spawn(blocked_here)
                    .unwrap();
                assert!(child.join().unwrap(), "a later thread inherits the block");
                let sink = SignalSink::spawn().unwrap();
                let mut open = None;
                for _ in 0..200 {
                    open = thread_blocks(SINK_THREAD, rt1);
                    if open == Some(false) {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                assert_eq!(open, Some(false), "the sink takes SIGRTMIN+1");
                assert_eq!(thread_blocks(SINK_THREAD, libc::SIGIO), Some(false));
                assert_eq!(thread_blocks("blocker", rt1), Some(true));
                assert_eq!(thread_blocks("blocker", libc::SIGIO), Some(true));
                assert_eq!(
                    thread_blocks("blocker", libc::SIGINT),
                    Some(false),
                    "stop signals stay deliverable"
                );
                drop(sink);
                // The join returns once the thread has run its exit; the
                // kernel may list the task a moment longer (seen on a loaded
                // machine), so wait for it to go, a second at most.
                let mut gone = thread_blocks(SINK_THREAD, rt1);
                for _ in 0..200 {
                    if gone.is_none() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    gone = thread_blocks(SINK_THREAD, rt1);
                }
                assert_eq!(gone, None, "the sink ended");
                assert!(!blocked_here(), "unblocked again after the sink");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
