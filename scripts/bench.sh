#!/usr/bin/env bash
# Side-by-side per-core forwarding benchmark: DPDK testpmd (io), DPDK l3fwd
# (LPM) and our `dataplane` daemon, one after another, on the same feed, each
# forwarding on one core (core 1; core 0 stays for control and this script).
#
# Feed: two net_pcap ports per process, each replaying a small pcap forever
# (rx_pcap=FILE,infinite_rx=1) and with no TX file, so the PMD counts and drops
# what is sent. Every RX costs the same mbuf alloc + copy for every app, so the
# absolute Mpps are a property of this machine; compare the ratios.
#
# Rates come from each process's own ethdev counters, read over its DPDK
# telemetry socket (scripts/lib/telemetry_rate.py): wait until packets flow,
# warm up, then opackets/ipackets deltas over a fixed window.
#
# Output (stdout): a `bench-env` line, one `bench-detail` line per app run,
# and at the end exactly one line per scenario:
#   bench scenario=forward dataplane_mpps=X testpmd_mpps=Y l3fwd_mpps=Z ratio_testpmd=X/Y ratio_l3fwd=X/Z
# (Mpps with 2 decimals, ratios computed with 3 decimals, NA where a number is
# missing). Progress and diagnostics go to stderr; logs stay in build/bench/.
#
# Environment:
#   BENCH_WARMUP=3       seconds after the first packets before the window opens
#   BENCH_WINDOW=5       measurement window, seconds
#   BENCH_WINDOWS=1      windows per app; >1 reports the best one (useful when
#                        other work shares the 2 CPUs and disturbs some windows)
#   BENCH_SCENARIOS=...  space/comma list (default: all known, see SCENARIOS_ALL)
#   BENCH_NO_BUILD=1     skip `cargo build --release -p dataplane`
#   BENCH_NO_SETUP=1     skip `bash scripts/setup.sh`
#   BENCH_HUGE=auto      auto | on | off (off = --no-huge)
#   BENCH_MEM_MB=512     EAL -m for every process (plenty for these pools;
#                        leaves 2 MiB pages for other users of the machine)
#   BENCH_FEED_COUNT=2000 frames per port in the feed (l3fwd replays them from
#                        its own 8192-mbuf pool: keep it around 2000 or fewer)
#   BENCH_START_TIMEOUT=60  seconds an app may take to start forwarding
#   BENCH_DATAPLANE_BIN  path of the daemon (default target/release/dataplane)
#   BENCH_DP_EAL_ARGS    extra EAL args passed to the daemon after `--`
#
# Exit status: 0 when testpmd and l3fwd were measured in every scenario (the
# daemon may be NA: it is reported, not fatal); 1 when a reference app failed;
# 2 on usage errors.
#
# Adding a scenario: write scenario_<name>() below (make_feed, run_testpmd,
# run_l3fwd, run_dataplane <template>, report_line) and add <name> to
# SCENARIOS_ALL.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
WORK=$BUILD/bench
LIB=$ROOT/scripts/lib

WARMUP=${BENCH_WARMUP:-3}
WINDOW=${BENCH_WINDOW:-5}
WINDOWS=${BENCH_WINDOWS:-1}
MEM_MB=${BENCH_MEM_MB:-512}
HUGE_WANT=${BENCH_HUGE:-auto}
FEED_COUNT=${BENCH_FEED_COUNT:-2000}
FEED_FLOWS=${BENCH_FEED_FLOWS:-256}
FEED_SIZE=${BENCH_FEED_SIZE:-64}
START_TIMEOUT=${BENCH_START_TIMEOUT:-60}
DP_BIN=${BENCH_DATAPLANE_BIN:-$ROOT/${CARGO_TARGET_DIR:-target}/release/dataplane}
TESTPMD=${BENCH_TESTPMD:-dpdk-testpmd}
L3FWD_DIR=$BUILD/l3fwd
L3FWD_BIN=$L3FWD_DIR/l3fwd/build/l3fwd
EXAMPLES=${BENCH_DPDK_EXAMPLES:-/usr/share/dpdk/examples}

CTRL_CORE=0        # main lcore / control threads / this script
FWD_CORE=1         # the one forwarding core every app gets
# net_pcap vdev MACs are 02:70:63:61:70:<index>; the feeds address them.
PORT_MAC=(02:70:63:61:70:00 02:70:63:61:70:01)

