// Block-cooperative put (kernel.hpp): every block moves one slice of a large transfer, so the copy into the
// peer's mapped heap runs on all the cores of the kernel at once, and the target counts bytes, not blocks.
#include "base/cpu.h"
#include "pgas/order.h"
#include "pgas/p2p.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {

void coop_put(BlockContext& b, void* dest, const void* src, size_t bytes, uint64_t* sig, int pe) {
  // Cut at cache-line multiples so no two blocks write the same line of the target.
  const size_t lines = (bytes + kCacheLine - 1) / kCacheLine;
  const size_t B = static_cast<size_t>(b.block_num()), i = static_cast<size_t>(b.block_idx());
  const size_t lo = std::min(bytes, lines * i / B * kCacheLine), hi = std::min(bytes, lines * (i + 1) / B * kCacheLine);
  char* d = static_cast<char*>(dest) + lo;
  const char* s = static_cast<const char*>(src) + lo;
  if (sig) {
    // Every block signals, even with an empty share (adds 0), so the target's count is exact either way.
    pgas::put_signal("coop_put", d, s, hi - lo, sig, hi - lo, pgas::kSignalAdd, pe);
  } else {
    if (hi > lo) pgas::put_bytes("coop_put", d, s, hi - lo, pe);
    pgas::quiet();
  }
}

}  // namespace tessera::kernel
