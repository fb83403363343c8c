"""Compressed gradient reductions from torch (tessera_torch.set_compression, compressed_allreduce_hook;
docs/torch.md), at 2 ranks on one host (tests/torch/torch.cmake) and at 2 hosts x 2 ranks
(tests/hosts/torch_hosts_test.sh). Every check asserts:
- DDP with the hook gives the same gradients on every rank, bit for bit; on one host they are the exact
  average (nothing is coded); across hosts, int8 and bf16 are within their error bounds of the exact average
  and not equal to it (the phase between hosts really was coded);
- with error feedback, 20 steps on one fixed gradient average to the exact value within the error of one
  call, closer than without feedback, where every step makes the same error;
- set_compression on a plain group codes its all_reduce across hosts and "none" makes it exact again;
- FSDP2 (fully_shard) on a mesh whose group is set to bf16 gives gradients within bf16's bound of an exact
  mesh's (and, across hosts, not equal to them);
- set_allgather_compression codes a group's all_gather across hosts, the same bits on every rank and each
  rank's own shard decoded too, within int8's bound, leaves its all_reduce exact, and FSDP2 on it gives
  gradients within bf16's bound; on one host nothing changes, and "none" makes it exact again;
- errors name what is wrong: an unknown mode, and ranks that disagree on the mode.
"""
import os
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tessera_torch
from checks import expect_error


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 1))


def local_grads(rank):
    """This rank's gradients of one step, without DDP, as one flat tensor."""
    m = model()
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1 + rank))
    nn.functional.mse_loss(m(x), x.sum(1, keepdim=True)).backward()
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


def ddp_grads(rank, mode, feedback):
    """The gradients DDP leaves after one step of the same data with compressed_allreduce_hook."""
    m = DDP(model())
    m.register_comm_hook(tessera_torch.CompressedHookState(mode, error_feedback=feedback),
                         tessera_torch.compressed_allreduce_hook)
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1 + rank))
    nn.functional.mse_loss(m(x), x.sum(1, keepdim=True)).backward()
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


def fsdp_grads(rank, mesh):
    """The full gradients FSDP2 leaves after one step on this rank's data."""
    from torch.distributed.fsdp import fully_shard
    m = model()
    for layer in m:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1 + rank))
    nn.functional.mse_loss(m(x), x.sum(1, keepdim=True)).backward()
    return torch.cat([p.grad.full_tensor().reshape(-1) for p in m.parameters()])


def same_on_every_rank(t, what):
    everyone = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, t)
    for r, o in enumerate(everyone):
        assert torch.equal(o, t), f"{what}: rank {r} holds other bits than rank {dist.get_rank()}"


