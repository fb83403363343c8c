"""DDP training on the "tessera" backend matches single-process training on the full batch.

Each rank trains on its shard of a batch generated here (same seed everywhere); DDP averages the
gradients, so after every step the parameters must equal those of one process that trained on the whole
batch, within float32 rounding (the sums are taken in another order). With TESSERA_DETERMINISTIC=1 the
parameters must also be bitwise identical on every rank. Both DDP's own allreduce and tessera_torch's
symmetric-memory comm hook are checked, with buckets small enough that there are several.
Usage: ddp_test.py [steps]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch

TOL = 2e-5  # float32 sums taken in another order differ by rounding, far below this; a wrong sum is far above


def make_model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(32, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8))


def flat_params(m):
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def train(model, x, y, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return model


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    dist.init_process_group("tessera")
    r, n = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(99)
    per_rank = 16
    x = torch.randn(n * per_rank, 32, generator=g)
    y = torch.randn(n * per_rank, 8, generator=g)
    shard = slice(r * per_rank, (r + 1) * per_rank)

    want = flat_params(train(make_model(), x, y, steps))
    deterministic = os.environ.get("TESSERA_DETERMINISTIC") == "1"
    for hook in [False, True]:
        model = DDP(make_model(), bucket_cap_mb=0.1)  # ~330 KB of gradients: several buckets
        if hook:
            model.register_comm_hook(tessera_torch.SymmetricHookState(), tessera_torch.symmetric_allreduce_hook)
        got = flat_params(train(model, x[shard], y[shard], steps))
        what = "symmetric comm hook" if hook else "DDP's allreduce"
        diff = (got - want).abs().max().item()
        if diff > TOL:
            sys.exit(f"rank {r}: {what}: parameters differ from single-process training by {diff} (> {TOL})")
        everyone = [torch.empty_like(got) for _ in range(n)]
        dist.all_gather(everyone, got)
        same = all(torch.equal(everyone[0], e) for e in everyone)
        if deterministic and not same:
            sys.exit(f"rank {r}: {what}: TESSERA_DETERMINISTIC=1 but the ranks' parameters are not bitwise equal")
        if r == 0:
            print(f"ddp_test: {what}: {n} ranks, {steps} steps, max difference from one process {diff:.2e}; "
                  f"ranks bitwise equal: {same}")


if __name__ == "__main__":
    main()
