#!/usr/bin/env bash
# Fuzzes the packet pipeline with cargo-fuzz.
#
#   scripts/fuzz.sh [SECONDS]                          default 60, target pipeline
#   FUZZ_TARGET=route_noeal scripts/fuzz.sh [SECONDS]
#
# Targets (fuzz/fuzz_targets/, both on fuzz/harness.rs: same input format,
# same invariants):
#   pipeline      parse + acl + route on rte_fib and rte_acl (starts EAL);
#   route_noeal   parse + route on the `linear` route backend, no ACL, and
#                 asserts that EAL is never started (the route fast path as
#                 pipeline tests run it without EAL).
#
# Installs cargo-fuzz if missing, builds the traffic generator and writes the
# seed corpus into fuzz/corpus/TARGET (generator frames: IPv4, IPv6, VLAN,
# every malformed kind; plus hand-made ARP, NDP, echo, TTL 1, QinQ, IPv6
# extension headers, mbuf chains, bursts: fuzz/seeds.py; both targets' routers
# have the same ports and routes, so they share the seeds), then runs the
# target for SECONDS on all but one core. Exits non-zero when a crash was
# found and prints where its input is: replay it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET <artifact>   (in fuzz/)
# and, once fixed, copy it to dataplane/tests/fuzz_regressions/ (replayed by
# the fuzz_regressions test through `pipeline`, by lane_linear through
# `route_noeal`). The corpus only grows; shrink it with
# `(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz cmin TARGET)`.
#
# Environment: FUZZ_TARGET (pipeline | route_noeal; default pipeline),
# FUZZ_JOBS (parallel fuzzers, default nproc - 1, at least 1),
# FUZZ_SANITIZER (address | none; default address), FUZZ_ARGS (extra
# libFuzzer flags). Only stable Rust is needed: RUSTC_BOOTSTRAP=1 unlocks the
# nightly flags cargo-fuzz passes.
set -euo pipefail

SECONDS_TO_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ=$ROOT/fuzz
TARGET=${FUZZ_TARGET:-pipeline}
if [ ! -f "$FUZZ/fuzz_targets/$TARGET.rs" ]; then
    echo "unknown FUZZ_TARGET '$TARGET': one of" \
        $(cd "$FUZZ/fuzz_targets" && ls -- *.rs | sed 's/\.rs$//') >&2
    exit 2
fi
CORPUS=$FUZZ/corpus/$TARGET
ARTIFACTS=$FUZZ/artifacts/$TARGET
JOBS=${FUZZ_JOBS:-$(($(nproc) > 1 ? $(nproc) - 1 : 1))}
SANITIZER=${FUZZ_SANITIZER:-address}
export RUSTC_BOOTSTRAP=1
CARGO_TARGET_DIR_MAIN=${CARGO_TARGET_DIR:-$ROOT/target}

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz
fi

echo "== seed corpus -> $CORPUS"
CARGO_TARGET_DIR=$CARGO_TARGET_DIR_MAIN cargo build -q -p dataplane --bin dataplane \
    --manifest-path "$ROOT/Cargo.toml"
GEN=$CARGO_TARGET_DIR_MAIN/debug/dataplane
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$CORPUS" "$ARTIFACTS"
# Plain IPv4/IPv6 mixes at several sizes, to the routed prefixes, ECMP,
# the router's own addresses, ACL-relevant ports and TTL 1.
gen() { # NAME ARGS...
    local name=$1
    shift
    "$GEN" gen --out "$TMP/$name.pcap" --corpus-dir "$TMP/$name" "$@" >/dev/null
}
# Frames are addressed to the port they enter (lan 02:00:00:00:01:01, wan
# 02:00:00:00:02:01): any other unicast MAC stops at the L2 check (the
# fuzz target also replays every input addressed to the router).
LAN=02:00:00:00:01:01
WAN=02:00:00:00:02:01
gen mix --count 64 --flows 16 --size imix --ipv6-ratio 0.5 --proto mix \
    --dst-prefix 198.18.0.0/24 --dst-prefix 198.18.1.0/24 --dst-prefix 203.0.113.0/24 \
    --dst-prefix 2001:db8:100::/64 --dst-prefix 2001:db8:200::/64 \
    --src-prefix 10.0.1.0/24 --src-prefix 2001:db8:1::/64 \
    --dst-mac $LAN
