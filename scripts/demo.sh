#!/usr/bin/env bash
# The demo: set up the machine, build, generate traffic, run the daemon on
# two net_pcap ports (config/demo.toml) and summarise what it did. Then a
# short throughput run replaying the same frames in a loop.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
echo "== building (release)"
cargo build --release -p dataplane --bin dataplane
BIN=target/release/dataplane
OUT=build/demo
mkdir -p "$OUT"

echo "== generating traffic"
"$BIN" gen --out "$OUT/in0.pcap" --count 20000 --flows 256 --size 64 --ipv6-ratio 0.2 --seed 1
"$BIN" gen --out "$OUT/in1.pcap" --count 10000 --flows 64 --size imix --vlan 100 --seed 2

echo "== checking config/demo.toml"
"$BIN" check config/demo.toml

echo "== forwarding (one pass over the pcaps)"
rm -f "$OUT/out0.pcap" "$OUT/out1.pcap"
"$BIN" run --config config/demo.toml --stop-when-idle 500 --stats-json "$OUT/final.json"

echo "== throughput (pcap replayed in a loop for 3 s, no TX file)"
sed -e "s#rx_pcap=build/demo/in0.pcap,tx_pcap=build/demo/out0.pcap#rx_pcap=$OUT/in0.pcap,infinite_rx=1#" \
    -e "s#rx_pcap=build/demo/in1.pcap,tx_pcap=build/demo/out1.pcap#rx_pcap=$OUT/in1.pcap,infinite_rx=1#" \
    -e 's/file_prefix = "dataplane-demo"/file_prefix = "dataplane-demo-perf"/' \
    -e 's/^mbufs = 0 .*/mbufs = 65535/' \
    config/demo.toml > "$OUT/perf.toml"
"$BIN" run --config "$OUT/perf.toml" --duration 3 --stats-json "$OUT/perf.json" >/dev/null 2>"$OUT/perf.log" || {
  cat "$OUT/perf.log"; exit 1; }

python3 - "$OUT" <<'PY'
import json, sys, struct
out = sys.argv[1]
def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    n, off = 0, 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        off += 16 + incl
        n += 1
    return n
r = json.load(open(f"{out}/final.json"))
p = json.load(open(f"{out}/perf.json"))
print()
print("=================== demo summary ===================")
for port in r["ports"]:
    print(f"  port {port['name']:<5} in {port['ipackets']:>8}  out {port['opackets']:>8}")
print(f"  pcap files: in0 {frames(out+'/in0.pcap')} -> out1 {frames(out+'/out1.pcap')}, "
      f"in1 {frames(out+'/in1.pcap')} -> out0 {frames(out+'/out0.pcap')}")
drops = r["drops"] or {"(none)": 0}
print("  drops by reason: " + ", ".join(f"{k}={v}" for k, v in drops.items()))
print(f"  mbufs in use at exit: {r['mempool']['in_use']} of {r['mempool']['size']}")
busy = sum(w["busy_cycles"] for w in p["workers"]) / max(1, sum(w["total_cycles"] for w in p["workers"]))
print(f"  throughput: {p['rx']/p['duration_s']/1e6:.2f} Mpps forwarded on 1 core "
      f"(pcap replay, {p['duration_s']:.1f} s, worker busy {busy:.0%}, hugepages={p['hugepages']})")
print("====================================================")
PY
