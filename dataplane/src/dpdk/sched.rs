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
use std::collections::BTreeSet;
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

/// The CPUs this process may run on (its `sched_getaffinity` mask: taskset,
/// a cgroup cpuset). EAL pins lcores without looking at it: outside a
/// taskset mask the daemon would quietly escape it, and a cpuset makes the
/// pinning fail at start-up; `check` refuses such a CPU first.
pub fn allowed_cpus() -> io::Result<BTreeSet<u32>> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 = the calling thread; the kernel writes at most
    // size_of::<cpu_set_t>() bytes into `set`, which we own.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let bits = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads bit `c` of `set`; c < the set's size in bits.
    Ok((0..bits)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect())
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

    /// The mask holds the CPU this thread is running on.
    #[test]
    fn allowed_cpus_hold_the_current_one() {
        let cpus = allowed_cpus().unwrap();
        // SAFETY: sched_getcpu has no preconditions.
        let now = unsafe { libc::sched_getcpu() };
        assert!(now >= 0);
        assert!(cpus.contains(&(now as u32)), "{now} not in {cpus:?}");
    }
}
