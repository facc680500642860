//! Lookup tables (routes, ACL, the load balancer's Maglev and connection
//! tables) behind small traits; the DPDK-backed ones wrap
//! [`crate::dpdk::lpm`] and [`crate::dpdk::acl`]. Routes and neighbours
//! also have pure-Rust backends ([`HashLpm`], the Rust
//! [`neighbor::NeighborTable`]), so that a routing pipeline can be built and
//! run without EAL.
//!
//! This module is safe Rust: it chooses a backend, converts between the
//! daemon's types (prefixes, rules, next-hop ids) and what DPDK stores, and
//! keeps the linear-scan oracles the tests and benches compare against.
//! Tables are built by the control plane and read by workers through `&self`;
//! a change means building a new table and swapping it in between bursts.
//! The exception is learned state: the load balancer's [`ConnTable`] is one
//! per worker, owned and written by it, and outlives table swaps.
pub mod acl;
pub mod conntrack;
pub mod flow_cache;
pub mod hash_lpm;
pub mod lb;
pub mod maglev;
pub mod martians;
pub mod neighbor;
pub mod prefix;
pub mod route;
pub mod routing;
pub mod set;
pub mod testing;

pub use acl::{AclAction, AclRule, AclTable};
pub use conntrack::ConnTable;
pub use flow_cache::FlowCache;
pub use hash_lpm::HashLpm;
pub use maglev::Maglev;
pub use prefix::Prefix;
pub use route::{
    raw_value, Route4, Route6, RouteBackend, RouteConfig, RouteLookup, RouteTable, MISS,
    RAW_MISS_FLOOR,
};
pub use testing::test_eal;
