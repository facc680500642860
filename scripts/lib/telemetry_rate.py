#!/usr/bin/env python3
"""Measure a DPDK process's forwarding rate from its own ethdev counters.

Connects to the telemetry socket of the process started with --file-prefix
PREFIX (/var/run/dpdk/PREFIX/dpdk_telemetry.v2, SOCK_SEQPACKET), waits until
the ports exist and receive traffic, lets it warm up, then samples
/ethdev/stats,<port> at the start and end of a fixed window.

Prints one line of key=value pairs:
  mpps=<sum of TX (opackets) deltas / window, Mpps>  rx_mpps=<sum of ipackets>
  tx<p>=<Mpps> rx<p>=<Mpps> per port, drop_mpps=<imissed+rx_nombuf+oerrors>
  window_s=<measured window>, cpu=<CPU share the busiest thread (the
  forwarding lcore) got in the window, 1.00 = a whole core; well below 1 means
  other processes took time from the forwarding core>
With --windows N (N > 1) it measures N back-to-back windows and reports the
one with the highest forwarded rate (the least disturbed by other load on a
shared machine), plus windows_mpps=<every window's rate, comma separated>.
start_s=<seconds from this script's start until packets flowed> tells how
long the process took to start (EAL, tables: 1M routes show here).

--drain (for feeds replayed once, with TX captures): instead of rates, wait
until packets flowed and the counters stopped moving for --settle seconds,
then print `rx=<ipackets> tx=<opackets>` (sums over the ports).
Exit status 0 on success; 1 (with a message on stderr) when the socket never
appears, the process exits, or no packets arrive.
"""
import argparse
import json
import os
import socket
import sys
import time


class Telemetry:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        hello = json.loads(self.sock.recv(4096).decode())
        self.buf = int(hello.get("max_output_len", 16384))

    def cmd(self, text):
        self.sock.send(text.encode())
        return json.loads(self.sock.recv(self.buf).decode())

    def stats(self, port):
        reply = self.cmd(f"/ethdev/stats,{port}")
        return reply.get("/ethdev/stats") or {}


def alive(pid):
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); look at its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def busiest_thread_ticks(pid):
    """{tid: utime+stime ticks} for every thread of pid ({} when unknown)."""
    out = {}
    if not pid:
        return out
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[tid] = int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return out


def die(msg):
    print(f"telemetry_rate: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", required=True, help="EAL --file-prefix of the process")
    ap.add_argument("--ports", default="", help="comma list (default: /ethdev/list)")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--window", type=float, default=5.0)
    ap.add_argument("--windows", type=int, default=1,
                    help="back-to-back windows; the best one is reported")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds to wait for the socket and first packets")
    ap.add_argument("--pid", type=int, default=0, help="give up when this pid exits")
    ap.add_argument("--runtime-dir", default=os.environ.get("BENCH_DPDK_RUNDIR", ""))
    ap.add_argument("--drain", action="store_true",
                    help="wait until the counters settle, print totals")
    ap.add_argument("--settle", type=float, default=2.0)
    a = ap.parse_args()
    t_start = time.monotonic()

    rundir = a.runtime_dir or ("/var/run/dpdk" if os.geteuid() == 0 else
                               os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk"))
    path = os.path.join(rundir, a.prefix, "dpdk_telemetry.v2")
    deadline = time.monotonic() + a.timeout

    # 1. Connect (the socket appears early in EAL init).
    tel = None
    while tel is None:
        if not alive(a.pid):
            die(f"process {a.pid} exited before its telemetry socket answered")
        try:
            tel = Telemetry(path)
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                die(f"no telemetry socket at {path} after {a.timeout:.0f}s")
            time.sleep(0.2)

    # 2. Wait until the ports exist and traffic flows.
    ports = [int(p) for p in a.ports.split(",") if p.strip()]
    while True:
        if not alive(a.pid):
            die(f"process {a.pid} exited during start-up")
        try:
            listed = tel.cmd("/ethdev/list").get("/ethdev/list") or []
            want = ports or listed
            if want and all(p in listed for p in want):
                if sum(tel.stats(p).get("ipackets", 0) for p in want) > 0:
                    ports = want
                    break
        except (OSError, ValueError) as e:
            die(f"telemetry failed during start-up: {e}")
        if time.monotonic() > deadline:
            die(f"ports {want or '?'} never received packets within {a.timeout:.0f}s")
        time.sleep(0.2)

    start_s = time.monotonic() - t_start

    if a.drain:
        def totals():
            st = [tel.stats(p) for p in ports]
            return (sum(x.get("ipackets", 0) for x in st), sum(x.get("opackets", 0) for x in st))
        try:
            last, since = totals(), time.monotonic()
            while time.monotonic() - since < a.settle:
                if not alive(a.pid):
                    die(f"process {a.pid} exited while draining")
                if time.monotonic() > deadline + a.settle:
                    die("counters never settled")
                time.sleep(0.2)
                cur = totals()
                if cur != last:
                    last, since = cur, time.monotonic()
        except (OSError, ValueError) as e:
            die(f"telemetry failed while draining: {e}")
        print(f"rx={last[0]} tx={last[1]} start_s={start_s:.1f}")
        return

    # 3. Warm up, then sample both ends of the window.
    time.sleep(a.warmup)

    def sample():
        t = time.monotonic()
        s = {p: tel.stats(p) for p in ports}
        s["cpu"] = busiest_thread_ticks(a.pid)
        return (t + time.monotonic()) / 2, s

    windows = []
    try:
        t0, s0 = sample()
        for _ in range(max(1, a.windows)):
            time.sleep(a.window)
            t1, s1 = sample()
            windows.append((t0, s0, t1, s1))
            t0, s0 = t1, s1
    except (OSError, ValueError) as e:
        die(f"telemetry failed during the window: {e}")
    if not alive(a.pid):
        die(f"process {a.pid} exited during the window")

    def rates(w):
        t0, s0, t1, s1 = w
        dt = t1 - t0

        def rate(p, key):
            return (s1[p].get(key, 0) - s0[p].get(key, 0)) / dt / 1e6
        tx = {p: rate(p, "opackets") for p in ports}
        rx = {p: rate(p, "ipackets") for p in ports}
        drop = sum(rate(p, "imissed") + rate(p, "rx_nombuf") + rate(p, "oerrors")
                   for p in ports)
        hz = os.sysconf("SC_CLK_TCK")
        busy = [(s1["cpu"][t] - s0["cpu"][t]) / hz / dt for t in s1["cpu"] if t in s0["cpu"]]
        cpu = max(busy) if busy else float("nan")
        return sum(tx.values()), tx, rx, drop, dt, cpu

    all_rates = [rates(w) for w in windows]
    total, tx, rx, drop, dt, cpu = max(all_rates, key=lambda r: r[0])
    parts = [f"mpps={total:.3f}", f"rx_mpps={sum(rx.values()):.3f}"]
    parts += [f"tx{p}={tx[p]:.3f}" for p in ports]
    parts += [f"rx{p}={rx[p]:.3f}" for p in ports]
    parts += [f"drop_mpps={drop:.3f}", f"window_s={dt:.2f}", f"start_s={start_s:.1f}"]
    if a.pid:
        parts.append(f"cpu={cpu:.2f}")
    if len(all_rates) > 1:
        parts.append("windows_mpps=" + ",".join(f"{r[0]:.3f}" for r in all_rates))
    print(" ".join(parts))

if __name__ == "__main__":
    main()
