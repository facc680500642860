#!/usr/bin/env bash
# Compares two variants of the daemon inside one run (`dataplane::ab`): the
# daemon is built with its feature `ab`, whose worker flips `ab::on()`
# every ~0.1 s and counts cycles per received packet in each half, then
# runs RUNS times on a bench scenario's config and feed. Both variants see
# the same phases of the VM, so a change of 1 % shows where two builds run
# one after the other (perf-share, pmd-cycles, the bench) cannot tell it
# from the noise. The experiment is a branch on `ab::on()` at a burst
# boundary in the code being measured; this script measures, it does not
# write one.
#
#   bash scripts/ab.sh [SCENARIO]     (default route_1k)
#
# Needs a previous `scripts/bench.sh` run of SCENARIO (its rendered daemon
# config and feeds under build/bench/). The build goes to target/ab/.
# Prints per run
#   ab scenario=S run=R off=X on=Y on_over_off=Z
# (TSC cycles per received packet of the whole poll loop, PMD included, in
# the two halves; below 1.000 the new variant is faster), then the median:
#   ab-median scenario=S on_over_off=Z runs=N
# With no branch on `ab::on()` in the code, on_over_off is the method's own
# noise (within +-0.3 % in 20-second runs on the 2-vCPU VM).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$ROOT/build/bench
SCEN=${1:-route_1k}
RUNS=${AB_RUNS:-3}
SECONDS_PER_RUN=${AB_SECONDS:-20}
TARGET=$ROOT/target/ab
OUT=$ROOT/build/ab

conf=$WORK/$SCEN.toml
[ -s "$conf" ] || { echo "ab: no $conf: run BENCH_SCENARIOS=$SCEN bash scripts/bench.sh first" >&2; exit 2; }
mkdir -p "$OUT"
echo "ab: building the daemon with --features ab into $TARGET" >&2
CARGO_TARGET_DIR=$TARGET cargo build --release -p dataplane --features ab --bin dataplane \
  --manifest-path "$ROOT/Cargo.toml" >"$OUT/cargo.log" 2>&1 ||
  { echo "ab: cargo build failed (log $OUT/cargo.log)" >&2; exit 1; }
sed "s|^file_prefix *=.*|file_prefix = \"ab-dp\"|" "$conf" >"$OUT/$SCEN.toml"

ratios=()
for ((r = 1; r <= RUNS; r++)); do
  log=$OUT/$SCEN-$r.log
  "$TARGET/release/dataplane" run --config "$OUT/$SCEN.toml" --duration "$SECONDS_PER_RUN" </dev/null >"$log" 2>&1
  line=$(grep -m1 "^ab-cycles " "$log") || { echo "ab: no ab-cycles line (log $log)" >&2; exit 1; }
  read -r off on < <(sed -n 's/.* off=\([0-9.]*\) on=\([0-9.]*\) .*/\1 \2/p' <<<"$line")
  ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
  ratios+=("$ratio")
  echo "ab scenario=$SCEN run=$r off=$off on=$on on_over_off=$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
echo "ab-median scenario=$SCEN on_over_off=$median runs=$RUNS"
