//! Raw FFI to the system DPDK (22.11): bindgen output plus the `shim_*`
//! exports from `shim.c` for DPDK's `static inline` functions. Nothing here is
//! safe to call without reading DPDK's documentation; `dataplane::dpdk` wraps it.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all)]
#![allow(unsafe_op_in_unsafe_fn)]
#![allow(improper_ctypes)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
