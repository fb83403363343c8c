"""torch.distributed.run (torchrun), with one fix for Debian's PyTorch 1.13 on Python 3.11: its Std.from_str
compares enum members with ints, which Python 3.11 no longer equates, so every launch fails on the default
"--redirects 0". Everything else is torch's own launcher. Without --master_port, it takes a port that is
free now, so that tests running side by side do not collide on torch's default."""
import socket
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

if not any(a.startswith("--master_port") for a in sys.argv):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sys.argv[1:1] = ["--master_addr", "127.0.0.1", "--master_port", str(port)]
sys.exit(main())
