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
# Scenarios (BENCH_SCENARIOS; default all, in this order):
#   forward      testpmd io / l3fwd LPM with its 16 built-in routes / the
#                daemon's `forward` stage (p0<->p1); feed to 198.18.0-1.x
#   route_1k     1,000 IPv4 routes (/16../32, BGP-like mix, seeded:
#                scripts/lib/mkroutes.py), each to port 0 or 1; the same
#                routes in l3fwd (--rule_ipv4/--rule_ipv6) and in the daemon
#                (pipeline ["route"], rte_fib, routes_file); the feed's
#                destinations are drawn from the routes (2000 per port).
#                Also checks, on one pass of the feed with TX captures, that
#                l3fwd and the daemon send every destination out of the
#                port the longest match names (BENCH_VERIFY=0 skips it).
#   route_1m     the same with 1,000,000 routes (l3fwd's LPM limits raised
#                by patch); EAL memory max(BENCH_MEM_MB, BENCH_1M_MEM_MB)
#   acl1k_route  the daemon with 1,000 firewall rules (scripts/lib/mkacl.py;
#                none denies the feed) before route_1k's routes; references:
#                testpmd io and l3fwd LPM with route_1k's routes
#   lb           the load balancer (pipeline ["lb", "route"], scripts/lib/mklb.py):
#                BENCH_LB_VIPS (4) VIPs from each port's route_1k destinations,
#                each a UDP service over BENCH_LB_BACKENDS (100) IP-in-IP
#                backends, connection tracking on, route_1k's routes; the
#                feed is route_1k's with the VIPs as destinations (l3fwd LPM
#                routes the same frames on the same routes)
#   full         lb with acl in front (["acl", "lb", "route"], 1,000 rules of
#                mkacl.py that pass the feed)
#   ring         ring mode (config/bench/ring.toml): forward's feed and
#                stage, but one receiving core (the distributor, on
#                BENCH_RING_RX_CORE) hands every packet through an rte_ring
#                to one worker (BENCH_RING_WORKER_CORE); reference: the
#                daemon itself in run-to-completion (forward.toml) in the
#                same round
#   null_mq      run-to-completion on two net_null ports with 2 RX queues
#                each (no feed): 1 worker polling all four queues
#                (null_mq_1w.toml, core 1) vs 2 workers with one queue of
#                each port (null_mq_2w.toml, BENCH_MQ_CORES); the ratio is
#                the multi-core scaling
# testpmd io on the scenario's feed is always the reference column (not in
# ring and null_mq, whose references are the daemon's other mode).
#
# Output (stdout): a `bench-env` line, one `bench-detail` line per app run,
# and at the end exactly one line per scenario:
#   bench scenario=forward dataplane_mpps=X testpmd_mpps=Y l3fwd_mpps=Z ratio_testpmd=X/Y ratio_l3fwd=X/Z
# (Mpps with 2 decimals, ratios computed with 3 decimals, NA where a number is
# missing), except for the two scenarios measured against the daemon itself:
#   bench scenario=ring dataplane_mpps=X rtc_mpps=Y ratio_rtc=X/Y rx_core=C worker_core=C
#   bench scenario=null_mq dataplane_mpps=X2 one_worker_mpps=X1 ratio_2v1=X2/X1 cores=C,C
# (dataplane_mpps: ring mode / 2 workers). Progress and diagnostics go to
# stderr; logs stay in build/bench/.
# Routing scenarios add, as they go:
#   bench-tables scenario=S routes=N ... exp_p0=F (mkroutes.py; mkacl.py)
#   bench-load scenario=S app=l3fwd|dataplane routes=N load_ms=T
#                (time to load the IPv4 routes into rte_lpm / rte_fib; start_s
#                in bench-detail is the whole start-up, until packets flowed)
#   bench-split scenario=S app=A tx_p0_share=F expected=F tx_per_rx=F
#                (from the rates: port 0's share of TX against the share the
#                longest matches give; TX/RX, 1.000 = nothing dropped)
#   bench-verify scenario=route_1k app=A p0=N p1=N ok=N wrong=N missing=N
#   bench-ring scenario=ring busy=[W%,rx:D%] drops={...}
#                (the ring run's last stats line: the worker's and the
#                distributor's busy share, and ring_full, packets the worker
#                could not take in time)
#   bench-cycles scenario=S parse=C [acl=C] [lb=C] route=C dispatch=C total=C
#                (one entry per stage, `parse` being the lane's sweep;
#                TSC cycles per packet per stage, from a second, short
#                daemon run with daemon.profile_stages = true; the Mpps come
#                from the run without it)
#
# Environment:
#   BENCH_WARMUP=3       seconds after the first packets before the window opens
#   BENCH_WINDOW=5       measurement window, seconds
#   BENCH_WINDOWS=1      windows per app; >1 reports the best one (useful when
#                        other work shares the 2 CPUs and disturbs some windows)
#   BENCH_ROUNDS=1       rounds per scenario: testpmd, l3fwd and the daemon
#                        run once per round (order reversed in even rounds, so
#                        a drifting machine favours no app); the `bench` line
#                        then gives each app's median and a `bench-round` line
#                        per round its own numbers; `round_ratio_*` on the
#                        `bench` line is the median of the per-round ratios
#                        (the apps of one round run back to back, so a slow
#                        phase of the VM hits them more alike than across
#                        rounds)
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
#   BENCH_ROUTE_SEED=1   seed of the route / ACL / destination generators
#   BENCH_ROUTES_1K=1000, BENCH_ROUTES_1M=1000000, BENCH_ACL_RULES=1000
#   BENCH_ACL_FLOW_CACHE=N  acl1k_route's ACL flow cache entries (0 = off:
#                        every packet classified by rte_acl, the cost of a
#                        feed without flow locality); unset: the default
#   BENCH_1M_MEM_MB=1024 EAL memory in route_1m (tables: l3fwd ~210 MB for
#                        IPv4 + its IPv6 LPM, the daemon ~64 MB + tbl8s + RIB)
#   BENCH_1M_START_TIMEOUT=900  start timeout in route_1m (l3fwd adds 1M
#                        routes with rte_lpm_add, which scans its depth's
#                        rule group for duplicates: quadratic; 230-390 s
#                        on this 2-core machine; rte_fib in the daemon: ~4 s)
#   BENCH_PROFILE_S=5    length of the daemon's profile_stages run, seconds
#   BENCH_VERIFY=1       route_1k: check per-destination output ports
#   BENCH_RING_RX_CORE=1 the distributor's CPU in `ring`
#   BENCH_RING_WORKER_CORE  the worker's CPU in `ring` (default 2 when the
#                        machine has more than 2 CPUs, else 0: then the worker
#                        shares CPU 0 with the control thread and this script)
#   BENCH_RING_SIZE=1024 slots per ring in `ring`
#   BENCH_MQ_CORES=1,N   the two workers' CPUs in null_mq's 2-worker run
#                        (default 1,2 with more than 2 CPUs, else 1,0)
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

