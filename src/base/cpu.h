// CPU facts and small helpers shared by every layer.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera {

inline constexpr size_t kCacheLine = 64;

inline void cpu_relax() { __builtin_ia32_pause(); }

// Monotonic clock in nanoseconds.
uint64_t now_ns();

// The same clock read from the time-stamp counter: about 10 ns instead of about 30 (clock_gettime), for
// timestamps on hot paths (the collective flight recorder). Anchored to now_ns() at first use; the tick
// rate is re-measured over an ever longer baseline (at twice the last baseline, at least every second),
// so it stays within about 0.1 us of now_ns(), in every process. When the kernel does not use the TSC as
// its clock source (not invariant or not synchronised across CPUs), it is now_ns().
uint64_t fast_now_ns();

// Number of hardware threads this process may run on (affinity mask).
int usable_cpus();

// Sizes of this machine's caches in bytes (hwloc; sensible fallbacks).
size_t l2_cache_bytes();
size_t llc_bytes();

}  // namespace tessera
