#!/usr/bin/env bash
# Instructions per packet of the pipeline bench's scenarios under callgrind:
# one run at BENCH_ITERS=200 subtracted from one at 1200 (the warm-up and
# set-up cancel out), divided by the 32,000 packets between them. Counts
# the whole bench loop (copy-in harness included), so compare builds, not
# absolute figures. Deterministic: unaffected by a noisy VM.
# Usage: bash scripts/callgrind.sh [SCENARIO...]  (default: route_1k acl1k_route)
# Prints: callgrind scenario=NAME instr_per_pkt=X
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "callgrind: valgrind missing (apt-get install valgrind)"; exit 1; }
SCEN=("$@")
[ ${#SCEN[@]} -gt 0 ] || SCEN=(route_1k acl1k_route)
bin=$(cargo bench -p dataplane --bench pipeline --no-run --message-format=json 2>/dev/null |
  python3 -c 'import sys, json
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "pipeline" and m.get("executable"):
        print(m["executable"])')
[ -n "$bin" ] || { echo "callgrind: pipeline bench binary not found"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ir() { # scenario iterations -> total instructions
  BENCH_ONLY=$1 BENCH_ITERS=$2 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1.$2" "$bin" >/dev/null 2>"$tmp/log"
  sed -n 's/^summary: *//p' "$tmp/cg.$1.$2"
}
for s in "${SCEN[@]}"; do
  a=$(ir "$s" 200); b=$(ir "$s" 1200)
  python3 -c "print(f'callgrind scenario=$s instr_per_pkt={($b - $a) / 32000:.1f}')"
done
