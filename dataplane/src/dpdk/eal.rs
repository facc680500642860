//! The Environment Abstraction Layer: initialised once per process, it owns
//! hugepage memory, the lcore threads and the device buses.
//!
//! Workers run on EAL lcores (`rte_eal_remote_launch`): EAL pins each lcore
//! thread and gives it an lcore id, which is what makes the mempool's per-lcore
//! caches work. Closures are boxed and started through an `extern "C"`
//! trampoline that catches panics, so no unwind ever crosses into C.
use super::error::{self, DpdkError};
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// An EAL lcore id (not necessarily the CPU number: `--lcores` can remap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LcoreId(pub u32);

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// Proof that EAL is up. Dropping it calls `rte_eal_cleanup`; everything that
/// came from DPDK (ports, mempools, rings, tables) must be dropped first.
pub struct Eal {
    /// `--file-prefix` (default "rte"): names our hugepage files.
    file_prefix: String,
}

impl Eal {
    /// Initialises EAL from command-line style arguments (`args[0]` is the
    /// program name). Fails if EAL was already initialised in this process.
    pub fn init<S: AsRef<str>>(args: &[S]) -> Result<Eal, DpdkError> {
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::Invalid(
                "EAL is already initialised in this process".into(),
            ));
        }
        let file_prefix = file_prefix_of(args);
        // A second primary on a held prefix fails inside rte_eal_init with
        // rte_errno 0 ("Success"): say who holds it instead.
        if let Some(pid) = prefix_holder(args, &file_prefix) {
            INITIALISED.store(false, Ordering::SeqCst);
            return Err(DpdkError::Invalid(format!(
                "another process (pid {pid}) holds DPDK file prefix `{file_prefix}` ({}): stop \
                 it or choose another eal.file_prefix",
                runtime_config_path(&file_prefix).display()
            )));
        }
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_ref()))
            .collect::<Result<_, _>>()
            .map_err(|_| DpdkError::Invalid("EAL argument contains a NUL byte".into()))?;
        // EAL may keep pointers into argv (e.g. for devargs), so argv lives
        // for the rest of the process.
        let argv: &'static mut [*mut libc::c_char] = Box::leak(
            cargs
                .into_iter()
                .map(CString::into_raw)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        // SAFETY: argv holds argc valid NUL-terminated strings that are never
        // freed; rte_eal_init is called at most once (checked above).
        let rc = unsafe { dpdk_sys::rte_eal_init(argv.len() as i32, argv.as_mut_ptr()) };
        if rc < 0 {
            INITIALISED.store(false, Ordering::SeqCst);
            return Err(error::last("rte_eal_init"));
        }
        Ok(Eal { file_prefix })
    }

    /// Whether [`Eal::init`] succeeded (or is running) in this process: the
    /// check of the tests that must run without EAL.
    pub fn is_initialised() -> bool {
        INITIALISED.load(Ordering::SeqCst)
    }

    /// The lcore the calling thread runs on (`u32::MAX` for foreign threads).
    pub fn current_lcore() -> LcoreId {
        // SAFETY: reads a thread-local through the shim.
        LcoreId(unsafe { dpdk_sys::shim_rte_lcore_id() })
    }

    pub fn main_lcore(&self) -> LcoreId {
        // SAFETY: EAL is initialised (self exists).
        LcoreId(unsafe { dpdk_sys::rte_get_main_lcore() })
    }

    /// Every enabled lcore except the main one, in id order.
    pub fn worker_lcores(&self) -> Vec<LcoreId> {
        let main = self.main_lcore();
        (0..dpdk_sys::RTE_MAX_LCORE)
            // SAFETY: EAL is initialised; any id below RTE_MAX_LCORE is valid input.
            .filter(|&id| unsafe { dpdk_sys::rte_lcore_is_enabled(id) } != 0)
            .map(LcoreId)
            .filter(|&l| l != main)
            .collect()
    }

    /// The CPU an lcore is pinned to.
    pub fn lcore_cpu(&self, lcore: LcoreId) -> i32 {
        // SAFETY: EAL is initialised; out-of-range ids return -1.
        unsafe { dpdk_sys::rte_lcore_to_cpu_id(lcore.0 as i32) }
    }

    /// TSC ticks per second, measured by EAL at start.
    pub fn tsc_hz(&self) -> u64 {
        // SAFETY: EAL is initialised.
        unsafe { dpdk_sys::rte_get_tsc_hz() }
    }

    /// Lets `dpdk-dumpcap`/`dpdk-pdump` (secondary processes) capture on our
    /// ports. Needs hugepages: a `--no-huge` primary cannot share memory.
    pub fn enable_pdump(&self) -> Result<(), DpdkError> {
        // SAFETY: EAL is initialised; registers the pdump IPC handler.
        error::check("rte_pdump_init", unsafe { dpdk_sys::rte_pdump_init() }).map(|_| ())
    }

    /// Runs `f` on worker lcore `lcore`. A panic in `f` is caught, logged and
    /// reported as exit code -1 by [`Eal::wait`].
    pub fn launch<F>(&self, lcore: LcoreId, f: F) -> Result<(), DpdkError>
    where
        F: FnOnce() -> i32 + Send + 'static,
    {
        type Job = Box<dyn FnOnce() -> i32 + Send>;
        unsafe extern "C" fn trampoline(arg: *mut c_void) -> i32 {
            // SAFETY: arg is the Box<Job> leaked by launch below, consumed once.
            let job: Box<Job> = unsafe { Box::from_raw(arg as *mut Job) };
            match catch_unwind(AssertUnwindSafe(move || (*job)())) {
                Ok(rc) => rc,
                Err(_) => {
                    tracing::error!("worker on lcore panicked");
                    -1
                }
            }
        }
        let job: Box<Job> = Box::new(Box::new(f));
        let arg = Box::into_raw(job) as *mut c_void;
        // SAFETY: trampoline matches lcore_function_t; arg stays valid until
        // the trampoline takes it back.
        let rc = unsafe { dpdk_sys::rte_eal_remote_launch(Some(trampoline), arg, lcore.0) };
        if rc < 0 {
            // SAFETY: the launch failed, so the trampoline never saw arg.
            drop(unsafe { Box::from_raw(arg as *mut Job) });
            return Err(error::from_errno("rte_eal_remote_launch", -rc));
        }
        Ok(())
    }

    /// EAL's runtime directory (`/var/run/dpdk/<prefix>` for root): where
    /// its sockets live, and the daemon's control socket beside them.
    pub fn runtime_dir(&self) -> Option<String> {
        // SAFETY: EAL is initialised; the string is EAL's own, copied here.
        unsafe {
            let p = dpdk_sys::rte_eal_get_runtime_dir();
            (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }

    /// Waits for the job on `lcore` and returns its exit code.
    pub fn wait(&self, lcore: LcoreId) -> i32 {
        // SAFETY: EAL is initialised; waiting on an idle lcore returns at once.
        unsafe { dpdk_sys::rte_eal_wait_lcore(lcore.0) }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // Copied before cleanup frees EAL's string.
        let runtime_dir = self.runtime_dir();
        // SAFETY: the owner dropped every DPDK object first (documented contract).
        unsafe {
            dpdk_sys::rte_eal_cleanup();
        }
        // EAL leaves its runtime directory (config, sockets, fbarrays) and,
        // without --huge-unlink, its hugepage files behind: the pages stay
        // reserved until a process with the same prefix starts. A clean exit
        // should leave nothing (--huge-unlink is not used because it would
        // stop dpdk-dumpcap attaching as a secondary process).
        if let Some(dir) = runtime_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        remove_hugepage_files(&self.file_prefix);
    }
}

/// Runs `f` with an lcore id on the calling thread. Some DPDK calls index
/// per-lcore arrays by `rte_lcore_id()` (rte_hash's multi-writer add, for
/// one) and would read out of bounds on a thread EAL did not start; such a
/// thread is registered with EAL for the call. EAL must be initialised.
pub fn with_lcore_id<R>(f: impl FnOnce() -> R) -> R {
    const LCORE_ID_ANY: u32 = u32::MAX;
    // SAFETY: reads a thread-local through the shim.
    if unsafe { dpdk_sys::shim_rte_lcore_id() } != LCORE_ID_ANY {
        return f();
    }
    // SAFETY: EAL is initialised (caller's contract); registering gives this
    // thread a free lcore id until it is unregistered below.
    let registered = unsafe { dpdk_sys::rte_thread_register() } == 0;
    let r = f();
    if registered {
        // SAFETY: this thread registered above.
        unsafe { dpdk_sys::rte_thread_unregister() };
    }
    r
}

/// The `--file-prefix` EAL uses for `args`: the last one given, as
/// `--file-prefix=P` or `--file-prefix P` (getopt takes both, and a later
/// one overrides an earlier one), else DPDK's default `rte`.
pub fn file_prefix_of<S: AsRef<str>>(args: &[S]) -> String {
    let mut prefix = "rte";
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(a) = it.next() {
        if let Some(p) = a.strip_prefix("--file-prefix=") {
            prefix = p;
        } else if a == "--file-prefix" {
            if let Some(p) = it.next() {
                prefix = p;
            }
        }
    }
    prefix.to_owned()
}

/// Where a primary process with `prefix` keeps its shared config (DPDK's
/// `eal_runtime_config_path`): `/var/run/dpdk/<prefix>/config` for root,
/// else under `$XDG_RUNTIME_DIR` (or `/tmp`).
pub fn runtime_config_path(prefix: &str) -> std::path::PathBuf {
    // SAFETY: getuid(2) has no preconditions and cannot fail.
    let base = if unsafe { libc::getuid() } == 0 {
        "/var/run".to_owned()
    } else {
        std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into())
    };
    std::path::Path::new(&base)
        .join("dpdk")
        .join(prefix)
        .join("config")
}

