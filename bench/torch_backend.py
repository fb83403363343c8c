#!/usr/bin/env python3
"""Tessera's torch.distributed backend ("tessera", python/tessera_torch) against PyTorch 2's gloo, through
the public torch.distributed API, one backend and one rank count per run (bench/torch_backend.sh runs both
backends at 2 and 4 ranks and prints the merged table).

Measures, on ordinary CPU float32 tensors (torch.empty, not tessera_torch.empty: the tensors a user has):
  1. all_reduce (SUM), broadcast (root 0, in place), reduce (root 0), all_gather (list), _all_gather_base,
     reduce_scatter (list), all_to_all_single at 8 B, 1 MiB, 16 MiB and 64 MiB, and barrier once. "bytes" is the
     whole buffer: all_reduce/broadcast/reduce the tensor; all_gather and _all_gather_base the gathered
     output (each rank gives bytes/n); reduce_scatter the input (each rank keeps bytes/n); all_to_all_single
     each side's buffer. Below 4*n bytes the split collectives take one float per rank (the row says so).
     Each call is checked once against the expected values, then the tensors are zeroed (a running SUM
     would overflow) and timed: warm-up calls, a barrier, then ITERS calls, each timed on its own; a rank's
     figure is its median call, the row's the slowest rank's median. A call gloo does not implement is "n/a".
  2. DistributedDataParallel training step (forward + backward with the gradient allreduce + SGD step) of an
     MLP 1024-4096-4096-1024 (25.2 M float32 parameters, ReLU, MSE loss), batch 32 per rank, DDP's default
     25 MiB buckets: the slowest rank's median step; samples/s = n * 32 / that. The same step under
     DDP.no_sync() (no gradient communication) is measured too, as the floor the backends share.
     ResNet-50's gradient buckets when torchvision is importable, else a line that says it was skipped.
  3. (tessera only) the DDP step with tessera_torch's comm hook (SymmetricHookState, symmetric_allreduce_hook).
  4. FSDP2 (fully_shard of every Linear and of the whole MLP) training step of the same model and batch.
  5. The steps' parts, measured alone in the same run: the compute (the plain model's forward, backward and
     SGD step in one process, no DDP or FSDP), the framework's copies (the gradients copied into flat buckets
     and back, as DDP does each step) and the communication (DDP's 25 MiB buckets allreduced; FSDP2's
     per-layer all_gather_into_tensor of the parameters, twice, forward and backward, and
     reduce_scatter_tensor of the gradients).
Both backends get the same tensors, sizes, iteration counts, seeds and thread settings. The timings are
gathered over a separate gloo group for both backends (dist.new_group(backend="gloo")), whose barrier also
starts every timed loop, so the synchronisation around the timing is the same for the two.

Threads: torch.set_num_threads(1) (and OMP_NUM_THREADS=1 from the driver) for both backends. The machine has
2 CPUs; tessera-run gives each of 2 ranks a CPU of its own and puts 2 ranks on each CPU at 4 ranks, so more
than one intra-op thread per rank would oversubscribe the CPUs and take them from both backends'
communication threads.

usage (under the launcher, which sets RANK, WORLD_SIZE, MASTER_ADDR/PORT and PYTHONPATH):
  tessera-run -n N build/venv/bin/python bench/torch_backend.py --backend tessera|gloo --out results.jsonl [--quick]
  build/venv/bin/python bench/torch_backend.py --report results.jsonl     # the table of every run in the file
                                                                          # (bench/torch_report.py)
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cpu_model  # noqa: E402

MiB = 1 << 20
SIZES = (8, MiB, 16 * MiB, 64 * MiB)
COLLS = ("all_reduce", "all_reduce_symmetric", "broadcast", "reduce", "all_gather", "_all_gather_base", "reduce_scatter",
         "all_to_all_single", "barrier")
# (warm-up calls, timed calls) per size; barrier as the 8 B row.
ITERS = {8: (50, 500), MiB: (5, 40), 16 * MiB: (2, 12), 64 * MiB: (2, 8)}
QUICK = {8: (5, 30), MiB: (2, 6), 16 * MiB: (1, 3), 64 * MiB: (1, 2)}
BATCH, WIDTHS = 32, (1024, 4096, 4096, 1024)
DDP_WARM, DDP_STEPS = 3, 20


def ddp_bucket_sizes(numels):
    """DDP's default bucket layout, in float32 elements: the parameters in reverse order, a bucket closed once
    it holds 25 MiB or more."""
    sizes, cur = [], 0
    for k in reversed(numels):
        cur += k
        if cur * 4 >= 25 * MiB:
            sizes.append(cur)
            cur = 0
    if cur:
        sizes.append(cur)
    return sizes


# ----------------------------------------------------------------------------------------------------------
# measuring (one backend, one rank count)

def run(args):
    # Both backends, and the gloo side group under tessera, talk over loopback (MASTER_ADDR is 127.0.0.1).
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import warnings
    warnings.filterwarnings("ignore", message=".*_all_gather_base is a private function")
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2 renames the old collectives
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)  # see the module docstring: 2 CPUs, 1 or 2 ranks per CPU
    if args.backend == "tessera":
        import tessera_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(args.backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    side = dist.new_group(backend="gloo")  # timings and the pre-timing barrier, the same for both backends
    iters = QUICK if args.quick else ITERS
    # The driver runs gloo both with tessera-run's default binding and unbound (--bind-to none); the report
    # takes the better of the two per row and says which won.
    base = {"backend": args.backend, "ranks": n, "binding": os.environ.get("TORCH_BENCH_BINDING", "default")}
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])

    def emit(rec):
        if rank == 0:
            with open(args.out, "a") as f:
                f.write(json.dumps(dict(base, **rec)) + "\n")
            print(json.dumps(dict(base, **rec)), file=sys.stderr, flush=True)

    def slowest(x):
        t = torch.tensor([x], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=side)
        return t.item()

    def all_true(ok):
        t = torch.tensor([0 if ok else 1], dtype=torch.int32)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=side)
        return t.item() == 0

    def timed(fn, warm, count):
        for _ in range(warm):
            fn()
        dist.barrier(group=side)
        ts = []
        for _ in range(count):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return slowest(statistics.median(ts)), slowest(min(ts))

    emit({"kind": "env", "cpu": cpu_model(), "nproc": os.cpu_count(), "torch": torch.__version__,
          "threads": torch.get_num_threads(), "loadavg": load, "quick": bool(args.quick)})

    # ---- 1. collectives
    def setup(coll, nbytes):
        """(fn, check, zero, actual bytes, note): fn runs one call; check() after one call on rank-valued
        inputs says whether the result is right; zero() clears the tensors before the timing."""
        numel = max(1, nbytes // 4)
        part = max(1, numel // n)  # per-rank piece of the split collectives
        note = ""
        r1 = float(rank + 1)
        tot = n * (n + 1) / 2  # sum over ranks of rank + 1
        if coll == "barrier":
            return (lambda: dist.barrier(), lambda: True, lambda: None, 0, note)
        if coll == "all_reduce":
            t = torch.full((numel,), r1)
            return (lambda: dist.all_reduce(t), lambda: bool((t == tot).all()), t.zero_, numel * 4, note)
        if coll == "all_reduce_symmetric":
            # tessera only: the tensor in symmetric memory (tessera_torch.empty), the zero-copy path
            import tessera_torch
            t = tessera_torch.empty(numel).fill_(r1)
            return (lambda: dist.all_reduce(t), lambda: bool((t == tot).all()), t.zero_, numel * 4, note)
        if coll == "broadcast":
            t = torch.full((numel,), r1)
            return (lambda: dist.broadcast(t, 0), lambda: bool((t == 1.0).all()), t.zero_, numel * 4, note)
        if coll == "reduce":
            t = torch.full((numel,), r1)
            return (lambda: dist.reduce(t, 0), lambda: rank != 0 or bool((t == tot).all()), t.zero_, numel * 4,
                    note)
        if part * n * 4 != nbytes:
            note = f"{part} float(s) per rank"
        if coll == "all_gather":
            src = torch.full((part,), r1)
            outs = [torch.empty(part) for _ in range(n)]
            return (lambda: dist.all_gather(outs, src), lambda: all(bool((o == i + 1).all()) for i, o in enumerate(outs)),
                    src.zero_, part * n * 4, note)
        if coll == "_all_gather_base":
            src = torch.full((part,), r1)
            out = torch.empty(part * n)
            want = torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(part)
            return (lambda: dist._all_gather_base(out, src), lambda: bool(torch.equal(out, want)), src.zero_,
                    part * n * 4, note)
        if coll == "reduce_scatter":
            ins = [torch.full((part,), r1 * (i + 1)) for i in range(n)]
            out = torch.empty(part)
            return (lambda: dist.reduce_scatter(out, ins), lambda: bool((out == tot * (rank + 1)).all()),
                    lambda: [x.zero_() for x in ins], part * n * 4, note)
        if coll == "all_to_all_single":
            # block j of rank i holds 100 i + j; rank r receives 100 i + r from every i
            src = (torch.arange(n, dtype=torch.float32) + 100 * rank).repeat_interleave(part)
            out = torch.empty(part * n)
            want = (torch.arange(n, dtype=torch.float32) * 100 + rank).repeat_interleave(part)
            return (lambda: dist.all_to_all_single(out, src), lambda: bool(torch.equal(out, want)), src.zero_,
                    part * n * 4, note)
        raise ValueError(coll)

    for coll in COLLS:
        if coll == "_all_gather_base" and not hasattr(dist, "_all_gather_base"):
            emit({"kind": "coll", "coll": coll, "bytes": 0, "na": "torch.distributed has no _all_gather_base"})
            continue
        if coll == "all_reduce_symmetric" and args.backend != "tessera":
            continue  # the report compares it with gloo's all_reduce of an ordinary tensor
        for nbytes in (SIZES[:1] if coll == "barrier" else SIZES):
            fn, check, zero, actual, note = setup(coll, nbytes)
            rec = {"kind": "coll", "coll": coll, "bytes": nbytes, "actual_bytes": actual, "note": note}
            try:
                fn()
            except RuntimeError as e:  # raised locally on every rank before any communication (gloo)
                msg = str(e).splitlines()[0]
                # gloo: "no support for ..." / "does not support ..."; anything else from tessera is an error
                key = "na" if args.backend == "gloo" and "support" in msg else "error"
                emit(dict(rec, **{key: msg}))
                continue
            if not all_true(check()):
                emit(dict(rec, error="wrong result after the first call"))
                continue
            zero()
            warm, count = iters[nbytes]
            med, best = timed(fn, warm, count)
            emit(dict(rec, us=med * 1e6, min_us=best * 1e6, iters=count, warmup=warm))
            del fn, check, zero

    # ---- 2./3. DDP training step
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    def mlp():
        torch.manual_seed(0)
        layers = []
        for i in range(len(WIDTHS) - 1):
            layers.append(nn.Linear(WIDTHS[i], WIDTHS[i + 1]))
            if i + 2 < len(WIDTHS):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    torch.manual_seed(1000 + rank)
    x = torch.randn(BATCH, WIDTHS[0])
    y = torch.randn(BATCH, WIDTHS[-1])
    variants = [("ddp", None), ("ddp_no_sync", None)]
    if args.backend == "tessera":
        variants.append(("ddp_symmetric_hook", "hook"))
    for name, hook in variants:
        model = DDP(mlp())
        if hook:
            import tessera_torch
            model.register_comm_hook(tessera_torch.SymmetricHookState(), tessera_torch.symmetric_allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        params = sum(p.numel() for p in model.parameters())

        def step():
            opt.zero_grad(set_to_none=False)
            # no_sync must cover the forward too: DDP decides at forward time whether the backward syncs
            with model.no_sync() if name == "ddp_no_sync" else contextlib.nullcontext():
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
            opt.step()
            return loss

        try:
            med, best = timed(step, DDP_WARM, 2 if args.quick else DDP_STEPS)
        except RuntimeError as e:
            emit({"kind": "ddp", "variant": name, "error": str(e).splitlines()[0]})
            continue
        # the replicas must agree after synchronised steps (DDP's contract): compare a checksum over ranks
        if name != "ddp_no_sync":
            s = sum(float(p.detach().double().sum()) for p in model.parameters())
            lo = slowest(-s)
            hi = slowest(s)
            agree = abs(hi + lo) <= 1e-6 * max(1.0, abs(hi))
        else:
            agree = None
        emit({"kind": "ddp", "variant": name, "ms": med * 1e3, "min_ms": best * 1e3, "batch": BATCH,
              "params": params, "samples_per_s": n * BATCH / med, "steps": 2 if args.quick else DDP_STEPS, "replicas_agree": agree})
        del model, opt

    # ---- 4. FSDP2 step, 5. the steps' parts alone
    from torch.distributed.fsdp import fully_shard
    steps = 2 if args.quick else DDP_STEPS
    fsdp = mlp()
    for m in fsdp:
        if isinstance(m, nn.Linear):
            fully_shard(m)
    fully_shard(fsdp)
    opt = torch.optim.SGD(fsdp.parameters(), lr=1e-3)

    def fsdp_step():
        opt.zero_grad(set_to_none=False)
        nn.functional.mse_loss(fsdp(x), y).backward()
        opt.step()
    try:
        med, best = timed(fsdp_step, DDP_WARM, steps)
        emit({"kind": "ddp", "variant": "fsdp2", "ms": med * 1e3, "min_ms": best * 1e3, "batch": BATCH,
              "samples_per_s": n * BATCH / med, "steps": steps})
    except RuntimeError as e:
        emit({"kind": "ddp", "variant": "fsdp2", "error": str(e).splitlines()[0]})
    del fsdp, opt

    local = mlp()
    opt = torch.optim.SGD(local.parameters(), lr=1e-3)

    def compute_step():
        opt.zero_grad(set_to_none=False)
        nn.functional.mse_loss(local(x), y).backward()
        opt.step()
    med, _ = timed(compute_step, DDP_WARM, steps)
    emit({"kind": "part", "part": "compute", "ms": med * 1e3})
    grads = [p.detach().clone() for p in local.parameters()]
    total = sum(g.numel() for g in grads)
    flat_buf = torch.empty(total)

    def copies():
        off = 0
        for g in grads:
            flat_buf[off:off + g.numel()].copy_(g.reshape(-1))
            off += g.numel()
        off = 0
        for g in grads:
            g.reshape(-1).copy_(flat_buf[off:off + g.numel()])
            off += g.numel()
    med, _ = timed(copies, 2, steps)
    emit({"kind": "part", "part": "copies", "ms": med * 1e3})
    sizes = ddp_bucket_sizes([g.numel() for g in grads])
    buckets = [torch.zeros(b) for b in sizes]

    def ddp_comm():
        for b in buckets:
            dist.all_reduce(b)
    med, _ = timed(ddp_comm, 1, steps)
    emit({"kind": "part", "part": "comm_ddp", "ms": med * 1e3, "buckets": len(sizes)})
    layers = [m for m in local if isinstance(m, nn.Linear)]
    shards = [torch.zeros((m.weight.numel() + m.bias.numel() + n - 1) // n) for m in layers]
    fulls = [torch.empty(s.numel() * n) for s in shards]

    def fsdp_comm():
        for _ in range(2):  # forward, and again for the backward (FSDP2 frees the unsharded parameters)
            for s, f in zip(shards, fulls):
                dist.all_gather_into_tensor(f, s)
        for s, f in zip(shards, fulls):
            dist.reduce_scatter_tensor(s, f)
    med, _ = timed(fsdp_comm, 1, steps)
    emit({"kind": "part", "part": "comm_fsdp", "ms": med * 1e3})
    del local, opt, grads, buckets, shards, fulls

    try:
        import torchvision  # noqa: F401
        have_tv = True
    except ImportError:
        have_tv = False
    if not have_tv:
        emit({"kind": "resnet50", "skipped": "torchvision is not installed"})
    else:
        # ResNet-50's gradients: DDP's buckets (default 25 MiB, the bucket layout DDP builds from the model's
        # parameters in reverse order), each allreduced once per step as flat float32 tensors.
        model = torchvision.models.resnet50()
        buckets = ddp_bucket_sizes([p.numel() for p in model.parameters() if p.requires_grad])
        bufs = [torch.zeros(b) for b in buckets]

        def grads():
            for b in bufs:
                dist.all_reduce(b)
        med, best = timed(grads, 2, 2 if args.quick else 10)
        emit({"kind": "resnet50", "ms": med * 1e3, "min_ms": best * 1e3, "buckets": len(bufs),
              "floats": sum(buckets)})

    dist.barrier(group=side)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("tessera", "gloo"))
    ap.add_argument("--out", help="append JSON lines here (rank 0)")
    ap.add_argument("--quick", action="store_true", help="few iterations: a smoke test, not a measurement")
    ap.add_argument("--report", metavar="JSONL", help="print the side-by-side table of the runs in JSONL")
    args = ap.parse_args()
    if args.report:
        from torch_report import report  # here: torch_report imports this module's constants
        report(args.report)
    elif args.backend and args.out:
        run(args)
    else:
        ap.error("--backend and --out (under tessera-run), or --report")


if __name__ == "__main__":
    main()
