#!/usr/bin/python3
"""gloo side of the GNN benchmark: one GraphSAGE-mean neighbour aggregation over a partitioned graph (what
tessera::gnn computes) done the way PyTorch users do it today: a halo exchange with all_to_all_single on
PyTorch's gloo, then gather + index_add_ + divide by degree (PyG's scatter-mean pattern). Same problem,
setup, timing and check as bench/gnn/gnn_mpi.c.
usage (one process per rank; the launcher exports RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
  tessera-run -n N /usr/bin/python3 bench/gnn/gnn_gloo.py scale edges dim iters [seed]   (seed default 1)
One JSON line (rank 0):
  {"impl":"gloo","ranks":2,"scale":10,"edges":16384,"dim":16,"us":1510.2,"halo_rows":675}
Problem:
  R-MAT graph, N = 2^scale nodes, `edges` directed edges, a=0.57 b=0.19 c=0.19 (d=0.05). For edge i and level l
  in [0, scale): u = (splitmix64(seed*0x100000001B3 + i*64 + l) >> 11) * 2^-53 (all mod 2^64: numpy uint64
  arrays, which wrap); u < a: (0,0), u < a+b: (0,1), u < a+b+c: (1,0), else (1,1), the pair being bit
  (scale-1-l) of (src, dst). Self loops and duplicate edges are kept. Every rank generates the whole list.
  Rank p owns nodes [p*N/n, (p+1)*N/n) and keeps the edges whose dst it owns (in list order). Node u has
  D = dim features, x[u][d] = ((u*7 + d*3) % 11 - 5) / 4 (float32), stored by u's owner only.
  out[v] = (1/indeg(v)) * sum over edges (u -> v) of x[u] (duplicates counted; 0 if indeg(v) = 0) for every
  owned v, accumulated in f32 in edge-list order (index_add_ on the CPU adds in index order).
Setup (not timed): generate (numpy); the distinct remote source nodes (torch.unique: sorted, hence grouped by
  owner); all_to_all_single of their counts (int64) and, with split sizes, of their ids (int64) to the owners,
  once; the owners turn the ids into row indices of their x. The node -> halo slot map: each edge's source
  resolved to a row of cat([x, halo]) (owned: u - first; remote: nloc + its position in the sorted request
  list, by searchsorted); indeg as a float32 column, clamped to 1.
One iteration (one layer), with torch ops as a user writes them: x.index_select of the requested rows (pack);
  all_to_all_single into a fresh halo tensor with the split sizes (lists of Python ints, from setup); then
  torch.cat((x, halo)) (a real layer's x is the previous layer's output, so the halo cannot live in x's
  tail), index_select of every edge's source row, index_add_ into zeros by local dst, divide by the degree.
Timing: time.perf_counter around one iteration, after a dist.barrier(); iters/4+1 warm-up iterations; each timed
iteration's time is the max over ranks (all_reduce MAX of a float64 tensor, outside the timed region); "us" is
the median of those over the iterations. "halo_rows" is the total number of halo rows received, over all ranks.
Threads: torch.set_num_threads(1) (2-CPU machine; more intra-op threads would take the CPUs from gloo).
Check: after the last iteration every owned node's row is compared with a direct computation from x's formula in
numpy (np.add.at over the edges in list order, no halo): |got - want| <= 1e-4 * |want| (plus 1e-6 absolute, for
results at 0); exit 1 on any mismatch.
GNN_EDGE_CHECKSUM=K in the environment: rank 0 also prints to stderr
  edge_checksum K=<K> <sum over i < K of (i+1) * (src_i * N + dst_i), mod 2^64>
as gnn_mpi.c does, for comparing the two generators (K = edges compares the whole list)."""
import json, os, sys, time

import numpy as np
import torch
import torch.distributed as dist


