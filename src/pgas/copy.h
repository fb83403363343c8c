// Memory copies for RMA. Small transfers are plain loads/stores the compiler inlines; large ones use the
// fastest copy measured on our machines (see docs/design.md, "Copy engine").
#pragma once
#include <cstddef>
#include <cstring>

#include "base/memcopy.h"

namespace tessera::pgas {

// Above this size copy_large() is used (set at init from TESSERA_COPY_STREAMING_MIN).
extern size_t g_large_copy_min;
// Streaming-store copy (AVX2; callers check the CPU has it). Any size; meant for large ones.
void copy_large(void* dst, const void* src, size_t n);

inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n < g_large_copy_min) [[likely]] {
    memcopy(dst, src, n);
  } else {
    copy_large(dst, src, n);
  }
}

}  // namespace tessera::pgas