/// The pid of another primary holding `prefix`, for args that would start
/// a primary with a shared config (not `--proc-type`, `--no-shconf` or
/// `--in-memory`, which share nothing or mean to join).
fn prefix_holder<S: AsRef<str>>(args: &[S], prefix: &str) -> Option<i32> {
    let shares = args
        .iter()
        .map(AsRef::as_ref)
        .all(|a| !(a.starts_with("--proc-type") || a == "--no-shconf" || a == "--in-memory"));
    shares
        .then(|| config_lock_holder(&runtime_config_path(prefix)))
        .flatten()
}

/// The process holding a write lock on `path`, if one does. A DPDK primary
/// holds an fcntl (POSIX record) write lock on its runtime config for its
/// whole life; flock(2) locks, which `File::try_lock` takes, do not see it.
pub fn config_lock_holder(path: &std::path::Path) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: flock is a plain C struct; all-zero is a valid value.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = 0;
    lock.l_len = 0; // the whole file
                    // SAFETY: f is an open descriptor for the call's duration and lock a
                    // valid flock that F_GETLK fills in.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut lock) };
    (rc == 0 && lock.l_type != libc::F_UNLCK as libc::c_short).then_some(lock.l_pid)
}

/// Removes `<prefix>map_*` files from every hugetlbfs mount.
fn remove_hugepage_files(prefix: &str) {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return;
    };
    let stem = format!("{prefix}map_");
    for dir in mounts.lines().filter_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "hugetlbfs").then(|| f[1].to_owned())
    }) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&stem) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_file_prefix_wins() {
        assert_eq!(file_prefix_of(&["dp", "--no-pci"]), "rte");
        assert_eq!(
            file_prefix_of(&["dp", "--file-prefix=a", "-m", "64", "--file-prefix=b"]),
            "b"
        );
        assert_eq!(
            file_prefix_of(&["dp", "--file-prefix=a", "--file-prefix", "c"]),
            "c"
        );
    }

    /// DPDK's lock is an fcntl record lock (Python's `fcntl.lockf` takes
    /// the same kind); an flock(2) lock on the same file is not one.
    #[test]
    fn sees_another_process_fcntl_lock_not_flock() {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let path = std::env::temp_dir().join(format!("dp-lock-{}", std::process::id()));
        std::fs::write(&path, "x").unwrap();
        assert_eq!(config_lock_holder(&path), None);
        let hold = |code: &str| {
            let mut c = Command::new("python3")
                .args(["-c", code])
                .arg(&path)
                .stdout(Stdio::piped())
                .spawn()
                .expect("python3");
            let mut line = String::new();
            BufReader::new(c.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "locked");
            c
        };
        let mut c = hold(
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); \
             print('locked', flush=True); time.sleep(30)",
        );
        assert_eq!(config_lock_holder(&path), Some(c.id() as i32));
        c.kill().unwrap();
        c.wait().unwrap();
        let mut c = hold(
            "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.flock(f, fcntl.LOCK_EX); \
             print('locked', flush=True); time.sleep(30)",
        );
        assert_eq!(config_lock_holder(&path), None);
        c.kill().unwrap();
        c.wait().unwrap();
        std::fs::remove_file(&path).unwrap();
    }
}
