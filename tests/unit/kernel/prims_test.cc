// The output loops of the SIMD primitives against the scalar conversions of base/half.h, bit for bit: every
// loop shape (the alignment prologue of streamed stores, the 16-element bf16 pairs of AVX2, single vectors,
// scalar tails), streamed or not, with the values where rounding is easy to get wrong: ties to even, NaN,
// infinities, overflow to infinity, subnormals, signed zeros. Runs under every SIMD cap (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#include "base/half.h"
#include "kernel/ops/prims.h"

namespace tessera::kernel {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Values in f32 whose conversion to bf16/f16 exercises each rounding case, then pseudo-random ones.
std::vector<float> awkward_values(size_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {from_bits(0x3f808000),  // bf16 tie, even below: rounds down
                          from_bits(0x3f818000),  // bf16 tie, odd below: rounds up
                          from_bits(0x3f808001),  // just above a tie
                          from_bits(0x7f7fffff),  // largest float: rounds to inf in bf16
                          from_bits(0x7fffffff),  // NaN with every mantissa bit set
                          from_bits(0x7f800001),  // signalling NaN, lowest payload
                          from_bits(0xffc00000),  // negative quiet NaN
                          inf, -inf, 0.0f, -0.0f,
                          from_bits(0x00000001),  // smallest subnormal
                          from_bits(0x807fffff),  // largest negative subnormal
                          1.0f + 0x1p-11f,        // f16 tie
                          65520.0f,               // rounds to inf in f16
                          -3.14159265f};
  uint32_t s = 12345;
  while (v.size() < n) {
    s = s * 1664525u + 1013904223u;
    v.push_back(from_bits((s & 0x3fffffffu) | 0x3c000000u) * ((s >> 31) ? -1.f : 1.f));
  }
  v.resize(n);
  return v;
}

uint16_t expected_bits(DType t, float f) { return t == DType::kBF16 ? f32_to_bf16_bits(f) : f32_to_f16_bits(f); }
bool is_nan_bits(DType t, uint16_t h) {
  return t == DType::kBF16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

// Compares y[0, n) with the scalar conversion of want[i]; NaN must stay NaN (f16 payloads are the
// hardware's), everything else bit for bit.
void expect_converted(DType t, const uint16_t* y, const std::vector<float>& want, const char* what, size_t n,
                      size_t offset, bool stream) {
  size_t wrong = 0, first = n;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t e = expected_bits(t, want[i]);
    const bool ok = std::isnan(want[i]) ? is_nan_bits(t, y[i]) : y[i] == e;
    if (!ok && wrong++ == 0) first = i;
  }
  uint32_t in_bits = 0;
  uint16_t got = 0, exp = 0;
  if (first < n) {
    std::memcpy(&in_bits, &want[first], 4);
    got = y[first];
    exp = expected_bits(t, want[first]);
  }
  EXPECT_EQ(wrong, 0u) << what << " " << dtype_name(t) << " n " << n << " offset " << offset
                       << (stream ? " streamed" : "") << "; first at " << first << ": input bits 0x" << std::hex
                       << in_bits << " got 0x" << got << " want 0x" << exp;
}

// The outputs of softmax (scale_f32, add; exp_scale shares their loop) take inputs without NaN and round
// without the NaN case (prims.h); norm and from_f32 keep it, so NaN inputs go through those.
TEST(Prims, HalfOutputsMatchTheScalarConversionInEveryLoopShape) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    const ops::Prims& p = ops::prims(t);
    for (size_t n : {1u, 7u, 8u, 15u, 16u, 17u, 31u, 33u, 100u, 4099u}) {
      const std::vector<float> e = awkward_values(n);
      std::vector<float> e_finite = e;  // NaN lanes replaced: the softmax outputs' contract
      for (float& v : e_finite)
        if (std::isnan(v)) v = -1.5f;
      for (size_t offset : {0u, 1u, 3u, 8u}) {  // elements into a 64-byte aligned buffer
        alignas(64) static uint16_t out[4200 + 16], in[4200 + 16];
        auto check_bounds = [&](const char* what, bool stream) {
          EXPECT_EQ(out[offset + n], 0xEEEE) << what << " wrote past the end, " << dtype_name(t) << " n " << n
                                             << " offset " << offset << (stream ? " streamed" : "");
          if (offset) { EXPECT_EQ(out[offset - 1], 0xEEEE) << what << " wrote before the start, n " << n; }
        };
        std::memset(out, 0xEE, sizeof out);
        p.from_f32(e.data(), out + offset, n);
        expect_converted(t, out + offset, e, "from_f32", n, offset, false);
        check_bounds("from_f32", false);
        for (bool stream : {false, true}) {
          std::memset(out, 0xEE, sizeof out);
          p.scale_f32(e_finite.data(), out + offset, n, 1.0f, stream);
          ops::stream_fence();
          expect_converted(t, out + offset, e_finite, "scale_f32", n, offset, stream);
          check_bounds("scale_f32", stream);
          // add and norm: the input in the dtype, widened exactly, plus a constant (norm with unit scale and
          // no shift, weight or bias: the same sum, and NaN inputs)
          for (const std::vector<float>* src : std::initializer_list<const std::vector<float>*>{&e_finite, &e}) {
            const bool with_nan = src == &e;
            for (size_t i = 0; i < n; ++i) in[offset + i] = expected_bits(t, (*src)[i]);
            std::vector<float> want(n);
            for (size_t i = 0; i < n; ++i) {
              const float x = t == DType::kBF16 ? bf16_bits_to_f32(in[offset + i]) : f16_bits_to_f32(in[offset + i]);
              want[i] = x + 0.25f;
            }
            std::memset(out, 0xEE, sizeof out);
            if (with_nan) p.norm(in + offset, out + offset, n, 0.f, 0.f, 1.f, nullptr, nullptr, 0.25f, stream);
            else p.add(in + offset, out + offset, n, 0.25f, stream);
            ops::stream_fence();
            expect_converted(t, out + offset, want, with_nan ? "norm" : "add", n, offset, stream);
            check_bounds(with_nan ? "norm" : "add", stream);
          }
        }
      }
    }
  }
}

