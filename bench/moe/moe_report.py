#!/usr/bin/python3
"""The table of bench/moe/moe_compare.sh: per shape and rank count, Tessera's dispatch+combine time against
MPI's (the faster of bound and unbound, marked b/u) and gloo's, with the targets: throughput mode at least 3x
gloo's and 2x MPI's throughput, low-latency mode at most 0.5x MPI's time. Plots the ratios when matplotlib is
there.  usage: moe_report.py moe.jsonl [plot.png]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import best_by, cpu_model, plot_speedups  # noqa: E402


def main():
    recs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    shape = lambda r: (r["ranks"], r["tokens"], r["hidden"], r["top_k"], r["experts"], r["dtype"])  # noqa: E731
    best = best_by(recs, lambda r: shape(r) + (r["impl"], r.get("mode", "")))
    print(f"MoE dispatch + combine -- {cpu_model()}, nproc {os.cpu_count()}; us per iteration (median of the slowest "
          f"rank); ratio = peer time / Tessera time (higher is better for Tessera)")
    hdr = (f"{'ranks':>5} {'mode':<11} {'tokens':>6} {'hidden':>6} {'k':>2} {'E':>3} {'dtype':<5} {'tessera us':>11} "
           f"{'mpi us':>11} {'gloo us':>11} {'vs mpi':>7} {'vs gloo':>8}  target")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for key in sorted({shape(r) for r in recs}):
        for mode in ("throughput", "low_latency"):
            t = best.get(key + ("tessera", mode))
            if not t:
                continue
            m = best.get(key + ("mpi", ""))
            g = best.get(key + ("gloo", ""))
            low = key[1] <= 128
            if mode == "throughput" and low:
                label = "tput@small"  # the throughput path at decoding sizes, for comparison
            else:
                label = mode
            vm = m["us"] / t["us"] if m else None
            vg = g["us"] / t["us"] if g else None
            target = ""
            if mode == "throughput" and not low:
                ok = (vm or 0) >= 2 and (vg is None or vg >= 3)
                target = f">= 2x MPI, 3x gloo: {'met' if ok else 'NOT met'}"
            elif mode == "low_latency":
                target = f"<= 0.5x MPI's time: {'met' if vm and vm >= 2 else 'NOT met'}"
            ms = f"{m['us']:.1f} {'u' if m['variant'] == 'unbound' else 'b'}" if m else "-"
            gs = f"{g['us']:.1f}" if g else "-"
            print(f"{key[0]:>5} {label:<11} {key[1]:>6} {key[2]:>6} {key[3]:>2} {key[4]:>3} {key[5]:<5} {t['us']:>11.1f} "
                  f"{ms:>11} {gs:>11} {(f'{vm:.2f}x' if vm else '-'):>7} {(f'{vg:.1f}x' if vg else '-'):>8}  {target}")
            rows.append((f"{key[0]}r {label} T{key[1]} H{key[2]} k{key[3]} E{key[4]}", vm, vg))
    if len(sys.argv) > 2 and rows:
        plot_speedups(sys.argv[2], [r[0] for r in rows],
                      [("MPI time / Tessera time", [r[1] for r in rows]), ("gloo time / Tessera time", [r[2] for r in rows])],
                      "speedup of Tessera (log scale)", log=True)

if __name__ == "__main__":
    main()
