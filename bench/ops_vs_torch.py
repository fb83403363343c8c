#!/usr/bin/python3
"""Tessera kernel operators vs PyTorch's CPU operators, measured side by side in one run.

For each operator and dtype: `tessera-perf ops --quick --only <op>` (which times the operator interleaved with
this machine's read or copy bandwidth bound), then the same operator and shape with torch on 2 threads
(preallocated outputs where torch has an out= form), back to back, so both sides see the same machine state
(the CI hosts are shared and noisy); --rounds such pairs per row, each side's best kept. Prints both times,
the speedup, and each side's fraction of the bound.

  bench/ops_vs_torch.py [--perf build/bin/tessera-perf] [--mib 256] [--iters 5] [--blocks 2] [--dtypes f32,bf16]
                        [--rounds 3]

Runs on the PyTorch 2 of build/venv (scripts/torch-env.sh); torch starts with 1 thread here, so we set 2 explicitly.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch


def best_of(fn, iters):
    fn()  # warm-up
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def parse_shape(s):
    return [int(v) for v in s.strip("[]").split(",") if v]


def torch_case(op, dtype, shape):
    """Returns a zero-argument callable running `op` with torch, or None when torch lacks it for dtype."""
    x = (torch.rand(shape, dtype=torch.float32) * 4 - 2).to(dtype)
    eps = 1e-5
    if op == "sum_all":
        return lambda: torch.sum(x)
    if op == "sum_rows":
        y = torch.empty(shape[0], dtype=dtype)
        return lambda: torch.sum(x, dim=1, out=y)
    if op == "sum_cols":
        y = torch.empty(shape[1], dtype=dtype)
        return lambda: torch.sum(x, dim=0, out=y)
    if op == "max_rows":
        y = torch.empty(shape[0], dtype=dtype)
        return lambda: torch.amax(x, dim=1, out=y)
    if op == "softmax":
        y = torch.empty_like(x)
        return lambda: torch.ops.aten._softmax.out(x, -1, False, out=y)
    if op == "log_softmax":
        y = torch.empty_like(x)
        return lambda: torch.ops.aten._log_softmax.out(x, -1, False, out=y)
    if op == "layer_norm":
        w = torch.full((shape[-1],), 1.1, dtype=dtype)
        b = torch.full((shape[-1],), 0.1, dtype=dtype)
        return lambda: torch.nn.functional.layer_norm(x, (shape[-1],), w, b, eps)
    if op == "rms_norm":  # torch's own (2.4+), else the usual composite
        w = torch.full((shape[-1],), 1.1, dtype=dtype)
        if hasattr(torch.nn.functional, "rms_norm"):
            return lambda: torch.nn.functional.rms_norm(x, (shape[-1],), w, eps)
        return lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    if op == "batch_norm_train":
        c = shape[1]
        rm, rv = torch.zeros(c), torch.ones(c)
        w, b = torch.ones(c), torch.zeros(c)
        return lambda: torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=eps)
    raise ValueError(op)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--perf", default=os.path.join(here, "..", "build", "bin", "tessera-perf"))
    ap.add_argument("--mib", type=float, default=256)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2, the blocks of the CPU)")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds per row, alternating tessera and torch; each side's best is kept (default 3)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    def perf(extra):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            jpath = f.name
        cmd = [args.perf, "ops", "--mib", str(args.mib), "--iters", str(args.iters), "--blocks", str(args.blocks),
               "--json", jpath] + extra
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows = [json.loads(l) for l in open(jpath)]
        os.unlink(jpath)
        return out, rows

    # Launch overhead and the machine's bandwidth, once.
    out, rows = perf(["--dtypes", args.dtypes, "--only", "none"])
    print("\n".join("# " + l.strip() for l in out.splitlines()
                    if l.startswith("  launch") or l.startswith("  grid") or "bandwidth" in l))
    ops = [o for o in (args.only or "sum_all,sum_rows,sum_cols,max_rows,softmax,log_softmax,layer_norm,rms_norm,"
                       "batch_norm_train").split(",") if o]
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads; tessera {args.blocks} blocks. Each row: "
          "tessera-perf (operator runs interleaved with its bound), then torch, back to back.")
    print(f"{'op':<17}{'dtype':<6}{'shape':<18}{'tessera ms':>11}{'torch ms':>10}{'speedup':>9}"
          f"{'bound':>7}{'GB/s':>7}{'tessera':>9}{'torch':>7}")
    for dt in args.dtypes.split(","):
        for op in ops:
            # Rounds alternate the two sides, so a burst of load from the machine's neighbours in one round
            # does not decide the ratio: each side keeps its best time, and its fraction of the bound is taken
            # against the bound measured in that same round (tessera-perf interleaves it with the operator).
            rounds = []
            for _ in range(max(1, args.rounds)):
                _, rows = perf(["--quick", "--dtypes", dt, "--only", op])
                x = next(x for x in rows if x["kind"] == "op")
                try:
                    t, _ = best_of(torch_case(x["op"], tdt[dt], parse_shape(x["shape"])), args.iters)
                except RuntimeError:  # e.g. "not implemented for 'Half'"
                    t = None
                rounds.append((x, t, x["bytes"] / (x["bound_gbs"] * 1e9)))
            r, _, bound_s = min(rounds, key=lambda q: q[0]["best_s"])
            timed = [q for q in rounds if q[1]]
            _, tbest, tbound_s = min(timed, key=lambda q: q[1]) if timed else (None, None, None)
            line = (f"{r['op']:<17}{dt:<6}{r['shape']:<18}{r['best_s']*1e3:>11.2f}"
                    f"{(tbest or 0)*1e3:>10.2f}" if tbest else f"{r['op']:<17}{dt:<6}{r['shape']:<18}{r['best_s']*1e3:>11.2f}{'n/a':>10}")
            speed = f"{tbest / r['best_s']:>8.2f}x" if tbest else f"{'':>9}"
            tfrac = f"{tbound_s / tbest:>7.2f}" if tbest else f"{'n/a':>7}"
            print(f"{line}{speed}{r['bound']:>7}{r['bound_gbs']:>7.1f}{bound_s / r['best_s']:>9.2f}{tfrac}", flush=True)
    print("# bound: read = input bytes / read bandwidth; copy = (input + output bytes) / copy bandwidth (counted "
          "read + write). tessera/torch columns: fraction of that bound reached (best of --iters x --rounds, against "
          "the bound of the same round).")


if __name__ == "__main__":
    sys.exit(main())