// axpy (acc += w * x, the MoE combine's weighted sum), in every loop shape and storage type, against the
// exact result in double: within half an ulp of the product plus half an ulp of the sum (the bound of a
// separate multiply and add; a fused one, which targets with FMA use, is within the second alone); NaN and
// infinities as the scalar formula gives them; nothing past n is touched.
TEST(Prims, AxpyIsWithinTheRoundingOfAMultiplyAndAnAdd) {
  auto ulp = [](double v) { return static_cast<double>(std::nextafter(std::fabs(static_cast<float>(v)), INFINITY)) -
                                   std::fabs(static_cast<float>(v)); };
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    const ops::Prims& p = ops::prims(t);
    for (size_t n : {1u, 7u, 8u, 15u, 16u, 17u, 33u, 100u, 4099u}) {
      const std::vector<float> v = awkward_values(n);
      std::vector<float> x_f32(n), acc(n + 1), acc0(n);
      std::vector<uint16_t> x_half(n);
      for (size_t i = 0; i < n; ++i) {
        x_half[i] = t == DType::kF32 ? 0 : expected_bits(t, v[i]);
        x_f32[i] = t == DType::kF32    ? v[i]
                   : t == DType::kBF16 ? bf16_bits_to_f32(x_half[i])
                                       : f16_bits_to_f32(x_half[i]);
        acc[i] = acc0[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (0.5f + static_cast<float>(i % 5)) * x_f32[(i + 1) % n];
      }
      acc[n] = 123.0f;
      const float w = 0.3f;
      p.axpy(t == DType::kF32 ? static_cast<const void*>(x_f32.data()) : x_half.data(), acc.data(), n, w);
      size_t wrong = 0, first = n;
      for (size_t i = 0; i < n; ++i) {
        const double prod = static_cast<double>(w) * x_f32[i], exact = static_cast<double>(acc0[i]) + prod;
        const float scalar = acc0[i] + w * x_f32[i];
        bool ok;
        if (std::isnan(scalar) || std::isinf(scalar)) ok = std::isnan(scalar) ? std::isnan(acc[i]) : acc[i] == scalar;
        else ok = std::fabs(acc[i] - exact) <= 0.5 * ulp(prod) + 0.5 * ulp(exact);
        if (!ok && wrong++ == 0) first = i;
      }
      EXPECT_EQ(wrong, 0u) << "axpy " << dtype_name(t) << " n " << n << "; first at " << first << ": got "
                           << (first < n ? acc[first] : 0.f) << " from " << (first < n ? acc0[first] : 0.f) << " + "
                           << w << " * " << (first < n ? x_f32[first] : 0.f);
      EXPECT_EQ(acc[n], 123.0f) << "axpy wrote past the end, " << dtype_name(t) << " n " << n;
    }
  }
}

// exp(x - m) as softmax computes it (exp_sum storing the exponentials), against exp in double, within the
// ulp bounds exp-inl.h documents for each range of x - m; with the underflow flush (a row minimum below
// m - 86) and without it (exp_sum leaves the flush out when the row's minimum is within 86 of m).
TEST(Prims, ExpStaysWithinItsUlpBounds) {
  const ops::Prims& p = ops::prims(DType::kF32);
  struct Range {
    double lo, hi, ulps;
  };
  for (const Range& r : {Range{-10, 0, 2.6}, Range{-43, -10, 3.7}, Range{-86, -43, 5.1}}) {
    const size_t n = 400000;
    std::vector<float> x(n), e(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(r.lo + (r.hi - r.lo) * (static_cast<double>(i) / n));
    for (bool flush : {false, true}) {
      const float m = 0.f, lo = flush ? -std::numeric_limits<float>::infinity() : static_cast<float>(r.lo);
      const double sum = p.exp_sum(x.data(), n, m, lo, e.data(), nullptr, nullptr, nullptr);
      double worst = 0, total = 0;
      size_t at = 0;
      for (size_t i = 0; i < n; ++i) {
        const double want = std::exp(static_cast<double>(x[i]));
        const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
        const double err = std::fabs(e[i] - want) / ulp;
        if (err > worst) worst = err, at = i;
        total += e[i];
      }
      EXPECT_LE(worst, r.ulps) << "x in [" << r.lo << ", " << r.hi << "]" << (flush ? " with the flush" : "")
                               << ": worst at x = " << x[at] << ", got " << e[at];
      EXPECT_NEAR(sum, total, 1e-6 * total) << "exp_sum's sum against its stored exponentials";
    }
  }
  // With the flush: below -86 (and -inf) exactly 0, in the vector loop and the tail.
  std::vector<float> x(37, -87.0f), e(37, 1.0f);
  x[3] = -1000.f;
  x[36] = -std::numeric_limits<float>::infinity();
  x[0] = 0.f;
  const double sum = p.exp_sum(x.data(), x.size(), 0.f, -std::numeric_limits<float>::infinity(), e.data(), nullptr,
                               nullptr, nullptr);
  EXPECT_EQ(sum, 1.0);
  for (size_t i = 1; i < x.size(); ++i) EXPECT_EQ(e[i], 0.0f) << "x = " << x[i];
}

}  // namespace
}  // namespace tessera::kernel