ROUTE_SEED=${BENCH_ROUTE_SEED:-1}
ROUTES_1K=${BENCH_ROUTES_1K:-1000}
ROUTES_1M=${BENCH_ROUTES_1M:-1000000}
ACL_RULES=${BENCH_ACL_RULES:-1000}
LB_VIPS=${BENCH_LB_VIPS:-4}          # VIPs taken from each port's destinations (lb, full)
LB_BACKENDS=${BENCH_LB_BACKENDS:-100} # backends per VIP
BIG_MEM_MB=${BENCH_1M_MEM_MB:-1024}
BIG_START_TIMEOUT=${BENCH_1M_START_TIMEOUT:-900}
PROFILE_S=${BENCH_PROFILE_S:-5}
VERIFY=${BENCH_VERIFY:-1}
# Sources of the routing feeds: off the ports' subnets (10.0.0.0/24,
# 10.0.1.0/24) and outside every generated route.
ROUTE_FEED_SRC=172.16.0.0/16

if [ "$(nproc --all 2>/dev/null || echo 2)" -gt 2 ]; then SPARE_CORE=2; else SPARE_CORE=$CTRL_CORE; fi
RING_RX_CORE=${BENCH_RING_RX_CORE:-$FWD_CORE}
RING_WORKER_CORE=${BENCH_RING_WORKER_CORE:-$SPARE_CORE}
RING_SIZE=${BENCH_RING_SIZE:-1024}
MQ_CORES=${BENCH_MQ_CORES:-$FWD_CORE,$SPARE_CORE}

SCENARIOS_ALL="forward route_1k route_1m acl1k_route lb full ring null_mq"
ROUNDS=${BENCH_ROUNDS:-1}
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
  # VERIFY_TX=DIR/NAME: replay the feed once and capture TX in NAME-p<i>.pcap
  local rx0=infinite_rx=1 rx1=infinite_rx=1
  if [ -n "${VERIFY_TX:-}" ]; then rx0=tx_pcap=$VERIFY_TX-p0.pcap; rx1=tx_pcap=$VERIFY_TX-p1.pcap; fi
  printf '%s\n' --file-prefix "$prefix" --no-pci "${EAL_MEM[@]}" \
    --vdev "net_pcap0,rx_pcap=$feed0,$rx0" \
    --vdev "net_pcap1,rx_pcap=$feed1,$rx1"
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
# The LPM table is sized for the built-in 16 routes (1024 rules, 256 tbl8
# groups): raise both so route_1m's 1M routes fit (every build gets the same
# binary; the lookup path is unchanged, only the tables are bigger: ~210 MB
# for IPv4 instead of ~65 MB). Print the first routes only, not 1M lines, and
# time the IPv4 loading loop (rte_lpm_add of every route): "LPM: bench
# ipv4_routes=N load_ms=T".
cat <<'PATCH'
--- a/l3fwd_lpm.c
+++ b/l3fwd_lpm.c
@@ -33,8 +33,9 @@
 
 #include "lpm_route_parse.c"
 
-#define IPV4_L3FWD_LPM_MAX_RULES         1024
-#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 8)
+/* bench.sh: room for 1M routes (2M rules; a /24 holding longer prefixes takes one tbl8 group) */
+#define IPV4_L3FWD_LPM_MAX_RULES         (1 << 21)
+#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 17)
 #define IPV6_L3FWD_LPM_MAX_RULES         1024
 #define IPV6_L3FWD_LPM_NUMBER_TBL8S (1 << 16)
 
