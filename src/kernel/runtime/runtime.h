// The kernel runtime of one PE: a persistent pool of pinned worker threads that run the blocks of a launch.
//
// launch(opts, fn, arg) runs fn on block_num blocks: block 0 on the calling thread, block b >= 1 on pool
// worker b-1 (created on first use, pinned by hwloc to one PU of this process's cpuset, cores before SMT
// siblings, scratch first-touched by the worker itself); with more blocks than CPUs, on whichever thread of
// the launch claims it first (pool.cc). Launch cost when the workers are spinning: one
// cache-line write + one read per block; when they are parked: one futex wake.
//
// Thread safety: launch() may be called from any thread; concurrent launches are serialised by a mutex.
// Calling launch() from inside a kernel is an error (returned, not deadlocked).
// Memory ordering: the launching thread's stores before launch() are visible to every block (release on
// the launch sequence word, acquire in the workers); every block's stores are visible to the caller when
// launch() returns (acq_rel on the completion counter).
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel::rt {

// Validates opts and runs the kernel. Errors: block_num out of 1..TESSERA_KERNEL_MAX_BLOCKS, null fn,
// nested launch.
Status launch(const LaunchOptions& opts, KernelFn fn, void* arg);

template <typename F>
Status launch_fn(const LaunchOptions& opts, F&& f) {
  using Fn = std::remove_reference_t<F>;
  return launch(opts, [](BlockContext& c, void* a) { (*static_cast<Fn*>(a))(c); },
                const_cast<void*>(static_cast<const void*>(&f)));
}

// Launches of more blocks than CPUs: whether workers now hold back their claims (armed by a launch that
// waited over 200 us for blocks a worker had claimed; pool.cc, worker_main). hold_claims_for_test holds
// them back until called again with 0, leaving the launching thread window_ns (2 us by default) to run
// the blocks itself, so that a test of where blocks run does not depend on how the host schedules it.
bool claims_held_back();
void hold_claims_for_test(uint64_t window_ns);

// Resolves kAutoBlocks; checks the range. `what` names the caller in the message.
Result<int> resolve_block_num(int requested, const char* what);
int max_block_num();
size_t scratch_bytes();  // per-block scratch size in force

// Combination strategy in force for `c` and `block_num` (kAuto resolved via TESSERA_KERNEL_COMBINE).
Combine resolve_combine(Combine c, int block_num);

}  // namespace tessera::kernel::rt
