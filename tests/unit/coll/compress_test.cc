// The codes of the phase between hosts (coll/hier/compress.h): exact values where a code holds them, each
// code's error bound on every value, e4m3's rounding and saturation, scales per block, and error feedback's
// promise (the sum of the decoded values over k calls differs from the sum of the inputs by the residual).
#include "coll/hier/compress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tessera::coll {
namespace {

std::vector<float> roundtrip(Compress c, const std::vector<float>& x, std::vector<float>* r = nullptr) {
  std::vector<char> code(encoded_bytes(c, x.size()));
  encode(c, x.data(), r ? r->data() : nullptr, x.size(), code.data());
  std::vector<float> y(x.size());
  decode(c, code.data(), x.size(), y.data(), false);
  return y;
}

TEST(Compress, Sizes) {
  EXPECT_EQ(encoded_bytes(Compress::kBf16, 1000), 2000u);
  EXPECT_EQ(encoded_bytes(Compress::kInt8, 256), 4u + 256u);
  EXPECT_EQ(encoded_bytes(Compress::kFp8, 257), 8u + 257u);
  EXPECT_EQ(encoded_bytes(Compress::kNone, 3), 12u);
  EXPECT_STREQ(compress_name(Compress::kFp8), "fp8");
}

TEST(Compress, ValuesTheCodeHoldsComeBackExactly) {
  // bf16: 8 significant bits. fp8 with a block maximum of 448: the scale is 1, so e4m3's own values.
  const std::vector<float> b{0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f, -0x1.8p-60f};
  EXPECT_EQ(roundtrip(Compress::kBf16, b), b);
  const std::vector<float> f{448.0f, -448.0f, 1.0f, 1.125f, -0.0f, 0.001953125f /* 2^-9, smallest */, 240.0f, 0.015625f};
  EXPECT_EQ(roundtrip(Compress::kFp8, f), f);
  const std::vector<float> i{127.0f, -127.0f, 0.0f, 1.0f, -64.0f, 3.0f};
  EXPECT_EQ(roundtrip(Compress::kInt8, i), i);
}

TEST(Compress, Fp8RoundsToNearestEvenAndSaturates) {
  // Between 1 and 1.125 (steps of 1/8 at 1): 1.0625 is a tie, to the even 1.0; a hair above goes up.
  const std::vector<float> x{448.0f, 1.0625f, 1.0626f, 1.1875f, 300.0f};
  const std::vector<float> y = roundtrip(Compress::kFp8, x);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 1.125f);
  EXPECT_EQ(y[3], 1.25f);   // a tie between 1.125 and 1.25: to the even mantissa
  EXPECT_EQ(y[4], 288.0f);  // steps of 32 between 256 and 448: 300 is nearer 288 than 320
}

TEST(Compress, ErrorBoundsOnRandomValues) {
  std::mt19937 g(7);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> x(10000);
  for (float& v : x) v = d(g) * (g() % 50 == 0 ? 1000.0f : 1.0f);
  const std::vector<float> b = roundtrip(Compress::kBf16, x), f = roundtrip(Compress::kFp8, x),
                           q = roundtrip(Compress::kInt8, x);
  for (size_t k = 0; k < x.size(); k += kCompressBlock) {
    float amax = 0;
    for (size_t i = k; i < std::min(x.size(), k + kCompressBlock); ++i) amax = std::max(amax, std::fabs(x[i]));
    for (size_t i = k; i < std::min(x.size(), k + kCompressBlock); ++i) {
      ASSERT_LE(std::fabs(b[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << i;
      ASSERT_LE(std::fabs(f[i] - x[i]), 0.0625f * std::fabs(x[i]) + amax / 448 / 512 * 1.0001f) << i;
      ASSERT_LE(std::fabs(q[i] - x[i]), amax / 127 / 2 * 1.0001f) << i;
    }
  }
}

TEST(Compress, ErrorFeedbackKeepsTheSumOfManyCalls) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i % 37) + (i == 0 ? 50.0f : 0.0f);
  for (Compress c : {Compress::kBf16, Compress::kFp8, Compress::kInt8}) {
    std::vector<float> r(x.size(), 0.0f);
    std::vector<double> with(x.size(), 0.0), without(x.size(), 0.0);
    constexpr int kCalls = 100;
    for (int k = 0; k < kCalls; ++k) {
      const std::vector<float> y = roundtrip(c, x, &r), z = roundtrip(c, x);
      for (size_t i = 0; i < x.size(); ++i) with[i] += y[i], without[i] += z[i];
    }
    double worst_with = 0, worst_without = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = kCalls * static_cast<double>(x[i]);
      // With feedback: the sum of the outputs plus the residual left is the sum of the inputs.
      EXPECT_NEAR(with[i] + r[i], want, 1e-3 * (1 + std::fabs(want))) << compress_name(c) << " " << i;
      worst_with = std::max(worst_with, std::fabs(with[i] - want));
      worst_without = std::max(worst_without, std::fabs(without[i] - want));
    }
    EXPECT_GT(worst_without, 10 * worst_with) << compress_name(c);
  }
}

}  // namespace
}  // namespace tessera::coll