@@ -578,6 +579,7 @@
 			socketid);
 
 	/* populate the LPM table */
+	uint64_t bench_t0 = rte_get_timer_cycles(); /* bench.sh: load time */
 	for (i = 0; i < route_num_v4; i++) {
 		struct in_addr in;
 
@@ -600,6 +602,8 @@
 				i, socketid);
 		}
 
+		if (i >= 16 && i != route_num_v4 - 1)
+			continue; /* bench.sh: print a few, not 1M lines */
 		in.s_addr = htonl(route_base_v4[i].ip);
 		printf("LPM: Adding route %s / %d (%d) [%s]\n",
 		       inet_ntop(AF_INET, &in, abuf, sizeof(abuf)),
@@ -607,6 +611,10 @@
 		       route_base_v4[i].if_out, rte_dev_name(dev_info.device));
 	}
 
+	printf("LPM: bench ipv4_routes=%d load_ms=%.1f\n", route_num_v4,
+	       (double)(rte_get_timer_cycles() - bench_t0) * 1e3 / rte_get_timer_hz());
+	fflush(stdout);
+
 	/* create the LPM6 table */
 	snprintf(s, sizeof(s), "IPV6_L3FWD_LPM_%d", socketid);
 
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

# Route tables and feeds of the routing scenarios (cached in build/bench/routes
# while the generator, its arguments and the feed size stay the same).

ROUTES=""           # base path: $ROUTES.routes, .l3fwd-v4.cfg, .l3fwd-v6.cfg, .dst-p<i>.txt
ROUTES_SUMMARY=""   # mkroutes.py's summary line

make_routes() {     # make_routes NAME COUNT -> ROUTES, ROUTES_SUMMARY
  local name=$1 count=$2 dir=$WORK/routes stamp
  ROUTES=$dir/$name
  stamp="count=$count seed=$ROUTE_SEED dsts=$FEED_COUNT gen=$(sha256sum <"$LIB/mkroutes.py" | cut -c1-16)"
  if [ "$(cat "$ROUTES.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -s "$ROUTES.summary" ]; then
    mkdir -p "$dir"; rm -f "$ROUTES.stamp"
    log "generating $count routes ($name, seed $ROUTE_SEED)"
    python3 "$LIB/mkroutes.py" --count "$count" --dsts "$FEED_COUNT" --seed "$ROUTE_SEED" \
      --out-dir "$dir" --name "$name" >"$ROUTES.summary" 2>"$ROUTES.err" || {
      log "mkroutes.py failed:"; cat "$ROUTES.err" >&2; return 1; }
    echo "$stamp" >"$ROUTES.stamp"
  fi
  ROUTES_SUMMARY=$(sed 's/^mkroutes //' "$ROUTES.summary")
}

make_route_feed() { # make_route_feed NAME [DSTS] (after make_routes) -> FEED0, FEED1
  # DSTS: the destination lists' base (DSTS-p<i>.txt; default $ROUTES.dst).
  local name=$1 dsts=${2:-$ROUTES.dst} p out
  mkdir -p "$WORK/feeds"
  for p in 0 1; do
    out=$WORK/feeds/$name-p$p.pcap
    # One flow per destination: every frame of the pass differs.
    python3 "$LIB/mkfeed.py" --out "$out" --count "$FEED_COUNT" --flows "$FEED_COUNT" \
      --size "$FEED_SIZE" --dst-mac "${PORT_MAC[$p]}" --dst-list "$dsts-p$p.txt" \
      --src-prefix "$ROUTE_FEED_SRC" >"$out.log" 2>&1 || {
      log "mkfeed.py failed:"; cat "$out.log" >&2; return 1; }
  done
  FEED0=$WORK/feeds/$name-p0.pcap; FEED1=$WORK/feeds/$name-p1.pcap
  log "feed $name: $FEED_COUNT x ${FEED_SIZE}B frames/port, destinations from $dsts-p{0,1}.txt"
}

# --------------------------------------------------------------------------
# running and measuring

START_LIMIT=$START_TIMEOUT   # start timeout of the current scenario
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
    --window "$WINDOW" --windows "$WINDOWS" --timeout "$START_LIMIT" --pid "$CUR_PID" \
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

drain() {           # drain APP PREFIX: wait until a one-pass feed is forwarded
  local app=$1 prefix=$2 out
  python3 "$LIB/telemetry_rate.py" --prefix "$prefix" --drain --settle 2 \
    --timeout "$START_LIMIT" --pid "$CUR_PID" \
    >"$CUR_LOG.measure" 2>"$CUR_LOG.measure.err" 9>&- &
  MEAS_PID=$!
  wait "$MEAS_PID"; local rc=$?
  MEAS_PID=""
  out=$(cat "$CUR_LOG.measure" 2>/dev/null)
  [ "$rc" -eq 0 ] && return 0
  log "$app: did not forward the feed: $(cat "$CUR_LOG.measure.err" 2>/dev/null)"
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
  start_app "$scen-l3fwd${VERIFY_TX:+-verify}" "$prefix" "$L3FWD_BIN" -l "$FWD_CORE" "${eal[@]}" -- \
    -p 0x3 --config="(0,0,$FWD_CORE),(1,0,$FWD_CORE)" --parse-ptype --lookup=lpm "$@"
  if [ -n "${VERIFY_TX:-}" ]; then drain l3fwd "$prefix"; else measure "$scen" l3fwd "$prefix"; fi
  stop_app "$prefix"
  # The route-load line of the l3fwd patch (see l3fwd_patch).
  L3FWD_LOAD=$(sed -n 's/^LPM: bench ipv4_routes=\([0-9]*\) load_ms=\([0-9.]*\).*/routes=\1 load_ms=\2/p' "$CUR_LOG.log" | head -1)
  if [[ " $* " == *" --rule_ipv4="* ]] && grep -q "Missing 1 or more rule files" "$CUR_LOG.log"; then
    log "l3fwd: it used its built-in routes, not the rule files"
  fi
}

