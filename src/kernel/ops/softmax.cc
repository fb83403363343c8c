// Softmax and LogSoftmax along the last axis (rowwise.h drives the phases).
//
//   a: m = max(row)                      (the only pass that reads x from memory when S == 1)
//   b: s = sum(exp(x - m))               (softmax with S == 1 keeps exp(x - m) in the block's scratch)
//   c: softmax y = exp(x - m) / s        (from scratch, or recomputed for split / very long rows)
//      log     y = x - m - log(s)
// A row whose maximum is NaN or infinite (a NaN in the row, +inf, or all -inf) becomes NaN, like PyTorch.
#include <cmath>
#include <limits>

#include "kernel/ops/ops.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/rowwise.h"

namespace tessera::kernel::ops {
namespace {
constexpr size_t kMinSeg = 16384;
constexpr size_t kSmallWork = 32768;

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
  const bool keep_exp = !log && R.S == 1 && n * sizeof(float) <= rt::scratch_bytes();
  const size_t ws = R.units * 2 * sizeof(double);
  const bool stream = stream_output(numel * es);

  auto body = [&](BlockContext& c) {
    double* pmax = c.workspace_as<double>();
    double* psum = pmax + R.units;
    float* e = c.scratch_as<float>();
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
        [&](size_t row, size_t b, size_t end, size_t u) { pmax[u] = p.max(xb + at(row, b), end - b); },
        [&](size_t row, size_t b, size_t end, size_t u) {
          const double m = row_max(row);
          psum[u] = std::isfinite(m) ? p.exp_sum(xb + at(row, b), end - b, static_cast<float>(m), keep_exp ? e : nullptr) : 0.0;
        },
        [&](size_t row, size_t b, size_t end, size_t u) {
          const double m = row_max(row);
          const size_t len = end - b;
          if (!std::isfinite(m)) {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            for (size_t i = 0; i < len; ++i) p.from_f32(&nan, yb + at(row, b + i), 1);
            return;
          }
          const double s = row_sum(row);
          if (log) p.add(xb + at(row, b), yb + at(row, b), len, static_cast<float>(-(m + std::log(s))), stream);
          else if (keep_exp) p.scale_f32(e, yb + at(row, b), len, static_cast<float>(1.0 / s), stream);
          else p.exp_scale(xb + at(row, b), yb + at(row, b), len, static_cast<float>(m), static_cast<float>(1.0 / s), stream);
        },
        n * es <= (256u << 10) ? xb : nullptr, n * es);
  };
  return rt::launch_fn(LaunchOptions{blocks, ws, name}, body);
}

}  // namespace tessera::kernel::ops
