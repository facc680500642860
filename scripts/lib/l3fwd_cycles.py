#!/usr/bin/env python3
"""Instruments a copy of l3fwd's LPM path for scripts/pmd-cycles.sh.

Usage: l3fwd_cycles.py L3FWD_SOURCE_DIR  (edits the files in place)

Adds TSC reads around rte_eth_rx_burst (calls that returned packets, as the
daemon's feature `pmd-cycles` counts them) and every rte_eth_tx_burst, and at
the end of the LPM main loop prints the line the daemon prints:
  pmd-cycles app=l3fwd worker=0 loop_cycles=N rx_pkts=N rx_cycles=N tx_pkts=N tx_cycles=N
One forwarding lcore (as the bench runs it): the sums are plain globals.
Exits 1, naming the file, when an anchor is not where l3fwd 22.11 has it.
"""
import sys
from pathlib import Path

EDITS = {
    "l3fwd.h": [
        ("#define MAX_PKT_BURST     32\n",
         "#define MAX_PKT_BURST     32\n"
         "extern uint64_t pmdc_rx_cycles, pmdc_rx_pkts, pmdc_tx_cycles, pmdc_tx_pkts;\n"),
        ("\tret = rte_eth_tx_burst(port, queueid, m_table, n);\n",
         "\tuint64_t pmdc_t0 = rte_rdtsc();\n"
         "\tret = rte_eth_tx_burst(port, queueid, m_table, n);\n"
         "\tpmdc_tx_cycles += rte_rdtsc() - pmdc_t0; pmdc_tx_pkts += n;\n"),
    ],
    "l3fwd_common.h": [
        ("\t\tn = rte_eth_tx_burst(port, qconf->tx_queue_id[port], m, num);\n",
         "\t\tuint64_t pmdc_t0 = rte_rdtsc();\n"
         "\t\tn = rte_eth_tx_burst(port, qconf->tx_queue_id[port], m, num);\n"
         "\t\tpmdc_tx_cycles += rte_rdtsc() - pmdc_t0; pmdc_tx_pkts += num;\n"),
    ],
    "l3fwd_lpm.c": [
        ("\tcur_tsc = rte_rdtsc();\n\tprev_tsc = cur_tsc;\n\n\twhile (!force_quit) {\n\n\t\t/*\n\t\t * TX burst queue drain",
         "\tcur_tsc = rte_rdtsc();\n\tprev_tsc = cur_tsc;\n\tuint64_t pmdc_start = cur_tsc;\n\n"
         "\twhile (!force_quit) {\n\n\t\t/*\n\t\t * TX burst queue drain"),
        ("\t\t\tnb_rx = rte_eth_rx_burst(portid, queueid, pkts_burst,\n\t\t\t\tMAX_PKT_BURST);\n"
         "\t\t\tif (nb_rx == 0)\n\t\t\t\tcontinue;\n\n#if defined RTE_ARCH_X86",
         "\t\t\tuint64_t pmdc_t0 = rte_rdtsc();\n"
         "\t\t\tnb_rx = rte_eth_rx_burst(portid, queueid, pkts_burst,\n\t\t\t\tMAX_PKT_BURST);\n"
         "\t\t\tif (nb_rx == 0)\n\t\t\t\tcontinue;\n"
         "\t\t\tpmdc_rx_cycles += rte_rdtsc() - pmdc_t0; pmdc_rx_pkts += nb_rx;\n\n#if defined RTE_ARCH_X86"),
        ("\t\tcur_tsc = rte_rdtsc();\n\t}\n\n\treturn 0;\n}\n\nstatic __rte_always_inline uint16_t\nlpm_process_event_pkt",
         "\t\tcur_tsc = rte_rdtsc();\n\t}\n"
         "\tprintf(\"pmd-cycles app=l3fwd worker=0 loop_cycles=%\" PRIu64 \" rx_pkts=%\" PRIu64 \" rx_cycles=%\" PRIu64\n"
         "\t       \" tx_pkts=%\" PRIu64 \" tx_cycles=%\" PRIu64 \"\\n\", rte_rdtsc() - pmdc_start,\n"
         "\t       pmdc_rx_pkts, pmdc_rx_cycles, pmdc_tx_pkts, pmdc_tx_cycles);\n"
         "\tfflush(stdout);\n\n\treturn 0;\n}\n\n"
         "uint64_t pmdc_rx_cycles, pmdc_rx_pkts, pmdc_tx_cycles, pmdc_tx_pkts;\n\n"
         "static __rte_always_inline uint16_t\nlpm_process_event_pkt"),
    ],
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    for name, edits in EDITS.items():
        path = root / name
        text = path.read_text()
        for old, new in edits:
            if text.count(old) != 1:
                print(f"l3fwd_cycles: {path}: anchor not found once: {old.splitlines()[0]!r}", file=sys.stderr)
                sys.exit(1)
            text = text.replace(old, new, 1)
        path.write_text(text)


if __name__ == "__main__":
    main()