DP_READY=0
DP_WHY=""           # why the daemon cannot run at all
DP_FAILS=""         # scenarios where it ran but was not measured

render_dp_config() { # render_dp_config TEMPLATE OUT PREFIX PROFILE(true|false) [NAME=VALUE]...
  # Fills @PREFIX@, @FEED0@, @FEED1@, @HUGEPAGES@, memory_mb and
  # profile_stages; each NAME=VALUE either replaces @NAME@, or, where the
  # template has a line `# @include NAME@`, inserts the file VALUE after it,
  # or, on a line `key = value # @NAME@` (a number the template keeps
  # valid TOML), sets the value to VALUE.
  local tmpl=$1 out=$2 prefix=$3 profile=$4 huge kv name val
  shift 4
  [ "$HUGE_MODE" = hugepages ] && huge=on || huge=off
  local args=(-e "s|@PREFIX@|$prefix|g" -e "s|@FEED0@|$FEED0|g" -e "s|@FEED1@|$FEED1|g"
              -e "s|@HUGEPAGES@|$huge|g" -e "s|^memory_mb *=.*|memory_mb = $MEM_MB|"
              -e "s|^profile_stages *=.*|profile_stages = $profile|")
  for kv in "$@"; do
    name=${kv%%=*}; val=${kv#*=}
    if grep -q "^# @include $name@" "$tmpl"; then args+=(-e "/^# @include $name@/r $val")
    elif grep -q "^[a-z_]* *= *[^#]*# @$name@\$" "$tmpl"; then
      args+=(-e "s|^\([a-z_]* *= *\)[^#]*\(# @$name@\)\$|\1$val \2|")
    else args+=(-e "s|@$name@|$val|g"); fi
  done
  # BENCH_ACL_FLOW_CACHE=N: the ACL flow cache's size (0 = off; unset: the
  # daemon's default), on the template's `# flow_cache = ...` line.
  [ -n "${BENCH_ACL_FLOW_CACHE:-}" ] &&
    args+=(-e "s|^# flow_cache = .*|flow_cache = $BENCH_ACL_FLOW_CACHE|")
  if [ -n "${VERIFY_TX:-}" ]; then   # one pass of the feed, TX captured
    args+=(-e "s|rx_pcap=$FEED0,infinite_rx=1|rx_pcap=$FEED0,tx_pcap=$VERIFY_TX-p0.pcap|"
           -e "s|rx_pcap=$FEED1,infinite_rx=1|rx_pcap=$FEED1,tx_pcap=$VERIFY_TX-p1.pcap|")
  fi
  sed "${args[@]}" "$tmpl" >"$out" || { log "dataplane: cannot render $tmpl"; return 1; }
  python3 -c 'import sys, tomllib; tomllib.load(open(sys.argv[1], "rb"))' "$out" 2>"$WORK/toml.err" ||
    log "warning: $out is not valid TOML: $(cat "$WORK/toml.err")"
  return 0
}

DP_LOAD=""          # from the last daemon log: route / ACL table build times

dp_log_tables() {   # dp_log_tables LOG -> DP_LOAD ("routes_v4=N load_ms=T ...")
  local line acl
  line=$(grep -m1 "route tables ready" "$1" 2>/dev/null)
  DP_LOAD=""
  [ -n "$line" ] || return 0
  DP_LOAD="$(grep -o 'routes_v4=[0-9]*' <<<"$line") $(grep -o 'load_ms=[0-9]*' <<<"$line") $(grep -o 'memory_mb=[0-9]*' <<<"$line")"
  acl=$(grep -m1 "ACL ready" "$1" 2>/dev/null)
  [ -n "$acl" ] && DP_LOAD+=" acl_$(grep -o 'rules=[0-9]*' <<<"$acl") acl_$(grep -o 'build_ms=[0-9]*' <<<"$acl")"
  return 0
}

run_dataplane() {   # run_dataplane SCENARIO TEMPLATE [NAME=VALUE]... (see render_dp_config)
  local scen=$1 tmpl=$2
  shift 2
  local prefix=$TAG-dp conf=$WORK/$scen${VERIFY_TX:+-verify}.toml
  MEASURED=NA
  if [ "$DP_READY" -ne 1 ]; then
    log "dataplane: not measured: $DP_WHY"; return 1
  fi
  render_dp_config "$tmpl" "$conf" "$prefix" false "$@" || return 1
  local extra=()
  # shellcheck disable=SC2206
  [ -n "${BENCH_DP_EAL_ARGS:-}" ] && extra=(-- $BENCH_DP_EAL_ARGS)
  start_app "$scen-dataplane${VERIFY_TX:+-verify}" "$prefix" "$DP_BIN" run --config "$conf" "${extra[@]}"
  if [ -n "${VERIFY_TX:-}" ]; then
    drain dataplane "$prefix" || log "dataplane: verify run failed (config $conf, log $CUR_LOG.log)"
  elif ! measure "$scen" dataplane "$prefix"; then
    log "dataplane: failed to start or to forward (config $conf, log $CUR_LOG.log)"
    DP_FAILS+=" $scen"
  fi
  stop_app "$prefix"
  dp_log_tables "$CUR_LOG.log"
}

profile_dataplane() { # profile_dataplane SCENARIO TEMPLATE [NAME=VALUE]...
  # A second, short run with daemon.profile_stages = true (two TSC reads per
  # stage per burst: not for the Mpps), whose final report's
  # cycles_per_packet becomes the `bench-cycles` line.
  local scen=$1 tmpl=$2
  shift 2
  local prefix=$TAG-dpprof conf=$WORK/$scen-profile.toml json=$WORK/$scen-dataplane-profile.json
  local limit t0 cycles
  [ "$DP_READY" -eq 1 ] || return 1
  render_dp_config "$tmpl" "$conf" "$prefix" true "$@" || return 1
  rm -f "$json"
  local extra=()
  # shellcheck disable=SC2206
  [ -n "${BENCH_DP_EAL_ARGS:-}" ] && extra=(-- $BENCH_DP_EAL_ARGS)
  start_app "$scen-dataplane-profile" "$prefix" "$DP_BIN" run --config "$conf" \
    --duration "$PROFILE_S" --stats-json "$json" "${extra[@]}"
  # --duration counts from the workers' start: allow the start-up on top.
  limit=$(( START_LIMIT + ${PROFILE_S%.*} + 30 )); t0=$SECONDS
  while proc_alive "$CUR_PID" && [ $(( SECONDS - t0 )) -lt "$limit" ]; do sleep 0.5; done
  proc_alive "$CUR_PID" && log "dataplane profile run still running after ${limit}s; stopping it"
  stop_app "$prefix"
  cycles=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1])).get("cycles_per_packet") or {}
