// LayerNorm and RMSNorm over the last axis (rowwise.h drives the phases).
//
//   LayerNorm  a: m0 = sum(x) / n   b: sum((x - m0)^2), sum(x - m0)   c: y = (x - mean) * rstd * w + b
//              (corrected two-pass: mean = m0 + sum(x - m0) / n, var = sum((x - m0)^2) / n - (mean - m0)^2;
//              no cancellation when |mean| >> std, and the f32 error of m0 is removed)
//   RMSNorm    a: sum(x^2)                      c: y = x * rstd * w + b
// Weight and bias given in x's 16-bit type are widened to f32 once per call (the kernels read f32 vectors).
#include <cmath>
#include <vector>

#include "kernel/ops/ops.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/rowwise.h"

namespace tessera::kernel::ops {
namespace {
constexpr size_t kMinSeg = 16384;
constexpr size_t kSmallWork = 32768;

// f32 view of an optional per-feature vector; 16-bit inputs are converted into `buf`.
const float* f32_view(const std::optional<ConstTensor>& v, std::vector<float>& buf) {
  if (!v) return nullptr;
  if (v->dtype == DType::kF32) return static_cast<const float*>(v->data);
  buf.resize(static_cast<size_t>(v->shape.numel()));
  prims(v->dtype).to_f32(v->data, buf.data(), buf.size());
  return buf.data();
}
}  // namespace

Status layer_norm(const ConstTensor& x, const Tensor& y, const NormParams& prm, bool rms, const OpOptions& opts) {
  const char* name = rms ? "rms_norm" : "layer_norm";
  TS_RETURN_IF_ERROR(check_tensor(name, "x", x));
  TS_RETURN_IF_ERROR(check_like(name, "y", x, y));
  if (x.shape.rank < 1) return invalid_arg("{}: x must have at least one dimension (x.shape {})", name, to_string(x.shape));
  const size_t n = static_cast<size_t>(x.shape.dims[x.shape.rank - 1]);
  if (prm.weight) TS_RETURN_IF_ERROR(check_vector(name, "weight", *prm.weight, static_cast<int64_t>(n), x.dtype));
  if (prm.bias) TS_RETURN_IF_ERROR(check_vector(name, "bias", *prm.bias, static_cast<int64_t>(n), x.dtype));
  if (!(prm.eps >= 0.f)) return invalid_arg("{}: eps={} must be >= 0", name, prm.eps);
  TS_ASSIGN_OR_RETURN(int blocks, rt::resolve_block_num(opts.block_num, name));
  const size_t numel = static_cast<size_t>(x.shape.numel());
  if (numel == 0) return Status::ok();
  if (opts.block_num == kAutoBlocks)
    blocks = static_cast<int>(std::clamp<size_t>(numel / kSmallWork, 1, static_cast<size_t>(blocks)));

  thread_local std::vector<float> wbuf, bbuf;
  const float* w = f32_view(prm.weight, wbuf);
  const float* bias = f32_view(prm.bias, bbuf);
  const Prims& p = prims(x.dtype);
  const size_t es = dtype_size(x.dtype);
  const char* xb = static_cast<const char*>(x.data);
  char* yb = static_cast<char*>(y.data);
  const RowSplit R = plan_rows(numel / n, n, blocks, kMinSeg);
  const double eps = prm.eps, inv_n = 1.0 / static_cast<double>(n);
  const bool stream = stream_output(numel * es);

  auto body = [&](BlockContext& c) {
    double* psum = c.workspace_as<double>();  // LayerNorm: sum(x); RMSNorm: sum(x^2)
    double* pdev = psum + R.units;            // LayerNorm: sum((x - m0)^2), m0 = sum(x) / n
    double* pcor = pdev + R.units;            // LayerNorm: sum(x - m0), corrects m0 (corrected two-pass)
    auto total = [&](const double* part, size_t row) {
      double s = 0;
      for (size_t k = 0; k < R.S; ++k) s += part[row * R.S + k];
      return s;
    };
    auto at = [&](size_t row, size_t i) { return xb + (row * n + i) * es; };
    auto out = [&](size_t row, size_t i) { return yb + (row * n + i) * es; };
    auto stat_a = [&](size_t row, size_t b, size_t e, size_t u) {
      psum[u] = rms ? p.sqdev(at(row, b), e - b, 0.f, nullptr) : p.sum(at(row, b), e - b);
    };
    auto stat_b = [&](size_t row, size_t b, size_t e, size_t u) {
      pdev[u] = p.sqdev(at(row, b), e - b, static_cast<float>(total(psum, row) * inv_n), &pcor[u]);
    };
    auto apply = [&](size_t row, size_t b, size_t e, size_t) {
      double mean = 0, var = total(psum, row) * inv_n;
      if (!rms) {
        const double m0 = static_cast<float>(total(psum, row) * inv_n), delta = total(pcor, row) * inv_n;
        mean = m0 + delta;
        var = std::max(0.0, total(pdev, row) * inv_n - delta * delta);
      }
      const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
      const float hi = static_cast<float>(mean);
      p.norm(at(row, b), out(row, b), e - b, hi, static_cast<float>(mean - hi), rstd, w ? w + b : nullptr,
             bias ? bias + b : nullptr, 0.f, stream);
    };
    run_rowwise(c, R, rms ? 2 : 3, stat_a, stat_b, apply, n * es <= (256u << 10) ? xb : nullptr, n * es);
    if (stream) stream_fence();
  };
  return rt::launch_fn(LaunchOptions{blocks, R.units * 3 * sizeof(double), name}, body);
}

}  // namespace tessera::kernel::ops
