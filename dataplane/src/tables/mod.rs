//! Lookup tables (routes, ACL) behind small traits; DPDK-backed ones wrap `dpdk::lpm`/`dpdk::acl`.
