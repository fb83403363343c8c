#include "coll/reduce/reduce.h"

#include "base/memcopy.h"

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

const char* reduce_isa() { return table() == reduce_table_base() ? "baseline" : "avx2"; }

}  // namespace tessera::coll