order = ["parse", "acl", "route", "forward", "dispatch"]
keys = [k for k in order if k in c] + sorted(k for k in c if k not in order)
if keys:
    print(" ".join(f"{k}={c[k]:.1f}" for k in keys) + f" total={sum(c.values()):.1f}")
' "$json" 2>/dev/null)
  if [ -n "$cycles" ]; then
    echo "bench-cycles scenario=$scen $cycles"
  else
    log "dataplane: no cycles_per_packet in $json (log $CUR_LOG.log):"
    tail -8 "$CUR_LOG.log" 2>/dev/null | sed 's/^/    /' >&2
    echo "bench-cycles scenario=$scen NA"
  fi
}

ratio() {           # ratio A B -> A/B with 3 decimals, or NA
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "NA" || b == "NA" || b + 0 == 0) print "NA"; else printf "%.3f\n", a / b }'
}

median() {          # median V... -> the median (2 decimals) of the numbers, NA if none
  local vals
  vals=$(printf '%s\n' "$@" | grep -v '^NA$' | sort -g)
  [ -n "$vals" ] || { echo NA; return; }
  awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f\n", m }' <<<"$vals"
}

# rounds SCENARIO TESTPMD_FN L3FWD_FN DATAPLANE_FN -> TP, L3, DP (medians),
# L3_DETAIL, DP_DETAIL (last run's). Each *_FN is a command that leaves
# MEASURED / MEASURED_DETAIL, as run_testpmd etc. do.
rounds() {
  local scen=$1 tp_fn=$2 l3_fn=$3 dp_fn=$4 r app tps=() l3s=() dps=() rts=() rls=()
  local -A got
  for ((r = 1; r <= ROUNDS; r++)); do
    local order=(tp l3 dp)
    ((r % 2 == 0)) && order=(dp l3 tp)
    for app in "${order[@]}"; do
      case $app in
        tp) $tp_fn; got[tp]=$MEASURED ;;
        l3) $l3_fn; got[l3]=$MEASURED; L3_DETAIL=$MEASURED_DETAIL
            [ -n "$L3FWD_LOAD" ] && [ "$r" -eq 1 ] && echo "bench-load scenario=$scen app=l3fwd $L3FWD_LOAD" ;;
        dp) $dp_fn; got[dp]=$MEASURED; DP_DETAIL=$MEASURED_DETAIL
            [ -n "$DP_LOAD" ] && [ "$r" -eq 1 ] && echo "bench-load scenario=$scen app=dataplane $DP_LOAD" ;;
      esac
    done
    tps+=("${got[tp]}"); l3s+=("${got[l3]}"); dps+=("${got[dp]}")
    rts+=("$(ratio "${got[dp]}" "${got[tp]}")"); rls+=("$(ratio "${got[dp]}" "${got[l3]}")")
    [ "$ROUNDS" -gt 1 ] && echo "bench-round scenario=$scen round=$r dataplane_mpps=${got[dp]} testpmd_mpps=${got[tp]} l3fwd_mpps=${got[l3]} ratio_testpmd=$(ratio "${got[dp]}" "${got[tp]}") ratio_l3fwd=$(ratio "${got[dp]}" "${got[l3]}")"
  done
  TP=$(median "${tps[@]}"); L3=$(median "${l3s[@]}"); DP=$(median "${dps[@]}")
  ROUND_RT=$(median "${rts[@]}"); ROUND_RL=$(median "${rls[@]}")
}

