// memcopy(): memcpy for the data paths (staging, collective outputs, puts and gets).
//
// glibc 2.36 (Debian 12) copies 4 KiB .. about L2-size blocks with `rep movsb` on CPUs with ERMS. On AMD
// Zen that instruction runs an order of magnitude slower when the destination lies just past the source
// modulo 4 KiB ((dst - src) mod 4096 in 1..31: glibc bug 30994, fixed in 2.40): a malloc'd user buffer
// (16 bytes into a page) copied from or to a page-aligned staging slot is exactly that case, and it made
// mid-size collectives several times slower (docs/design.md, memcopy). From kMemcopyLoopMin bytes up,
// memcopy() uses its own AVX2 loop (32-byte aligned stores), which measured as fast as glibc's best case at
// every size and offset there; below it, and on CPUs without AVX2, it is std::memcpy. dst and src must not
// overlap.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessera {

inline constexpr size_t kMemcopyLoopMin = 2048;

// True when a `rep movsb` copy from src to dst falls in the slow case above: (dst - src) mod 4096 in 1..31
// (for glibc's memcpy and for the kernel's copy in process_vm_readv alike, at every size from 4 KiB to
// 16 MiB; docs/design.md). Only the addresses' offsets within a page matter, so it applies across address
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

// The vector loop (any size >= 128; callers go through memcopy()).
void memcopy_loop(void* dst, const void* src, size_t n);
extern const bool g_memcopy_loop;  // the CPU has AVX2

inline void memcopy(void* dst, const void* src, size_t n) {
  if (n < kMemcopyLoopMin || !g_memcopy_loop) {
    std::memcpy(dst, src, n);
  } else {
    memcopy_loop(dst, src, n);
  }
}

}  // namespace tessera
