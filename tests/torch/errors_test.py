"""Errors of the "tessera" backend surface as Python exceptions on every rank: a call that outlives the
group's timeout, and ranks that make different calls. Needs 2+ ranks."""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import tessera_torch  # noqa: F401


def main():
    dist.init_process_group("tessera", timeout=datetime.timedelta(seconds=60))
    r, n = dist.get_rank(), dist.get_world_size()
    assert n >= 2

    # The group's timeout bounds wait(): rank 0 waits for an allreduce that the others start 4 s late.
    short = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=1.5))
    t = torch.ones(1 << 20)  # larger than inline_bytes: it runs on the group's stream
    if r == 0:
        w = dist.all_reduce(t, group=short, async_op=True)
        t0 = time.monotonic()
        try:
            w.wait()
            sys.exit("rank 0: wait() returned although the other ranks had not called")
        except RuntimeError as e:
            waited = time.monotonic() - t0
            assert "not completed within 1.5 s" in str(e) and "rank 0" in str(e), str(e)
            assert 1.4 < waited < 3.5, waited
        w.wait(datetime.timedelta(seconds=30))  # completes once the others call
        assert torch.all(t == n), t[:4]
    else:
        time.sleep(4)
        dist.all_reduce(t, group=short)
        assert torch.all(t == n)
    dist.barrier()

    # Different counts: every rank raises, with Tessera's message naming the collective and the counts.
    t = torch.ones(4 if r == 0 else 8)
    try:
        dist.all_reduce(t)
        sys.exit(f"rank {r}: a mismatched all_reduce did not raise")
    except RuntimeError as e:
        msg = str(e)
        assert "mismatch" in msg and "count 4 vs 8" in msg.replace("count 8 vs 4", "count 4 vs 8"), msg
        assert f"tessera: rank {r}" in msg, msg
    print(f"rank {r}: errors_test passed")


if __name__ == "__main__":
    main()
