"""Every operation of the "tessera" torch.distributed backend, against references computed here.

Run under a launcher at any size (tests/torch/CMakeLists: 1-4 ranks under tessera-run, and under
torchrun). Each rank's inputs are a function of (rank, case), so every rank can compute what every
result must be. Exits non-zero, naming the case, on the first wrong result.
"""
import datetime
import sys
import time
import warnings

import torch
import torch.distributed as dist

import tessera_torch

# The old names (_all_gather_base, all_gather_coalesced, ...) are what many programs still call; torch 2 warns.
warnings.filterwarnings("ignore", category=FutureWarning)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool, torch.complex64]


def value(rank, dtype, n=7, salt=0):
    """Rank's input: small values, exact in every dtype, different per rank and element."""
    base = torch.arange(n, dtype=torch.int64) + 3 * rank + salt
    if dtype == torch.bool:
        return (base % (rank + 2)) == 0
    if dtype == torch.uint8 or dtype == torch.int8:
        return (base % 11).to(dtype)
    if dtype.is_complex:
        return torch.complex(base.float(), -base.float()).to(dtype)
    return (base % 13 + 1).to(dtype)


def fold(tensors, op):
    out = tensors[0].clone()
    for t in tensors[1:]:
        if op == dist.ReduceOp.SUM:
            out = out | t if out.dtype == torch.bool else out + t
        elif op == dist.ReduceOp.PRODUCT:
            out = out & t if out.dtype == torch.bool else out * t
        elif op == dist.ReduceOp.MIN:
            out = torch.minimum(out, t)
        elif op == dist.ReduceOp.MAX:
            out = torch.maximum(out, t)
        elif op == dist.ReduceOp.BAND:
            out = out & t
        elif op == dist.ReduceOp.BOR:
            out = out | t
        elif op == dist.ReduceOp.BXOR:
            out = out ^ t
    if op == dist.ReduceOp.AVG:
        acc = tensors[0].double()
        for t in tensors[1:]:
            acc = acc + t.double()
        out = (acc / len(tensors)).to(tensors[0].dtype)
    return out


