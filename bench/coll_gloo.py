#!/usr/bin/env python3
"""gloo side of bench/coll_compare.sh: PyTorch gloo allreduce/allgather/broadcast timings, same size
conventions as tessera-perf. Prints one JSON line per measurement.
usage: coll_gloo.py <np> <coll> <bytes>..."""
import json, os, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iters_for(b):
    return 6 if b >= 16 << 20 else 20 if b >= 1 << 20 else 100 if b >= 65536 else 500


def worker(rank, np_, coll, sizes, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=np_)
    for b in sizes:
        count = b // 4
        t = torch.ones(count, dtype=torch.float32)
        outs = [torch.empty(count // np_) for _ in range(np_)] if coll == "allgather" else None
        part = torch.ones(count // np_) if coll == "allgather" else None
        iters = iters_for(b)
        warm = iters // 4 + 1
        for k in range(warm + iters):
            if k == warm:
                dist.barrier()
                t0 = time.perf_counter()
            if coll == "allreduce":
                dist.all_reduce(t)
            elif coll == "allgather":
                dist.all_gather(outs, part)
            elif coll == "broadcast":
                dist.broadcast(t, 0)
        us = torch.tensor([(time.perf_counter() - t0) * 1e6 / iters], dtype=torch.float64)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(json.dumps({"lib": "gloo", "coll": coll, "np": np_, "bytes": b, "time_us": round(us.item(), 3)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    np_, coll, sizes = int(sys.argv[1]), sys.argv[2], [int(x) for x in sys.argv[3:]]
    port = 29500 + (os.getpid() % 2000)
    mp.spawn(worker, args=(np_, coll, sizes, port), nprocs=np_, join=True)
