//! Finds the system DPDK with pkg-config, generates bindings with bindgen and
//! compiles the shim for DPDK's `static inline` functions.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let dpdk = pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
        .expect("libdpdk not found by pkg-config: run scripts/setup.sh (installs libdpdk-dev)");

    // The version, for code that depends on more than the API: here as cfg
    // `dpdk_22_11`, and to dependents' build scripts as DEP_DPDK_VERSION
    // (this crate `links = "dpdk"`), where `dataplane/build.rs` sets the
    // same cfg for the reader of rte_fib's private table layout.
    println!("cargo:version={}", dpdk.version);
    println!("cargo:rustc-check-cfg=cfg(dpdk_22_11)");
    if is_22_11(&dpdk.version) {
        println!("cargo:rustc-cfg=dpdk_22_11");
    }

    // pkg-config's cflags carry `-include rte_config.h` and `-march=...`, which
    // every DPDK translation unit needs; give them to both cc and clang.
    let cflags_out = std::process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .expect("pkg-config --cflags libdpdk");
    let cflags: Vec<String> = String::from_utf8_lossy(&cflags_out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();

    let mut build = cc::Build::new();
    build.file("shim.c").opt_level(3).warnings(false);
    for f in &cflags {
        build.flag(f);
    }
    build.compile("dpdk_shim");

    let mut bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(cflags.iter())
        .allowlist_function("rte_.*")
        .allowlist_function("shim_.*")
        .allowlist_type("rte_.*")
        .allowlist_var("RTE_.*")
        .allowlist_var("rte_.*")
        .allowlist_var("RING_F_.*")
        // Packed structs with over-aligned members that rustc rejects.
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_arp_ipv4")
        .opaque_type("rte_l2tpv2_combined_msg_hdr")
        .opaque_type("rte_gtp_psc_generic_hdr")
        .derive_debug(false)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for p in &dpdk.include_paths {
        bindings = bindings.clang_arg(format!("-I{}", p.display()));
    }
    let bindings = bindings.generate().expect("bindgen over DPDK headers");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    bindings.write_to_file(out).expect("write bindings");
}

/// Whether a pkg-config version (`22.11`, `22.11.11`, ...) is a 22.11 release.
fn is_22_11(version: &str) -> bool {
    let mut parts = version.trim().split('.');
    parts.next() == Some("22") && parts.next() == Some("11")
}
