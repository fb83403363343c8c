// LayerNorm, RMSNorm and BatchNorm against a double-precision reference.
//
// Tolerance (docs/kernel.md): |got - want| <= 2 u_out |want| + 2e-5 (1 + |want|); statistics (mean, var)
// to 1e-5 relative of their scale. Inputs carry a large common offset in one case to check that variance
// is computed without cancellation (two-pass).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "kernel_test_util.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {
namespace {

using testing::Buf;
using ::testing::HasSubstr;

double tol(DType dt, double want) { return 2 * testing::unit_roundoff(dt) * std::fabs(want) + 2e-5 * (1 + std::fabs(want)); }

void check_norm(DType dt, Shape shape, bool rms, bool with_w, bool with_b, DType wdt, int blocks, double offset = 0) {
  SCOPED_TRACE(::testing::Message() << (rms ? "rms_norm " : "layer_norm ") << dtype_name(dt) << " "
                                    << to_string(shape) << " w " << with_w << " b " << with_b << " wdt "
                                    << dtype_name(wdt) << " blocks " << blocks << " offset " << offset);
  const size_t n = static_cast<size_t>(shape.dims[shape.rank - 1]);
  Buf x(dt, shape), y(dt, shape), w(wdt, Shape{static_cast<int64_t>(n)}), b(wdt, Shape{static_cast<int64_t>(n)});
  x.fill_uniform(21, offset - 2, offset + 3);
  w.fill_uniform(22, 0.5, 1.5);
  b.fill_uniform(23, -1, 1);
  NormParams p;
  if (with_w) p.weight = w.ct();
  if (with_b) p.bias = b.ct();
  p.eps = 1e-5f;
  if (rms) rms_norm(x.ct(), y.t(), p, {.block_num = blocks});
  else layer_norm(x.ct(), y.t(), p, {.block_num = blocks});
  const size_t rows = x.size() / n;
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; ++i) mean += x.get(r * n + i);
    mean /= double(n);
    for (size_t i = 0; i < n; ++i) {
      const double d = x.get(r * n + i) - (rms ? 0 : mean);
      var += d * d;
    }
    var /= double(n);
    const double rstd = 1 / std::sqrt(var + 1e-5);
    for (size_t i = 0; i < n; ++i) {
      double want = (x.get(r * n + i) - (rms ? 0 : mean)) * rstd;
      if (with_w) want *= w.get(i);
      if (with_b) want += b.get(i);
      ASSERT_NEAR(y.get(r * n + i), want, tol(dt, want)) << "row " << r << " col " << i;
    }
  }
}

class NormTest : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(NormTest, LayerNormAndRmsNorm) {
  auto [dt, blocks] = GetParam();
  for (bool rms : {false, true}) {
    for (Shape s : {Shape{1}, Shape{3, 7}, Shape{33, 1000}, Shape{2, 3, 129}})
      check_norm(dt, s, rms, true, true, dt, blocks);
    check_norm(dt, Shape{5, 64}, rms, false, false, dt, blocks);
    check_norm(dt, Shape{5, 64}, rms, true, false, DType::kF32, blocks);
    check_norm(dt, Shape{5, 64}, rms, false, true, DType::kF32, blocks);
    check_norm(dt, Shape{2, 50001}, rms, true, true, DType::kF32, blocks);  // rows split across blocks
  }
  if (dt == DType::kF32) check_norm(dt, Shape{4, 4096}, false, true, true, dt, blocks, 1e4);  // |mean| >> std
}

