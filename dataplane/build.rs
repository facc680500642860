//! Sets cfg `dpdk_22_11` when `dpdk-sys` was built against libdpdk 22.11
//! (its pkg-config version, passed on as DEP_DPDK_VERSION through
//! `links = "dpdk"`). `dpdk::lpm`'s in-place reader of rte_fib's table reads
//! DPDK 22.11's private `dir24_8` layout and is compiled only under it;
//! against any other DPDK the data path uses `rte_fib_lookup_bulk`.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_DPDK_VERSION");
    println!("cargo:rustc-check-cfg=cfg(dpdk_22_11)");
    let version = std::env::var("DEP_DPDK_VERSION").unwrap_or_default();
    let mut parts = version.trim().split('.');
    if parts.next() == Some("22") && parts.next() == Some("11") {
        println!("cargo:rustc-cfg=dpdk_22_11");
    } else {
        println!(
            "cargo:warning=libdpdk {version:?} is not 22.11: rte_fib's table is not read in place \
             (the data path uses rte_fib_lookup_bulk)"
        );
    }
}
