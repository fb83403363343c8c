#!/usr/bin/python3
"""The table of bench/gnn/gnn_compare.sh: per graph and rank count, Tessera's aggregation time against MPI's
halo exchange (the faster of bound and unbound, marked b/u) and gloo's, with the target of at least 2x both.
Plots the speedups when matplotlib is there.  usage: gnn_report.py gnn.jsonl [plot.png]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchlib import best_by, cpu_model, plot_speedups  # noqa: E402


def main():
    recs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    best = best_by(recs, lambda r: (r["ranks"], r["scale"], r["edges"], r["dim"], r["impl"]))
    print(f"GNN aggregation (GraphSAGE mean, R-MAT) -- {cpu_model()}, nproc {os.cpu_count()}; us per layer (median "
          f"of the slowest rank); speedup = peer time / Tessera time")
    hdr = (f"{'ranks':>5} {'scale':>5} {'edges':>9} {'dim':>4} {'tessera us':>11} {'mpi us':>12} {'gloo us':>12} "
           f"{'vs mpi':>7} {'vs gloo':>8}  target")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for key in sorted({k[:4] for k in best}):
        t, m, g = (best.get(key + (i,)) for i in ("tessera", "mpi", "gloo"))
        if not t:
            continue
        vm = m["us"] / t["us"] if m else None
        vg = g["us"] / t["us"] if g else None
        ok = (vm or 0) >= 2 and (vg or 0) >= 2
        ms = f"{m['us']:.0f} {'u' if m.get('variant') == 'unbound' else 'b'}" if m else "-"
        gs = f"{g['us']:.0f}" if g else "-"
        print(f"{key[0]:>5} {key[1]:>5} {key[2]:>9} {key[3]:>4} {t['us']:>11.0f} {ms:>12} {gs:>12} "
              f"{(f'{vm:.2f}x' if vm else '-'):>7} {(f'{vg:.1f}x' if vg else '-'):>8}  >= 2x both: {'met' if ok else 'NOT met'}")
        rows.append((f"{key[0]} ranks, scale {key[1]}, {key[2] >> 20} M edges, dim {key[3]}", vm, vg))
    if len(sys.argv) > 2 and rows:
        plot_speedups(sys.argv[2], [r[0] for r in rows],
                      [("MPI time / Tessera time", [r[1] for r in rows]), ("gloo time / Tessera time", [r[2] for r in rows])],
                      "speedup of Tessera (log scale; dashed: the 2x target)", log=True, line=2)

if __name__ == "__main__":
    main()
