//! Scheduling of the daemon's own (non-lcore) threads.
//!
//! The control thread sleeps nearly all the time, but when it has work —
//! a stop request, the shutdown, a stats line — it must not queue behind
//! whatever else runs on the control core (a flood's senders and softirq
//! work, a build, the tap PMD's signal handling): CFS gives a runnable
//! thread of nice 0 a share equal to every other's, so three busy threads
//! on the core left it a third, and a shutdown that is quick on a quiet
//! core took several times as long. A lower nice value gives it the larger weight;
//! since it sleeps between ticks, it takes that CPU only when it needs it.
use std::io;

/// Sets the calling thread's nice value (Linux: per thread). Lowering it
/// below 0 needs `CAP_SYS_NICE` (root has it); the error says when it is
/// missing.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority on our own thread id; it reads no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's nice value.
pub fn thread_nice() -> io::Result<i32> {
    // SAFETY: as in set_thread_nice.
    let tid = unsafe { libc::gettid() };
    // getpriority can return -1 legitimately: clear errno first.
    // SAFETY: __errno_location points at this thread's errno.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: getpriority on our own thread id.
    let v = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    let e = io::Error::last_os_error();
    if v == -1 && e.raw_os_error() != Some(0) {
        return Err(e);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raising one's own nice value needs no privilege and changes only the
    /// calling thread.
    #[test]
    fn nice_is_per_thread() {
        let before = thread_nice().unwrap();
        std::thread::spawn(move || {
            set_thread_nice(before + 1).unwrap();
            assert_eq!(thread_nice().unwrap(), before + 1);
        })
        .join()
        .unwrap();
        assert_eq!(thread_nice().unwrap(), before, "the caller keeps its own");
    }
}
