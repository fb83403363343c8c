#!/usr/bin/python3
"""The table of bench/fused/fused_compare.sh: per shape and rank count, Tessera's fused MatMul+AllReduce
against GEMM-then-allreduce with Tessera's allreduce, MPI's and torch+gloo's (MPI: the faster of bound and
unbound, marked b/u). "reduce share" is the allreduce's part of Tessera's unfused time; the target is at least
1.25x where that share is a third or more, and never more than 5% slower.  usage: fused_report.py F.jsonl [png]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import best_by, cpu_model, plot_speedups  # noqa: E402


def main():
    recs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    best = best_by(recs, lambda r: (r["ranks"], r["m"], r["h"], r["impl"]))
    print(f"Fused MatMul+AllReduce -- {cpu_model()}, nproc {os.cpu_count()}; ms per layer (median of the slowest rank); "
          f"speedup = unfused time / fused time")
    hdr = (f"{'ranks':>5} {'tokens':>6} {'hidden':>6} {'fused':>8} {'unfused':>8} {'share':>6} {'mpi':>9} {'torch+gloo':>10} "
           f"{'vs unfused':>10} {'vs mpi':>7} {'vs gloo':>8}  target")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for key in sorted({k[:3] for k in best}):
        t, m, g = (best.get(key + (i,)) for i in ("tessera", "mpi", "gloo"))
        if not t:
            continue
        share = t["allreduce_us"] / t["us"]
        s_u = t["us"] / t["fused_us"]
        s_m = m["us"] / t["fused_us"] if m else None
        s_g = g["us"] / t["fused_us"] if g else None
        if share >= 1 / 3:
            target = f">= 1.25x: {'met' if s_u >= 1.25 else 'NOT met'}"
        else:
            target = f"not > 5% slower: {'met' if s_u >= 1 / 1.05 else 'NOT met'}"
        ms = f"{m['us'] / 1e3:.1f} {'u' if m.get('variant') == 'unbound' else 'b'}" if m else "-"
        gs = f"{g['us'] / 1e3:.1f}" if g else "-"
        print(f"{key[0]:>5} {key[1]:>6} {key[2]:>6} {t['fused_us'] / 1e3:>8.1f} {t['us'] / 1e3:>8.1f} {share:>6.0%} {ms:>9} "
              f"{gs:>10} {s_u:>9.2f}x {(f'{s_m:.2f}x' if s_m else '-'):>7} {(f'{s_g:.2f}x' if s_g else '-'):>8}  {target}")
        rows.append((f"{key[0]} ranks, {key[1]} x {key[2]}", s_u, s_m, s_g))
    if len(sys.argv) > 2 and rows:
        plot_speedups(sys.argv[2], [r[0] for r in rows],
                      [("vs OpenBLAS + Tessera allreduce", [r[1] for r in rows]),
                       ("vs OpenBLAS + MPI_Allreduce", [r[2] for r in rows]), ("vs torch.matmul + gloo", [r[3] for r in rows])],
                      "speedup of the fused op (unfused time / fused time)")

if __name__ == "__main__":
    main()
