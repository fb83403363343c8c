"""torch.distributed on Tessera.

    import torch.distributed as dist
    import tessera_torch                      # registers the backend
    dist.init_process_group("tessera")        # under tessera-run, torchrun, mpirun or srun

Every collective of torch.distributed on CPU tensors, send/recv, subgroups (dist.new_group) and async work
with futures. Tensors made with tessera_torch.empty() live in symmetric memory and take Tessera's zero-copy
paths; symmetric_allreduce_hook keeps DDP's gradient buckets there; set_compression and
compressed_allreduce_hook code the phase between hosts of gradient reductions. See docs/torch.md.
"""
import atexit
import os

import torch
import torch.distributed as dist

from . import _C

__all__ = ["empty", "zeros", "is_symmetric", "pool_bytes", "pool_free_bytes", "symmetric_allreduce_hook",
           "SymmetricHookState", "ProcessGroupTessera", "register_tensor", "deregister_tensor", "set_compression",
           "set_allgather_compression",
           "CompressedHookState", "compressed_allreduce_hook", "shrink_world", "grow_world", "incarnation",
           "is_peer_failure"]

ProcessGroupTessera = _C.ProcessGroupTessera

# torch's env:// start-up reads RANK, WORLD_SIZE (and LOCAL_RANK, LOCAL_WORLD_SIZE for device placement).
# tessera-run and torchrun set them; under mpirun or srun they are taken from the launcher's own variables
# here, unless set. MASTER_ADDR and MASTER_PORT (where rank 0 serves torch's store) stay the user's to give,
# as with any torch job under those launchers (mpirun -x MASTER_ADDR=host -x MASTER_PORT=port).
_LAUNCHER_VARIABLES = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "SLURM_PROCID"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"),
}
if "RANK" not in os.environ:
    for _name, _sources in _LAUNCHER_VARIABLES.items():
        _value = next((os.environ[v] for v in _sources if v in os.environ), None)
        if _value is not None and _name not in os.environ:
            os.environ[_name] = _value


def _create(opts, pg_options):
    return _C.ProcessGroupTessera(opts.store, opts.group_rank, opts.group_size, opts.timeout, opts.group_id,
                                  list(opts.global_ranks_in_group))


dist.Backend.register_backend("tessera", _create, extended_api=True, devices=["cpu"])
# torch.distributed._symmetric_memory on CPU tensors: the allocator (backend "TESSERA") and symm_mem kernels.
_C.register_symm_mem()
# Tessera ends (collectively) when the interpreter does, after the program's last call.
atexit.register(_C.shutdown)


def empty(*size, dtype=torch.float32):
    """An uninitialized tensor in symmetric memory (not collective; freed when Python frees it)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    return _C.empty([int(s) for s in size], dtype)


def zeros(*size, dtype=torch.float32):
    return empty(*size, dtype=dtype).zero_()


def is_symmetric(tensor):
    """Whether the tensor's storage lies in the symmetric pool."""
    return _C.is_symmetric(tensor)


def _tessera_backend(group):
    group = group if group is not None else dist.group.WORLD
    backend = group._get_backend(torch.device("cpu"))
    if not isinstance(backend, ProcessGroupTessera):
        raise RuntimeError(f"tessera_torch: the group's CPU backend is {type(backend).__name__}, not tessera")
    return backend


def register_tensor(tensor, group=None):
    """Registers a contiguous CPU tensor's memory with the group's communicator (tesseraCommRegister,
    docs/coll.md): collective over the group, in the same order on every rank, each with its own tensor.
    Collectives whose input and output tensors are registered then read and write every rank's tensor in
    place on one host. The tensor keeps its storage and contents; deregister it (deregister_tensor with the
    returned handle) before it is freed."""
    return _tessera_backend(group).register_tensor(tensor)


def deregister_tensor(handle, group=None):
    """Drops one registration of register_tensor (the last one gives the memory back as private memory)."""
    _tessera_backend(group).deregister_tensor(handle)


def shrink_world():
    """Resilient mode (tessera-run --on-failure continue, docs/resilience.md): after a collective of the
    default group raised a rank's failure ("a peer failed"), makes the surviving ranks the default group,
    renumbered 0..n-1 in their old order, and returns (rank, world_size). Collective over the survivors,
    who agree on who failed. What was built on the old group (DistributedDataParallel, FSDP, subgroups) must
    be made again; DistributedDataParallel's construction then gives every rank the new rank 0's parameters."""
    return _next_world(_tessera_backend(None).shrink_for_next_world())


def _next_world(rank_size):
    """The default group again, over the communicator the backend kept for it (shrink or grow)."""
    rank, size = rank_size
    dist.destroy_process_group()
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(size)
    # The communicator is made already; torch's store is only the group's bookkeeping here (the old one may
    # have been served by the rank that died).
    dist.init_process_group("tessera", store=dist.HashStore(), rank=rank, world_size=size)
    return rank, size


