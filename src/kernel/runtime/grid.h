// Grid-wide barrier of one launch (internal).
//
// A central counter with a generation word: each block increments `arrived`; the last one resets it,
// bumps `generation` (release) and wakes parked blocks; the others wait for the generation to change
// (acquire). So every store made before sync() by any block happens-before every load after it.
// Each block also counts its own syncs, so a timeout message can name the blocks that never arrived.
#pragma once
#include <atomic>
#include <cstdint>

#include "base/cpu.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel::detail {

struct Grid {
  alignas(kCacheLine) std::atomic<uint32_t> arrived{0};
  alignas(kCacheLine) std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> sleepers{0};
  alignas(kCacheLine) int block_num = 1;
  bool spin = true;  // false when blocks outnumber CPUs
  const char* name = "";
  std::atomic<uint32_t>* sync_counts = nullptr;  // [block_num], diagnostics only

  void reset(int n, bool spin_ok, const char* kernel_name, std::atomic<uint32_t>* counts);
  void sync(int block_idx);

  static void bind(BlockContext& c, int idx, int num, void* scratch, size_t scratch_bytes, void* ws,
                   size_t ws_bytes, const char* name, Grid* g) {
    c.idx_ = idx;
    c.num_ = num;
    c.scratch_ = scratch;
    c.scratch_bytes_ = scratch_bytes;
    c.workspace_ = ws;
    c.workspace_bytes_ = ws_bytes;
    c.name_ = name;
    c.grid_ = g;
  }
  static Grid* of(BlockContext& c) { return c.grid_; }
};

}  // namespace tessera::kernel::detail