def main():
    dist.init_process_group("tessera")
    rank, n = dist.get_rank(), dist.get_world_size()
    across = int(os.environ.get("LOCAL_WORLD_SIZE", n)) < n
    exact = local_grads(rank)
    dist.all_reduce(exact, op=dist.ReduceOp.AVG)  # the default group is not coded
    # Bounds relative to the gradient's norm: int8 keeps about 7 bits per block, bf16 8 bits of mantissa.
    for mode, bound in (("int8", 2e-2), ("bf16", 1e-2)):
        got = ddp_grads(rank, mode, True)
        same_on_every_rank(got, f"DDP + {mode} hook")
        err = ((got - exact).norm() / exact.norm()).item()
        if across:
            assert 0 < err < bound, f"{mode} across hosts: relative error {err} not in (0, {bound})"
        else:
            assert torch.allclose(got, exact, rtol=1e-6, atol=1e-7), f"{mode} on one host: error {err}"

    # Feedback: the same gradient every step; the average of 20 coded results against the exact one.
    grad = local_grads(rank) * (1 + rank)
    want = grad.clone()
    dist.all_reduce(want, op=dist.ReduceOp.AVG)
    drift = {}
    for feedback in (True, False):
        g = dist.new_group(list(range(n)), backend="tessera")
        tessera_torch.set_compression("int8", feedback, group=g)
        buf, total = torch.empty_like(grad), torch.zeros_like(grad)
        for _ in range(20):
            buf.copy_(grad)
            dist.all_reduce(buf, op=dist.ReduceOp.AVG, group=g)
            total += buf
        drift[feedback] = ((total / 20 - want).norm() / want.norm()).item()
        one_call = ((buf - want).norm() / want.norm()).item()
        if across:
            assert one_call > 0, "int8 across hosts gave the exact average: nothing was coded"
            if feedback:
                assert drift[feedback] <= one_call / 5, f"with feedback the 20-step average drifts {drift[feedback]} (one call {one_call})"
            else:
                assert drift[feedback] >= one_call / 2, f"without feedback the error did not persist: {drift[feedback]} against {one_call}"
        else:
            assert drift[feedback] < 1e-6, f"one host: int8 changed the average ({drift[feedback]})"
        tessera_torch.set_compression("none", group=g)
        buf.copy_(grad)
        dist.all_reduce(buf, op=dist.ReduceOp.AVG, group=g)
        assert torch.allclose(buf, want, rtol=1e-6, atol=1e-7), "compression 'none' did not make the group exact again"
    if across:
        assert drift[True] < drift[False], f"feedback did not help: {drift}"

    from torch.distributed.device_mesh import DeviceMesh
    plain = DeviceMesh.from_group(dist.new_group(list(range(n)), backend="tessera"), "cpu")
    coded_group = dist.new_group(list(range(n)), backend="tessera")
    tessera_torch.set_compression("bf16", error_feedback=False, group=coded_group)
    want = fsdp_grads(rank, plain)
    got = fsdp_grads(rank, DeviceMesh.from_group(coded_group, "cpu"))
    err = ((got - want).norm() / want.norm()).item()
    if across:
        assert 0 < err < 1e-2, f"FSDP2 with bf16 across hosts: relative error {err} not in (0, 0.01)"
    else:
        assert torch.allclose(got, want, rtol=1e-6, atol=1e-7), f"FSDP2 with bf16 on one host: error {err}"

    # All-gathers coded apart (set_allgather_compression): every rank the same decoded shards, its own too.
    gathered_group = dist.new_group(list(range(n)), backend="tessera")
    shard = local_grads(rank)[:3001] * (1 + rank)
    exact_all = torch.empty(n * shard.numel())
    dist.all_gather_into_tensor(exact_all, shard, group=gathered_group)
    tessera_torch.set_allgather_compression("int8", group=gathered_group)
    got_all = torch.empty_like(exact_all)
    dist.all_gather_into_tensor(got_all, shard, group=gathered_group)
    same_on_every_rank(got_all, "int8 all_gather")
    err = ((got_all - exact_all).norm() / exact_all.norm()).item()
    mine = got_all[rank * shard.numel():(rank + 1) * shard.numel()]
    if across:
        assert 0 < err < 2e-2, f"int8 all_gather across hosts: relative error {err} not in (0, 0.02)"
        assert not torch.equal(mine, shard), "int8 all_gather across hosts: this rank's own shard was not decoded"
    else:
        assert torch.equal(got_all, exact_all), f"int8 all_gather on one host: error {err}"
    plain_red = torch.ones(7) * (rank + 1)
    dist.all_reduce(plain_red, group=gathered_group)  # the reductions' setting is apart
    assert torch.equal(plain_red, torch.ones(7) * (n * (n + 1) // 2)), "set_allgather_compression coded an all_reduce"
    want = fsdp_grads(rank, plain)
    tessera_torch.set_allgather_compression("bf16", group=gathered_group)
    got = fsdp_grads(rank, DeviceMesh.from_group(gathered_group, "cpu"))
    err = ((got - want).norm() / want.norm()).item()
    if across:
        assert 0 < err < 2e-2, f"FSDP2 with bf16 parameters across hosts: relative error {err} not in (0, 0.02)"
    else:
        assert torch.allclose(got, want, rtol=1e-6, atol=1e-7), f"FSDP2 with bf16 parameters on one host: error {err}"
    tessera_torch.set_allgather_compression("none", group=gathered_group)
    dist.all_gather_into_tensor(got_all, shard, group=gathered_group)
    assert torch.equal(got_all, exact_all), "all_gather compression 'none' did not make the group exact again"
    expect_error(lambda: tessera_torch.set_allgather_compression("zip"),
                 "set_allgather_compression: mode 'zip' is not one of none, bf16, fp8, int8")

    expect_error(lambda: tessera_torch.set_compression("zip"), "mode 'zip' is not one of none, bf16, fp8, int8")
    g = dist.new_group(list(range(n)), backend="tessera")
    if n > 1:
        expect_error(lambda: tessera_torch.set_compression("int8" if rank == 0 else "bf16", group=g),
                     "tesseraCommSetCompression", "sets")
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        where = "across hosts" if across else "on one host"
        print(f"compress_test: all checks passed at {n} ranks {where} (feedback drift {drift[True]:.2e}, "
              f"without {drift[False]:.2e})")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
