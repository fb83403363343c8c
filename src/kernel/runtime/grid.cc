#include "kernel/runtime/grid.h"

#include <string>

#include <fmt/format.h>

#include "sync/word_wait.h"

namespace tessera::kernel::detail {

void Grid::reset(int n, bool spin_ok, const char* kernel_name, std::atomic<uint32_t>* counts) {
  arrived.store(0, std::memory_order_relaxed);
  block_num = n;
  spin = spin_ok;
  name = kernel_name;
  sync_counts = counts;
  for (int i = 0; i < n; ++i) counts[i].store(0, std::memory_order_relaxed);
}

void Grid::sync(int block_idx) {
  const uint32_t my_count = sync_counts[block_idx].fetch_add(1, std::memory_order_relaxed) + 1;
  if (block_num == 1) return;
  const uint32_t gen = generation.load(std::memory_order_acquire);
  if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(block_num)) {
    // Last to arrive: reset for the next barrier before releasing anyone (they load generation with
    // acquire, so they see arrived == 0 before they can arrive again).
    arrived.store(0, std::memory_order_relaxed);
    sync::store_and_wake(generation, gen + 1, sleepers);
    return;
  }
  sync::wait_while_equal(generation, gen, sleepers, {.spin = spin, .deadline = true}, [&] {
    std::string missing;
    for (int b = 0; b < block_num; ++b) {
      if (sync_counts[b].load(std::memory_order_relaxed) < my_count) {
        if (!missing.empty()) missing += ", ";
        missing += std::to_string(b);
      }
    }
    return fmt::format("grid sync #{} of kernel '{}' ({} blocks): block(s) {} never arrived (every block "
                       "must call sync() the same number of times)",
                       my_count, name, block_num, missing.empty() ? "?" : missing);
  });
}

}  // namespace tessera::kernel::detail

namespace tessera::kernel {
void BlockContext::sync() { grid_->sync(idx_); }
}  // namespace tessera::kernel
