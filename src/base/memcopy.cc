#include "base/memcopy.h"

#include <immintrin.h>

#include <cstdint>

namespace tessera {

#define TESSERA_LD(p) _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
#define TESSERA_ST(p, v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v)

namespace {
bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
}  // namespace

const bool g_memcopy_loop = cpu_has_avx2();

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

#undef TESSERA_LD
#undef TESSERA_ST

}  // namespace tessera
