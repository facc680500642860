#!/usr/bin/env bash
# Runs every check and test: setup, formatting, clippy, unit + property +
# black-box tests (cargo nextest: one process per test, so each DPDK test
# process initialises EAL once).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
# The measuring builds' hooks (scripts/pmd-cycles.sh, scripts/ab.sh), so
# that they do not rot between the sessions that use them.
cargo clippy -p dataplane --features ab,pmd-cycles --all-targets -- -D warnings

echo "== build"
cargo build --workspace --bins

profile=default
[ "${CI:-}" = "true" ] && profile=ci
echo "== tests (nextest profile $profile)"
cargo nextest run --workspace --profile "$profile" "$@"
