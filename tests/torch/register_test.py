"""Registered tensors (tessera_torch.register_tensor, docs/coll.md "Registered buffers") at 2 and 4 ranks
under tessera-run (tests/torch/torch.cmake): a tensor keeps its contents through registration; all_reduce,
all_gather_into_tensor and broadcast on registered tensors give exact results, round after round; a second
registration returns the same handle; deregistration gives the memory back (still writable, contents kept);
and the errors (a non-contiguous tensor, a handle deregistered twice) name what is wrong. Every check asserts.
"""
import sys
import traceback

import torch
import torch.distributed as dist

import tessera_torch
from checks import expect_error


def main():
    dist.init_process_group("tessera")
    rank, n = dist.get_rank(), dist.get_world_size()
    count = 1 << 18
    grad = torch.arange(count, dtype=torch.float32) % 97 + rank
    before = grad.clone()
    gathered = torch.empty(n * count, dtype=torch.float32)
    h = tessera_torch.register_tensor(grad)
    hg = tessera_torch.register_tensor(gathered)
    assert torch.equal(grad, before), "registration changed the tensor"
    assert tessera_torch.register_tensor(grad) == h, "a second registration is the same handle"
    tessera_torch.deregister_tensor(h)  # one of the two references
    base = torch.arange(count, dtype=torch.float32) % 97
    for step in range(3):
        grad.copy_(base * (step + 1) + rank)
        dist.all_reduce(grad)
        want = base * (step + 1) * n + n * (n - 1) / 2
        assert torch.equal(grad, want), f"step {step}: all_reduce differs at {(grad != want).nonzero()[:3].tolist()}"
        grad.copy_(base + 1000 * rank + step)
        dist.all_gather_into_tensor(gathered, grad)
        for r in range(n):
            assert torch.equal(gathered[r * count:(r + 1) * count], base + 1000 * r + step), f"step {step} block {r}"
        dist.broadcast(grad, src=n - 1)
        assert torch.equal(grad, base + 1000 * (n - 1) + step), f"step {step}: broadcast"
    tessera_torch.deregister_tensor(h)
    tessera_torch.deregister_tensor(hg)
    grad[5] = -1.0  # private again and writable
    assert grad[5].item() == -1.0 and grad[6].item() == base[6].item() + 1000 * (n - 1) + 2
    expect_error(lambda: tessera_torch.deregister_tensor(h), "tesseraCommDeregister", "is not a live registration")
    expect_error(lambda: tessera_torch.register_tensor(torch.empty(64, 64).t()), "the tensor is not contiguous")
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"registered tensors at {n} ranks: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
