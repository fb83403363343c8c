// torch.distributed._symmetric_memory for CPU tensors, over Tessera's symmetric heap.
//
// register_symm_mem() makes a c10d::symmetric_memory::SymmetricMemoryAllocator torch's allocator for
// DeviceType::CPU and offers it under the backend name "TESSERA" (set_backend / get_backend). With it:
//   t = symm_mem.empty(n, device="cpu")     alloc(): a block of the symmetric tensor pool (symmetric.h), a
//                                           signal pad of get_signal_pad_size() bytes (zeroed) followed by
//                                           the buffer; not collective. The block returns to the pool when
//                                           the tensor and every handle rendezvoused on it are gone.
//   h = symm_mem.rendezvous(t, group)       collective over the group: each rank publishes through the
//                                           group's store its block's pool offset and its Tessera PE (the
//                                           pool lies at the same heap offset on every PE, so a peer's block
//                                           has a symmetric address here). The handle is cached per group.
//   h.buffer_ptrs / signal_pad_ptrs         peers' blocks through shmem_ptr: null for a PE of another host
//                                           (world_within_direct_access() says whether none is null).
//   h.put_signal / wait_signal / barrier    OpenSHMEM atomics on symmetric addresses, so they also reach PEs
//                                           of other hosts.
// and CPU kernels for torch.ops.symm_mem.one_shot_all_reduce and two_shot_all_reduce_ ("sum", "avg";
// float32, float64, bfloat16, float16), which need every peer on this host.
//
// Group names: the group info set by _SymmetricMemory.set_group_info (rank, size, store), else the process
// group registered under that name (torch 2.13 no longer sets group info by itself).
//
// Signals: peer s's signal to rank d on channel c is a uint64 counter in d's pad at [c * world + s].
// put_signal first completes this rank's earlier stores and puts to every PE (shmem_quiet), then adds 1
// to the counter; wait_signal waits until the counter is non-zero, then takes 1 back off it (acquire: what
// the sender did before its put_signal is visible after wait_signal returns). Signals count, so a put
// never waits for the previous one to be consumed, and matched puts and waits leave the pad zero, as
// torch's note on signal pads asks. barrier(c) is a put_signal to every peer, then a wait_signal for each.
// A wait with timeout_ms > 0 raises a c10::Error naming the rank, the peer, the channel and the time when
// it expires (the counters of that channel are then unknown: use another channel or a new rendezvous);
// timeout_ms == 0 (torch's default, "no timeout") waits under Tessera's own deadline (TESSERA_TIMEOUT),
// which ends the job with a message naming the wait. Thread-safe; different channels are independent.
#pragma once

namespace tessera_torch {

// Idempotent and not collective; call it when the module is imported.
void register_symm_mem();

}  // namespace tessera_torch
