// Driver for row-wise operators (softmax, layer/rms norm): three phases per row, statistics -> more
// statistics -> apply, each phase working on a segment of a row.
//
// Rows are split into S segments (S = 1 unless there are fewer rows than needed to keep every block busy,
// see segments_for) and the units (row, segment) are dealt to blocks in contiguous ranges.
//   S == 1: a block runs phase a, b, c on one row before moving on, so phases b and c read the row from
//           cache: memory sees one read of x and one write of y.
//   S  > 1: a phase runs on every unit, then a grid sync, then the next phase; partials of the segments of
//           a row are combined in segment order by whoever needs them (deterministic).
// Phase functions: void(size_t row, size_t begin, size_t end, size_t unit); partial storage is the caller's
// (indexed by unit).
#pragma once
#include <cstddef>

#include "kernel/ops/common.h"

namespace tessera::kernel::ops {

struct RowSplit {
  size_t rows = 0, n = 0, S = 1, units = 0;
};

inline RowSplit plan_rows(size_t rows, size_t n, int blocks, size_t min_seg) {
  RowSplit r;
  r.rows = rows;
  r.n = n;
  r.S = segments_for(rows, n, blocks, min_seg);
  r.units = rows * r.S;
  return r;
}

// Asks the L2 to fetch [p, p + bytes) (the next row, while this one is computed from L1: overlaps the
// compute-heavy phases with the memory stream instead of alternating between them).
inline void prefetch_l2(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 0, 2);
}

// row_bytes/base: when set (S == 1 only), row u + 1 is prefetched into L2 before phases b and c of row u.
template <typename A, typename B, typename C>
void run_rowwise(BlockContext& ctx, const RowSplit& R, int phases, A&& a, B&& b, C&& c, const char* base = nullptr,
                 size_t row_bytes = 0) {
  auto [u0, u1] = split(R.units, ctx.block_num(), ctx.block_idx());
  auto range = [&](size_t u) { return split(R.n, static_cast<int>(R.S), static_cast<int>(u % R.S)); };
  if (R.S == 1) {
    for (size_t u = u0; u < u1; ++u) {
      a(u, size_t{0}, R.n, u);
      if (base && u + 1 < u1) prefetch_l2(base + (u + 1) * row_bytes, row_bytes);
      if (phases > 2) b(u, size_t{0}, R.n, u);
      c(u, size_t{0}, R.n, u);
    }
    return;
  }
  for (size_t u = u0; u < u1; ++u) {
    auto [s0, s1] = range(u);
    a(u / R.S, s0, s1, u);
  }
  ctx.sync();
  if (phases > 2) {
    for (size_t u = u0; u < u1; ++u) {
      auto [s0, s1] = range(u);
      b(u / R.S, s0, s1, u);
    }
    ctx.sync();
  }
  for (size_t u = u0; u < u1; ++u) {
    auto [s0, s1] = range(u);
    c(u / R.S, s0, s1, u);
  }
}

}  // namespace tessera::kernel::ops
