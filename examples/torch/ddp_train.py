"""Data-parallel training with PyTorch on Tessera: the one-word switch.

    build/bin/tessera-run -n 4 build/venv/bin/python examples/torch/ddp_train.py [steps] [backend]

A small regression model trained with DistributedDataParallel on data generated here; each rank trains on
its shard. The backend is "tessera" unless named ("gloo" for comparison). Prints the loss and the median
step time from rank 0.
"""
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch  # noqa: F401  (registers the "tessera" backend)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    backend = sys.argv[2] if len(sys.argv) > 2 else "tessera"
    dist.init_process_group(backend)
    r, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1 + r)
    w_true = torch.randn(64, 1, generator=torch.Generator().manual_seed(7))
    times = []
    for step in range(steps):
        x = torch.randn(32, 64, generator=g)
        y = x @ w_true
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if r == 0 and (step % 10 == 0 or step == steps - 1):
            print(f"step {step:3d}  loss {loss.item():.4f}")
    params = sum(p.numel() for p in model.parameters())
    if r == 0:
        print(f"{backend}: {n} ranks, {params / 1e6:.1f} M parameters, median step {statistics.median(times[3:]) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
