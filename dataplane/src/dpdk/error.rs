//! One error type for every DPDK call: the C return code (or `rte_errno`)
//! plus DPDK's own text for it.
use std::ffi::CStr;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DpdkError {
    /// A DPDK call failed.
    #[error("{call} failed: {msg} (errno {errno})")]
    Call {
        call: &'static str,
        errno: i32,
        msg: String,
    },
    /// An argument was refused before reaching DPDK.
    #[error("{0}")]
    Invalid(String),
}

/// DPDK's description of an errno value (`rte_strerror` also knows the
/// RTE_MIN_ERRNO range).
pub fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or per-lcore
    // NUL-terminated buffer; we copy it out at once.
    unsafe {
        let p = dpdk_sys::rte_strerror(errno);
        if p.is_null() {
            return format!("errno {errno}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Builds the error for a failed `call` from a negative errno return code.
pub fn from_errno(call: &'static str, errno: i32) -> DpdkError {
    DpdkError::Call {
        call,
        errno,
        msg: strerror(errno),
    }
}

/// DPDK's convention: `rc < 0` is `-errno`. Passes non-negative codes through.
pub fn check(call: &'static str, rc: i32) -> Result<i32, DpdkError> {
    if rc < 0 {
        Err(from_errno(call, -rc))
    } else {
        Ok(rc)
    }
}

/// For calls that signal failure with NULL / -1 and set `rte_errno`.
pub fn last(call: &'static str) -> DpdkError {
    // SAFETY: reads the calling thread's rte_errno through the shim.
    let errno = unsafe { dpdk_sys::shim_rte_errno() };
    from_errno(call, errno)
}