SCENARIOS_ALL="forward"
SCENARIOS=${BENCH_SCENARIOS:-$SCENARIOS_ALL}
SCENARIOS=${SCENARIOS//,/ }

# DPDK runtime dir (telemetry socket, config); root uses /var/run/dpdk.
if [ "$(id -u)" -eq 0 ]; then RUNDIR=/var/run/dpdk; else RUNDIR=${XDG_RUNTIME_DIR:-/tmp}/dpdk; fi
export BENCH_DPDK_RUNDIR=$RUNDIR
TAG=bench$$         # file-prefix base; the pid lets a later run spot stale ones

log() { echo "bench: $*" >&2; }

# --------------------------------------------------------------------------
# process and prefix hygiene

CUR_PID=""          # the DPDK process under test, if any
MEAS_PID=""         # the telemetry_rate.py measuring it
PREFIXES=()         # every file-prefix this run used
RESULTS=()          # the final `bench ...` lines
REF_FAILED=0

proc_alive() {      # running and not a zombie
  local st
  [ -r "/proc/$1/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ]
}

stop_proc() {       # SIGINT, then SIGTERM, then SIGKILL; always reaps
  local pid=$1 sig i
  for sig in INT TERM KILL; do
    proc_alive "$pid" || break
    kill -s "$sig" "$pid" 2>/dev/null || break
    for i in $(seq 1 50); do proc_alive "$pid" || break; sleep 0.2; done
    proc_alive "$pid" && log "pid $pid still alive after SIG$sig"
  done
  wait "$pid" 2>/dev/null
  return 0
}

huge_mounts() { awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts; }

clean_prefix() {    # runtime dir + hugepage files left by a prefix
  local p=$1 m
  [ -n "$p" ] || return 0
  rm -rf "${RUNDIR:?}/$p"
  for m in $(huge_mounts); do rm -f "$m/${p}map_"* 2>/dev/null; done
}

cleanup() {
  local p
  if [ -n "$MEAS_PID" ]; then kill "$MEAS_PID" 2>/dev/null; wait "$MEAS_PID" 2>/dev/null; fi
  if [ -n "$CUR_PID" ]; then stop_proc "$CUR_PID"; CUR_PID=""; fi
  rm -f "$WORK/live"
  for p in "${PREFIXES[@]}"; do clean_prefix "$p"; done
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

sweep_stale() {
  # A DPDK process an earlier, killed bench run left behind (recorded in
  # build/bench/live as "pid prefix"): stop it by pid if its command line
  # still names that prefix or our work dir, so it cannot steal core 1.
  local pid prefix d n owner
  if [ -s "$WORK/live" ]; then
    read -r pid prefix < "$WORK/live" || true
    if [ -n "${pid:-}" ] && proc_alive "$pid" &&
       tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -e "$prefix" -e "$WORK"; then
      log "stopping leftover bench process $pid ($prefix)"
      kill -s TERM "$pid" 2>/dev/null; sleep 1; proc_alive "$pid" && kill -s KILL "$pid" 2>/dev/null
    fi
    rm -f "$WORK/live"
  fi
  # Runtime dirs / hugepage files of bench runs whose script is gone.
  for d in "$RUNDIR"/bench[0-9]*-*; do
    [ -e "$d" ] || continue
    n=${d##*/}; owner=${n#bench}; owner=${owner%%-*}
    if ! kill -0 "$owner" 2>/dev/null; then clean_prefix "$n"; fi
  done
}

# --------------------------------------------------------------------------
# environment

HUGE_MODE=""
EAL_MEM=()

pick_memory_mode() {
  local mounted=0 free size need
  [ -n "$(huge_mounts)" ] && mounted=1
  free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
  size=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)        # kB
  need=$(( (MEM_MB + 64) * 1024 ))
  case $HUGE_WANT in
    on)  HUGE_MODE=hugepages ;;
    off) HUGE_MODE=no-huge ;;
    auto)
      if [ "$mounted" -eq 1 ] && [ $(( ${free:-0} * ${size:-0} )) -ge "$need" ]; then
        HUGE_MODE=hugepages
      else
        HUGE_MODE=no-huge
        log "hugepages not usable (mounted=$mounted free=${free:-0} x ${size:-0} kB, need ${MEM_MB}+64 MB): using --no-huge"
      fi ;;
    *) log "BENCH_HUGE must be auto, on or off"; exit 2 ;;
  esac
  # --huge-unlink: hugepage files vanish at exit instead of pinning pages.
  if [ "$HUGE_MODE" = hugepages ]; then EAL_MEM=(-m "$MEM_MB" --huge-unlink)
  else EAL_MEM=(-m "$MEM_MB" --no-huge); fi
}