report_line() {     # report_line SCENARIO DP_MPPS TESTPMD_MPPS L3FWD_MPPS
  local s=$1 dp=$2 tp=$3 l3=$4 rr=""
  # Per-round ratios' medians, when this scenario ran rounds (rounds() sets them).
  [ "$ROUNDS" -gt 1 ] && [ "$dp" != NA ] && rr=" round_ratio_testpmd=${ROUND_RT:-NA} round_ratio_l3fwd=${ROUND_RL:-NA}"
  ROUND_RT=NA; ROUND_RL=NA
  RESULTS+=("bench scenario=$s dataplane_mpps=$dp testpmd_mpps=$tp l3fwd_mpps=$l3 ratio_testpmd=$(ratio "$dp" "$tp") ratio_l3fwd=$(ratio "$dp" "$l3")$rr")
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
  make_feed forward 198.18.0.0/24 198.18.1.0/24 || { report_line forward NA NA NA; return; }
  fwd_tp() { run_testpmd forward; }
  fwd_l3() { run_l3fwd forward; }
  fwd_dp() { run_dataplane forward "$ROOT/config/bench/forward.toml"; }
  rounds forward fwd_tp fwd_l3 fwd_dp
  report_line forward "$DP" "$TP" "$L3"
}

# Routing scenarios: shared pieces

L3FWD_LOAD=""       # "routes=N load_ms=T" from the last l3fwd run
TP=NA; L3=NA; DP=NA; L3_DETAIL=""; DP_DETAIL=""  # set by rounds()

split_line() {      # split_line SCENARIO APP DETAIL: TX share of port 0 vs the expected one
  local scen=$1 app=$2 detail=$3
  [ -n "$detail" ] || return 0
  # expected share = (rx0 * share of feed 0 to port 0 + rx1 * the same for feed 1) / rx
  awk -v d="$detail" -v s="$ROUTES_SUMMARY" -v scen="$scen" -v app="$app" 'BEGIN {
    n = split(d " " s, kv, " ")
    for (i = 1; i <= n; i++) { eq = index(kv[i], "="); if (eq) v[substr(kv[i], 1, eq - 1)] = substr(kv[i], eq + 1) }
    tx = v["tx0"] + v["tx1"]; rx = v["rx0"] + v["rx1"]
    if (tx <= 0 || rx <= 0) exit
    printf "bench-split scenario=%s app=%s tx_p0_share=%.3f expected=%.3f tx_per_rx=%.3f\n", scen, app,
      v["tx0"] / tx, (v["rx0"] * v["exp_p0_from0"] + v["rx1"] * v["exp_p0_from1"]) / rx, tx / rx
  }'
}

verify_split() {    # verify_split SCENARIO TEMPLATE [NAME=VALUE]...: one pass, TX captured
  local scen=$1 tmpl=$2 app res
  shift 2
  mkdir -p "$WORK/verify"
  for app in l3fwd dataplane; do
    VERIFY_TX=$WORK/verify/$scen-$app
    rm -f "$VERIFY_TX"-p[01].pcap
    if [ "$app" = l3fwd ]; then
      run_l3fwd "$scen" --rule_ipv4="$ROUTES.l3fwd-v4.cfg" --rule_ipv6="$ROUTES.l3fwd-v6.cfg"
    else
      run_dataplane "$scen" "$tmpl" "$@"
    fi
    if [ -s "$VERIFY_TX-p0.pcap" ] || [ -s "$VERIFY_TX-p1.pcap" ]; then
      touch "$VERIFY_TX-p0.pcap" "$VERIFY_TX-p1.pcap"
      res=$(python3 "$LIB/checksplit.py" --rules "$ROUTES.l3fwd-v4.cfg" \
        --out0 "$VERIFY_TX-p0.pcap" --out1 "$VERIFY_TX-p1.pcap" \
        --dst-list "$ROUTES.dst-p0.txt" --dst-list "$ROUTES.dst-p1.txt" 2>&1)
      [ $? -eq 0 ] || log "warning: $app sent some destinations out of the wrong port or not at all: $res"
    else
      res="NA (no TX capture)"
    fi
    echo "bench-verify scenario=$scen app=$app $res"
  done
  VERIFY_TX=""
}

