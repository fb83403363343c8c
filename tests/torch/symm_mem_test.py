"""torch.distributed._symmetric_memory on CPU tensors over Tessera (python/csrc/symm_mem.h).

Run under tessera-run at 2 and 4 ranks (tests/torch/torch.cmake). Checks: symm_mem.empty on cpu and
rendezvous (on a group name and on a group object, cached); stores into a peer's buffer through
get_buffer, read back by the peer after a barrier; put_signal/wait_signal between ranks, counted, leaving
the signal pads zero; one_shot_all_reduce and two_shot_all_reduce_ against dist.all_reduce on a gloo group
over the same per-rank inputs, at sizes divisible and not divisible by the rank count, four dtypes, sum
and avg, on a subgroup (3+ ranks) and on a name given group info by enable_symm_mem_for_group; errors (a
wait that times out names the ranks and the channel, a channel out of range, an unsupported op, an input
outside symmetric memory). Every check asserts.
"""
import os
import sys
import time
import traceback
import warnings

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import tessera_torch
from checks import expect_error

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def rank_input(rank, size, dtype, salt=0):
    """Small integers, distinct per rank and element, exact in every dtype and in any sum of a few."""
    base = torch.arange(size, dtype=torch.int64) * (rank + 1) + 3 * rank + salt
    return (base % 17 - 8).to(dtype)


def check_empty_and_rendezvous(rank, n, group_name):
    assert symm_mem.get_backend("cpu") == "TESSERA", symm_mem.get_backend("cpu")
    symm_mem.set_backend("TESSERA")  # already the backend: accepted
    t = symm_mem.empty(256, 3, dtype=torch.float32, device="cpu")
    assert t.device.type == "cpu" and t.shape == (256, 3) and t.dtype == torch.float32
    assert symm_mem.is_symm_mem_tensor(t) and tessera_torch.is_symmetric(t)
    assert not symm_mem.is_symm_mem_tensor(torch.empty(4))
    h = symm_mem.rendezvous(t, group_name)
    assert (h.rank, h.world_size) == (rank, n), (h.rank, h.world_size)
    assert h.buffer_size == 256 * 3 * 4, h.buffer_size
    assert h.device.type == "cpu", h.device
    ptrs = h.buffer_ptrs
    assert len(ptrs) == n and ptrs[rank] == t.data_ptr() and all(ptrs), ptrs
    assert len(set(ptrs)) == n, ptrs  # each rank's buffer is its own
    assert len(h.signal_pad_ptrs) == n and all(h.signal_pad_ptrs)
    again = symm_mem.rendezvous(t, dist.group.WORLD)  # the same group by object: the cached handle
    assert again.buffer_ptrs == ptrs
    expect_error(lambda: symm_mem.rendezvous(torch.empty(8), group_name), "is not the start of a tensor made by")
    return t, h


def check_peer_stores(rank, n, t, h):
    # Each rank stores row `rank` of the next rank's buffer; after a barrier the next rank reads it.
    t.zero_()
    h.barrier()
    dst, src = (rank + 1) % n, (rank - 1) % n
    remote = h.get_buffer(dst, (256, 3), torch.float32)
    remote[rank] = torch.tensor([100.0 * rank, 1.0, -2.5])
    h.barrier()
    assert torch.equal(t[src], torch.tensor([100.0 * src, 1.0, -2.5])), (src, t[src])
    others = [r for r in range(256) if r != src]
    assert torch.count_nonzero(t[others]) == 0, "a store landed in the wrong row"
    h.barrier()  # every rank has looked before the next stores
    # And by offset: the last element of the next rank's buffer.
    h.get_buffer(dst, (1,), torch.float32, storage_offset=256 * 3 - 1).fill_(rank + 0.5)
    h.barrier(channel=1)
    assert t.view(-1)[-1].item() == src + 0.5, t.view(-1)[-1]
    h.barrier()


