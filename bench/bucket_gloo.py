#!/usr/bin/env python3
"""PyTorch side of bench/bucket_compare.sh: one data-parallel step's gradient allreduce over ResNet-50's
parameter shapes (the list tools/perf/perf_bucket.cc builds), with the gloo backend:
  - one dist.all_reduce per gradient, in backward order;
  - DistributedDataParallel with bucket_cap_mb buckets: the time of a backward pass with gradient sync
    minus the same backward pass under no_sync() (so the backward's own work is not counted).
Prints one JSON line (rank 0). usage: bucket_gloo.py <np> [steps] [bucket_mb]"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def resnet50_shapes():
    s = []

    def conv_bn(cin, cout, k):
        s.extend([cin * cout * k * k, cout, cout])

    conv_bn(3, 64, 7)
    cin = 64
    for w, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for b in range(blocks):
            conv_bn(cin, w, 1)
            conv_bn(w, w, 3)
            conv_bn(w, 4 * w, 1)
            if b == 0:
                conv_bn(cin, 4 * w, 1)
            cin = 4 * w
    s.extend([2048 * 1000, 1000])
    return s


class Params(torch.nn.Module):
    def __init__(self, shapes):
        super().__init__()
        self.ps = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(n)) for n in shapes])

    def forward(self, scale):
        # d(loss)/d(p) = scale for every element: the backward pass just fills the gradients.
        return sum((p * scale).sum() for p in self.ps)


def slowest_mean(ts):
    t = torch.tensor([sum(ts) / len(ts)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item() * 1e3


def worker(rank, np_, steps, bucket_mb, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=np_)
    shapes = resnet50_shapes()
    grads = [torch.full((n,), float(rank + 1)) for n in shapes]
    warm = 2
    ts = []
    for k in range(warm + steps):
        dist.barrier()
        t0 = time.perf_counter()
        for g in reversed(grads):
            dist.all_reduce(g)
            g /= np_
        if k >= warm:
            ts.append(time.perf_counter() - t0)
    per_tensor = slowest_mean(ts)
    want = (np_ + 1) / 2
    for g in grads:  # the mean of (rank + 1), and it stays so in later steps
        if abs(g[0].item() - want) > 1e-4 or abs(g[-1].item() - want) > 1e-4:
            raise SystemExit(f"bucket_gloo.py: per-tensor gradient {g[0].item()} != {want}")

    model = torch.nn.parallel.DistributedDataParallel(Params(shapes), bucket_cap_mb=bucket_mb)
    scale = torch.tensor(float(rank + 1))

    def step(sync):
        model.zero_grad(set_to_none=False)
        dist.barrier()
        t0 = time.perf_counter()
        if sync:
            model(scale).backward()
        else:
            with model.no_sync():
                model(scale).backward()
        return time.perf_counter() - t0

    with_sync, without = [], []
    for k in range(warm + steps):
        a, b = step(True), step(False)
        if k >= warm:
            with_sync.append(a)
            without.append(b)
    # DDP averages: every gradient element must be the mean of (rank + 1).
    step(True)
    for p in model.module.ps:
        if abs(p.grad[0].item() - want) > 1e-4:
            raise SystemExit(f"bucket_gloo.py: DDP gradient {p.grad[0].item()} != {want}")
    ddp = slowest_mean(with_sync) - slowest_mean(without)
    if rank == 0:
        print(json.dumps({"lib": "gloo", "ranks": np_, "tensors": len(shapes), "floats": sum(shapes),
                          "bucket_mb": bucket_mb, "per_tensor_ms": round(per_tensor, 3), "ddp_ms": round(ddp, 3)}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    np_ = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    bucket_mb = float(sys.argv[3]) if len(sys.argv) > 3 else 25
    port = 29500 + (os.getpid() % 2000)
    mp.spawn(worker, args=(np_, steps, bucket_mb, port), nprocs=np_, join=True)
