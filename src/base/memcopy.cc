#include "base/memcopy.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "base/cpu.h"

namespace tessera {

#define TESSERA_LD(p) _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
#define TESSERA_ST(p, v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v)

namespace {
bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
}  // namespace

const bool g_copy_avx2 = cpu_has_avx2();
std::atomic<size_t> g_copy_stream_min{0};

size_t copy_stream_min_init() {
  static const size_t dflt = std::clamp<size_t>(llc_bytes() / 4, size_t{1} << 20, size_t{16} << 20);
  size_t expected = 0;
  // A value set meanwhile (set_copy_stream_min) stays.
  g_copy_stream_min.compare_exchange_strong(expected, dflt, std::memory_order_relaxed);
  return g_copy_stream_min.load(std::memory_order_relaxed);
}

void set_copy_stream_min(size_t bytes) {
  g_copy_stream_min.store(std::max<size_t>(bytes, 1), std::memory_order_relaxed);
}

// The first and last 128 bytes are loaded up front and stored last with unaligned stores, so the body can
// use aligned stores over whole 128-byte blocks with no scalar head or tail.
__attribute__((target("avx2"))) void memcopy_loop(void* dst, const void* src, size_t n) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const __m256i h0 = TESSERA_LD(s), h1 = TESSERA_LD(s + 32), h2 = TESSERA_LD(s + 64), h3 = TESSERA_LD(s + 96);
  const char* e = s + n - 128;
  const __m256i t0 = TESSERA_LD(e), t1 = TESSERA_LD(e + 32), t2 = TESSERA_LD(e + 64), t3 = TESSERA_LD(e + 96);
  const size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
  char* dd = d + head;
  const char* ss = s + head;
  // Whole blocks that end before the tail's 128 bytes begin (they may overlap the head's stores).
  const size_t blocks = (n - head - 1) / 128;
  for (size_t i = 0; i < blocks; ++i, dd += 128, ss += 128) {
    const __m256i a = TESSERA_LD(ss), b = TESSERA_LD(ss + 32), c = TESSERA_LD(ss + 64), f = TESSERA_LD(ss + 96);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dd), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dd + 32), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dd + 64), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dd + 96), f);
  }
  TESSERA_ST(d, h0), TESSERA_ST(d + 32, h1), TESSERA_ST(d + 64, h2), TESSERA_ST(d + 96, h3);
  TESSERA_ST(d + n - 128, t0), TESSERA_ST(d + n - 96, t1), TESSERA_ST(d + n - 64, t2), TESSERA_ST(d + n - 32, t3);
}

namespace {
// Streaming stores to d over whole 128-byte blocks, 32-byte aligned (a streamed line is written whole:
// the head up to the alignment and the tail are ordinary stores); with kTwo, the same bytes also to c with
// ordinary stores (copy2). Ends with the store fence copy()'s contract promises.
template <bool kTwo>
__attribute__((target("avx2"))) void stream_loop(char* d, char* c, const char* s, size_t n) {
  size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
  if (head > n) head = n;
  std::memcpy(d, s, head);
  if constexpr (kTwo) std::memcpy(c, s, head), c += head;
  d += head, s += head, n -= head;
  const size_t blocks = n / 128;
  for (size_t i = 0; i < blocks; ++i, s += 128, d += 128) {
    const __m256i a = TESSERA_LD(s), b = TESSERA_LD(s + 32), e = TESSERA_LD(s + 64), f = TESSERA_LD(s + 96);
    if constexpr (kTwo) {
      TESSERA_ST(c, a), TESSERA_ST(c + 32, b), TESSERA_ST(c + 64, e), TESSERA_ST(c + 96, f);
      c += 128;
    }
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 64), e);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 96), f);
  }
  n -= blocks * 128;
  std::memcpy(d, s, n);
  if constexpr (kTwo) std::memcpy(c, s, n);
  _mm_sfence();
}

bool streams(size_t n, Stores s) {
  if (!g_copy_avx2 || s == Stores::kCached) return false;
  return n >= (s == Stores::kStream ? kStreamCopyMin : copy_stream_min());
}
}  // namespace

void copy_streaming_loop(void* dst, const void* src, size_t n) {
  stream_loop<false>(static_cast<char*>(dst), nullptr, static_cast<const char*>(src), n);
}

namespace detail {
void copy_large(void* dst, const void* src, size_t n, Stores s) {
  if (dst == src) return;
  if (streams(n, s)) copy_streaming_loop(dst, src, n);
  else memcopy(dst, src, n);
}
}  // namespace detail

void copy2(void* dst, void* cached, const void* src, size_t n, Stores s) {
  if (dst == src) return memcopy(cached, src, n);  // in place: dst already holds it
  if (streams(n, s)) {
    stream_loop<true>(static_cast<char*>(dst), static_cast<char*>(cached), static_cast<const char*>(src), n);
  } else {
    memcopy(cached, src, n);
    memcopy(dst, cached, n);  // from the copy just made, in cache
  }
}

#undef TESSERA_LD
#undef TESSERA_ST

}  // namespace tessera
