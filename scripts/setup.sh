#!/usr/bin/env bash
# Idempotent machine setup: installs what the build, demo and tests need, then
# reserves 2 MiB hugepages when the kernel lets us. Safe to run many times.
set -euo pipefail

# ethtool: the namespace tests turn the hosts' TX checksum offload off (README
# "Kernel hosts on `net_af_packet` and `net_tap` ports"); iperf3: their TCP/UDP transfers; iproute2
# also brings nstat.
PKGS=(dpdk dpdk-dev libdpdk-dev dpdk-doc clang libclang-dev pkg-config libpcap-dev
      iproute2 iputils-ping tcpdump python3 meson ninja-build build-essential
      ethtool iperf3)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # iperf3 asks whether to start a daemon at boot: answer no beforehand, so
  # nothing waits for a terminal (CI has no stdin) and no server runs.
  if [[ " ${missing[*]} " == *" iperf3 "* ]] && command -v debconf-set-selections >/dev/null; then
    echo "iperf3 iperf3/start_daemon boolean false" | $SUDO debconf-set-selections
  fi
  $SUDO apt-get update -qq </dev/null
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" </dev/null >/dev/null
else
  echo "setup: all packages present"
fi

if ! command -v cargo-nextest >/dev/null 2>&1 && ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest"
  cargo install --locked cargo-nextest >/dev/null
fi

# Hugepages: try to reserve 2 MiB pages and mount hugetlbfs. When either step
# is refused (containers, no root) we say so; everything falls back to --no-huge.
WANT_PAGES=${DATAPLANE_HUGEPAGES:-1024}
HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
huge_ok=0
if [ -w "$HP" ] || [ -n "$SUDO" ]; then
  cur=$(cat "$HP" 2>/dev/null || echo 0)
  if [ "$cur" -lt "$WANT_PAGES" ]; then
    echo "$WANT_PAGES" | $SUDO tee "$HP" >/dev/null 2>&1 || true
  fi
  cur=$(cat "$HP" 2>/dev/null || echo 0)
  if [ "$cur" -gt 0 ]; then
    if ! grep -qs ' hugetlbfs ' /proc/mounts; then
      $SUDO mkdir -p /dev/hugepages
      $SUDO mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
    fi
    grep -qs ' hugetlbfs ' /proc/mounts && huge_ok=1
  fi
fi
if [ "$huge_ok" -eq 1 ]; then
  echo "setup: hugepages ready ($(cat "$HP") x 2 MiB, hugetlbfs mounted)"
else
  echo "setup: hugepages NOT available here; runs fall back to --no-huge"
fi
