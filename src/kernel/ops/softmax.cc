// Softmax and LogSoftmax along the last axis.
//
// Whole rows per block (S == 1), x read from memory once, y written once (streamed when larger than the LLC):
//   rows of kStagedMin..L2: per row r, m = max(x), s = sum(exp(x - m)) (softmax: the exponentials e into
//     scratch), then softmax y = e / s, log_softmax y = x - m - log s: one exp per element, pipelined over
//     rows (see the body).
//   otherwise: s = sum(exp(x - m)), fused with m' = max(row r + 1) (the next row's memory stream overlaps
//     this row's exp work); then softmax y = exp(x - m) / s (exponentials kept in scratch when row +
//     exponentials + next row fit in L1, else recomputed), log_softmax y = x - m - log s.
// Rows split across blocks (S > 1) use three phases with grid syncs (rowwise.h): partial maxima, partial
// sums of exp(x - m), then the output.
// A row whose maximum is NaN or infinite (a NaN in the row, +inf, or all -inf) becomes NaN, like PyTorch.
#include <cmath>
#include <limits>

#include "base/cpu.h"
#include "kernel/ops/ops.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/rowwise.h"

namespace tessera::kernel::ops {
namespace {
constexpr size_t kMinSeg = 16384;
constexpr size_t kSmallWork = 32768;
constexpr size_t kL1Bytes = 32768;  // L1 data cache of current x86 cores (32-48 KiB)
constexpr size_t kStagedMin = 1024;  // shortest row for the staged path (shorter rows: per-row calls dominate)
constexpr size_t kChunk = 1024;      // elements per step of the staged pipeline
// The exponentials start 2 KiB + one line into scratch: their stores then never share the low 12 address
// bits with the loads of a page-aligned row at the same index (4 KiB aliasing stalls the loads; measured:
// docs/kernel.md).
constexpr size_t kExpOffset = 2048 + 64;

double nan_max(double a, double b) {
  return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}
}  // namespace

Status softmax(const ConstTensor& x, const Tensor& y, bool log, const OpOptions& opts) {
  const char* name = log ? "log_softmax" : "softmax";
  TS_RETURN_IF_ERROR(check_tensor(name, "x", x));
  TS_RETURN_IF_ERROR(check_like(name, "y", x, y));
  TS_ASSIGN_OR_RETURN(int blocks, rt::resolve_block_num(opts.block_num, name));
  const size_t numel = static_cast<size_t>(x.shape.numel());
  const size_t n = x.shape.rank == 0 ? 1 : static_cast<size_t>(x.shape.dims[x.shape.rank - 1]);
  if (numel == 0) return Status::ok();
  if (opts.block_num == kAutoBlocks)
    blocks = static_cast<int>(std::clamp<size_t>(numel / kSmallWork, 1, static_cast<size_t>(blocks)));

  const Prims& p = prims(x.dtype);
  const size_t es = dtype_size(x.dtype);
  const char* xb = static_cast<const char*>(x.data);
  char* yb = static_cast<char*>(y.data);
  const RowSplit R = plan_rows(numel / n, n, blocks, kMinSeg);
  // Keep exp(x - m) in scratch for the output pass only while this row, its exponentials and the next row
  // being streamed fit in L1; beyond that, recomputing exp is cheaper than the L2 round trips (measured:
  // f32 rows of 4096 recompute, bf16 rows of 4096 keep).
  const bool keep_exp = !log && n * (2 * es + sizeof(float)) <= kL1Bytes && n * sizeof(float) <= rt::scratch_bytes();
  const bool staged = n >= kStagedMin && kExpOffset + 2 * n * sizeof(float) <= rt::scratch_bytes() &&
                      n * (2 * es + sizeof(float)) <= l2_cache_bytes() / 2;
  const size_t ws = R.units * 3 * sizeof(double);
  const bool stream = stream_output(numel * es);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto nan_row = [&](char* y, size_t len) {
    for (size_t i = 0; i < len; ++i) p.from_f32(&nan, y + i * es, 1);
  };
  auto body = [&](BlockContext& c) {
    if (R.S == 1 && staged) {
      // Software pipeline over rows, chunk by chunk: exp of row r, then output of row r - 1 (its
      // exponentials in the other scratch buffer). Streamed stores drain at memory speed; issued between
      // exp chunks they overlap the exp work instead of stalling a pass of their own. Row r + 1 is
      // prefetched into L2 chunk by chunk meanwhile (slower on the Intel hosts, whose prefetchers follow the
      // rows; faster on Zen 5, the host the targets are measured on now; docs/kernel.md).
      float* ebuf[2] = {reinterpret_cast<float*>(c.scratch_as<char>() + kExpOffset),
                        reinterpret_cast<float*>(c.scratch_as<char>() + kExpOffset) + n};
      auto [r0, r1] = split(R.rows, c.block_num(), c.block_idx());
      const size_t rb = n * es;
      const char* prev_y = nullptr;  // row r - 1's output, pending (null: nothing pending)
      float prev_inv = 0.f;          // softmax: 1 / s of row r - 1; log_softmax: -(m + log s)
      auto out_chunk = [&](size_t i, const float* pe) {
        if (!prev_y) return;
        char* y = const_cast<char*>(prev_y) + i * es;
        // log_softmax: y = x - m - log s, from row r - 1's input (still in L1/L2) instead of exponentials
        if (log) p.add(xb + (y - yb), y, std::min(kChunk, n - i), prev_inv, stream);
        else p.scale_f32(pe + i, y, std::min(kChunk, n - i), prev_inv, stream);
      };
      for (size_t r = r0; r < r1; ++r) {
        const char* x = xb + r * rb;
        char* y = yb + r * rb;
        float* e = ebuf[(r - r0) & 1];
        const float* pe = ebuf[(r - r0 + 1) & 1];
        float lo;
        const float m = p.range(x, n, &lo);
        if (!std::isfinite(m)) {
          for (size_t i = 0; i < n; i += kChunk) out_chunk(i, pe);
          prev_y = nullptr;
          nan_row(y, n);
          continue;
        }
        double s = 0;
        for (size_t i = 0; i < n; i += kChunk) {
          // The next row's chunk into L2 while this chunk is exponentiated: the memory stream then overlaps
          // the exp work instead of waiting for the next row's max pass (docs/kernel.md).
          if (r + 1 < r1) prefetch_l2(x + rb + i * es, std::min(kChunk, n - i) * es);
          s += p.exp_sum(x + i * es, std::min(kChunk, n - i), m, lo, log ? nullptr : e + i, nullptr, nullptr, nullptr);
          out_chunk(i, pe);
        }
        prev_y = y;
        prev_inv = log ? static_cast<float>(-(m + std::log(s))) : static_cast<float>(1.0 / s);
      }
      const float* pe = ebuf[(r1 - r0 + 1) & 1];
      for (size_t i = 0; i < n; i += kChunk) out_chunk(i, pe);
      if (stream) stream_fence();
      return;
    }
    if (R.S == 1) {
      // Whole rows: the max of row r + 1 is taken inside row r's exp loop (prims.h, exp_sum), so the
      // memory stream of the next row overlaps this row's compute.
      float* e = c.scratch_as<float>();
      auto [r0, r1] = split(R.rows, c.block_num(), c.block_idx());
      auto row = [&](size_t r) { return xb + r * n * es; };
      float lo = 0.f;  // the row's minimum
      float m = r0 < r1 ? p.range(row(r0), n, &lo) : 0.f;
      for (size_t r = r0; r < r1; ++r) {
        const void* next = r + 1 < r1 ? row(r + 1) : nullptr;
        char* y = yb + r * n * es;
        float m_next = 0.f, lo_next = 0.f;
        if (!std::isfinite(m)) {
          nan_row(y, n);
          if (next) m_next = p.range(next, n, &lo_next);
        } else {
          const double s = p.exp_sum(row(r), n, m, lo, keep_exp ? e : nullptr, next, &m_next, &lo_next);
          if (log) p.add(row(r), y, n, static_cast<float>(-(m + std::log(s))), stream);
          else if (keep_exp) p.scale_f32(e, y, n, static_cast<float>(1.0 / s), stream);
          else p.exp_scale(row(r), y, n, m, lo, static_cast<float>(1.0 / s), stream);
        }
        m = m_next;
        lo = lo_next;
      }
      if (stream) stream_fence();
      return;
    }
    double* pmax = c.workspace_as<double>();
    double* psum = pmax + R.units;
    double* plo = psum + R.units;  // each segment's minimum (for its exponentials' flush, exp_sum)
    auto row_max = [&](size_t row) {
      double m = pmax[row * R.S];
      for (size_t s = 1; s < R.S; ++s) m = nan_max(m, pmax[row * R.S + s]);
      return m;
    };
    auto row_sum = [&](size_t row) {
      double s = 0;
      for (size_t k = 0; k < R.S; ++k) s += psum[row * R.S + k];
      return s;
    };
    auto at = [&](size_t row, size_t i) { return (row * n + i) * es; };
    run_rowwise(
        c, R, 3,
        [&](size_t row, size_t b, size_t end, size_t u) {
          float lo;
          pmax[u] = p.range(xb + at(row, b), end - b, &lo);
          plo[u] = lo;
        },
        [&](size_t row, size_t b, size_t end, size_t u) {
          const double m = row_max(row);
          psum[u] = std::isfinite(m) ? p.exp_sum(xb + at(row, b), end - b, static_cast<float>(m),
                                                 static_cast<float>(plo[u]), nullptr, nullptr, nullptr, nullptr)
                                     : 0.0;
        },
        [&](size_t row, size_t b, size_t end, size_t u) {
          const double m = row_max(row);
          const size_t len = end - b;
          if (!std::isfinite(m)) {
            nan_row(yb + at(row, b), len);
            return;
          }
          const double s = row_sum(row);
          if (log) p.add(xb + at(row, b), yb + at(row, b), len, static_cast<float>(-(m + std::log(s))), stream);
          else p.exp_scale(xb + at(row, b), yb + at(row, b), len, static_cast<float>(m), static_cast<float>(plo[u]),
                           static_cast<float>(1.0 / s), stream);
        },
        n * es <= (256u << 10) ? xb : nullptr, n * es);
    if (stream) stream_fence();
  };
  return rt::launch_fn(LaunchOptions{blocks, ws, name}, body);
}

}  // namespace tessera::kernel::ops
