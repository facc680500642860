//! A userspace packet-forwarding dataplane on DPDK.
//!
//! `dpdk` is the only module allowed `unsafe`: it owns EAL, ports, mempools,
//! mbufs, rings and the DPDK-backed lookup tables behind safe types. Everything
//! else (`wire` header views, the `pipeline`, `tables`, `config`) is safe Rust
//! and, except the daemon glue, runs on plain byte buffers.
#![deny(unsafe_code)]

pub mod ab;
pub mod burst;
pub mod config;
pub mod control;
pub mod daemon;
pub mod distributor;
pub mod dpdk;
pub mod flow;
pub mod gen;
pub mod pipeline;
pub mod preflight;
pub mod stats;
pub mod tables;
pub mod wire;
pub mod worker;
