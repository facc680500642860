#!/usr/bin/env bash
# Generates traffic pcaps with the built-in generator. All arguments go to
# `dataplane gen` (see `dataplane gen --help`), e.g.:
#   scripts/traffic.sh --out build/t.pcap --count 100000 --flows 1024 --size imix --ipv6-ratio 0.3
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/dataplane
[ -x "$BIN" ] || cargo build --release -p dataplane --bin dataplane >&2
exec "$BIN" gen "$@"
