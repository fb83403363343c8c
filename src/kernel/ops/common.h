// Shared pieces of the operators: argument checks (the messages users see), work partitioning and the
// inter-block combination of partials (flat or tree).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/status.h"
#include "kernel/runtime/runtime.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel::ops {

// ---- argument checks: each names the operator, the argument, the value and the limit
// data may be null only when the tensor is empty; dims >= 0; rank 0..8; dtype known.
Status check_tensor(const char* op, const char* arg, const ConstTensor& t);
// y has x's dtype and shape.
Status check_like(const char* op, const char* arg, const ConstTensor& x, const ConstTensor& y);
// An optional per-feature vector (weight/bias): shape [n], dtype f32 or `dt`.
Status check_vector(const char* op, const char* arg, const ConstTensor& v, int64_t n, DType dt);
// Negative axes count from the end.
Result<int> normalize_axis(const char* op, int axis, int rank);

// ---- partitioning: part k of n items split into `parts` contiguous, balanced ranges
inline std::pair<size_t, size_t> split(size_t n, int parts, int k) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(k);
  return {n * i / p, n * (i + 1) / p};
}

// Segments per row so that rows * segments spreads evenly over `blocks`: 1 when rows are short or
// plentiful, otherwise the smallest s with (rows * s) % blocks == 0 or rows * s >= 8 * blocks, at most
// len / min_seg.
inline size_t segments_for(size_t rows, size_t len, int blocks, size_t min_seg) {
  const size_t B = static_cast<size_t>(blocks);
  if (rows == 0 || rows >= 8 * B || len < 2 * min_seg) return 1;
  const size_t cap = std::max<size_t>(1, len / min_seg);
  size_t s = 1;
  while (s < cap && (rows * s) % B != 0 && rows * s < 8 * B) ++s;
  return s;
}

// ---- inter-block combination
// slots: block_num records of `width` values (record b at slots + b * width), one per block, written before
// the call. Every block calls it; on return record 0 holds op(record 0, record 1, ...), combined in a fixed
// order (flat: left to right; tree: pairs (b, b + s) for s = 1, 2, 4, ...), so results are reproducible for
// a given block_num and mode. Flat: one sync, then the width is split across blocks. Tree: log2(blocks)
// rounds of syncs, combining in parallel (better when partials are many and wide).
template <typename T, typename Op>
void grid_combine(BlockContext& c, T* slots, size_t width, Combine mode, Op op) {
  const int B = c.block_num(), b = c.block_idx();
  c.sync();
  if (B == 1) return;
  if (mode == Combine::kTree) {
    for (int stride = 1; stride < B; stride *= 2) {
      if (b % (2 * stride) == 0 && b + stride < B) {
        T* dst = slots + static_cast<size_t>(b) * width;
        const T* src = slots + static_cast<size_t>(b + stride) * width;
        for (size_t j = 0; j < width; ++j) dst[j] = op(dst[j], src[j]);
      }
      c.sync();
    }
    return;
  }
  auto [j0, j1] = split(width, B, b);
  for (size_t j = j0; j < j1; ++j) {
    T acc = slots[j];
    for (int k = 1; k < B; ++k) acc = op(acc, slots[static_cast<size_t>(k) * width + j]);
    slots[j] = acc;
  }
  c.sync();
}

}  // namespace tessera::kernel::ops
