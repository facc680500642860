#!/usr/bin/env bash
# How long a reload takes with 1,000 and 1,000,000 IPv4 routes, under load.
#
# For each size: starts the release daemon with a `route` pipeline over that
# many routes (scripts/lib/mkroutes.py, the bench's tables) on two net_null
# ports (they generate packets on every poll: the worker is busy throughout),
# then RELOAD_ROUNDS times moves one route to the other port in the routes
# file and runs `dataplane reload`. Prints the daemon's answer for each
# (build = read + check + diff + new tables; swap = publish until every
# worker acknowledged) and one summary line per size:
#   reload-timing routes=N build_ms=[...] swap_ms=[...]
# Usage: bash scripts/reload-timing.sh [SIZES...]   (default: 1000 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${RELOAD_TIMING_DIR:-$ROOT/build/reload-timing}
ROUNDS=${RELOAD_ROUNDS:-3}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 1000000)
mkdir -p "$OUT"
cargo build --release --quiet -p dataplane --bin dataplane
BIN=$ROOT/target/release/dataplane

for n in "${SIZES[@]}"; do
  python3 scripts/lib/mkroutes.py --count "$n" --dsts 10 --seed 1 --out-dir "$OUT" --name "r$n" >/dev/null
  routes=$OUT/r$n.routes
  { cat "$routes"; echo "198.51.100.0/24 10.0.0.2"; } >"$OUT/live.routes"
  prefix="dp-reload-timing-$$"
  cat >"$OUT/reload.toml" <<EOF
pipeline = ["route"]
[eal]
file_prefix = "$prefix"
memory_mb = 4096
hugepages = "off"
[daemon]
stats_interval_ms = 0
[[port]]
name = "p0"
device = "net_null0,copy=0"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "p1"
device = "net_null1,copy=0"
ipv4 = ["10.0.1.1/24"]
[[worker]]
core = 1
rx = ["p0", "p1"]
[route]
routes_file = "live.routes"
[[route.neighbor]]
ip = "10.0.0.2"
mac = "02:00:00:00:00:aa"
[[route.neighbor]]
ip = "10.0.1.2"
mac = "02:00:00:00:01:aa"
EOF
  log=$OUT/daemon-$n.log
  "$BIN" run --config "$OUT/reload.toml" >"$OUT/daemon-$n.out" 2>"$log" &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  for _ in $(seq 600); do
    grep -q "control socket ready" "$log" && break
    kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.5
  done
  builds=() swaps=()
  for r in $(seq "$ROUNDS"); do
    # Move the last route (198.51.100.0/24) to the other port and back.
    if [ $((r % 2)) -eq 1 ]; then via=10.0.1.2; else via=10.0.0.2; fi
    sed -i "\$s/ .*/ $via/" "$OUT/live.routes"
    answer=$("$BIN" reload --config "$OUT/reload.toml")
    echo "routes=$n round=$r: $answer"
    builds+=("$(sed -n 's/.*build \([0-9.]*\) ms.*/\1/p' <<<"$answer")")
    swaps+=("$(sed -n 's/.*swap \([0-9.]*\) ms.*/\1/p' <<<"$answer")")
  done
  kill -INT $pid
  wait $pid || { echo "daemon exited with an error:"; tail -20 "$log"; exit 1; }
  trap - EXIT
  grep -q "0 in use (no leak)" "$OUT/daemon-$n.out" || { cat "$OUT/daemon-$n.out"; exit 1; }
  echo "reload-timing routes=$n build_ms=[${builds[*]}] swap_ms=[${swaps[*]}]"
done