eal_args() {        # common EAL args: prefix, memory, vdevs; -l is per app
  local prefix=$1 feed0=$2 feed1=$3
  printf '%s\n' --file-prefix "$prefix" --no-pci "${EAL_MEM[@]}" \
    --vdev "net_pcap0,rx_pcap=$feed0,infinite_rx=1" \
    --vdev "net_pcap1,rx_pcap=$feed1,infinite_rx=1"
}

# --------------------------------------------------------------------------
# l3fwd: copy the installed example, patch, build (only when missing/stale)

l3fwd_patch() {
# l3fwd 22.11 always asks for RX checksum offload (and passes the global RX
# offloads to every queue); net_pcap has none, so rte_eth_dev_configure fails
# with -22. Mask the requested offloads with the device's capabilities.
cat <<'PATCH'
--- a/main.c
+++ b/main.c
@@ -1237,6 +1237,10 @@
 			local_port_conf.txmode.offloads |=
 				RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
 
+		/* bench.sh: virtual devices lack checksum offloads */
+		local_port_conf.rxmode.offloads &= dev_info.rx_offload_capa;
+		local_port_conf.txmode.offloads &= dev_info.tx_offload_capa;
+
 		local_port_conf.rx_adv_conf.rss_conf.rss_hf &=
 			dev_info.flow_type_rss_offloads;
 
@@ -1359,7 +1363,7 @@
 					portid, strerror(-ret));
 
 			rxq_conf = dev_info.default_rxconf;
-			rxq_conf.offloads = port_conf.rxmode.offloads;
+			rxq_conf.offloads = port_conf.rxmode.offloads & dev_info.rx_offload_capa; /* bench.sh */
 			if (!per_port_pool)
 				ret = rte_eth_rx_queue_setup(portid, queueid,
 						nb_rxd, socketid,
PATCH
}

