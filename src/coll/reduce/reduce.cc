#include "coll/reduce/reduce.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "base/memcopy.h"
#include "pgas/copy.h"

namespace tessera::coll {

namespace {
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
const ReduceFn* table() {
  static const ReduceFn* t = has_avx2() ? reduce_table_avx2() : reduce_table_base();
  return t;
}

}  // namespace

void reduce_general(void* dst, const void* const* srcs, int nsrc, size_t count, DType t, Op op, int divide) {
  if (count == 0 || nsrc <= 0) return;
  if (nsrc == 1 && !(op == Op::kAvg && divide > 1)) {
    if (dst != srcs[0]) memcopy(dst, srcs[0], count * dtype_size(t));
    return;
  }
  table()[static_cast<int>(t)](dst, srcs, nsrc, count, static_cast<int>(op), divide);
}

namespace {
__attribute__((target("avx2"))) void copy2_avx2(char* d, char* c, const char* s, size_t n) {
  // Align the streamed destination to 32 bytes with an ordinary copy of the head.
  size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
  if (head > n) head = n;
  std::memcpy(d, s, head);
  std::memcpy(c, s, head);
  d += head, c += head, s += head, n -= head;
  const size_t blocks = n / 128;
  for (size_t i = 0; i < blocks; ++i, s += 128, d += 128, c += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 64));
    const __m256i f = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 64), e);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 96), f);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 64), e);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 96), f);
  }
  n -= blocks * 128;
  std::memcpy(d, s, n);
  std::memcpy(c, s, n);
  _mm_sfence();
}
}  // namespace

void copy2(void* dst, void* cached, const void* src, size_t bytes, bool stream) {
  if (dst == src) {  // in place: dst already holds it
    copy(cached, src, bytes);
    return;
  }
  static const bool avx2 = has_avx2();
  if (stream && avx2 && bytes >= (size_t{64} << 10)) {
    copy2_avx2(static_cast<char*>(dst), static_cast<char*>(cached), static_cast<const char*>(src), bytes);
    return;
  }
  copy(cached, src, bytes);
  copy(dst, cached, bytes, stream);  // from the copy just made, in cache
}

const char* reduce_isa() { return table() == reduce_table_base() ? "baseline" : "avx2"; }

void copy(void* dst, const void* src, size_t bytes, bool stream) {
  if (dst == src || bytes == 0) return;
  static const bool avx2 = has_avx2();
  if (stream && avx2 && bytes >= (size_t{64} << 10))
    pgas::copy_large(dst, src, bytes);  // the PGAS layer's streaming-store copy
  else
    memcopy(dst, src, bytes);
}

}  // namespace tessera::coll
