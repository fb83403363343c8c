// Memory copies for RMA: base/memcopy.h's copy() with kAuto stores (small transfers inline to memcpy,
// large ones streamed by the one rule stated there).
#pragma once
#include <atomic>
#include <cstddef>

#include "base/memcopy.h"

namespace tessera::pgas {

// kAuto's threshold under the name pgas::Runtime sets at init (TESSERA_COPY_STREAMING_MIN). The runtime
// still computes its own default there (a quarter of the LLC, at least 1 MiB, without base's 16 MiB cap);
// it should call set_copy_stream_min() only when the variable is set, and this alias go.
inline std::atomic<size_t>& g_large_copy_min = g_copy_stream_min;

inline void copy_bytes(void* dst, const void* src, size_t n) { copy(dst, src, n, Stores::kAuto); }

}  // namespace tessera::pgas
