#!/usr/bin/python3
"""gloo side of the MoE benchmark: the routing of tessera::moe::Dispatcher (include/tessera/moe.hpp) done the
way PyTorch users do it today (the Megatron/fairseq pattern): a count exchange, then all_to_all_single with
split sizes, on PyTorch's gloo. Same semantics, routing, check and timing as bench/moe/moe_mpi.c.
usage (one process per rank; the launcher exports RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
  tessera-run -n N /usr/bin/python3 bench/moe/moe_gloo.py T H K E f32|bf16 iters
One JSON line (rank 0):
  {"impl":"gloo","ranks":2,"tokens":16,"hidden":64,"dtype":"bf16","top_k":2,"experts":8,"us":1849.1}
Semantics (moe.hpp's): E experts in contiguous blocks, rank p owns [p*E/n, (p+1)*E/n); T tokens of H elements
per rank (torch.float32 or torch.bfloat16 rows), top-K expert ids and weights per token;
out[t] = sum_k w[t][k] * expert(t,k)'s row, arithmetic in f32, bf16 rounded once at the end. Routing:
  expert(p, t, k) = (p*31 + t*17 + k) % E  (distinct over k; needs K <= E),  w[t][k] = (k+1)/8,
  token element h of token t on rank p = ((p*5 + t*3 + h) % 9) - 4,  expert e scales its rows by 1 << (e % 4).
One iteration, with torch ops as a user writes them:
  dispatch: destination rank per (t, k) (a lookup table of owners); a stable argsort by destination (by (t, k)
    within one); counts = bincount; all_to_all_single of the counts (int64, one per rank); .tolist() of both
    count vectors (the split sizes must be Python ints: a host sync); all_to_all_single of the rows
    (index_select'ed into destination order; bf16 rows viewed as float16, the same bytes) with input/output
    split sizes, and of an int32 [rows, 2] header (expert id, origin t*K+k) with the same splits; the receiver
    groups its rows per local expert (stable argsort of the local expert ids, index_select: rows
    expert-contiguous, as moe.hpp's expert_tokens).
  expert: each local expert's rows multiplied by 1 << (e % 4), in place; NOT timed.
  combine: rows scattered back to arrival order, all_to_all_single back with the split sizes swapped, rows
    put back in (t, k) order, out = sum over k of w * rows in f32, cast to the dtype.
Timing: time.perf_counter around dispatch and around combine (their sum is the iteration's time), after a
dist.barrier(); iters/4+1 warm-up iterations; each timed iteration's time is the max over ranks (all_reduce
MAX of a float64 tensor, outside the timed region); "us" is the median of those over the iterations.
Threads: torch.set_num_threads(1) (2-CPU machine; more intra-op threads would take the CPUs from gloo).
Check: after the last iteration every token of every rank is compared with x[t] * sum_k w_k * scale(e_k)
(f32, rounded to the dtype); exit 1 on any mismatch."""
import json, os, sys, time

import torch
import torch.distributed as dist