route_scenario() {  # route_scenario NAME ROUTES_NAME COUNT TEMPLATE [ACL_COUNT]
  local scen=$1 rname=$2 count=$3 tmpl=$4 acl=${5:-0}
  local tp l3 dp dpargs=()
  make_routes "$rname" "$count" && make_route_feed "$rname" ||
    { report_line "$scen" NA NA NA; return; }
  echo "bench-tables scenario=$scen $ROUTES_SUMMARY"
  dpargs=(ROUTES="$ROUTES.routes")
  if [ "$acl" -gt 0 ]; then
    local rules=$WORK/routes/$scen-acl.toml
    python3 "$LIB/mkacl.py" --count "$acl" --seed "$ROUTE_SEED" --feed "$FEED0" --feed "$FEED1" \
      --feed-src "$ROUTE_FEED_SRC" --out "$rules" >"$rules.summary" 2>&1 || {
      log "mkacl.py failed:"; cat "$rules.summary" >&2; report_line "$scen" NA NA NA; return; }
    echo "bench-tables scenario=$scen $(sed 's/^mkacl /acl_/' "$rules.summary")"
    dpargs+=(ACL_RULES="$rules")
  fi

  rs_tp() { run_testpmd "$scen"; }
  rs_l3() { run_l3fwd "$scen" --rule_ipv4="$ROUTES.l3fwd-v4.cfg" --rule_ipv6="$ROUTES.l3fwd-v6.cfg"; }
  rs_dp() { run_dataplane "$scen" "$tmpl" "${dpargs[@]}"; }
  rounds "$scen" rs_tp rs_l3 rs_dp
  tp=$TP; l3=$L3; dp=$DP
  split_line "$scen" l3fwd "$L3_DETAIL"
  split_line "$scen" dataplane "$DP_DETAIL"
  if [ "$DP_READY" -eq 1 ]; then
    profile_dataplane "$scen" "$tmpl" "${dpargs[@]}"
  fi
  if [ "$VERIFY" = 1 ] && [ "$scen" = route_1k ]; then
    verify_split "$scen" "$tmpl" "${dpargs[@]}"
  fi
  report_line "$scen" "$dp" "$tp" "$l3"
}

scenario_route_1k() {
  route_scenario route_1k r1k "$ROUTES_1K" "$ROOT/config/bench/route.toml"
}

scenario_acl1k_route() {
  # Same routes and feed as route_1k; only the daemon filters (the l3fwd
  # reference is LPM without ACL, as in route_1k).
  route_scenario acl1k_route r1k "$ROUTES_1K" "$ROOT/config/bench/acl_route.toml" "$ACL_RULES"
}

lb_scenario() {     # lb_scenario NAME [ACL_COUNT]
  # The load balancer on route_1k's routes: a feed like route_1k's (same
  # size, sources, one flow per frame) whose destinations are the VIPs,
  # LB_VIPS taken from each port's destination list (so l3fwd routes the
  # same frames on the same routes); each VIP one UDP service over
  # LB_BACKENDS IP-in-IP backends behind p1, connection tracking on.
  local scen=$1 acl=${2:-0} dir=$WORK/routes tmpl=$ROOT/config/bench/lb_route.toml dpargs=()
  make_routes r1k "$ROUTES_1K" || { report_line "$scen" NA NA NA; return; }
  python3 "$LIB/mklb.py" --dst-list "$ROUTES.dst-p0.txt" --dst-list "$ROUTES.dst-p1.txt" \
    --vips "$LB_VIPS" --backends "$LB_BACKENDS" --out "$dir/$scen-lb.toml" \
    --vip-out "$dir/$scen-vips" >"$dir/$scen-lb.summary" 2>&1 || {
    log "mklb.py failed:"; cat "$dir/$scen-lb.summary" >&2; report_line "$scen" NA NA NA; return; }
  echo "bench-tables scenario=$scen $ROUTES_SUMMARY $(sed 's/^mklb //' "$dir/$scen-lb.summary")"
  make_route_feed "$scen" "$dir/$scen-vips" || { report_line "$scen" NA NA NA; return; }
  dpargs=(ROUTES="$ROUTES.routes" LB_SERVICES="$dir/$scen-lb.toml")
  if [ "$acl" -gt 0 ]; then
    local rules=$dir/$scen-acl.toml
    python3 "$LIB/mkacl.py" --count "$acl" --seed "$ROUTE_SEED" --feed "$FEED0" --feed "$FEED1" \
      --feed-src "$ROUTE_FEED_SRC" --out "$rules.rules" >"$rules.summary" 2>&1 || {
      log "mkacl.py failed:"; cat "$rules.summary" >&2; report_line "$scen" NA NA NA; return; }
    echo "bench-tables scenario=$scen $(sed 's/^mkacl /acl_/' "$rules.summary")"
    { printf '[acl]\ndefault = "allow"\n'; cat "$rules.rules"; } >"$rules"
    dpargs+=(ACL_RULES="$rules")
    sed 's|^pipeline = \["lb", "route"\]|pipeline = ["acl", "lb", "route"]|' "$tmpl" >"$WORK/$scen-template.toml"
    tmpl=$WORK/$scen-template.toml
  fi
  lb_tp() { run_testpmd "$scen"; }
  lb_l3() { run_l3fwd "$scen" --rule_ipv4="$ROUTES.l3fwd-v4.cfg" --rule_ipv6="$ROUTES.l3fwd-v6.cfg"; }
  lb_dp() { run_dataplane "$scen" "$tmpl" "${dpargs[@]}"; }
  rounds "$scen" lb_tp lb_l3 lb_dp
  local tp=$TP l3=$L3 dp=$DP
  if [ "$DP_READY" -eq 1 ]; then
    profile_dataplane "$scen" "$tmpl" "${dpargs[@]}"
  fi
  report_line "$scen" "$dp" "$tp" "$l3"
}

