#!/usr/bin/python3
"""gloo side of bench/hosts_compare.sh: one rank of a torch.distributed gloo job across namespace hosts.
Times allreduce / allgather / alltoall / broadcast with tessera-perf's size convention (bytes of the largest
per-rank buffer) and prints one JSON line per size from rank 0.
usage: hosts_gloo.py RANK WORLD MASTER_ADDR PORT COLL BYTES..."""
import json, os, sys, time

import torch
import torch.distributed as dist


def iters_for(b):
    return 4 if b >= 64 << 20 else 8 if b >= 16 << 20 else 20 if b >= 1 << 20 else 100 if b >= 65536 else 300


def main():
    rank, world, addr, port, coll = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    sizes = [int(s) for s in sys.argv[6:]]
    os.environ.update(MASTER_ADDR=addr, MASTER_PORT=port, GLOO_SOCKET_IFNAME="eth0")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for b in sizes:
        count = max(b // 4, world)
        t = torch.ones(count, dtype=torch.float32)
        part = torch.ones(count // world)
        outs = [torch.empty(count // world) for _ in range(world)]
        a2a_out = torch.empty(count // world * world)
        a2a_in = torch.ones(count // world * world)
        iters = iters_for(b)
        warm = max(iters // 4, 1)
        for k in range(warm + iters):
            if k == warm:
                dist.barrier()
                t0 = time.perf_counter()
            if coll == "allreduce":
                dist.all_reduce(t)
            elif coll == "allgather":
                dist.all_gather(outs, part)
            elif coll == "alltoall":
                dist.all_to_all_single(a2a_out, a2a_in)
            elif coll == "broadcast":
                dist.broadcast(t, 0)
        us = torch.tensor([(time.perf_counter() - t0) * 1e6 / iters], dtype=torch.float64)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(json.dumps({"lib": "gloo", "coll": coll, "np": world, "bytes": b, "time_us": round(us.item(), 3)}),
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
