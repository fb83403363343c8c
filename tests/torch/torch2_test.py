"""What torch 2 users run, on the "tessera" backend, each against gloo (or one process) on the same seed.

Under a launcher at 2+ ranks (4 for the 2-D mesh). Every part ends the process non-zero, naming itself, when
a result is off:
- functional collectives (torch.distributed._functional_collectives), eagerly and inside torch.compile,
  against the same calls on a gloo group;
- DDP with gradient_as_bucket_view, no_sync accumulation and the bf16 compression hook, against DDP on gloo;
- FSDP2 (fully_shard) of a small transformer, against FSDP2 on a gloo mesh;
- a 2-D DeviceMesh (data x tensor parallel) with DTensor, against one process training the whole model;
- a torch.compile'd DDP training step, against the eager step on gloo.
With TESSERA_DETERMINISTIC=1 the parameters must also be bitwise equal on every rank.
Usage: torch2_test.py [part ...]   (default: every part that fits the world size)
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch  # noqa: F401  (registers the backend)

R = N = 0
GLOO = None
DETERMINISTIC = os.environ.get("TESSERA_DETERMINISTIC") == "1"


def fail(part, msg):
    sys.exit(f"rank {R}: {part}: {msg}")


def close(part, got, want, tol):
    diff = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
    if got.shape != want.shape or not diff <= tol:
        fail(part, f"differs from the reference by {diff} (> {tol}); shapes {tuple(got.shape)} {tuple(want.shape)}")
    return diff


def same_on_every_rank(part, t):
    everyone = [torch.empty_like(t) for _ in range(N)]
    dist.all_gather(everyone, t, group=GLOO)
    same = all(torch.equal(everyone[0], e) for e in everyone)
    if DETERMINISTIC and not same:
        fail(part, "TESSERA_DETERMINISTIC=1 but the ranks' results are not bitwise equal")
    return same


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params])


def report(part, diff, extra=""):
    if R == 0:
        print(f"torch2_test: {part}: {N} ranks, max difference from the reference {diff:.2e}{extra}", flush=True)


# ---- functional collectives ----

def part_functional():
    tessera = dist.group.WORLD
    g = torch.Generator().manual_seed(10 + R)
    x = torch.randn(N * 250, generator=g)  # divisible by the group size, as reduce_scatter and alltoall need
    diff = 0.0
    for name, fn in [
        ("all_reduce", lambda t, grp: funcol.all_reduce(t, "sum", grp)),
        ("all_reduce avg", lambda t, grp: funcol.all_reduce(t, "avg", grp)),
        ("all_gather_tensor", lambda t, grp: funcol.all_gather_tensor(t, 0, grp)),
        ("reduce_scatter_tensor", lambda t, grp: funcol.reduce_scatter_tensor(t, "sum", 0, grp)),
        ("all_to_all_single", lambda t, grp: funcol.all_to_all_single(t, None, None, grp)),
        ("broadcast", lambda t, grp: funcol.broadcast(t, N - 1, grp)),
    ]:
        got = fn(x.clone(), tessera)
        got = got.wait() if hasattr(got, "wait") else got
        want = fn(x.clone(), GLOO)
        want = want.wait() if hasattr(want, "wait") else want
        diff = max(diff, close(f"functional {name}", got, want, 1e-5))
    # A compiled function whose graph holds the _c10d_functional ops (what torch.compile emits for DTensor,
    # FSDP2 and hand-written funcol calls), run on both groups.
    def step(t, grp):
        y = funcol.all_reduce(t * 2.0, "sum", grp)
        return funcol.all_gather_tensor(y + 1.0, 0, grp)
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    got = compiled(x.clone(), tessera)
    want = step(x.clone(), GLOO)
    want = want.wait() if hasattr(want, "wait") else want
    diff = max(diff, close("functional under torch.compile", got, want, 1e-5))
    report("functional collectives (eager and compiled)", diff)


# ---- DDP ----

def mlp():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 8))


def batches(steps, per_rank=16, accum=1):
    g = torch.Generator().manual_seed(99)
    out = []
    for _ in range(steps * accum):
        x = torch.randn(N * per_rank, 32, generator=g)
        y = torch.randn(N * per_rank, 8, generator=g)
        out.append((x[R * per_rank:(R + 1) * per_rank], y[R * per_rank:(R + 1) * per_rank]))
    return out


def bf16_compress(state, bucket):
    """torch's bf16_compress_hook under another name: DDP refuses that name unless CUDA's NCCL or XCCL is there
    (it checks the function's name, not the group's backend), and both Tessera and gloo reduce bf16 on CPU."""
    return default_hooks.bf16_compress_hook(state, bucket)


def train_ddp(group, hook, steps=4, accum=2, compiled=False):
    # Small buckets (several per step) in eager mode; torch.compile's DDPOptimizer wants the first bucket no
    # larger than the others, which DDP's default cap gives.
    model = DDP(mlp(), process_group=group, bucket_cap_mb=25 if compiled else 0.05, gradient_as_bucket_view=True)
    if hook == "bf16":
        model.register_comm_hook(group, bf16_compress)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = batches(steps, accum=accum)

    def loss_of(x, y):
        return nn.functional.mse_loss(model(x), y)
    fwd = torch.compile(loss_of, backend="aot_eager") if compiled else loss_of
    for s in range(steps):
        opt.zero_grad()
        for a in range(accum):
            x, y = data[s * accum + a]
            if a < accum - 1:
                with model.no_sync():  # gradients accumulate locally; the last micro-batch reduces them all
                    fwd(x, y).backward()
            else:
                fwd(x, y).backward()
        opt.step()
    return flat(model.parameters())


def part_ddp():
    diff = 0.0
    for hook, tol in [(None, 2e-5), ("bf16", 2e-2)]:
        got = train_ddp(dist.group.WORLD, hook)
        want = train_ddp(GLOO, hook)
        name = "DDP " + ("bf16 compression hook" if hook else "bucket views + no_sync")
        diff = max(diff, close(name, got, want, tol))
        same_on_every_rank(name, got)
    report("DDP (bucket views, no_sync, bf16 hook)", diff)


def part_compile():
    got = train_ddp(dist.group.WORLD, None, steps=3, accum=1, compiled=True)
    want = train_ddp(GLOO, None, steps=3, accum=1)
    diff = close("torch.compile'd DDP step", got, want, 2e-5)
    same_on_every_rank("torch.compile'd DDP step", got)
    report("torch.compile'd DDP training step", diff)


# ---- FSDP2 ----

class Tiny(nn.Module):
    """A two-layer transformer encoder with an embedding and a head: the shapes FSDP2 shards."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4321)
        self.emb = nn.Embedding(64, 32)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True) for _ in range(2))
        self.head = nn.Linear(32, 64)

    def forward(self, tok):
        h = self.emb(tok)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def train_fsdp(mesh, steps=3):
    from torch.distributed.fsdp import fully_shard
    model = Tiny()
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    # SGD: a sum taken in another order moves a parameter by lr x the rounding; Adam divides tiny gradients by
    # their own size, turning that rounding into steps of lr.
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(7)
    for _ in range(steps):
        tok = torch.randint(0, 64, (N * 2, 8), generator=g)
        mine = tok[R * 2:(R + 1) * 2]
        opt.zero_grad()
        logits = model(mine)
        nn.functional.cross_entropy(logits.reshape(-1, 64), mine.reshape(-1)).backward()
        opt.step()
    return flat(p.full_tensor() for p in model.parameters())