build_l3fwd() {
  local stamp
  stamp="dpdk-$(pkg-config --modversion libdpdk 2>/dev/null) patch-$(l3fwd_patch | sha256sum | cut -c1-16)"
  if [ -x "$L3FWD_BIN" ] && [ "$(cat "$L3FWD_DIR/.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  log "building l3fwd from $EXAMPLES/l3fwd into $L3FWD_DIR"
  if [ ! -f "$EXAMPLES/l3fwd/main.c" ]; then
    log "no l3fwd sources in $EXAMPLES (package dpdk-doc)"; return 1
  fi
  rm -rf "$L3FWD_DIR" && mkdir -p "$L3FWD_DIR" || return 1
  # The example Makefile adds -I../common, so keep the examples/ layout.
  cp -r "$EXAMPLES/l3fwd" "$EXAMPLES/common" "$L3FWD_DIR/" || return 1
  if ! l3fwd_patch | patch -d "$L3FWD_DIR/l3fwd" -p1 --no-backup-if-mismatch >"$L3FWD_DIR/patch.log" 2>&1; then
    log "l3fwd patch did not apply:"; cat "$L3FWD_DIR/patch.log" >&2; return 1
  fi
  if ! make -C "$L3FWD_DIR/l3fwd" -j"$(nproc)" >"$L3FWD_DIR/build.log" 2>&1; then
    log "l3fwd build failed:"; tail -20 "$L3FWD_DIR/build.log" >&2; return 1
  fi
  echo "$stamp" >"$L3FWD_DIR/.stamp"
}

# --------------------------------------------------------------------------
# feed

FEED0=""; FEED1=""; FEED_GEN=""

gen_one() {         # gen_one OUT PORT_INDEX PREFIX...
  local out=$1 port=$2; shift 2
  local pfx=() p
  for p in "$@"; do pfx+=(--dst-prefix "$p"); done
  if [ "$DP_READY" -eq 1 ] && "$DP_BIN" gen --help >/dev/null 2>&1; then
    local extra=()
    "$DP_BIN" gen --help 2>&1 | grep -q -- '--dst-mac' && extra=(--dst-mac "${PORT_MAC[$port]}")
    if "$DP_BIN" gen --out "$out" --count "$FEED_COUNT" --flows "$FEED_FLOWS" \
         --size "$FEED_SIZE" "${pfx[@]}" "${extra[@]}" >"$out.log" 2>&1 && [ -s "$out" ]; then
      FEED_GEN="dataplane-gen"; return 0
    fi
    log "dataplane gen failed (see $out.log); falling back to scripts/lib/mkfeed.py"
  fi
  python3 "$LIB/mkfeed.py" --out "$out" --count "$FEED_COUNT" --flows "$FEED_FLOWS" \
    --size "$FEED_SIZE" --dst-mac "${PORT_MAC[$port]}" "${pfx[@]}" >"$out.log" 2>&1 || {
    log "mkfeed.py failed:"; cat "$out.log" >&2; return 1; }
  FEED_GEN="mkfeed.py"
}

make_feed() {       # make_feed NAME DST_PREFIX... -> FEED0, FEED1 (one file per port)
  local name=$1; shift
  mkdir -p "$WORK/feeds"
  FEED0=$WORK/feeds/$name-p0.pcap
  FEED1=$WORK/feeds/$name-p1.pcap
  gen_one "$FEED0" 0 "$@" && gen_one "$FEED1" 1 "$@" || return 1
  log "feed $name: $FEED_COUNT x ${FEED_SIZE}B frames/port, $FEED_FLOWS flows, dst $* ($FEED_GEN)"
}

# --------------------------------------------------------------------------
# running and measuring

MEASURED=NA         # Mpps of the last measure (2 decimals) or NA
CUR_LOG=""          # build/bench/<scenario>-<app>, base name of its logs
MEASURED_DETAIL=""

start_app() {       # start_app LOGNAME PREFIX CMD... (background, stdin closed)
  local name=$1 prefix=$2; shift 2
  clean_prefix "$prefix"
  PREFIXES+=("$prefix")
  CUR_LOG=$WORK/$name
  log "starting $name: $*"
  # 9>&-: an orphaned app must not keep holding the bench lock.
  "$@" </dev/null >"$CUR_LOG.log" 2>&1 9>&- &
  CUR_PID=$!
  echo "$CUR_PID $prefix" >"$WORK/live"
}

stop_app() {
  local prefix=$1
  [ -n "$CUR_PID" ] && stop_proc "$CUR_PID"
  CUR_PID=""
  rm -f "$WORK/live"
  clean_prefix "$prefix"
}

measure() {         # measure SCENARIO APP PREFIX -> MEASURED, MEASURED_DETAIL
  local scen=$1 app=$2 prefix=$3 out mpps
  MEASURED=NA; MEASURED_DETAIL=""
  # In the background so that a TERM/INT trap runs at once, not after the window.
  python3 "$LIB/telemetry_rate.py" --prefix "$prefix" --warmup "$WARMUP" \
    --window "$WINDOW" --windows "$WINDOWS" --timeout "$START_TIMEOUT" --pid "$CUR_PID" \
    >"$CUR_LOG.measure" 2>"$CUR_LOG.measure.err" 9>&- &
  MEAS_PID=$!
  wait "$MEAS_PID"; local rc=$?
  MEAS_PID=""
  out=$(cat "$CUR_LOG.measure" 2>/dev/null)
  if [ "$rc" -eq 0 ]; then
    mpps=$(sed -n 's/^mpps=\([0-9.]*\).*/\1/p' <<<"$out")
    if [ -n "$mpps" ]; then
      MEASURED=$(printf '%.2f' "$mpps")
      MEASURED_DETAIL=$out
      echo "bench-detail scenario=$scen app=$app $out"
      local cpu
      cpu=$(sed -n 's/.* cpu=\([0-9.]*\).*/\1/p' <<<"$out")
      [ -n "$cpu" ] && awk -v c="$cpu" 'BEGIN { exit !(c < 0.9) }' &&
        log "warning: $app's forwarding thread got only cpu=$cpu of core $FWD_CORE; other processes disturbed this number"
      return 0
    fi
  fi
  log "$app: no measurement: $(cat "$CUR_LOG.measure.err" 2>/dev/null)"
  log "$app: last lines of $CUR_LOG.log:"
  tail -15 "$CUR_LOG.log" 2>/dev/null | sed 's/^/    /' >&2
  return 1
}

run_testpmd() {     # run_testpmd SCENARIO [extra testpmd app args]
  local scen=$1; shift
  local prefix=$TAG-testpmd eal
  mapfile -t eal < <(eal_args "$prefix" "$FEED0" "$FEED1")
  # Non-interactive testpmd waits for Enter on stdin and quits at EOF; with a
  # --stats-period it instead sleeps in a loop until SIGINT (a day-long period
  # means it never prints). Its default pool (155456 mbufs, ~340 MB) does not
  # fit a --no-huge -m 512 and dwarfs the others' pools (l3fwd 8192, the
  # daemon ~16k): use 16384 mbufs.
  start_app "$scen-testpmd" "$prefix" "$TESTPMD" -l "$CTRL_CORE,$FWD_CORE" "${eal[@]}" -- \
    --forward-mode=io --nb-cores=1 --rxq=1 --txq=1 --total-num-mbufs=16384 \
    --auto-start --stats-period 86400 "$@"
  measure "$scen" testpmd "$prefix"
  stop_app "$prefix"
}

run_l3fwd() {       # run_l3fwd SCENARIO [extra l3fwd app args, e.g. --rule_ipv4=F]
  local scen=$1; shift
  local prefix=$TAG-l3fwd eal
  if [ ! -x "$L3FWD_BIN" ]; then MEASURED=NA; log "l3fwd: not built"; return 1; fi
  mapfile -t eal < <(eal_args "$prefix" "$FEED0" "$FEED1")
  # l3fwd makes one TX queue per lcore, and a net_pcap port without a TX file
  # has exactly one; so l3fwd gets only lcore 1 (its main lcore forwards),
  # and EAL puts its control threads on core 0.
  start_app "$scen-l3fwd" "$prefix" "$L3FWD_BIN" -l "$FWD_CORE" "${eal[@]}" -- \
    -p 0x3 --config="(0,0,$FWD_CORE),(1,0,$FWD_CORE)" --parse-ptype --lookup=lpm "$@"
  measure "$scen" l3fwd "$prefix"
  stop_app "$prefix"
}

DP_READY=0
DP_WHY=""           # why the daemon cannot run at all
DP_FAILS=""         # scenarios where it ran but was not measured

run_dataplane() {   # run_dataplane SCENARIO TEMPLATE
  local scen=$1 tmpl=$2
  local prefix=$TAG-dp conf=$WORK/$scen.toml huge
  MEASURED=NA
  if [ "$DP_READY" -ne 1 ]; then
    log "dataplane: not measured: $DP_WHY"; return 1
  fi
  [ "$HUGE_MODE" = hugepages ] && huge=on || huge=off
  sed -e "s|@PREFIX@|$prefix|g" -e "s|@FEED0@|$FEED0|g" -e "s|@FEED1@|$FEED1|g" \
      -e "s|@HUGEPAGES@|$huge|g" -e "s|^memory_mb *=.*|memory_mb = $MEM_MB|" \
      "$tmpl" >"$conf" || { log "dataplane: cannot render $tmpl"; return 1; }
  python3 -c 'import sys, tomllib; tomllib.load(open(sys.argv[1], "rb"))' "$conf" 2>"$WORK/toml.err" ||
    log "warning: $conf is not valid TOML: $(cat "$WORK/toml.err")"
  local extra=()
  # shellcheck disable=SC2206
  [ -n "${BENCH_DP_EAL_ARGS:-}" ] && extra=(-- $BENCH_DP_EAL_ARGS)
  start_app "$scen-dataplane" "$prefix" "$DP_BIN" run --config "$conf" "${extra[@]}"
  if ! measure "$scen" dataplane "$prefix"; then
    log "dataplane: failed to start or to forward (config $conf, log $CUR_LOG.log)"
    DP_FAILS+=" $scen"
  fi
  stop_app "$prefix"
}

ratio() {           # ratio A B -> A/B with 3 decimals, or NA
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "NA" || b == "NA" || b + 0 == 0) print "NA"; else printf "%.3f\n", a / b }'
}

