// CPU facts and small helpers shared by every layer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera {

inline constexpr size_t kCacheLine = 64;

inline void cpu_relax() { __builtin_ia32_pause(); }

// Monotonic clock in nanoseconds.
uint64_t now_ns();

// Number of hardware threads this process may run on (affinity mask).
int usable_cpus();

// Sizes of this machine's caches in bytes (hwloc; sensible fallbacks).
size_t l2_cache_bytes();
size_t llc_bytes();

}  // namespace tessera
