#!/usr/bin/env bash
# A forwarding core's cycles per packet split into the pcap PMD's and the
# app's own, for the daemon and l3fwd on the same feed, without hardware
# counters: both are built with TSC reads around their RX and TX burst calls
# (the daemon with its feature `pmd-cycles`, l3fwd patched by
# scripts/lib/l3fwd_cycles.py), run one after the other, RUNS times, and
# print what the loop and the driver took. Where perf-share assumes that the
# PMD costs every app the same per packet, this measures it.
#
#   bash scripts/pmd-cycles.sh [SCENARIO]     (default route_1k)
#
# Needs a previous `scripts/bench.sh` run of SCENARIO (its rendered daemon
# config, feeds, routes and the l3fwd build under build/). The instrumented
# builds go to build/pmd-cycles/ (l3fwd) and target/pmd-cycles/ (the daemon;
# the first build takes a few minutes). Prints per run and app:
#   pmd-cycles scenario=S app=A run=R total=X rx=Y tx=Z own=W
# (cycles per packet: the loop, inside RX calls that returned packets, inside
# TX calls, and the rest), then per app the medians:
#   pmd-cycles-median scenario=S app=A total=X rx=Y tx=Z own=W
# and the median of the runs' l3fwd/dataplane total ratios (the bench's
# ratio, from cycles instead of Mpps):
#   pmd-cycles-ratio scenario=S l3fwd_over_dataplane=R
# Each TSC read costs both apps alike; the figures compare, they are not the
# uninstrumented apps' speed. Runs alternate, so a slow phase of the VM
# falls on both.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$ROOT/build/bench
OUT=$ROOT/build/pmd-cycles
SCEN=${1:-route_1k}
RUNS=${PMD_CYCLES_RUNS:-3}
SECONDS_PER_RUN=${PMD_CYCLES_SECONDS:-10}
L3FWD_SRC=$ROOT/build/l3fwd
TARGET=$ROOT/target/pmd-cycles

conf=$WORK/$SCEN.toml
[ -s "$conf" ] || { echo "pmd-cycles: no $conf: run BENCH_SCENARIOS=$SCEN bash scripts/bench.sh first" >&2; exit 2; }
[ -f "$L3FWD_SRC/l3fwd/main.c" ] || { echo "pmd-cycles: no l3fwd sources in $L3FWD_SRC: run scripts/bench.sh first" >&2; exit 2; }
case $SCEN in
  route_1m) rules_of=r1m ;;
  forward) rules_of="" ;;
  *) rules_of=r1k ;;
esac
# The feed is the daemon config's (the same frames for both apps).
mapfile -t feeds < <(sed -n 's/.*rx_pcap=\([^,"]*\).*/\1/p' "$conf")
[ "${#feeds[@]}" -eq 2 ] || { echo "pmd-cycles: $conf does not name two rx_pcap feeds" >&2; exit 2; }

