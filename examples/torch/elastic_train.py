"""Data-parallel training that survives a rank's death (resilient mode, docs/resilience.md).

    build/bin/tessera-run -n 4 --on-failure continue build/venv/bin/python examples/torch/elastic_train.py \\
        [steps] [--kill-rank R --kill-step S] [--save-at-recovery FILE] [--resume FILE]

DistributedDataParallel on a small regression model; the batch of rank r at step s is generated from (s, r),
so a run's data depends only on the ranks present. With --kill-rank, that rank kills itself (SIGKILL) at step
--kill-step after its forward pass. The others' backward then raises the failure; they shrink the default
group to the survivors (tessera_torch.shrink_world), agree on the step to redo, wrap the model in a new DDP
(which gives every survivor rank 0's parameters) and go on. --save-at-recovery writes rank 0's model and
step right after the recovery; --resume starts a run from such a file, so that a fresh job of the
survivors' size can check that the survivors' losses are the ones it computes. Rank 0 prints each step's
loss ("step S loss L ranks N").
"""
import argparse
import os
import signal

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch


def batch(step, rank):
    g = torch.Generator().manual_seed(1_000_003 * step + rank)
    x = torch.randn(32, 64, generator=g)
    w_true = torch.randn(64, 1, generator=torch.Generator().manual_seed(7))
    return x, x @ w_true


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="?", type=int, default=40)
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--kill-step", type=int, default=-1)
    ap.add_argument("--save-at-recovery")
    ap.add_argument("--resume")
    ap.add_argument("--lr", type=float, default=0.01)
    args = ap.parse_args()
    dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    step = 0
    if args.resume:
        state = torch.load(args.resume)
        net.load_state_dict(state["model"])
        step = state["step"]
    model = DDP(net)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    recoveries = 0
    while step < args.steps:
        x, y = batch(step, rank)
        try:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            if rank == args.kill_rank and step == args.kill_step and recoveries == 0:
                os.kill(os.getpid(), signal.SIGKILL)
            loss.backward()
        except RuntimeError as e:
            if not tessera_torch.is_peer_failure(e):
                raise
            # The survivors: a new default group, the step every one of them can redo, the model again.
            del model
            rank, size = tessera_torch.shrink_world()
            first = torch.tensor([step], dtype=torch.int64)
            dist.all_reduce(first, op=dist.ReduceOp.MIN)
            step = int(first.item())
            model = DDP(net)
            recoveries += 1
            if rank == 0:
                print(f"recovered: {size} ranks go on from step {step}", flush=True)
                if args.save_at_recovery:
                    torch.save({"model": net.state_dict(), "step": step}, args.save_at_recovery)
            continue
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.9g} ranks {size}", flush=True)
        step += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
