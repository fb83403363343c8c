"""torch.distributed.run (torchrun), with one fix for Debian's PyTorch 1.13 on Python 3.11: its Std.from_str
compares enum members with ints, which Python 3.11 no longer equates, so every launch fails on the default
"--redirects 0". Everything else is torch's own launcher."""
import sys

import torch.distributed.elastic.multiprocessing.api as api

_from_str = api.Std.from_str


def _fixed(cls, vm):
    got = _from_str(vm)
    return api.Std(int(vm)) if got is None else got


if api.Std.from_str("0") is None:
    api.Std.from_str = classmethod(_fixed)
    import torch.distributed.run as run
    run.Std = api.Std

from torch.distributed.run import main  # noqa: E402

sys.exit(main())