def grow_world():
    """Resilient mode with tessera-run --restarts N (docs/resilience.md, "Growing back"): makes the default
    group the survivors and the replacements the launcher started, ranks in the order of the job's PEs (a
    replaced rank gets its number back), and returns (rank, world_size). Collective over the survivors and
    the replacements, whose init_process_group("tessera") joins this grow (see incarnation()). As after
    shrink_world, what was built on the old group must be made again, and the replacements need the model:
    broadcast it from a survivor."""
    return _next_world(_tessera_backend(None).grow_for_next_world())


def incarnation():
    """0 in a process started with the job; k in the k-th replacement that tessera-run --restarts started
    under its rank. A replacement's init_process_group("tessera", store=dist.HashStore(), rank=RANK,
    world_size=WORLD_SIZE) waits for the survivors' grow_world and joins it; torch's own store may have died
    with rank 0, hence the HashStore."""
    return _C.incarnation()


def is_peer_failure(error):
    """Whether an exception raised by a collective says that a rank failed or the group was revoked
    (resilient mode)."""
    text = str(error)
    return "a peer failed" in text or "was revoked" in text


def set_compression(mode, error_feedback=True, group=None):
    """Codes the phase between hosts of the group's float32 sum and average reductions (all_reduce, reduce,
    reduce_scatter) as "bf16", "fp8" or "int8" ("none" turns it off), with error feedback kept per buffer
    (tesseraCommSetCompression, docs/coll.md). Collective over the group's ranks, each passing the same mode
    and flag, after the group's earlier calls have run. Within one host nothing changes. Feedback is keyed by
    the buffer's address and length: it suits buffers reused step after step (as compressed_allreduce_hook's
    are); for buffers that change every call, pass error_feedback=False."""
    _tessera_backend(group).set_compression(str(mode), bool(error_feedback))


def set_allgather_compression(mode, group=None):
    """Codes the phase between hosts of the group's float32 all-gathers (all_gather, all_gather_into_tensor:
    FSDP's parameters, as ZeRO++ quantizes weights) as "bf16", "fp8" or "int8" ("none" turns it off). Every
    rank then gets every shard decoded, its own too: all ranks hold the same values, none its exact shard.
    No feedback. Collective over the group's ranks, each passing the same mode (tesseraCommSetAllGatherCompression,
    docs/coll.md). Within one host nothing changes."""
    _tessera_backend(group).set_allgather_compression(str(mode))


class CompressedHookState:
    """State of compressed_allreduce_hook. Made on every rank of process_group (collective): it makes a group
    of the same ranks for the gradients alone (so the program's own reductions on process_group stay exact)
    and sets its compression. Keeps one buffer per gradient bucket across steps, so that each bucket's error
    feedback stays with it."""

    def __init__(self, mode="int8", error_feedback=True, process_group=None):
        base = process_group if process_group is not None else dist.group.WORLD
        self.process_group = dist.new_group(dist.get_process_group_ranks(base), backend="tessera")
        self.mode = mode
        self.error_feedback = error_feedback
        set_compression(mode, error_feedback, self.process_group)
        # Keyed by (bucket index, length): DDP rebuilds its buckets once, after the first step; the buffers
        # of the first layout are kept, so that no later buffer takes over their addresses and residuals.
        self.buffers = {}


def compressed_allreduce_hook(state, bucket):
    """A DDP communication hook (model.register_comm_hook(CompressedHookState("int8"),
    compressed_allreduce_hook)) that averages each float32 gradient bucket with the phase between hosts
    coded as the state says, with error feedback per bucket. Other types are averaged exactly."""
    buf = bucket.buffer()
    key = (bucket.index(), buf.numel(), buf.dtype)
    kept = state.buffers.get(key)
    if kept is None:
        kept = torch.empty_like(buf)
        state.buffers[key] = kept
    kept.copy_(buf)
    work = dist.all_reduce(kept, op=dist.ReduceOp.AVG, group=state.process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def pool_bytes():
    return _C.pool_bytes()


def pool_free_bytes():
    return _C.pool_free_bytes()


class SymmetricHookState:
    """State of symmetric_allreduce_hook: one symmetric buffer per gradient bucket, kept across steps."""

    def __init__(self, process_group=None):
        self.process_group = process_group
        self.buffers = {}


def symmetric_allreduce_hook(state, bucket):
    """A DDP communication hook (model.register_comm_hook(SymmetricHookState(), symmetric_allreduce_hook))
    that averages each gradient bucket in symmetric memory, so the allreduce reads peers' buckets in place.
    The bucket is copied into its symmetric buffer once per step; DDP copies the result back into the
    gradients as it does with its default hook."""
    buf = bucket.buffer()
    sym = state.buffers.get(bucket.index())
    if sym is None or sym.numel() != buf.numel() or sym.dtype != buf.dtype:
        sym = empty(buf.numel(), dtype=buf.dtype)
        state.buffers[bucket.index()] = sym
    sym.copy_(buf)
    group = state.process_group if state.process_group is not None else dist.group.WORLD
    work = dist.all_reduce(sym, op=dist.ReduceOp.AVG, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])
