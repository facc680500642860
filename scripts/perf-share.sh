#!/usr/bin/env bash
# Where a forwarding core's time goes, per app, measured with `perf` on the
# forwarding thread: the share of samples in the app's own code against the
# share in the pcap PMD. On the bench feed every app pays the same PMD cost
# per packet, so `app/pmd` is the app's cost per packet in units of the PMD's,
# and it barely moves when the VM's speed does (the Mpps do, by up to 2x).
#
#   bash scripts/perf-share.sh [SCENARIO]     (default route_1k)
#
# Needs a previous `scripts/bench.sh` run of SCENARIO (its rendered daemon
# config, feeds, routes and the l3fwd build under build/). Prints one line per
# app:
#   perf-share scenario=S app=A app_pct=X pmd_pct=Y lib_pct=Z app_per_pmd=R
# (PERF_SHARE_APPS=dataplane: the daemon only) where app counts the binary itself, lib the DPDK table libraries it calls
# (rte_fib, rte_lpm, rte_acl), and app_per_pmd = (app + lib) / pmd.
#
# With address-space randomisation the daemon's app_per_pmd often falls in
# two bands about 15 % apart from run to run (memory and code placement);
# PERF_SHARE_NO_ASLR=1 runs both apps under `setarch -R`, which narrows the
# spread (most runs within +-5 %, some outliers): to compare two builds, use
# it, alternate them and take several runs each.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$ROOT/build/bench
SCEN=${1:-route_1k}
SECONDS_PER_APP=${PERF_SHARE_SECONDS:-5}
DP_BIN=${BENCH_DATAPLANE_BIN:-$ROOT/${CARGO_TARGET_DIR:-target}/release/dataplane}
L3FWD_BIN=$ROOT/build/l3fwd/l3fwd/build/l3fwd

command -v perf >/dev/null || { echo "perf-share: needs perf (apt-get install linux-perf)" >&2; exit 2; }
conf=$WORK/$SCEN.toml
[ -s "$conf" ] || { echo "perf-share: no $conf: run BENCH_SCENARIOS=$SCEN bash scripts/bench.sh first" >&2; exit 2; }
case $SCEN in
  forward) feed=forward ;;
  route_1m) feed=r1m ;;
  *) feed=r1k ;;
esac

# share DSO_PATTERN REPORT: summed percentage of the DSOs matching the pattern
share() {
  awk -v pat="$1" '$1 ~ /%$/ && $2 ~ pat { sub("%", "", $1); s += $1 } END { printf "%.2f", s + 0 }' "$2"
}

# profile APP TID DSO: perf on thread TID for SECONDS_PER_APP, then the line
profile() {
  local app=$1 tid=$2 data=$WORK/perf-share-$SCEN-$1
  perf record -q -o "$data.data" -t "$tid" -- sleep "$SECONDS_PER_APP" >/dev/null 2>&1
  perf report -i "$data.data" --no-children --stdio --sort dso 2>/dev/null >"$data.txt"
  local pmd lib own
  pmd=$(share 'librte_net_pcap' "$data.txt")
  lib=$(share 'librte_(fib|lpm|acl|rib|hash)' "$data.txt")
  own=$(share "^$3\$" "$data.txt")
  echo "perf-share scenario=$SCEN app=$app app_pct=$own pmd_pct=$pmd lib_pct=$lib app_per_pmd=$(awk -v a="$own" -v l="$lib" -v p="$pmd" 'BEGIN { if (p > 0) printf "%.3f", (a + l) / p; else print "NA" }')"
}

# thread ID of the forwarding thread named NAME in PID (waits for it)
thread_of() {
  local pid=$1 name=$2 t k
  for k in $(seq 50); do
    for t in /proc/"$pid"/task/*; do
      [ "$(cat "$t/comm" 2>/dev/null)" = "$name" ] && { basename "$t"; return 0; }
    done
    sleep 0.2
  done
  return 1
}

run_one() { # run_one APP DSO_NAME THREAD_NAME CMD...
  local app=$1 dso=$2 tname=$3; shift 3
  "$@" </dev/null >"$WORK/perf-share-$SCEN-$app.log" 2>&1 &
  local pid=$! tid
  sleep 4 # start + warm-up
  if tid=$(thread_of "$pid" "$tname"); then
    profile "$app" "$tid" "$dso"
  else
    echo "perf-share: no thread $tname in $app (log $WORK/perf-share-$SCEN-$app.log)" >&2
  fi
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}

# PERF_SHARE_NO_ASLR=1: no randomisation (setarch execs the app, same pid).
norand=()
[ "${PERF_SHARE_NO_ASLR:-0}" = 1 ] && norand=(setarch "$(uname -m)" -R)
sed "s|^file_prefix *=.*|file_prefix = \"perfshare-dp\"|" "$conf" >"$WORK/perf-share-$SCEN.toml"
run_one dataplane dataplane rte-worker-1 "${norand[@]}" "$DP_BIN" run --config "$WORK/perf-share-$SCEN.toml"
if [ "${PERF_SHARE_APPS:-dataplane l3fwd}" = dataplane ]; then
  : # PERF_SHARE_APPS=dataplane: just the daemon (quicker, for A/B work)
elif [ -x "$L3FWD_BIN" ]; then
  rules=()
  [ "$feed" != forward ] && rules=(--rule_ipv4="$WORK/routes/$feed.l3fwd-v4.cfg" --rule_ipv6="$WORK/routes/$feed.l3fwd-v6.cfg")
  mem=$(sed -n 's/^memory_mb *= *\([0-9]*\).*/\1/p' "$conf")
  huge=()
  grep -q '^hugepages *= *"off"' "$conf" && huge=(--no-huge)
  # l3fwd's main lcore (1) forwards; its thread is the process itself.
  "${norand[@]}" "$L3FWD_BIN" -l 1 --file-prefix perfshare-l3 --no-pci -m "${mem:-512}" "${huge[@]}" --huge-unlink \
    --vdev "net_pcap0,rx_pcap=$WORK/feeds/$feed-p0.pcap,infinite_rx=1" \
    --vdev "net_pcap1,rx_pcap=$WORK/feeds/$feed-p1.pcap,infinite_rx=1" -- \
    -p 0x3 --config="(0,0,1),(1,0,1)" --parse-ptype --lookup=lpm "${rules[@]}" \
    </dev/null >"$WORK/perf-share-$SCEN-l3fwd.log" 2>&1 &
  pid=$!
  sleep 4
  profile l3fwd "$pid" 'l3fwd(-shared)?'
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
else
  echo "perf-share: l3fwd not built ($L3FWD_BIN): run scripts/bench.sh first" >&2
fi