def splitmix64(x):  # x: uint64 array; numpy's uint64 array arithmetic wraps mod 2^64
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def rmat(scale, edges, seed):
    """(src, dst) as int64 arrays, edge i at position i."""
    a, b, c = 0.57, 0.19, 0.19
    base = np.array([seed], dtype=np.uint64) * np.uint64(0x100000001B3) \
        + np.arange(edges, dtype=np.uint64) * np.uint64(64)
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for l in range(scale):
        u = (splitmix64(base + np.uint64(l)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        bit = np.int64(1) << np.int64(scale - 1 - l)
        src |= np.where(u >= a + b, bit, 0)                      # (1,0) and (1,1)
        dst |= np.where(((u >= a) & (u < a + b)) | (u >= a + b + c), bit, 0)  # (0,1) and (1,1)
    return src, dst


def feat(u, D):  # x[u][d] for an int64 array of nodes: [len(u), D] float32
    d = np.arange(D, dtype=np.int64)
    return (((u.reshape(-1, 1) * 7 + d * 3) % 11 - 5).astype(np.float32) / np.float32(4.0))


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: gnn_gloo.py scale edges dim iters [seed]")
    S, E, D, iters = (int(a) for a in sys.argv[1:5])
    seed = int(sys.argv[5], 0) if len(sys.argv) == 6 else 1
    if not 1 <= S <= 30 or E < 0 or D < 1 or iters < 1:
        sys.exit("gnn_gloo.py: need 1 <= scale <= 30, edges >= 0, dim >= 1, iters >= 1")
    warm = iters // 4 + 1
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    n, me = dist.get_world_size(), dist.get_rank()
    N = 1 << S
    first_of = lambda p: p * N // n
    first, nloc = first_of(me), first_of(me + 1) - first_of(me)

    # ---- setup (not timed)
    esrc, edst = rmat(S, E, seed)
    ck = os.environ.get("GNN_EDGE_CHECKSUM")
    if ck and me == 0:
        K = min(int(ck), E)
        h = ((np.arange(1, K + 1, dtype=np.uint64) * (esrc[:K] * N + edst[:K]).astype(np.uint64))
             .sum(dtype=np.uint64))
        print(f"edge_checksum K={K} {int(h)}", file=sys.stderr)
    keep = (edst >= first) & (edst < first + nloc)
    lsrc_np, ldst_np = esrc[keep], edst[keep] - first
    del esrc, edst, keep
    lsrc, ldst = torch.from_numpy(lsrc_np), torch.from_numpy(ldst_np)
    remote = (lsrc < first) | (lsrc >= first + nloc)
    uniq = torch.unique(lsrc[remote])                                   # sorted: grouped by owner
    bounds = torch.tensor([first_of(p) for p in range(1, n)], dtype=torch.int64)
    owner = torch.bucketize(uniq, bounds, right=True)
    scnt = torch.bincount(owner, minlength=n)                           # rows I want from each rank
    rcnt = torch.empty_like(scnt)
    dist.all_to_all_single(rcnt, scnt)
    want_split, give_split = scnt.tolist(), rcnt.tolist()
    req = torch.empty(sum(give_split), dtype=torch.int64)
    dist.all_to_all_single(req, uniq, give_split, want_split)
    if req.numel() and (req.min().item() < first or req.max().item() >= first + nloc):
        sys.exit(f"gnn_gloo.py: rank {me} was asked for a node it does not own")
    reqrow = req - first                                                # rows of my x to send
    col = torch.where(remote, nloc + torch.searchsorted(uniq, lsrc), lsrc - first)  # row of cat((x, halo))
    deg = torch.bincount(ldst, minlength=nloc).to(torch.float32).clamp_(min=1).unsqueeze(1)
    nhalo = uniq.numel()
    x = torch.from_numpy(feat(np.arange(first, first + nloc, dtype=np.int64), D))

    times = []
    out = None
    for it in range(warm + iters):
        dist.barrier()
        t0 = time.perf_counter()
        sbuf = x.index_select(0, reqrow)
        halo = torch.empty(nhalo, D, dtype=torch.float32)
        dist.all_to_all_single(halo, sbuf, want_split, give_split)
        xall = torch.cat((x, halo))
        out = torch.zeros(nloc, D, dtype=torch.float32).index_add_(0, ldst, xall.index_select(0, col))
        out = out / deg
        t1 = time.perf_counter()
        mx = torch.tensor([t1 - t0], dtype=torch.float64)
        dist.all_reduce(mx, op=dist.ReduceOp.MAX)
        if it >= warm:
            times.append(mx.item())

    # ---- check every owned node against x's formula, edges in list order (no halo)
    want = np.zeros((nloc, D), dtype=np.float32)
    np.add.at(want, ldst_np, feat(lsrc_np, D))
    indeg = np.bincount(ldst_np, minlength=nloc)
    inv = np.where(indeg > 0, np.float32(1.0) / np.maximum(indeg, 1).astype(np.float32), np.float32(0.0))
    want *= inv.astype(np.float32).reshape(-1, 1)
    got = out.numpy()
    wrong = ~(np.abs(got - want) <= np.float32(1e-4) * np.abs(want) + np.float32(1e-6))
    bad = torch.tensor([int(wrong.sum())], dtype=torch.int64)
    if bad.item():
        v, d = (int(t) for t in np.argwhere(wrong)[0])
        print(f"gnn_gloo.py: rank {me} node {first + v} feature {d}: got {got[v, d]}, want {want[v, d]}",
              file=sys.stderr)
    dist.all_reduce(bad)
    hr = torch.tensor([nhalo], dtype=torch.int64)
    dist.all_reduce(hr)
    times.sort()
    m = len(times)
    med = times[m // 2] if m % 2 else (times[m // 2 - 1] + times[m // 2]) / 2
    if me == 0:
        if bad.item():
            print(f"gnn_gloo.py: {bad.item()} wrong elements over all ranks", file=sys.stderr)
        else:
            print(json.dumps({"impl": "gloo", "ranks": n, "scale": S, "edges": E, "dim": D, "us": round(med * 1e6, 3),
                              "halo_rows": hr.item()}, separators=(",", ":")), flush=True)
    dist.destroy_process_group()
    sys.exit(1 if bad.item() else 0)


if __name__ == "__main__":
    main()