void check_bn(DType dt, Shape shape, int blocks) {
  SCOPED_TRACE(::testing::Message() << "batch_norm " << dtype_name(dt) << " " << to_string(shape) << " blocks " << blocks);
  const size_t N = size_t(shape.dims[0]), C = size_t(shape.dims[1]), HW = (N * C) != 0 ? size_t(shape.numel()) / (N * C) : 0;
  Buf x(dt, shape), y(dt, shape), yi(dt, shape);
  x.fill_uniform(31, -1, 4);
  std::vector<float> w(C), b(C), rm(C, 0.5f), rv(C, 2.f), sm(C), sv(C), m2(C), v2(C);
  for (size_t c = 0; c < C; ++c) {
    w[c] = 0.5f + 0.1f * float(c);
    b[c] = -0.2f * float(c);
  }
  BatchNormParams p{.weight = w.data(), .bias = b.data(), .eps = 1e-5f, .momentum = 0.1f,
                    .running_mean = rm.data(), .running_var = rv.data()};
  batch_norm_train(x.ct(), y.t(), p, sm.data(), sv.data(), {.block_num = blocks});
  batch_norm_stats(x.ct(), m2.data(), v2.data(), {.block_num = blocks});
  const double cnt = double(N * HW);
  std::vector<double> mean(C), var(C);
  for (size_t c = 0; c < C; ++c) {
    for (size_t n = 0; n < N; ++n)
      for (size_t i = 0; i < HW; ++i) mean[c] += x.get((n * C + c) * HW + i);
    mean[c] /= cnt;
    for (size_t n = 0; n < N; ++n)
      for (size_t i = 0; i < HW; ++i) var[c] += std::pow(x.get((n * C + c) * HW + i) - mean[c], 2);
    var[c] /= cnt;
    EXPECT_NEAR(sm[c], mean[c], 1e-5 * (1 + std::fabs(mean[c])));
    EXPECT_NEAR(sv[c], var[c], 1e-5 * var[c]);
    EXPECT_EQ(m2[c], sm[c]);
    EXPECT_EQ(v2[c], sv[c]);
    EXPECT_NEAR(rm[c], 0.9 * 0.5 + 0.1 * mean[c], 1e-5);
    EXPECT_NEAR(rv[c], 0.9 * 2 + 0.1 * var[c] * cnt / std::max(1.0, cnt - 1), 1e-5 * (1 + var[c]));
  }
  auto expect_y = [&](const Buf& out, const std::vector<double>& mu, const std::vector<double>& v) {
    for (size_t n = 0; n < N; ++n)
      for (size_t c = 0; c < C; ++c)
        for (size_t i = 0; i < HW; ++i) {
          const size_t k = (n * C + c) * HW + i;
          const double want = (x.get(k) - mu[c]) / std::sqrt(v[c] + 1e-5) * w[c] + b[c];
          ASSERT_NEAR(out.get(k), want, tol(dt, want)) << "n " << n << " c " << c << " i " << i;
        }
  };
  expect_y(y, mean, var);
  // Inference with the running statistics.
  std::vector<double> rmd(rm.begin(), rm.end()), rvd(rv.begin(), rv.end());
  batch_norm_infer(x.ct(), yi.t(), p, {.block_num = blocks});
  expect_y(yi, rmd, rvd);
}

TEST_P(NormTest, BatchNorm) {
  auto [dt, blocks] = GetParam();
  for (Shape s : {Shape{4, 3, 5, 5}, Shape{7, 2}, Shape{3, 5, 33}, Shape{2, 1, 40000}, Shape{64, 3, 3, 3}})
    check_bn(dt, s, blocks);
}

INSTANTIATE_TEST_SUITE_P(Types, NormTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_b" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(NormErrors, BadInputs) {
  Buf x(DType::kF32, Shape{4, 6}), y(DType::kF32, Shape{4, 6}), w5(DType::kF32, Shape{5}), wh(DType::kF16, Shape{6});
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(msg([&] { layer_norm(x.ct(), y.t(), {.weight = w5.ct(), .bias = {}}); }),
              HasSubstr("layer_norm: weight.shape [5] must be [6]"));
  EXPECT_THAT(msg([&] { rms_norm(x.ct(), y.t(), {.weight = {}, .bias = wh.ct()}); }),
              HasSubstr("rms_norm: bias.dtype=f16 must be f32 or x.dtype=f32"));
  EXPECT_THAT(msg([&] { layer_norm(x.ct(), y.t(), {.weight = {}, .bias = {}, .eps = -1}); }), HasSubstr("eps=-1 must be >= 0"));
  EXPECT_THAT(msg([&] { layer_norm(ConstTensor{nullptr, DType::kF32, Shape{}}, y.t()); }), HasSubstr("x.data is null"));
  EXPECT_THAT(msg([&] { batch_norm_stats(ConstTensor{x.bytes.data(), DType::kF32, Shape{24}}, nullptr, nullptr); }),
              HasSubstr("must be [N, C, ...] (rank >= 2)"));
  EXPECT_THAT(msg([&] { batch_norm_infer(x.ct(), y.t(), {}); }), HasSubstr("inference needs running_mean"));
  EXPECT_THAT(msg([&] { batch_norm_train(x.ct(), y.t(), {}, nullptr, nullptr, {.block_num = 0}); }),
              HasSubstr("block_num=0"));
  Buf e(DType::kF32, Shape{0, 3});
  EXPECT_THAT(msg([&] { batch_norm_stats(e.ct(), nullptr, nullptr); }), HasSubstr("no elements per channel"));
}

}  // namespace
}  // namespace tessera::kernel