report_line() {     # report_line SCENARIO DP_MPPS TESTPMD_MPPS L3FWD_MPPS
  local s=$1 dp=$2 tp=$3 l3=$4
  RESULTS+=("bench scenario=$s dataplane_mpps=$dp testpmd_mpps=$tp l3fwd_mpps=$l3 ratio_testpmd=$(ratio "$dp" "$tp") ratio_l3fwd=$(ratio "$dp" "$l3")")
  [ "$tp" = NA ] && REF_FAILED=1
  [ "$l3" = NA ] && REF_FAILED=1
  return 0
}

# --------------------------------------------------------------------------
# scenarios

scenario_forward() {
  # Plain forwarding: testpmd io cross-connects p0<->p1, l3fwd routes by its
  # built-in LPM table (198.18.0.0/24 -> port 0, 198.18.1.0/24 -> port 1),
  # the daemon runs its `forward` stage (p0<->p1).
  local tp l3 dp
  make_feed forward 198.18.0.0/24 198.18.1.0/24 || { report_line forward NA NA NA; return; }
  run_testpmd forward; tp=$MEASURED
  run_l3fwd forward;   l3=$MEASURED
  run_dataplane forward "$ROOT/config/bench/forward.toml"; dp=$MEASURED
  report_line forward "$dp" "$tp" "$l3"
}