scenario_lb() {
  lb_scenario lb
}

scenario_full() {
  lb_scenario full "$ACL_RULES"
}

scenario_route_1m() {
  # 1M routes need more EAL memory (both apps) and a long start for l3fwd.
  local mem=$MEM_MB mode=$HUGE_MODE
  [ "$MEM_MB" -lt "$BIG_MEM_MB" ] && MEM_MB=$BIG_MEM_MB
  pick_memory_mode
  [ "$HUGE_MODE" != "$mode" ] && log "route_1m: memory mode $HUGE_MODE (other scenarios: $mode)"
  echo "bench-note scenario=route_1m mode=$HUGE_MODE mem_mb=$MEM_MB start_timeout_s=$BIG_START_TIMEOUT"
  START_LIMIT=$BIG_START_TIMEOUT
  route_scenario route_1m r1m "$ROUTES_1M" "$ROOT/config/bench/route.toml"
  START_LIMIT=$START_TIMEOUT
  MEM_MB=$mem
  pick_memory_mode
}

# Ring mode and multi-core scaling: measured against the daemon itself.

scenario_ring() {
  # Ring mode with 1 receiving core + 1 worker on forward's feed, and the
  # same daemon in run-to-completion (one worker on core 1) in the same
  # round, order reversed in even rounds.
  local r a got_ring got_rtc rings=() rtcs=() last
  make_feed forward 198.18.0.0/24 198.18.1.0/24 ||
    { RESULTS+=("bench scenario=ring dataplane_mpps=NA rtc_mpps=NA ratio_rtc=NA"); return; }
  echo "bench-note scenario=ring rx_core=$RING_RX_CORE worker_core=$RING_WORKER_CORE ring_size=$RING_SIZE"
  [ "$RING_WORKER_CORE" = "$CTRL_CORE" ] &&
    log "ring: the worker shares CPU $CTRL_CORE with the control thread and this script (2 CPUs; BENCH_RING_WORKER_CORE)"
  for ((r = 1; r <= ROUNDS; r++)); do
    local order=(ring rtc)
    ((r % 2 == 0)) && order=(rtc ring)
    for a in "${order[@]}"; do
      if [ "$a" = ring ]; then
        run_dataplane ring "$ROOT/config/bench/ring.toml" RX_CORE="$RING_RX_CORE" \
          WORKER_CORE="$RING_WORKER_CORE" RING_SIZE="$RING_SIZE"
        got_ring=$MEASURED
        last=$(grep ' stats rx=' "$CUR_LOG.log" 2>/dev/null | tail -1)
        [ -n "$last" ] && echo "bench-ring scenario=ring $(grep -o 'busy=\[[^]]*\]' <<<"$last") $(grep -o 'drops={[^}]*}' <<<"$last")"
      else
        run_dataplane ring-rtc "$ROOT/config/bench/forward.toml"
        got_rtc=$MEASURED
      fi
    done
    rings+=("$got_ring"); rtcs+=("$got_rtc")
    [ "$ROUNDS" -gt 1 ] && echo "bench-round scenario=ring round=$r dataplane_mpps=$got_ring rtc_mpps=$got_rtc ratio_rtc=$(ratio "$got_ring" "$got_rtc")"
  done
  local dp rtc
  dp=$(median "${rings[@]}"); rtc=$(median "${rtcs[@]}")
  RESULTS+=("bench scenario=ring dataplane_mpps=$dp rtc_mpps=$rtc ratio_rtc=$(ratio "$dp" "$rtc") rx_core=$RING_RX_CORE worker_core=$RING_WORKER_CORE")
}

scenario_null_mq() {
  # 1 vs 2 workers on net_null ports with 2 RX queues each (no pcap feed).
  local r a one two ones=() twos=() c0=${MQ_CORES%%,*} c1=${MQ_CORES##*,}
  echo "bench-note scenario=null_mq one_worker_core=$FWD_CORE cores=$c0,$c1"
  [ "$c1" = "$CTRL_CORE" ] || [ "$c0" = "$CTRL_CORE" ] &&
    log "null_mq: a worker shares CPU $CTRL_CORE with the control thread and this script (2 CPUs; BENCH_MQ_CORES)"
  for ((r = 1; r <= ROUNDS; r++)); do
    local order=(one two)
    ((r % 2 == 0)) && order=(two one)
    for a in "${order[@]}"; do
      if [ "$a" = one ]; then
        run_dataplane null_mq-1w "$ROOT/config/bench/null_mq_1w.toml" CORE0="$FWD_CORE"
        one=$MEASURED
      else
        run_dataplane null_mq-2w "$ROOT/config/bench/null_mq_2w.toml" CORE0="$c0" CORE1="$c1"
        two=$MEASURED
      fi
    done
    ones+=("$one"); twos+=("$two")
    [ "$ROUNDS" -gt 1 ] && echo "bench-round scenario=null_mq round=$r dataplane_mpps=$two one_worker_mpps=$one ratio_2v1=$(ratio "$two" "$one")"
  done
  one=$(median "${ones[@]}"); two=$(median "${twos[@]}")
  RESULTS+=("bench scenario=null_mq dataplane_mpps=$two one_worker_mpps=$one ratio_2v1=$(ratio "$two" "$one") cores=$c0,$c1")
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
