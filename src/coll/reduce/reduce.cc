#include "coll/reduce/reduce.h"

#include <cstdint>
#include <cstring>

#include "pgas/copy.h"

namespace tessera::coll {
using ReduceFn = void (*)(void*, const void* const*, int, size_t, int, int);
const ReduceFn* reduce_table_avx2();
const ReduceFn* reduce_table_base();

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

void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DType t, Op op, int divide) {
  if (count == 0 || nsrc <= 0) return;
  if (nsrc == 1 && !(op == Op::kAvg && divide > 1)) {
    if (dst != srcs[0]) std::memcpy(dst, srcs[0], count * dtype_size(t));
    return;
  }
  table()[static_cast<int>(t)](dst, srcs, nsrc, count, static_cast<int>(op), divide);
}

const char* reduce_isa() { return table() == reduce_table_base() ? "baseline" : "avx2"; }

void copy(void* dst, const void* src, size_t bytes, bool stream) {
  if (dst == src || bytes == 0) return;
  static const bool avx2 = has_avx2();
  if (stream && avx2 && bytes >= (size_t{64} << 10))
    pgas::copy_large(dst, src, bytes);  // the PGAS layer's streaming-store copy
  else
    std::memcpy(dst, src, bytes);
}

}  // namespace tessera::coll