# --------------------------------------------------------------------------
# main

main() {
  local s
  for s in $SCENARIOS; do
    declare -F "scenario_$s" >/dev/null || { log "unknown scenario '$s' (known: $SCENARIOS_ALL)"; exit 2; }
  done
  if [ "$(nproc --all)" -le "$FWD_CORE" ]; then log "need at least $((FWD_CORE + 1)) CPUs"; exit 2; fi
  mkdir -p "$WORK"
  # Two benches at once would share core 1 and both be wrong: queue up.
  exec 9>"$WORK/lock"
  if ! flock -n 9; then
    log "another bench.sh holds $WORK/lock; waiting for it"
    flock -w "${BENCH_LOCK_WAIT:-1800}" 9 || { log "gave up waiting for $WORK/lock"; exit 1; }
  fi

  if [ "${BENCH_NO_SETUP:-0}" != 1 ]; then
    bash "$ROOT/scripts/setup.sh" >&2 9>&- || log "warning: scripts/setup.sh failed; continuing"
  fi
  command -v "$TESTPMD" >/dev/null || { log "$TESTPMD not found (package dpdk)"; exit 1; }
  sweep_stale

  if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    log "cargo build --release -p dataplane"
    if ! (cd "$ROOT" && cargo build --release -p dataplane) >"$WORK/cargo.log" 2>&1 9>&-; then
      log "cargo build failed (see $WORK/cargo.log):"; tail -15 "$WORK/cargo.log" >&2
      DP_WHY="cargo build --release -p dataplane failed (see $WORK/cargo.log)"
    fi
  fi
  if [ -n "$DP_WHY" ]; then :      # a stale binary from an older build is not measured
  elif [ -x "$DP_BIN" ]; then DP_READY=1
  else DP_WHY="no binary at $DP_BIN"; fi

  build_l3fwd || log "l3fwd unavailable; its numbers will be NA"
  pick_memory_mode

  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "bench-env mode=$HUGE_MODE mem_mb=$MEM_MB warmup_s=$WARMUP window_s=$WINDOW windows=$WINDOWS fwd_core=$FWD_CORE cpus=$(nproc) load1=$load dpdk=$(pkg-config --modversion libdpdk 2>/dev/null || echo ?)"
  awk -v l="$load" 'BEGIN { exit !(l > 1.0) }' &&
    log "warning: load average $load before the run; other processes share these CPUs and will skew the numbers"

  for s in $SCENARIOS; do
    log "=== scenario $s"
    "scenario_$s"
  done
  if [ -n "$DP_FAILS" ] || [ "$DP_READY" -ne 1 ]; then
    local why=${DP_WHY:-"failed to start or to forward in:$DP_FAILS; see $WORK/<scenario>-dataplane.log"}
    log "dataplane_mpps=NA: $why"
    echo "bench-note dataplane_mpps=NA reason=\"$why\""
  fi

  printf '%s\n' "${RESULTS[@]}"
  [ "$REF_FAILED" -eq 0 ] || { log "a reference app (testpmd or l3fwd) was not measured"; return 1; }
  return 0
}

main "$@"
