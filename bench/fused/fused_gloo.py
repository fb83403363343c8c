#!/usr/bin/python3
"""The unfused row-parallel linear layer with PyTorch: torch.matmul of this rank's shard, then dist.all_reduce
on gloo; the same matrices as bench/fused/fused_tessera.cc. torch.set_num_threads(1). Timed per call after a
barrier, GEMM and allreduce apart; the median over iterations of the slowest rank's times (all_reduce MAX).
usage (under tessera-run, which exports RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
  tessera-run -n N /usr/bin/python3 fused_gloo.py M H ITERS"""
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    m, h, iters = (int(a) for a in sys.argv[1:4])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    me, n = dist.get_rank(), dist.get_world_size()
    k = h // n
    i = torch.arange(m).view(-1, 1)
    j = torch.arange(k).view(1, -1)
    a = ((me * 5 + i * 3 + j) % 7 - 3).float() / 4
    i = torch.arange(k).view(-1, 1)
    j = torch.arange(h).view(1, -1)
    b = ((me * 2 + i + j * 5) % 5 - 2).float() / 4
    warm = iters // 4 + 1
    tot, gem, red = [], [], []
    for it in range(warm + iters):
        dist.barrier()
        t0 = time.perf_counter()
        c = torch.matmul(a, b)
        t1 = time.perf_counter()
        dist.all_reduce(c)
        t = torch.tensor([t1 - t0, time.perf_counter() - t1], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if it >= warm:
            gem.append(t[0].item())
            red.append(t[1].item())
            tot.append(t[0].item() + t[1].item())
    if me == 0:
        print(json.dumps({"impl": "gloo", "ranks": n, "m": m, "h": h, "us": statistics.median(tot) * 1e6,
                          "gemm_us": statistics.median(gem) * 1e6, "allreduce_us": statistics.median(red) * 1e6}))


if __name__ == "__main__":
    main()
