#!/usr/bin/python3
"""Ratio table and bandwidth plot for bench/coll_compare.sh. busbw uses the nccl-tests factors."""
import json, sys
from collections import defaultdict


def factor(coll, n):
    if coll == "allreduce":
        return 2 * (n - 1) / n
    if coll in ("reduce_scatter", "allgather", "alltoall"):
        return (n - 1) / n
    return 1.0


def main(path, png):
    t = defaultdict(dict)
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        # several rounds of a row: each library's best (least disturbed) time
        row = t[(d["coll"], d["np"], d["bytes"])]
        row[d["lib"]] = min(row.get(d["lib"], d["time_us"]), d["time_us"])

    def busbw(coll, n, b, us):
        return b / (us * 1e3) * factor(coll, n) if us else 0.0

    print(f"{'collective':<15}{'np':>3}{'bytes':>10}  {'tessera':>10} {'openmpi':>10} {'gloo':>10}   {'vs MPI':>7} {'vs gloo':>7}"
          f"  {'sym':>7} {'sym/MPI':>7}")
    print(f"{'':<15}{'':>3}{'':>10}  {'(busbw GB/s, or us for latency rows)':>32}")
    for (coll, n, b), libs in sorted(t.items()):
        lat = coll == "barrier" or b <= 64
        vals = {}
        for lib in ("tessera", "openmpi", "gloo", "tessera-sym"):
            us = libs.get(lib)
            vals[lib] = us if lat else (busbw(coll, n, b, us) if us else None)
        def ratio(other, mine="tessera"):
            if vals[mine] is None or vals.get(other) is None or not vals[other]:
                return "    -  "
            r = vals[mine] / vals[other]
            return f"{r:6.2f}x"
        fmt = lambda v: f"{v:10.3f}" if v is not None else f"{'-':>10}"
        unit = "us" if lat else "GB/s"
        sym = f"{vals['tessera-sym']:7.3f} {ratio('openmpi', 'tessera-sym')}" if vals["tessera-sym"] else f"{'-':>7} {'-':>7}"
        print(f"{coll:<15}{n:>3}{b:>10}  {fmt(vals['tessera'])} {fmt(vals['openmpi'])} {fmt(vals['gloo'])}   {ratio('openmpi')} {ratio('gloo')}  {sym}  {unit}")

    # The collective targets (float32): latency rows want a small ratio, bandwidth rows a large one.
    targets = [
        ("allreduce", 2, 8, "openmpi", "<=", 0.35), ("allreduce", 2, 524288, "openmpi", ">=", 2.0),
        ("allreduce", 2, 67108864, "openmpi", ">=", 3.5), ("allreduce", 2, 67108864, "gloo", ">=", 4.0),
        ("allreduce", 4, 67108864, "openmpi", ">=", 3.0),
        ("reduce_scatter", 2, 67108864, "openmpi", ">=", 4.0), ("reduce_scatter", 4, 67108864, "openmpi", ">=", 4.0),
        ("allgather", 2, 67108864, "openmpi", ">=", 1.5), ("allgather", 4, 67108864, "openmpi", ">=", 1.5),
        ("alltoall", 2, 67108864, "openmpi", ">=", 1.5), ("alltoall", 4, 67108864, "openmpi", ">=", 1.5),
        ("broadcast", 2, 67108864, "openmpi", ">=", 1.5), ("broadcast", 4, 67108864, "openmpi", ">=", 1.5),
        ("barrier", 2, 8, "openmpi", "<=", 0.5), ("barrier", 4, 8, "openmpi", "<=", 0.5),
    ]
    print("\nTargets (collectives): ratio = tessera / peer; latency rows compare time, others busbw")
    ok_all = True
    for coll, n, b, peer, cmp, goal in targets:
        libs = t.get((coll, n, b), {})
        if "tessera" not in libs or peer not in libs:
            print(f"  {coll:<15} np={n} {b:>9} B vs {peer:<8}: not measured")
            continue
        if cmp == "<=":
            r = libs["tessera"] / libs[peer]
        else:
            r = libs[peer] / libs["tessera"]  # busbw ratio = inverse time ratio (same bytes, same factor)
        ok = r <= goal if cmp == "<=" else r >= goal
        ok_all &= ok
        floor = ""
        if "floor" in libs:  # bench/barrier_floor.c: plain processes, no library, in the same rounds
            fr = libs["floor"] / libs[peer]
            floor = f"  (floor {libs['floor']:.3f} us = {fr:.2f}x: {'within reach' if fr <= goal else 'the target is below it'})"
        print(f"  {coll:<15} np={n} {b:>9} B vs {peer:<8}: {r:6.2f}x (target {cmp} {goal}x)  {'OK' if ok else 'MISSED'}{floor}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"\n(matplotlib missing: no plot; install python3-matplotlib)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, n in zip(axes, (2, 4)):
        for lib, style in (("tessera", "o-"), ("openmpi", "s--"), ("gloo", "^:")):
            pts = sorted((b, busbw("allreduce", n, b, libs[lib])) for (c, nn, b), libs in t.items()
                         if c == "allreduce" and nn == n and lib in libs)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=lib)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes (float32)")
        ax.set_ylabel("allreduce busbw (GB/s)")
        ax.set_title(f"allreduce, {n} ranks (2 cores)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nplot: {png}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "coll_bandwidth.png")
