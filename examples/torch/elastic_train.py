"""Data-parallel training that survives a rank's death (resilient mode, docs/resilience.md).

    build/bin/tessera-run -n 4 --on-failure continue build/venv/bin/python examples/torch/elastic_train.py \\
        [steps] [--fsdp2] [--kill-rank R --kill-step S] [--save-at-recovery FILE] [--save-at STEP FILE]
        [--resume FILE] [--grow-after N [--save-at-grow FILE]]

DistributedDataParallel on a small regression model; the batch of rank r at step s is generated from (s, r),
so a run's data depends only on the ranks present. With --kill-rank, that rank kills itself (SIGKILL) at step
--kill-step after its forward pass. The others' backward then raises the failure; they shrink the default
group to the survivors (tessera_torch.shrink_world), agree on the step to redo, wrap the model in a new DDP
(which gives every survivor rank 0's parameters) and go on. --save-at-recovery writes rank 0's model and
step right after the recovery; --resume starts a run from such a file, so that a fresh job of the
survivors' size can check that the survivors' losses are the ones it computes. Rank 0 prints each step's
loss ("step S loss L ranks N").

--fsdp2 shards the same model with FSDP2 (fully_shard) instead of DDP. A rank's death then takes its shards
with it, so after every step each rank also keeps a copy of its left neighbour's shards, passed around the
ring with isend/irecv (a buddy copy: one shard more per rank, not a replica of the model). The survivors
rebuild the full model from their own shards and, for the dead rank's, its right neighbour's copy, then shard
it again over themselves. One failure at a time is survived this way; two neighbours dying at once lose a
shard, which the recovery reports. --save-at STEP FILE writes the full model at the start of STEP (for
comparing a recovered model with the one a run without the failure had).

--grow-after N (DDP; run with tessera-run --restarts 1): N steps after a recovery the survivors grow the
default group back (tessera_torch.grow_world). The replacement the launcher started under the dead rank's
number joins in its init_process_group; it takes the step and the model from the lowest survivor, and all go on
at full size. --save-at-grow writes rank 0's model and step right after the grow, for a fresh job of the full
size to resume from.
"""
import argparse
import math
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


def make_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))


def shard(net):
    """FSDP2 over the current default group: each Linear, then the whole model."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for layer in net:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(net, mesh=mesh)
    return net


def shard_numel(shape, r, n):
    """Elements of a parameter of `shape` that FSDP2 gives rank r of n: a block of rows of dim 0, as
    torch.chunk cuts them (ceil(rows / n) each, the last ranks fewer or none)."""
    rows = math.ceil(shape[0] / n)
    return max(0, min(rows, shape[0] - r * rows)) * math.prod(shape[1:])


def local_shards(net):
    """This rank's shards of every parameter, flattened into one tensor."""
    return torch.cat([p.detach().to_local().reshape(-1) for p in net.parameters()])


class Buddy:
    """The copy of the left neighbour's shards (--fsdp2), renewed after every step."""

    def __init__(self, shapes, rank, size):
        self.shapes, self.rank, self.size = shapes, rank, size
        left = (rank - 1) % size
        self.copy = torch.empty(sum(shard_numel(s, left, size) for s in shapes))

    def exchange(self, net):
        mine = local_shards(net)
        want = sum(shard_numel(s, self.rank, self.size) for s in self.shapes)
        assert mine.numel() == want, f"FSDP2 gave rank {self.rank} {mine.numel()} elements, not {want}"
        reqs = [dist.isend(mine, (self.rank + 1) % self.size), dist.irecv(self.copy, (self.rank - 1) % self.size)]
        for r in reqs:
            r.wait()

    def rebuild(self, net):
        """Collective over the survivors (the new default group): the full parameters, put together from
        every survivor's own shards and the buddy copies of the ranks that died."""
        held = {self.rank: local_shards(net), (self.rank - 1) % self.size: self.copy}
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, held)
        shards = {}
        for h in everyone:
            shards.update(h)
        lost = sorted(set(range(self.size)) - set(shards))
        if lost:
            raise RuntimeError(f"the shards of old ranks {lost} are lost: they and their right neighbours failed")
        at = [0] * self.size
        full = []
        for shape in self.shapes:
            pieces = []
            for r in range(self.size):
                k = shard_numel(shape, r, self.size)
                pieces.append(shards[r][at[r]:at[r] + k])
                at[r] += k
            full.append(torch.cat(pieces).reshape(shape))
        return full