def main():
    if len(sys.argv) != 7 or sys.argv[5] not in ("f32", "bf16"):
        sys.exit("usage: moe_gloo.py T H K E f32|bf16 iters")
    T, H, K, E = (int(a) for a in sys.argv[1:5])
    dname, iters = sys.argv[5], int(sys.argv[6])
    if T < 0 or H < 1 or not 1 <= K <= 8 or E < K or iters < 1:
        sys.exit("moe_gloo.py: need T >= 0, H >= 1, 1 <= K <= 8, K <= E, iters >= 1")
    dtype = torch.bfloat16 if dname == "bf16" else torch.float32
    # gloo's all_to_all moves bytes: bf16 rows travel as their bits, viewed (no copy) as float16 (the work-around
    # users of gloo before bfloat16 support had; the same bytes either way).
    wire = torch.float16 if dtype == torch.bfloat16 else torch.float32
    warm = iters // 4 + 1
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    n, me = dist.get_world_size(), dist.get_rank()

    first_of = lambda p: p * E // n
    first, nloc = first_of(me), first_of(me + 1) - first_of(me)
    owner = torch.empty(E, dtype=torch.int64)
    for p in range(n):
        owner[first_of(p):first_of(p + 1)] = p
    # This rank's tokens, routing and weights (the inputs; not timed).
    t_ = torch.arange(T, dtype=torch.int64).view(T, 1)
    h_ = torch.arange(H, dtype=torch.int64).view(1, H)
    x = (((me * 5 + t_ * 3 + h_) % 9) - 4).to(torch.float32).to(dtype)
    k_ = torch.arange(K, dtype=torch.int64).view(1, K)
    eid = (me * 31 + t_ * 17 + k_) % E                                   # [T, K]
    w = ((k_ + 1).to(torch.float32) / 8).expand(T, K).contiguous()       # [T, K]
    scales = [float(1 << ((first + e) % 4)) for e in range(nloc)]

    times = []
    out = None
    for it in range(warm + iters):
        dist.barrier()
        t0 = time.perf_counter()
        # ---- dispatch
        flat = eid.reshape(-1)
        dest = owner[flat]
        order = torch.sort(dest, stable=True).indices                   # send slot -> origin t*K+k
        scnt = torch.bincount(dest, minlength=n)
        rcnt = torch.empty_like(scnt)
        dist.all_to_all_single(rcnt, scnt)
        ssplit, rsplit = scnt.tolist(), rcnt.tolist()
        nrecv = sum(rsplit)
        sbuf = x.index_select(0, torch.div(order, K, rounding_mode="floor"))
        shdr = torch.stack((flat[order], order), 1).to(torch.int32)
        rbuf = torch.empty(nrecv, H, dtype=dtype)
        rhdr = torch.empty(nrecv, 2, dtype=torch.int32)
        dist.all_to_all_single(rbuf.view(wire), sbuf.view(wire), rsplit, ssplit)
        dist.all_to_all_single(rhdr, shdr, rsplit, ssplit)
        loc = rhdr[:, 0].to(torch.int64) - first
        grp = torch.sort(loc, stable=True).indices                       # grouped slot -> arrival slot
        ebuf = rbuf.index_select(0, grp)
        ecnt = torch.bincount(loc, minlength=nloc).tolist() if nrecv else [0] * nloc
        t1 = time.perf_counter()
        # ---- expert (not timed)
        o = 0
        for e in range(nloc):
            ebuf[o:o + ecnt[e]].mul_(scales[e])
            o += ecnt[e]
        t2 = time.perf_counter()
        # ---- combine
        back = torch.empty_like(rbuf)
        back[grp] = ebuf
        bbuf = torch.empty(T * K, H, dtype=dtype)
        dist.all_to_all_single(bbuf.view(wire), back.view(wire), ssplit, rsplit)
        rows = torch.empty_like(bbuf)
        rows[order] = bbuf
        out = (rows.view(T, K, H).to(torch.float32) * w.view(T, K, 1)).sum(1).to(dtype)
        t3 = time.perf_counter()
        mx = torch.tensor([(t1 - t0) + (t3 - t2)], dtype=torch.float64)
        dist.all_reduce(mx, op=dist.ReduceOp.MAX)
        if it >= warm:
            times.append(mx.item())

    # ---- check every token
    sc = torch.tensor([float(1 << (e % 4)) for e in range(E)])
    f = (w * sc[eid]).sum(1, keepdim=True)
    want = (x.to(torch.float32) * f).to(dtype)
    bad = torch.tensor([int((out != want).sum().item())], dtype=torch.int64)
    if bad.item():
        i = (out != want).nonzero()[0].tolist()
        print(f"moe_gloo.py: rank {me} token {i[0]} element {i[1]}: got {out[i[0], i[1]].item()}, "
              f"want {want[i[0], i[1]].item()}", file=sys.stderr)
    dist.all_reduce(bad)
    times.sort()
    m = len(times)
    med = times[m // 2] if m % 2 else (times[m // 2 - 1] + times[m // 2]) / 2
    if me == 0:
        if bad.item():
            print(f"moe_gloo.py: {bad.item()} wrong elements over all ranks", file=sys.stderr)
        else:
            print(json.dumps({"impl": "gloo", "ranks": n, "tokens": T, "hidden": H, "dtype": dname, "top_k": K,
                              "experts": E, "us": round(med * 1e6, 3)}, separators=(",", ":")), flush=True)
    dist.destroy_process_group()
    sys.exit(1 if bad.item() else 0)


if __name__ == "__main__":
    main()