def ops_for(dtype):
    if dtype == torch.bool:
        return [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    if dtype.is_complex:
        return [dist.ReduceOp.SUM]  # torch itself allows only SUM on complex tensors (it reduces them as real pairs)
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    if dtype.is_floating_point:
        ops.append(dist.ReduceOp.AVG)
    else:
        ops += [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    return ops


class Checker:
    def __init__(self, rank):
        self.rank = rank
        self.cases = 0

    def eq(self, got, want, case):
        self.cases += 1
        tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(want.dtype, 1e-6)
        if want.dtype.is_floating_point or want.dtype.is_complex:
            ok = got.shape == want.shape and torch.allclose(got, want, rtol=tol, atol=tol)
        else:
            ok = got.shape == want.shape and torch.equal(got, want)
        if not ok:
            print(f"rank {self.rank}: {case}: got {got.tolist()} want {want.tolist()}", file=sys.stderr)
            sys.exit(1)


def main():
    dist.init_process_group("tessera", timeout=datetime.timedelta(seconds=120))
    r, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "tessera"
    c = Checker(r)

    for dt in ALL:
        for op in ops_for(dt):
            # allreduce, contiguous and strided (every other element of a larger tensor)
            t = value(r, dt)
            dist.all_reduce(t, op=op)
            c.eq(t, fold([value(k, dt) for k in range(n)], op), f"all_reduce {dt} {op}")
            big = torch.stack([value(r, dt, 9), value(r, dt, 9, salt=5)], dim=1)  # column 0 is strided
            col = big[:, 0]
            assert not col.is_contiguous()
            dist.all_reduce(col, op=op)
            c.eq(big[:, 0], fold([value(k, dt, 9) for k in range(n)], op), f"all_reduce strided {dt} {op}")
            c.eq(big[:, 1], value(r, dt, 9, salt=5), f"all_reduce strided {dt} {op}: the other column")
            # reduce to the last rank
            t = value(r, dt)
            dist.reduce(t, dst=n - 1, op=op)
            if r == n - 1:
                c.eq(t, fold([value(k, dt) for k in range(n)], op), f"reduce {dt} {op}")
        # broadcast from every root
        for root in range(n):
            t = value(r, dt)
            dist.broadcast(t, src=root)
            c.eq(t, value(root, dt), f"broadcast {dt} root {root}")
        # allgather: list form and the flat form
        outs = [torch.empty_like(value(0, dt)) for _ in range(n)]
        dist.all_gather(outs, value(r, dt))
        for k in range(n):
            c.eq(outs[k], value(k, dt), f"all_gather {dt} [{k}]")
        flat = torch.empty(n * 7, dtype=dt)
        dist._all_gather_base(flat, value(r, dt))
        c.eq(flat, torch.cat([value(k, dt) for k in range(n)]), f"_all_gather_base {dt}")
        # gather / scatter at the last rank
        root = n - 1
        outs = [torch.empty_like(value(0, dt)) for _ in range(n)] if r == root else None
        dist.gather(value(r, dt), gather_list=outs, dst=root)
        if r == root:
            for k in range(n):
                c.eq(outs[k], value(k, dt), f"gather {dt} [{k}]")
        out = torch.empty_like(value(0, dt))
        dist.scatter(out, scatter_list=[value(k, dt, salt=root) for k in range(n)] if r == root else None, src=root)
        c.eq(out, value(r, dt, salt=root), f"scatter {dt}")
        # alltoall: equal parts, then uneven split sizes (rank i sends i+j+1 rows to rank j)
        src = torch.cat([value(r * n + j, dt, 3) for j in range(n)])
        dst = torch.empty_like(src)
        dist.all_to_all_single(dst, src)
        c.eq(dst, torch.cat([value(j * n + r, dt, 3) for j in range(n)]), f"all_to_all_single {dt}")
        sizes = lambda i, j: i + j + 1  # noqa: E731
        src = torch.cat([value(r * n + j, dt, sizes(r, j)) for j in range(n)])
        want = torch.cat([value(j * n + r, dt, sizes(j, r)) for j in range(n)])
        dst = torch.empty_like(want)
        dist.all_to_all_single(dst, src, output_split_sizes=[sizes(j, r) for j in range(n)],
                               input_split_sizes=[sizes(r, j) for j in range(n)])
        c.eq(dst, want, f"all_to_all_single with split sizes {dt}")
        outs = [torch.empty(sizes(j, r), dtype=dt) for j in range(n)]
        dist.all_to_all(outs, [value(r * n + j, dt, sizes(r, j)) for j in range(n)])
        for j in range(n):
            c.eq(outs[j], value(j * n + r, dt, sizes(j, r)), f"all_to_all {dt} [{j}]")

    for dt in FLOATS + INTS:
        # reduce_scatter (list and flat forms), SUM and MAX
        for op in [dist.ReduceOp.SUM, dist.ReduceOp.MAX]:
            out = torch.empty(5, dtype=dt)
            dist.reduce_scatter(out, [value(r * n + j, dt, 5) for j in range(n)], op=op)
            c.eq(out, fold([value(k * n + r, dt, 5) for k in range(n)], op), f"reduce_scatter {dt} {op}")
            out = torch.empty(5, dtype=dt)
            dist._reduce_scatter_base(out, torch.cat([value(r * n + j, dt, 5) for j in range(n)]), op=op)
            c.eq(out, fold([value(k * n + r, dt, 5) for k in range(n)], op), f"_reduce_scatter_base {dt} {op}")
        # coalesced forms
        ts = [value(r, dt, 3), value(r, dt, 6, salt=1)]
        dist.all_reduce_coalesced(ts)
        c.eq(ts[0], fold([value(k, dt, 3) for k in range(n)], dist.ReduceOp.SUM), f"all_reduce_coalesced {dt} [0]")
        c.eq(ts[1], fold([value(k, dt, 6, 1) for k in range(n)], dist.ReduceOp.SUM), f"all_reduce_coalesced {dt} [1]")

        # torch 2's coalesced tensor forms (FSDP2's calls): several all-gathers / reduce-scatters in one call
        ins = [value(r, dt, 3), value(r, dt, 4, salt=2).view(2, 2)]
        outs = [torch.empty(n * 3, dtype=dt), torch.empty(2 * n, 2, dtype=dt)]
        dist.distributed_c10d._get_default_group().allgather_into_tensor_coalesced(outs, ins).wait()
        c.eq(outs[0], torch.cat([value(k, dt, 3) for k in range(n)]), f"allgather_into_tensor_coalesced {dt} [0]")
        c.eq(outs[1], torch.cat([value(k, dt, 4, salt=2).view(2, 2) for k in range(n)]),
             f"allgather_into_tensor_coalesced {dt} [1]")
        with dist._coalescing_manager(async_ops=True) as cm:
            outs = [torch.empty(n * 5, dtype=dt), torch.empty(n * 2, dtype=dt)]
            dist.all_gather_into_tensor(outs[0], value(r, dt, 5))
            dist.all_gather_into_tensor(outs[1], value(r, dt, 2, salt=1))
        cm.wait()
        c.eq(outs[0], torch.cat([value(k, dt, 5) for k in range(n)]), f"coalescing manager all_gather {dt} [0]")
        c.eq(outs[1], torch.cat([value(k, dt, 2, salt=1) for k in range(n)]), f"coalescing manager all_gather {dt} [1]")
        for op in [dist.ReduceOp.SUM, dist.ReduceOp.MAX]:
            ins = [torch.cat([value(r * n + j, dt, 3) for j in range(n)]),
                   torch.cat([value(r * n + j, dt, 2, salt=4) for j in range(n)]).view(n, 2)]
            outs = [torch.empty(3, dtype=dt), torch.empty(1, 2, dtype=dt)]
            opts = dist.ReduceScatterOptions()
            opts.reduceOp = op
            dist.distributed_c10d._get_default_group().reduce_scatter_tensor_coalesced(outs, ins, opts).wait()
            c.eq(outs[0], fold([value(k * n + r, dt, 3) for k in range(n)], op),
                 f"reduce_scatter_tensor_coalesced {dt} {op} [0]")
            c.eq(outs[1], fold([value(k * n + r, dt, 2, salt=4) for k in range(n)], op).view(1, 2),
                 f"reduce_scatter_tensor_coalesced {dt} {op} [1]")

    # PREMUL_SUM (what FSDP asks for to fold its gradient division into the reduction): scaled, then summed
    for dt in FLOATS:
        premul = dist._make_nccl_premul_sum(0.5)
        t = value(r, dt)
        dist.all_reduce(t, op=premul)
        c.eq(t, fold([value(k, dt).double() * 0.5 for k in range(n)], dist.ReduceOp.SUM).to(dt), f"PREMUL_SUM {dt}")
        src = torch.cat([value(r * n + j, dt, 3) for j in range(n)])
        kept = src.clone()
        out = torch.empty(3, dtype=dt)
        dist.reduce_scatter_tensor(out, src, op=dist._make_nccl_premul_sum(0.25))
        c.eq(out, fold([value(k * n + r, dt, 3).double() * 0.25 for k in range(n)], dist.ReduceOp.SUM).to(dt),
             f"reduce_scatter_tensor PREMUL_SUM {dt}")
        c.eq(src, kept, f"reduce_scatter_tensor PREMUL_SUM {dt}: the input is not changed")

    # Lists whose tensors are views of one buffer, end to end: the backend uses them in place.
    flat = torch.zeros(n * 6)
    dist.all_gather(list(flat.chunk(n)), value(r, torch.float32, 6))
    c.eq(flat, torch.cat([value(k, torch.float32, 6) for k in range(n)]), "all_gather into views of one buffer")
    out = torch.empty(6)
    dist.reduce_scatter(out, list(torch.cat([value(r * n + j, torch.float32, 6) for j in range(n)]).chunk(n)))
    c.eq(out, fold([value(k * n + r, torch.float32, 6) for k in range(n)], dist.ReduceOp.SUM),
         "reduce_scatter from views of one buffer")
    dst = torch.empty(n * 2)
    dist.all_to_all(list(dst.chunk(n)), list(torch.cat([value(r * n + j, torch.float32, 2) for j in range(n)]).chunk(n)))
    c.eq(dst, torch.cat([value(j * n + r, torch.float32, 2) for j in range(n)]), "all_to_all on views of one buffer")

    outs = [[torch.empty(3), torch.empty(2, 2)] for _ in range(n)]
    dist.all_gather_coalesced(outs, [value(r, torch.float32, 3), value(r, torch.float32, 4).view(2, 2)])
    for k in range(n):
        c.eq(outs[k][0], value(k, torch.float32, 3), f"all_gather_coalesced [{k}][0]")
        c.eq(outs[k][1], value(k, torch.float32, 4).view(2, 2), f"all_gather_coalesced [{k}][1]")

    # Large messages take the stream (more than inline_bytes), asynchronously; futures complete with them.
    works, bigs = [], []
    for i in range(3):
        t = torch.full((1 << 20,), float(r + i))
        bigs.append(t)
        works.append(dist.all_reduce(t, async_op=True))
    fut = works[-1].get_future()
    for i, w in enumerate(works):
        w.wait()
        c.eq(bigs[i][:4], torch.full((4,), float(sum(k + i for k in range(n)))), f"async all_reduce {i}")
    c.eq(fut.wait()[0][:4], torch.full((4,), float(sum(k + 2 for k in range(n)))), "future value")
    assert works[0].is_completed()
    dist.barrier()

    if n > 1:
        # send/recv in a ring, both directions at once, small and larger than the channel buffers
        for count in [5, 300_000]:
            nxt, prv = (r + 1) % n, (r - 1) % n
            out = value(r, torch.float32, count)
            inn = torch.empty(count)
            reqs = [dist.isend(out, nxt), dist.irecv(inn, prv)]
            for q in reqs:
                q.wait()
            c.eq(inn, value(prv, torch.float32, count), f"isend/irecv ring {count}")
            # both sides start a send first, then receive (blocking) before waiting for the send: the send
            # progresses on its own thread while this thread receives
            q = dist.isend(out, nxt)
            dist.recv(inn, prv)
            q.wait()
            c.eq(inn, value(prv, torch.float32, count), f"isend, recv, then wait {count}")
        # receive from any source at rank 0: among the ranks of one host; across hosts it is refused, naming
        # the reason, and the sources are then named one by one
        if r == 0:
            seen = set()
            for i in range(n - 1):
                t = torch.empty(4, dtype=torch.int64)
                try:
                    src = dist.recv(t)
                except RuntimeError as e:
                    assert i == 0 and "several hosts" in str(e), str(e)
                    for k in range(1, n):
                        dist.recv(t, k)
                        c.eq(t, torch.full((4,), k, dtype=torch.int64), "recv from each source (several hosts)")
                        seen.add(k)
                    break
                c.eq(t, torch.full((4,), src, dtype=torch.int64), "recv from any source")
                seen.add(src)
            assert seen == set(range(1, n)), seen
        else:
            dist.send(torch.full((4,), r, dtype=torch.int64), 0)
        dist.barrier()

    # Subgroups: made by their members alone; the odd ranks' group and the reversed full group.
    # (torch takes an empty rank list for "everyone", so the odd ranks' group needs two ranks.)
    odd = dist.new_group([k for k in range(n) if k % 2 == 1]) if n > 1 else None
    rev = dist.new_group(list(range(n))[::-1])
    if r % 2 == 1:
        t = torch.tensor([float(r)])
        dist.all_reduce(t, group=odd)
        c.eq(t, torch.tensor([float(sum(k for k in range(n) if k % 2 == 1))]), "all_reduce on the odd ranks' group")
    t = torch.tensor([float(r)])
    dist.broadcast(t, src=n - 1, group=rev)
    c.eq(t, torch.tensor([float(n - 1)]), "broadcast on the reversed group")

    # Symmetric tensors: allocation is local, the allreduce takes the zero-copy path when large.
    s = tessera_torch.zeros(1 << 21)
    assert tessera_torch.is_symmetric(s) and not tessera_torch.is_symmetric(torch.zeros(4))
    s += r + 1
    dist.all_reduce(s)
    c.eq(s[:3], torch.full((3,), float(n * (n + 1) // 2)), "all_reduce of a symmetric tensor")
    free_before = tessera_torch.pool_free_bytes()
    del s
    # The storage returns when its last reference goes; the stream's thread may drop its copy a moment after
    # the call returned.
    for _ in range(1000):
        if tessera_torch.pool_free_bytes() == free_before + (1 << 23):
            break
        time.sleep(0.001)
    assert tessera_torch.pool_free_bytes() == free_before + (1 << 23), "the pool took its storage back"

    # Argument errors raise at once, with Tessera's message.
    for bad, words in [(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int32), op=dist.ReduceOp.AVG), "AVG"),
                       (lambda: dist.all_reduce(torch.zeros(3), op=dist.ReduceOp.BAND), "bitwise"),
                       (lambda: dist._all_gather_base(torch.zeros(n * 3 + 1), torch.zeros(3)), "needs")]:
        try:
            bad()
            print(f"rank {r}: expected an error about {words}", file=sys.stderr)
            sys.exit(1)
        except RuntimeError as e:
            assert words in str(e), str(e)
    dist.barrier()
    if r == 0:
        print(f"ops_test: {c.cases} cases passed on {n} ranks")


if __name__ == "__main__":
    main()
