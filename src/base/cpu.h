// CPU facts and small helpers shared by every layer.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tessera {

inline constexpr size_t kCacheLine = 64;

inline void cpu_relax() { __builtin_ia32_pause(); }

// PREFETCHW: asks for the line in a writable state without waiting for it (a hint: no data changes).
inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

// Monotonic clock in nanoseconds.
uint64_t now_ns();

namespace detail {
// fast_now_ns's state (cpu.cc): the anchor (tsc0, ns0) and the rate (ns per tick << 32), measured again
// from tick `next` on. `ready` is set once, after the anchor and a first rate, when the clock is usable.
struct TscClock {
  std::atomic<bool> ready{false};
  uint64_t tsc0 = 0, ns0 = 0;
  std::atomic<uint64_t> mult{0};
  std::atomic<uint64_t> next{0};
};
extern TscClock g_tsc;
uint64_t fast_now_slow();  // the first call, a new measurement, or no usable TSC

inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return static_cast<uint64_t>(hi) << 32 | lo;
}
// Tick t (at or after the anchor) in now_ns() nanoseconds.
inline uint64_t tsc_ns(const TscClock& c, uint64_t t) {
  return c.ns0 + static_cast<uint64_t>((static_cast<unsigned __int128>(t - c.tsc0) *
                                        c.mult.load(std::memory_order_relaxed)) >> 32);
}
}  // namespace detail

// The same clock read from the time-stamp counter: a fraction of clock_gettime's cost (docs/coll.md), for
// timestamps on hot paths (the collective flight recorder). Anchored to now_ns() at first use; the tick
// rate is re-measured over an ever longer baseline (at twice the last baseline, at least every second),
// so it stays close to now_ns() (docs/journal.md, "Clocks"), in every process. When the kernel does not
// use the TSC as its clock source (not invariant or not synchronised across CPUs), it is now_ns().
// Inline: the flight recorder and the hang report's records stamp every collective and barrier with it.
inline uint64_t fast_now_ns() {
  const detail::TscClock& c = detail::g_tsc;
  if (c.ready.load(std::memory_order_acquire)) [[likely]] {
    const uint64_t t = detail::rdtsc();
    if (t >= c.tsc0 && t < c.next.load(std::memory_order_relaxed)) [[likely]] return detail::tsc_ns(c, t);
  }
  return detail::fast_now_slow();
}

// The CPUs this PE's job may use: the list tessera-run passes in TESSERA_JOB_CPUS when it binds each PE
// to a CPU of its own, else this thread's affinity mask. Returns false (and leaves *out empty) if neither
// can be read.
bool job_cpu_set(cpu_set_t* out);

// Number of hardware threads the job may run on (job_cpu_set): a PE bound to one CPU still sees them all,
// so decisions such as "more PEs than CPUs" or the default block count do not depend on the binding.
int usable_cpus();

// The one CPU the calling thread is bound to, or -1 when its affinity allows several (or cannot be read).
int bound_cpu();

// Lets the calling thread run on every CPU of the job. Threads a PE starts for itself (the copy engine,
// unpinned kernel workers) call this: they would otherwise inherit the PE's binding to one CPU.
void unbind_thread_to_job_cpus();

// The job's CPUs on the NUMA node of network device `nic` ("eth0", "mlx5_0"; empty: the first network
// device backed by hardware), for threads that serve that device (the UCX progress thread). False, leaving
// *out empty, when the device has no NUMA node (virtual devices, one-node machines may say -1) or none of
// the job's CPUs are on it.
bool cpus_near_nic(const char* nic, cpu_set_t* out);

// Sizes of this machine's caches in bytes (hwloc; sensible fallbacks).
size_t l2_cache_bytes();
size_t llc_bytes();

}  // namespace tessera