mkdir -p "$OUT"
# l3fwd: the bench's patched sources, instrumented, rebuilt when they change.
stamp=$(cat "$L3FWD_SRC/l3fwd/"*.[ch] "$ROOT/scripts/lib/l3fwd_cycles.py" | sha256sum | cut -c1-16)
L3FWD_BIN=$OUT/l3fwd/build/l3fwd
if [ ! -x "$L3FWD_BIN" ] || [ "$(cat "$OUT/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$OUT/l3fwd" "$OUT/common"
  cp -r "$L3FWD_SRC/l3fwd" "$L3FWD_SRC/common" "$OUT/" && rm -rf "$OUT/l3fwd/build" || exit 1
  python3 "$ROOT/scripts/lib/l3fwd_cycles.py" "$OUT/l3fwd" || exit 1
  make -C "$OUT/l3fwd" -j"$(nproc)" >"$OUT/build.log" 2>&1 ||
    { echo "pmd-cycles: l3fwd build failed (log $OUT/build.log)" >&2; exit 1; }
  echo "$stamp" >"$OUT/.stamp"
fi
echo "pmd-cycles: building the daemon with --features pmd-cycles into $TARGET" >&2
CARGO_TARGET_DIR=$TARGET cargo build --release -p dataplane --features pmd-cycles --bin dataplane \
  --manifest-path "$ROOT/Cargo.toml" >"$OUT/cargo.log" 2>&1 ||
  { echo "pmd-cycles: cargo build failed (log $OUT/cargo.log)" >&2; exit 1; }
DP_BIN=$TARGET/release/dataplane

rules=()
[ -n "$rules_of" ] && rules=(--rule_ipv4="$WORK/routes/$rules_of.l3fwd-v4.cfg" --rule_ipv6="$WORK/routes/$rules_of.l3fwd-v6.cfg")
mem=$(sed -n 's/^memory_mb *= *\([0-9]*\).*/\1/p' "$conf")
huge=()
grep -q '^hugepages *= *"off"' "$conf" && huge=(--no-huge)
sed "s|^file_prefix *=.*|file_prefix = \"pmdcycles-dp\"|" "$conf" >"$OUT/$SCEN.toml"

# line RUN LOGFILE APP: the app's pmd-cycles line as cycles per packet
line() {
  local run=$1 log=$2 app=$3 raw
  raw=$(grep -m1 "^pmd-cycles app=" "$log") || { echo "pmd-cycles: no pmd-cycles line from $app (log $log)" >&2; return 1; }
  python3 - "$SCEN" "$app" "$run" "$raw" <<'PY'
import sys
scen, app, run, raw = sys.argv[1:5]
kv = dict(f.split("=", 1) for f in raw.split()[1:])
n = int(kv["rx_pkts"])
if n == 0:
    sys.exit(f"pmd-cycles: {app} forwarded nothing")
total = int(kv["loop_cycles"]) / n
rx = int(kv["rx_cycles"]) / n
tx = int(kv["tx_cycles"]) / max(int(kv["tx_pkts"]), 1)
print(f"pmd-cycles scenario={scen} app={app} run={run} total={total:.1f} rx={rx:.1f} tx={tx:.1f} own={total - rx - tx:.1f}")
PY
}

results=()
for ((r = 1; r <= RUNS; r++)); do
  log=$OUT/$SCEN-l3fwd-$r.log
  timeout -s INT "$SECONDS_PER_RUN" "$L3FWD_BIN" -l 1 --file-prefix pmdcycles-l3 --no-pci -m "${mem:-512}" "${huge[@]}" --huge-unlink \
    --vdev "net_pcap0,rx_pcap=${feeds[0]},infinite_rx=1" --vdev "net_pcap1,rx_pcap=${feeds[1]},infinite_rx=1" -- \
    -p 0x3 --config="(0,0,1),(1,0,1)" --parse-ptype --lookup=lpm "${rules[@]}" </dev/null >"$log" 2>&1
  results+=("$(line "$r" "$log" l3fwd)")
  log=$OUT/$SCEN-dataplane-$r.log
  "$DP_BIN" run --config "$OUT/$SCEN.toml" --duration "$SECONDS_PER_RUN" </dev/null >"$log" 2>&1
  results+=("$(line "$r" "$log" dataplane)")
  printf '%s\n' "${results[@]: -2}"
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = [dict(f.split("=", 1) for f in l.split()[1:]) for l in sys.stdin if l.startswith("pmd-cycles ")]
if not rows:
    sys.exit(1)
scen = rows[0]["scenario"]
for app in ("l3fwd", "dataplane"):
    mine = [r for r in rows if r["app"] == app]
    if mine:
        med = {k: st.median(float(r[k]) for r in mine) for k in ("total", "rx", "tx", "own")}
        print(f"pmd-cycles-median scenario={scen} app={app} " + " ".join(f"{k}={v:.1f}" for k, v in med.items()))
by_run = {}
for r in rows:
    by_run.setdefault(r["run"], {})[r["app"]] = float(r["total"])
ratios = [v["l3fwd"] / v["dataplane"] for v in by_run.values() if len(v) == 2]
if ratios:
    print(f"pmd-cycles-ratio scenario={scen} l3fwd_over_dataplane={st.median(ratios):.3f}")
'
