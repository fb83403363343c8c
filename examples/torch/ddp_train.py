"""Data-parallel training with PyTorch on Tessera: the one-word switch.

    build/bin/tessera-run -n 4 build/venv/bin/python examples/torch/ddp_train.py [steps] [backend]
        [--compress bf16|fp8|int8] [--no-feedback] [--lr LR] [--seed S] [--label-noise SIGMA] [--cosine]

A small regression model trained with DistributedDataParallel on data generated here; each rank trains on
its shard. The backend is "tessera" unless named ("gloo" for comparison). --compress averages the gradients
with tessera_torch.compressed_allreduce_hook: the phase between hosts coded as named, with error feedback
unless --no-feedback (on one host nothing is coded). Prints the loss and the median step time from rank 0,
and at the end the loss on a fixed evaluation set (the same data and seeds in every run, so that runs with
and without compression compare). --label-noise adds noise of that standard deviation to the targets, so
that the loss has a floor (SIGMA squared) that training reaches instead of falling for ever; --cosine decays
the learning rate to zero by the last step (cosine), so that runs end settled rather than mid-descent.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="?", type=int, default=30)
    ap.add_argument("backend", nargs="?", default="tessera")
    ap.add_argument("--compress", choices=["bf16", "fp8", "int8"])
    ap.add_argument("--no-feedback", action="store_true")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0, help="shifts every generator (model, data, evaluation set)")
    ap.add_argument("--label-noise", type=float, default=0.0)
    ap.add_argument("--cosine", action="store_true")
    args = ap.parse_args()
    dist.init_process_group(args.backend)
    r, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    model = DDP(nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)))
    if args.compress:
        state = tessera_torch.CompressedHookState(args.compress, error_feedback=not args.no_feedback)
        model.register_comm_hook(state, tessera_torch.compressed_allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps) if args.cosine else None
    g = torch.Generator().manual_seed(1 + r + 1000 * args.seed)
    w_true = torch.randn(64, 1, generator=torch.Generator().manual_seed(7 + args.seed))
    times = []
    for step in range(args.steps):
        x = torch.randn(32, 64, generator=g)
        y = x @ w_true
        if args.label_noise:
            y = y + args.label_noise * torch.randn(y.shape, generator=g)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        times.append(time.perf_counter() - t0)
        if r == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:3d}  loss {loss.item():.4f}")
    x = torch.randn(1024, 64, generator=torch.Generator().manual_seed(11 + args.seed))
    y = x @ w_true
    if args.label_noise:
        y = y + args.label_noise * torch.randn(y.shape, generator=torch.Generator().manual_seed(13 + args.seed))
    with torch.no_grad():
        eval_loss = nn.functional.mse_loss(model.module(x), y).item()
    params = sum(p.numel() for p in model.parameters())
    if r == 0:
        coded = f", {args.compress} {'without' if args.no_feedback else 'with'} feedback" if args.compress else ""
        print(f"{args.backend}{coded}: {n} ranks, {params / 1e6:.1f} M parameters, "
              f"median step {statistics.median(times[3:]) * 1e3:.2f} ms")
        print(f"eval loss {eval_loss:.6f}")


if __name__ == "__main__":
    main()