gen mix-wan --count 64 --flows 16 --size imix --ipv6-ratio 0.5 --proto mix --seed 6 \
    --dst-prefix 198.18.0.0/24 --dst-prefix 203.0.113.0/24 --dst-prefix 2001:db8:200::/64 \
    --src-prefix 10.0.2.0/24 --src-prefix 2001:db8:2::/64 \
    --dst-mac $WAN
gen vlan --count 16 --flows 8 --vlan 99 --ipv6-ratio 0.5 --seed 2 --dst-mac $LAN
gen ttl1 --count 8 --flows 8 --ttl 1 --ipv6-ratio 0.5 --seed 3 \
    --dst-prefix 198.18.1.0/24 --dst-prefix 2001:db8:100::/64 --dst-mac $LAN
gen local --count 8 --flows 8 --ipv6-ratio 0.5 --seed 4 \
    --dst-prefix 10.0.1.1/32 --dst-prefix 2001:db8:1::1/128 --dst-prefix 192.0.2.0/24 \
    --dst-mac $LAN
gen broadcast --count 8 --flows 4 --seed 7 \
    --dst-prefix 10.0.1.255/32 --dst-prefix 10.0.2.255/32 --dst-mac $LAN
gen malformed --count 32 --flows 4 --malformed-ratio 1 --ipv6-ratio 0.5 --seed 5 --dst-mac $LAN
gen malformed-wan --count 32 --flows 4 --malformed-ratio 1 --ipv6-ratio 0.5 --seed 8 \
    --dst-mac $WAN
python3 "$FUZZ/seeds.py" wrap "$CORPUS" 0 "$TMP/mix" "$TMP/vlan" "$TMP/ttl1" "$TMP/local" \
    "$TMP/broadcast" "$TMP/malformed"
python3 "$FUZZ/seeds.py" wrap "$CORPUS" 1 "$TMP/mix-wan" "$TMP/malformed-wan"
python3 "$FUZZ/seeds.py" hand "$CORPUS"
echo "   $(ls "$CORPUS" | wc -l) files in the corpus"

echo "== fuzzing $TARGET for ${SECONDS_TO_RUN}s with $JOBS job(s), sanitizer $SANITIZER"
# Eal::init leaks argv on purpose (EAL keeps pointers into it).
export LSAN_OPTIONS="suppressions=$FUZZ/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
PAR=()
if [ "$JOBS" -gt 1 ]; then
    PAR=(-fork="$JOBS")
fi
touch "$TMP/start"
LOG=$FUZZ/fuzz-$TARGET.log
# cargo fuzz builds into fuzz/target and writes crashes to fuzz/artifacts/TARGET.
set +e
(cd "$FUZZ" && env -u CARGO_TARGET_DIR cargo fuzz run "$TARGET" --sanitizer "$SANITIZER" \
    "$CORPUS" -- \
    -max_total_time="$SECONDS_TO_RUN" -max_len=8192 -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 "${PAR[@]}" ${FUZZ_ARGS:-}) 2>&1 | tee "$LOG" |
    grep --line-buffered -E '^#[0-9]+.*(pulse|DONE)|^stat::|INFO: (fuzzing|-fork)|panicked|ERROR'
status=${PIPESTATUS[0]}
set -e
echo "   log: $LOG"
echo "   $(ls "$CORPUS" | wc -l) files in the corpus"

crashes=$(find "$ARTIFACTS" -type f -newer "$TMP/start" | sort)
if [ -n "$crashes" ] || [ "$status" -ne 0 ]; then
    echo "== FAILED (cargo fuzz exit status $status)"
    grep -E -A12 'panicked at|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)' "$LOG" |
        head -40 || true
    for c in $crashes; do
        echo "   crash input: $c"
    done
    echo "   replay: (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $TARGET <input>)"
    echo "   keep it: cp <input> dataplane/tests/fuzz_regressions/ &&" \
        "cargo test -p dataplane --test fuzz_regressions --test lane_linear"
    exit 1
fi
echo "== no crash"
