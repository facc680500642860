//! Packet classification with rte_acl.
