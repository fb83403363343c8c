// The copy family of the data paths (puts and gets, staging, collective outputs): memcopy(), copy(),
// copy2(). Every layer copies through these; the rule for streaming stores is stated here once.
//
// Kinds of store. Ordinary stores first read each destination line into this core's cache
// (read-for-ownership) and leave it there. Streaming (non-temporal) stores write whole lines to memory
// without reading them and without evicting the writer's working set. Streaming pays when the destination
// will not be read from this core's cache next: it would not stay cached anyway, or a reader on another
// core is better served from memory than by taking each line back from this core. It loses when the
// destination would have stayed cached for its next reader, and on small copies, where the store fence
// that ends a streamed copy and its unaligned head and tail cost more than the line reads saved.
//
//   Stores::kCached  ordinary stores: memcopy().
//   Stores::kStream  the caller knows the destination will not be read from cache next (a piece of an
//                    output larger than the caches, a staging write its timing found faster streamed):
//                    streaming stores from kStreamCopyMin bytes, ordinary ones below it.
//   Stores::kAuto    the caller knows only the size: streaming stores from copy_stream_min() bytes, a
//                    quarter of the last-level cache (a destination that size, rewritten every time, no
//                    longer stays cached beside the rest of the working set), at least 1 MiB (so a small
//                    or unknown cache never makes L2-sized copies stream) and at most 16 MiB (a virtual
//                    machine is shown its host socket's whole L3 while it can use only a slice of it).
//                    set_copy_stream_min() replaces it (TESSERA_COPY_STREAMING_MIN, at PGAS init).
// A caller whose writes are pieces of a larger whole (a collective's output) decides once for the whole
// with stores_for(total bytes) and passes the result with every piece. Without AVX2 (checked at run time)
// every copy uses ordinary stores.
//
// dst == src is allowed and copies nothing (collectives run in place); otherwise dst and src must not
// overlap. A streamed copy ends with a store fence: its stores are ordered before this thread's later
// stores, so a flag written after copy() returns publishes them as it would ordinary stores. Thread-safe.
//
// memcopy() and the 4 KiB aliasing case. glibc 2.36 (Debian 12) copies 4 KiB .. about L2-size blocks with
// `rep movsb` on CPUs with ERMS. On AMD Zen that instruction runs an order of magnitude slower when the
// destination lies just past the source modulo 4 KiB ((dst - src) mod 4096 in 1..31: glibc bug 30994, fixed
// in 2.40): a malloc'd user buffer (16 bytes into a page) copied from or to a page-aligned staging slot is
// exactly that case, and it made mid-size collectives several times slower (docs/journal.md, "memcopy and
// aliasing copies"). From
// kMemcopyLoopMin bytes up, memcopy() uses its own AVX2 loop (32-byte aligned stores) in that case, which
// measured as fast as glibc's best case at every size and offset there; otherwise, below it, and on CPUs
// without AVX2, it is std::memcpy, whose `rep movsb` is a little faster than the loop from 4 KiB to 1 MiB on
// an Intel Xeon VM (page-aligned buffers; docs/journal.md). dst and src must not overlap.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessera {

inline constexpr size_t kMemcopyLoopMin = 2048;

// True when a `rep movsb` copy from src to dst falls in the slow case above: (dst - src) mod 4096 in 1..31
// (for glibc's memcpy and for the kernel's copy in process_vm_readv alike, at every size from 4 KiB to
// 16 MiB; docs/journal.md). Only the addresses' offsets within a page matter, so it applies across address
// spaces too.
inline bool copy_aliases(const void* dst, const void* src) {
  const uintptr_t d = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  return d != 0 && d < 32;
}

// The address in [region, region + 4096) at the same offset within a page as `like`: a copy between the two
// never aliases. `region` needs 4095 bytes of slack beyond what the caller places there.
inline char* at_page_offset_of(char* region, const void* like) {
  return region + ((reinterpret_cast<uintptr_t>(like) - reinterpret_cast<uintptr_t>(region)) & 4095);
}

// The vector loops (callers go through memcopy() and copy(); tessera-perf copy measures them directly).
// memcopy_loop: ordinary stores, any size >= 128. copy_streaming_loop: streaming stores, any size, ends
// with a store fence. Both need AVX2 (g_copy_avx2).
void memcopy_loop(void* dst, const void* src, size_t n);
void copy_streaming_loop(void* dst, const void* src, size_t n);
extern const bool g_copy_avx2;  // the CPU has AVX2

inline void memcopy(void* dst, const void* src, size_t n) {
  if (n < kMemcopyLoopMin || !g_copy_avx2 || !copy_aliases(dst, src)) {
    std::memcpy(dst, src, n);
  } else {
    memcopy_loop(dst, src, n);
  }
}

enum class Stores { kAuto, kCached, kStream };

// kStream copies below this use ordinary stores (see above: fence, head and tail).
inline constexpr size_t kStreamCopyMin = size_t{64} << 10;

// kAuto's threshold; 0 until first used or set (then computed from the cache size).
extern std::atomic<size_t> g_copy_stream_min;
size_t copy_stream_min_init();
inline size_t copy_stream_min() {
  const size_t m = g_copy_stream_min.load(std::memory_order_relaxed);
  return m ? m : copy_stream_min_init();
}
// Replaces kAuto's threshold (bytes >= 1); for process start-up, before copies run on other threads.
void set_copy_stream_min(size_t bytes);

// The kind of store for the pieces of a write of `total_bytes` in all: kAuto's rule applied to the whole.
inline Stores stores_for(size_t total_bytes) {
  return total_bytes >= copy_stream_min() ? Stores::kStream : Stores::kCached;
}

namespace detail {
void copy_large(void* dst, const void* src, size_t n, Stores s);
}

// Copies n bytes from src to dst with the stores `s` asks for (rules above). Small copies are inlined down
// to memcpy (the decision is one compare); the rest go out of line.
inline void copy(void* dst, const void* src, size_t n, Stores s) {
  const bool cached = s == Stores::kCached ||
                      n < (s == Stores::kStream ? kStreamCopyMin : g_copy_stream_min.load(std::memory_order_relaxed));
  if (cached) [[likely]] {
    if (dst != src) memcopy(dst, src, n);
  } else {
    detail::copy_large(dst, src, n, s);
  }
}

// One read of src, two writes: dst with the stores `s` asks for, and `cached` with ordinary stores (for a
// peer to read next). A member's own piece goes to its output and to its staging slot in one pass. When dst
// == src, only `cached` is written. `cached` overlaps neither.
void copy2(void* dst, void* cached, const void* src, size_t n, Stores s);

}  // namespace tessera