def full_params(net):
    """The full parameters (collective under FSDP2)."""
    return [p.detach().full_tensor() if hasattr(p, "full_tensor") else p.detach().clone() for p in net.parameters()]


def save(path, params, step):
    names = [n for n, _ in make_net().named_parameters()]
    torch.save({"model": dict(zip(names, params)), "step": step}, path)


def take_over(net, step, replacement):
    """After a grow, collective over the grown group: the step and the parameters of the lowest-ranked
    survivor, to every rank (the replacements start from make_net())."""
    src = torch.tensor([dist.get_world_size() if replacement else dist.get_rank()], dtype=torch.int64)
    dist.all_reduce(src, op=dist.ReduceOp.MIN)
    at = torch.tensor([step], dtype=torch.int64)
    dist.broadcast(at, int(src.item()))
    with torch.no_grad():
        for p in net.parameters():
            dist.broadcast(p.data, int(src.item()))
    return int(at.item())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="?", type=int, default=40)
    ap.add_argument("--fsdp2", action="store_true")
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--kill-step", type=int, default=-1)
    ap.add_argument("--save-at-recovery")
    ap.add_argument("--save-at", nargs=2, metavar=("STEP", "FILE"))
    ap.add_argument("--resume")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--grow-after", type=int, default=0)
    ap.add_argument("--save-at-grow")
    args = ap.parse_args()
    if args.grow_after and args.fsdp2:
        ap.error("--grow-after works with DDP (the replacement would need its shards rebuilt under FSDP2)")
    replacement = tessera_torch.incarnation() > 0
    if replacement:
        # A replacement (tessera-run --restarts): this default group joins the survivors' grow.
        dist.init_process_group("tessera", store=dist.HashStore(), rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("tessera")
    rank, size = dist.get_rank(), dist.get_world_size()
    full_size = size
    net = make_net()
    shapes = [p.shape for p in net.parameters()]
    step = 0
    if replacement:
        step = take_over(net, 0, replacement=True)
    if args.resume:
        state = torch.load(args.resume)
        net.load_state_dict(state["model"])
        step = state["step"]

    def wrap(net):
        """The model and optimizer over the current default group (and the buddy copy under FSDP2)."""
        if not args.fsdp2:
            return DDP(net), torch.optim.SGD(net.parameters(), lr=args.lr), None
        net = shard(net)
        buddy = Buddy(shapes, dist.get_rank(), dist.get_world_size())
        buddy.exchange(net)
        return net, torch.optim.SGD(net.parameters(), lr=args.lr), buddy

    model, opt, buddy = wrap(net)
    recoveries = 1 if replacement else 0
    since_recovery = 0
    while step < args.steps:
        if args.grow_after and size < full_size and since_recovery == args.grow_after:
            rank, size = tessera_torch.grow_world()
            del model, opt
            step = take_over(net, step, replacement=False)
            model, opt, buddy = wrap(net)
            if rank == 0:
                print(f"grown: {size} ranks go on from step {step}", flush=True)
                if args.save_at_grow:
                    save(args.save_at_grow, [p.detach().clone() for p in net.parameters()], step)
        if args.save_at and step == int(args.save_at[0]):
            params = full_params(net if not args.fsdp2 else model)
            if rank == 0:
                save(args.save_at[1], params, step)
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
            rank, size = tessera_torch.shrink_world()
            if args.fsdp2:
                params = buddy.rebuild(model)
                net = make_net()
                with torch.no_grad():
                    for p, v in zip(net.parameters(), params):
                        p.copy_(v)
            else:
                params = [p.detach().clone() for p in net.parameters()]
            del model, opt
            first = torch.tensor([step], dtype=torch.int64)
            dist.all_reduce(first, op=dist.ReduceOp.MIN)
            step = int(first.item())
            model, opt, buddy = wrap(net)
            recoveries += 1
            since_recovery = 0
            if rank == 0:
                print(f"recovered: {size} ranks go on from step {step}", flush=True)
                if args.save_at_recovery:
                    save(args.save_at_recovery, params, step)
            continue
        opt.step()
        if buddy:
            buddy.exchange(model)
        if rank == 0:
            print(f"step {step} loss {loss.item():.9g} ranks {size}", flush=True)
        step += 1
        since_recovery += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
