//! Longest-prefix-match tables: rte_fib/rte_lpm (IPv4), rte_fib6/rte_lpm6 (IPv6).
