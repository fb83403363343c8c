// Memory copies for RMA: base/memcopy.h's copy() with kAuto stores (small transfers inline to memcpy,
// large ones streamed by the one rule stated there).
#pragma once
#include <cstddef>

#include "base/memcopy.h"

namespace tessera::pgas {

inline void copy_bytes(void* dst, const void* src, size_t n) { copy(dst, src, n, Stores::kAuto); }

}  // namespace tessera::pgas
