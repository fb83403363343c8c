// Element-wise reduction kernels of the collective layer.
//
// reduce() is the only place where collective arithmetic happens, so its order is the library's order:
//   dst[i] = ((srcs[0][i] op srcs[1][i]) op srcs[2][i]) ...   (left fold in source order)
// float16/bfloat16 are widened to float32 and accumulated across all sources in one pass, rounded once
// (round to nearest even); integers wrap around (two's complement); kAvg folds as a sum and, when
// `divide` > 0, divides the folded value by `divide` once before rounding (integers: truncating division).
// Element-wise IEEE operations in a fixed order give bitwise identical results whatever the SIMD width or
// the split of the range into pieces, which the deterministic mode relies on.
//
// dst may be the same address as any source (in-place), never a partial overlap. Thread-safe (no state
// besides the kernel table chosen once from the CPU's features: AVX2+F16C or baseline x86-64).
#pragma once
#include <cstddef>

#include "coll/types.h"

namespace tessera::coll {

void reduce_general(void* dst, const void* const* srcs, int nsrc, size_t count, DType t, Op op, int divide);

namespace detail {
// A float sum of a few elements (an LL payload), folded element by element in source order: the same left
// fold as the kernels, so the same bits, without the table call and the vector loop's setup, which cost
// about as much as the rest of a small allreduce. Every source is read at index i before dst[i] is written
// (dst may be a source).
inline constexpr size_t kSmallSum = 16;
template <typename T>
inline void sum_small(void* dst, const void* const* srcs, int nsrc, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T acc = static_cast<const T*>(srcs[0])[i];
    for (int j = 1; j < nsrc; ++j) acc += static_cast<const T*>(srcs[j])[i];
    static_cast<T*>(dst)[i] = acc;
  }
}
}  // namespace detail

// Inline for the smallest float sums (the LL allreduce's common case); everything else is reduce_general.
inline void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DType t, Op op, int divide = 0) {
  if (nsrc >= 2 && count <= detail::kSmallSum && count > 0 && op == Op::kSum) {
    if (t == DType::kFloat32) return detail::sum_small<float>(dst, srcs, nsrc, count);
    if (t == DType::kFloat64) return detail::sum_small<double>(dst, srcs, nsrc, count);
  }
  reduce_general(dst, srcs, nsrc, count, t, op, divide);
}

// The kernel tables, one function per DType: (dst, srcs, nsrc >= 2, count, op, divide). reduce() picks one
// at run time; tests run both.
using ReduceFn = void (*)(void*, const void* const*, int, size_t, int, int);
const ReduceFn* reduce_table_avx2();
const ReduceFn* reduce_table_base();

// Name of the kernel table in use ("avx2" or "baseline"), for tessera-info.
const char* reduce_isa();

}  // namespace tessera::coll
