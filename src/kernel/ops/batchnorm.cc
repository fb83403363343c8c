// BatchNorm over x = [N, C, spatial...]: per-channel statistics over N and the spatial axes.
//
// A channel's elements are N runs of HW contiguous elements (stride C * HW). Channels are the "rows" of
// rowwise.h: with S == 1 a block computes sum, then sum((x - mean)^2), then applies, channel by channel,
// so when a channel (N * HW elements) fits in L2 memory sees one read of x and one write of y. With few
// channels (C < blocks) a channel is split into segments across blocks and partials meet after grid syncs.
// Variance: corrected two-pass (see norm.cc), biased for normalisation; running_var gets the unbiased one.
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

enum class Mode { kStats, kTrain, kInfer };

Status run(const char* name, Mode mode, const ConstTensor& x, const Tensor* y, const BatchNormParams& prm,
           float* save_mean, float* save_var, const OpOptions& opts) {
  TS_RETURN_IF_ERROR(check_tensor(name, "x", x));
  if (x.shape.rank < 2)
    return invalid_arg("{}: x.shape {} must be [N, C, ...] (rank >= 2)", name, to_string(x.shape));
  if (y) TS_RETURN_IF_ERROR(check_like(name, "y", x, *y));
  if (!(prm.eps >= 0.f)) return invalid_arg("{}: eps={} must be >= 0", name, prm.eps);
  if (mode == Mode::kInfer && (!prm.running_mean || !prm.running_var))
    return invalid_arg("{}: inference needs running_mean and running_var (got {} and {})", name,
                       prm.running_mean ? "a pointer" : "null", prm.running_var ? "a pointer" : "null");
  TS_ASSIGN_OR_RETURN(int blocks, rt::resolve_block_num(opts.block_num, name));
  const size_t N = static_cast<size_t>(x.shape.dims[0]), C = static_cast<size_t>(x.shape.dims[1]);
  size_t HW = 1;
  for (int i = 2; i < x.shape.rank; ++i) HW *= static_cast<size_t>(x.shape.dims[i]);
  const size_t cnt = N * HW, numel = C * cnt;
  if (C == 0) return Status::ok();
  if (cnt == 0) {
    if (mode == Mode::kInfer) return Status::ok();
    return invalid_arg("{}: x.shape {} has no elements per channel (statistics of an empty set)", name,
                       to_string(x.shape));
  }
  if (opts.block_num == kAutoBlocks)
    blocks = static_cast<int>(std::clamp<size_t>(numel / kSmallWork, 1, static_cast<size_t>(blocks)));

  const Prims& p = prims(x.dtype);
  const size_t es = dtype_size(x.dtype);
  const char* xb = static_cast<const char*>(x.data);
  char* yb = y ? static_cast<char*>(y->data) : nullptr;
  const RowSplit R = plan_rows(C, cnt, blocks, kMinSeg);
  const double inv_cnt = 1.0 / static_cast<double>(cnt);
  const bool stream = stream_output(numel * es);
  const bool prefetch = R.S == 1 && 2 * cnt * es <= l2_cache_bytes();

  auto body = [&](BlockContext& c) {
    double* psum = c.workspace_as<double>();
    double* pdev = psum + R.units;
    double* pcor = pdev + R.units;  // sum(x - m0): corrected two-pass, as in norm.cc
    // Calls f(element offset, length) for the contiguous runs of elements [a, e) of channel ch.
    auto pieces = [&](size_t ch, size_t a, size_t e, auto&& f) {
      while (a < e) {
        const size_t n = a / HW, off = a % HW, len = std::min(HW - off, e - a);
        f((n * C + ch) * HW + off, len);
        a += len;
      }
    };
    // With whole channels per block (S == 1), the passes over channel ch also ask the L2 for channel ch + 1
    // (thirds [k0, k1) of each of its runs, spread over the three passes): the next channel's memory stream
    // runs under this channel's cache-resident passes instead of after them, and the short runs (one 4 KiB
    // page for 32x32 images) that stop the hardware prefetcher at every page are fetched ahead. Only when
    // two channels fit in L2 together.
    auto prefetch_next = [&](size_t ch, size_t off, size_t len, size_t k0, size_t k1) {
      if (!prefetch || ch + 1 >= C) return;
      const size_t bytes = len * es, third = (bytes + 3 * 64 - 1) / (3 * 64) * 64;
      const size_t b0 = std::min(bytes, third * k0), b1 = std::min(bytes, third * k1);
      if (b1 > b0) prefetch_l2(xb + (off + HW) * es + b0, b1 - b0);
    };
    auto total = [&](const double* part, size_t ch) {
      double s = 0;
      for (size_t k = 0; k < R.S; ++k) s += part[ch * R.S + k];
      return s;
    };
    auto stat_a = [&](size_t ch, size_t a, size_t e, size_t u) {
      if (mode == Mode::kInfer) return;
      double s = 0;
      pieces(ch, a, e, [&](size_t off, size_t len) {
        s += p.sum(xb + off * es, len);
        prefetch_next(ch, off, len, 0, 1);
      });
      psum[u] = s;
    };
    auto stat_b = [&](size_t ch, size_t a, size_t e, size_t u) {
      if (mode == Mode::kInfer) return;
      const float mean = static_cast<float>(total(psum, ch) * inv_cnt);
      double s = 0, cor = 0;
      pieces(ch, a, e, [&](size_t off, size_t len) {
        double d = 0;
        s += p.sqdev(xb + off * es, len, mean, &d);
        cor += d;
        prefetch_next(ch, off, len, 1, 2);
      });
      pdev[u] = s;
      pcor[u] = cor;
    };
    auto apply = [&](size_t ch, size_t a, size_t e, size_t u) {
      double mean, var;
      if (mode == Mode::kInfer) {
        mean = prm.running_mean[ch];
        var = prm.running_var[ch];
      } else {
        const double m0 = static_cast<float>(total(psum, ch) * inv_cnt), delta = total(pcor, ch) * inv_cnt;
        mean = m0 + delta;
        var = std::max(0.0, total(pdev, ch) * inv_cnt - delta * delta);
        if (u % R.S == 0) {  // one unit per channel publishes the statistics
          if (save_mean) save_mean[ch] = static_cast<float>(mean);
          if (save_var) save_var[ch] = static_cast<float>(var);
          if (mode == Mode::kTrain) {
            const double m = prm.momentum;
            const double unbiased = cnt > 1 ? var * static_cast<double>(cnt) / static_cast<double>(cnt - 1) : var;
            if (prm.running_mean) prm.running_mean[ch] = static_cast<float>((1 - m) * prm.running_mean[ch] + m * mean);
            if (prm.running_var) prm.running_var[ch] = static_cast<float>((1 - m) * prm.running_var[ch] + m * unbiased);
          }
        }
      }
      if (!yb) return;
      const double scale = (prm.weight ? prm.weight[ch] : 1.0) / std::sqrt(var + prm.eps);
      const float beta = prm.bias ? prm.bias[ch] : 0.f;
      const float hi = static_cast<float>(mean), lo = static_cast<float>(mean - hi);
      pieces(ch, a, e, [&](size_t off, size_t len) {
        p.norm(xb + off * es, yb + off * es, len, hi, lo, static_cast<float>(scale), nullptr, nullptr, beta, stream);
        prefetch_next(ch, off, len, mode == Mode::kInfer ? 0 : 2, 3);
      });
    };
    run_rowwise(c, R, 3, stat_a, stat_b, apply);
    if (stream) stream_fence();
  };
  return rt::launch_fn(LaunchOptions{blocks, R.units * 3 * sizeof(double), name}, body);
}
}  // namespace

Status batch_norm_stats(const ConstTensor& x, float* mean, float* var, const OpOptions& opts) {
  return run("batch_norm_stats", Mode::kStats, x, nullptr, BatchNormParams{}, mean, var, opts);
}

Status batch_norm_train(const ConstTensor& x, const Tensor& y, const BatchNormParams& p, float* save_mean,
                        float* save_var, const OpOptions& opts) {
  return run("batch_norm_train", Mode::kTrain, x, &y, p, save_mean, save_var, opts);
}

Status batch_norm_infer(const ConstTensor& x, const Tensor& y, const BatchNormParams& p, const OpOptions& opts) {
  return run("batch_norm_infer", Mode::kInfer, x, &y, p, nullptr, nullptr, opts);
}

}  // namespace tessera::kernel::ops