def part_fsdp():
    got = train_fsdp(init_device_mesh("cpu", (N,)))
    want = train_fsdp(DeviceMesh.from_group(GLOO, "cpu"))
    diff = close("FSDP2 fully_shard", got, want, 1e-4)
    same_on_every_rank("FSDP2 fully_shard", got)
    report("FSDP2 fully_shard of a transformer", diff)


# ---- 2-D mesh: data x tensor parallel with DTensor ----

def part_mesh2d():
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (2, N // 2), mesh_dim_names=("dp", "tp"))
    assert mesh["tp"].get_group().group_name != mesh["dp"].get_group().group_name

    def model():
        torch.manual_seed(77)
        return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
    tp = parallelize_module(model(), mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    dp_rank = mesh.get_local_rank("dp")
    ref = model()
    g = torch.Generator().manual_seed(5)
    opt = torch.optim.SGD(tp.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    dp_group = mesh["dp"].get_group()
    for _ in range(3):
        x = torch.randn(4, 16, generator=g)  # the whole batch; data-parallel rank d takes rows 2d, 2d+1
        y = torch.randn(4, 16, generator=g)
        opt.zero_grad()
        nn.functional.mse_loss(tp(x[dp_rank * 2:dp_rank * 2 + 2]), y[dp_rank * 2:dp_rank * 2 + 2]).backward()
        for p in tp.parameters():  # data-parallel average over the dp dimension of the mesh
            local = p.grad.to_local()
            dist.all_reduce(local, op=dist.ReduceOp.AVG, group=dp_group)
        opt.step()
        ref_opt.zero_grad()
        nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    got = flat(p.full_tensor() for p in tp.parameters())
    diff = close("2-D mesh (dp x tp) DTensor", got, flat(ref.parameters()), 1e-5)
    report("2-D DeviceMesh (data x tensor parallel) with DTensor", diff, " (against one process)")


# ---- subgroups as torch 2 makes them ----

def part_subgroups():
    """dist.new_subgroups (consecutive ranks in groups of 2) and a DeviceMesh's row and column groups: each a
    communicator of its members alone; an allreduce in each equals gloo's over the same members."""
    mine, groups = dist.new_subgroups(group_size=2)
    members = [k for k in range(N) if k // 2 == R // 2]
    gloo_mine = None
    for g in [[k for k in range(N) if k // 2 == b] for b in range((N + 1) // 2)]:
        made = dist.new_group(g, backend="gloo")  # every rank takes part in making every group
        if R in g:
            gloo_mine = made
    x = torch.arange(8, dtype=torch.float64) * (R + 1) + R
    got, want = x.clone(), x.clone()
    dist.all_reduce(got, group=mine)
    dist.all_reduce(want, group=gloo_mine)
    close(f"new_subgroups allreduce over ranks {members}", got, want, 0.0)
    report("new_subgroups", 0.0)


PARTS = {"subgroups": part_subgroups, "functional": part_functional, "ddp": part_ddp, "compile": part_compile, "fsdp": part_fsdp,
         "mesh2d": part_mesh2d}


def main():
    global R, N, GLOO
    dist.init_process_group("tessera", timeout=datetime.timedelta(seconds=240))
    R, N = dist.get_rank(), dist.get_world_size()
    if N < 2:
        sys.exit("torch2_test: needs 2 or more ranks")
    GLOO = dist.new_group(backend="gloo")
    chosen = sys.argv[1:] or [p for p in PARTS if p not in ("mesh2d", "subgroups") or N % 2 == 0 and N >= 4 or
                              p == "subgroups" and N % 2 == 0]
    for name in chosen:
        PARTS[name]()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
