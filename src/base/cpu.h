// CPU facts and small helpers shared by every layer.
#pragma once
#include <sched.h>

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

// The same clock read from the time-stamp counter: a fraction of clock_gettime's cost (docs/coll.md), for
// timestamps on hot paths (the collective flight recorder). Anchored to now_ns() at first use; the tick
// rate is re-measured over an ever longer baseline (at twice the last baseline, at least every second),
// so it stays within about 0.1 us of now_ns(), in every process. When the kernel does not use the TSC as
// its clock source (not invariant or not synchronised across CPUs), it is now_ns().
uint64_t fast_now_ns();

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
