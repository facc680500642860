//! The daemon's own endpoints on DPDK's telemetry socket, next to DPDK's
//! (`/ethdev/stats`, …), for `dpdk-telemetry.py`: each answers a flat
//! dictionary of counters that a closure reads when the endpoint is asked.
//!
//! Callbacks run on EAL's telemetry thread; they only read (relaxed
//! atomics behind the closure). The C callback is a trampoline that finds
//! the closure by its command and catches panics, so none unwinds into C.
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

type Source = Box<dyn Fn() -> Vec<(&'static str, u64)> + Send + Sync>;

/// Registered endpoints: command → what it answers. The strings live as
/// long as the process (DPDK keeps the pointers).
static ENDPOINTS: Mutex<Vec<(&'static CStr, Source)>> = Mutex::new(Vec::new());

/// Registers `cmd` (e.g. `/dataplane/reloads`), answering `source()` as a
/// dictionary. EAL must be up (with telemetry; without it the command is
/// never asked).
pub fn register(
    cmd: &str,
    help: &str,
    source: impl Fn() -> Vec<(&'static str, u64)> + Send + Sync + 'static,
) -> Result<(), super::DpdkError> {
    let cmd_c: &'static CStr = Box::leak(
        CString::new(cmd)
            .map_err(|_| super::DpdkError::Invalid("telemetry command with a NUL".into()))?
            .into_boxed_c_str(),
    );
    let help_c: &'static CStr = Box::leak(
        CString::new(help)
            .map_err(|_| super::DpdkError::Invalid("telemetry help with a NUL".into()))?
            .into_boxed_c_str(),
    );
    ENDPOINTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((cmd_c, Box::new(source)));
    // SAFETY: both strings are 'static and NUL-terminated; the callback is
    // an `extern "C"` function that never unwinds.
    let rc = unsafe {
        dpdk_sys::rte_telemetry_register_cmd(cmd_c.as_ptr(), Some(answer), help_c.as_ptr())
    };
    super::error::check("rte_telemetry_register_cmd", rc).map(|_| ())
}

extern "C" fn answer(
    cmd: *const c_char,
    _params: *const c_char,
    d: *mut dpdk_sys::rte_tel_data,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: DPDK passes the command it matched, NUL-terminated.
        let cmd = unsafe { CStr::from_ptr(cmd) };
        let endpoints = ENDPOINTS.lock().unwrap_or_else(|e| e.into_inner());
        let Some((_, source)) = endpoints.iter().find(|(c, _)| *c == cmd) else {
            return -1;
        };
        let values = source();
        // SAFETY: `d` is the answer DPDK allocated for this call.
        unsafe { dpdk_sys::rte_tel_data_start_dict(d) };
        for (name, v) in values {
            let Ok(name) = CString::new(name) else {
                continue;
            };
            // SAFETY: as above; DPDK copies the name.
            unsafe { dpdk_sys::rte_tel_data_add_dict_u64(d, name.as_ptr(), v) };
        }
        0
    }));
    r.unwrap_or(-1)
}