def check_signals(rank, n, t, h):
    dst, src = (rank + 1) % n, (rank - 1) % n
    flat = t.view(-1)
    # Ring: data into the next rank, then a signal on channel 2; the data must be there after the wait.
    for rnd in range(5):
        h.get_buffer(dst, (1,), torch.float32, storage_offset=rnd).fill_(1000.0 * rnd + rank)
        h.put_signal(dst, channel=2)
        h.wait_signal(src, channel=2, timeout_ms=60000)
        assert flat[rnd].item() == 1000.0 * rnd + src, (rnd, flat[rnd])
    # Signals count: three puts before any wait, then three waits.
    if rank == 0:
        for _ in range(3):
            h.put_signal(1, channel=3)
    if rank == 1:
        for _ in range(3):
            h.wait_signal(0, channel=3, timeout_ms=60000)
    h.barrier()
    # Matched puts and waits leave every slot of the pad at zero.
    pad = h.get_signal_pad(rank, (symm_mem.get_signal_pad_size() // 8,), torch.int64)
    assert torch.count_nonzero(pad) == 0, pad.nonzero()


def one_case(rank, n, size, dtype, op, group_name, gloo, offset=0, salt=0):
    x = rank_input(rank, size, dtype, salt)
    ref = x.clone()
    dist.all_reduce(ref, op=dist.ReduceOp.SUM, group=gloo)
    if op == "avg":
        ref = (ref.double() / n).to(dtype)
    case = f"size {size} {dtype} {op} offset {offset}"
    buf = symm_mem.empty(offset + size, dtype=dtype, device="cpu")
    symm_mem.rendezvous(buf, group_name)
    inp = buf[offset:]
    inp.copy_(x)
    out = torch.ops.symm_mem.one_shot_all_reduce(inp, op, group_name)
    assert out.shape == x.shape and out.dtype == dtype, case
    assert torch.equal(inp, x), f"one_shot changed its input: {case}"
    close(out, ref, op, "one_shot " + case)
    ret = torch.ops.symm_mem.two_shot_all_reduce_(inp, op, group_name)
    assert ret.data_ptr() == inp.data_ptr(), case
    close(inp, ref, op, "two_shot " + case)


def close(got, want, op, case):
    if op == "sum":  # sums of small integers are exact in every dtype
        assert torch.equal(got, want), f"{case}: first difference at {(got != want).nonzero()[:1].tolist()}"
    else:
        torch.testing.assert_close(got, want, msg=lambda m: f"{case}: {m}")


def check_allreduce(rank, n, group_name, gloo):
    sizes = [0, 1, n - 1, n, 2 * n + 1, 1000, 4097, 65536 + 3]
    for dtype in DTYPES:
        for size in sizes:
            for op in ["sum", "avg"]:
                one_case(rank, n, size, dtype, op, group_name, gloo)
    one_case(rank, n, 4099, torch.float32, "sum", group_name, gloo, offset=5)  # a view inside its buffer
    # Real-valued inputs: the same sum as gloo's, up to rounding order.
    torch.manual_seed(1234 + rank)
    x = torch.randn(10007)
    ref = x.clone()
    dist.all_reduce(ref, group=gloo)
    buf = symm_mem.empty(10007, device="cpu")
    buf.copy_(x)
    torch.testing.assert_close(torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", group_name), ref)
    torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", group_name)
    torch.testing.assert_close(buf, ref)


def check_subgroup(rank, n):
    # Ranks 1 and n-1 of the world as ranks 0 and 1 of a group: group ranks are not PEs.
    members = [1, n - 1]
    sub = dist.new_group(members)
    if rank not in members:
        return
    name = sub.group_name
    buf = symm_mem.empty(777, dtype=torch.float64, device="cpu")
    h = symm_mem.rendezvous(buf, sub)
    assert (h.rank, h.world_size) == (members.index(rank), 2)
    buf.copy_(rank_input(rank, 777, torch.float64))
    want = sum(rank_input(r, 777, torch.float64) for r in members)
    assert torch.equal(torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", name), want)
    torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", name)
    assert torch.equal(buf, want)


def check_group_info(rank, n, gloo):
    # The deprecated enable_symm_mem_for_group sets group info (rank, size, a store of its own) for a name;
    # rendezvous then takes it from there rather than from the process group. Here: the gloo group's name.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        symm_mem.enable_symm_mem_for_group(gloo.group_name)
    buf = symm_mem.empty(n * 3 + 2, dtype=torch.float32, device="cpu")
    h = symm_mem.rendezvous(buf, gloo.group_name)
    assert (h.rank, h.world_size) == (rank, n)
    buf.copy_(rank_input(rank, n * 3 + 2, torch.float32, salt=5))
    want = sum(rank_input(r, n * 3 + 2, torch.float32, salt=5) for r in range(n))
    assert torch.equal(torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", gloo.group_name), want)
    torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", gloo.group_name)
    assert torch.equal(buf, want)


def check_errors(rank, n, t, h, group_name):
    # Nobody signals channel 4: every rank's wait for the next rank expires and says who waited for whom.
    peer = (rank + 1) % n
    start = time.monotonic()
    expect_error(lambda: h.wait_signal(peer, channel=4, timeout_ms=300),
                 f"rank {rank} ", f"from rank {peer} ", "on channel 4", "within 300 ms")
    waited = time.monotonic() - start
    assert 0.25 < waited < 10, waited
    dist.barrier()
    expect_error(lambda: h.barrier(channel=1 << 20), "channel 1048576 is out of range")
    expect_error(lambda: h.put_signal(rank), "is not another rank")
    expect_error(lambda: torch.ops.symm_mem.one_shot_all_reduce(t, "max", group_name), "'max' is not supported")
    expect_error(lambda: torch.ops.symm_mem.one_shot_all_reduce(torch.ones(8), "sum", group_name),
                 "not in symmetric memory")
    expect_error(lambda: torch.ops.symm_mem.two_shot_all_reduce_(t.t(), "sum", group_name), "must be contiguous")


def main():
    dist.init_process_group("tessera")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert n >= 2, "run at 2 or more ranks"
    gloo = dist.new_group(backend="gloo")
    group_name = dist.group.WORLD.group_name
    t, h = check_empty_and_rendezvous(rank, n, group_name)
    check_peer_stores(rank, n, t, h)
    check_signals(rank, n, t, h)
    check_allreduce(rank, n, group_name, gloo)
    check_group_info(rank, n, gloo)
    if n >= 3:
        check_subgroup(rank, n)
    check_errors(rank, n, t, h, group_name)
    dist.barrier()
    print(f"rank {rank}: symm_mem ok", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        # Exit at once: a normal exit would wait in Tessera's collective finalize for ranks that are
        # themselves waiting for this one, until the job's deadline.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
