// Softmax / LogSoftmax against a double-precision reference.
//
// Tolerances (docs/kernel.md): softmax |got - want| <= (4 u_out + 6e-7 + 2^-24 |x - m|) |want| + tiny (f16:
// 2^-24): output rounding and scaling, the exp (<= 5.1 ulp), and x - m rounded in f32;
// log_softmax |got - want| <= 2 u_out |want| + 4e-6 (|x| + |max| + log(sum)) — the f32 error of x - m - lse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "kernel_test_util.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {
namespace {

using testing::Buf;
using ::testing::HasSubstr;

// Runs the operator on x and checks every output against the double-precision reference.
void check_input(const Buf& input, bool log, int blocks, bool in_place = false) {
  const DType dt = input.dt;
  const Shape shape = input.shape;
  SCOPED_TRACE(::testing::Message() << (log ? "log_softmax " : "softmax ") << dtype_name(dt) << " "
                                    << to_string(shape) << " blocks " << blocks << (in_place ? " in place" : ""));
  Buf x = input;
  Buf y = x;
  Buf x0 = x;
  if (log) log_softmax(x.ct(), in_place ? x.t() : y.t(), {.block_num = blocks});
  else softmax(x.ct(), in_place ? x.t() : y.t(), {.block_num = blocks});
  const Buf& out = in_place ? x : y;
  const size_t n = shape.rank == 0 ? 1 : static_cast<size_t>(shape.dims[shape.rank - 1]);
  const size_t rows = n ? x0.size() / n : 0;
  const double u = testing::unit_roundoff(dt);
  const double tiny = dt == DType::kF16 ? 0x1p-24 : 1e-30;  // f16 subnormal spacing
  for (size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, x0.get(r * n + i));
    for (size_t i = 0; i < n; ++i) s += std::exp(x0.get(r * n + i) - m);
    const double lse = m + std::log(s);
    for (size_t i = 0; i < n; ++i) {
      const double xi = x0.get(r * n + i), got = out.get(r * n + i);
      if (log) {
        const double want = xi - lse;
        if (std::isinf(want)) {  // a masked entry
          ASSERT_EQ(got, want) << "row " << r << " col " << i;
          continue;
        }
        ASSERT_NEAR(got, want, 2 * u * std::fabs(want) + 4e-6 * (std::fabs(xi) + std::fabs(m) + std::log(s)))
            << "row " << r << " col " << i;
      } else {
        const double want = std::exp(xi - lse);
        if (std::isinf(xi)) {  // a masked entry
          ASSERT_EQ(got, 0.0) << "row " << r << " col " << i;
          continue;
        }
        ASSERT_NEAR(got, want, (4 * u + 6e-7 + 0x1p-24 * (m - xi)) * want + tiny) << "row " << r << " col " << i;
      }
    }
  }
}

void check(DType dt, Shape shape, bool log, int blocks, double lo = -5, double hi = 5, bool in_place = false) {
  Buf x(dt, shape);
  x.fill_uniform(11, lo, hi);
  check_input(x, log, blocks, in_place);
}

class SoftmaxTest : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(SoftmaxTest, MatchesReference) {
  auto [dt, blocks] = GetParam();
  for (bool log : {false, true}) {
    for (Shape s : {Shape{}, Shape{1}, Shape{1, 1}, Shape{3, 7}, Shape{65, 1000}, Shape{2, 3, 33}, Shape{5, 0}, Shape{0, 5}})
      check(dt, s, log, blocks);
    check(dt, Shape{2, 40001}, log, blocks);          // fewer rows than blocks: rows split, partials combined
    check(dt, Shape{3, 300000}, log, blocks, -3, 3);  // rows longer than the scratch
    check(dt, Shape{9, 513}, log, blocks, -80, 80);   // wide range: exp underflows for most entries
    check(dt, Shape{17, 100}, log, blocks, -5, 5, /*in_place=*/true);
    check(dt, Shape{33, 4096}, log, blocks);          // staged softmax rows (pipelined over rows)
    check(dt, Shape{7, 1500}, log, blocks, -30, 30);  // staged, a partial last chunk
    check(dt, Shape{5, 2048}, log, blocks, -5, 5, /*in_place=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, SoftmaxTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_b" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Softmax, LargeLogitsAreStableAndNonFiniteRowsBecomeNaN) {
  Buf x(DType::kF32, Shape{4, 3});
  const double inf = INFINITY, nan = NAN;
  const double v[] = {1000, 1001, 999, /*NaN*/ 1, nan, 2, /*+inf*/ 1, inf, 0, /*-inf only*/ -inf, -inf, -inf};
  for (size_t i = 0; i < 12; ++i) x.set(i, v[i]);
  Buf y(DType::kF32, Shape{4, 3});
  softmax(x.ct(), y.t());
  const double s = std::exp(-1.0) + 1 + std::exp(-2.0);
  EXPECT_NEAR(y.get(0), std::exp(-1.0) / s, 1e-6);
  EXPECT_NEAR(y.get(1), 1 / s, 1e-6);
  for (size_t i = 3; i < 12; ++i) EXPECT_TRUE(std::isnan(y.get(i))) << i;

  Buf z(DType::kF32, Shape{1, 3});
  z.set(0, -inf);
  z.set(1, 0);
  z.set(2, 0);
  Buf w(DType::kF32, Shape{1, 3});
  softmax(z.ct(), w.t());
  EXPECT_EQ(w.get(0), 0);
  EXPECT_NEAR(w.get(1), 0.5, 1e-7);
  log_softmax(z.ct(), w.t());
  EXPECT_EQ(w.get(0), -inf);
  EXPECT_NEAR(w.get(1), -std::log(2.0), 1e-7);
}

TEST(Softmax, NaNInsideALongRowPoisonsOnlyThatRow) {
  for (DType dt : testing::all_dtypes()) {
    Buf x(dt, Shape{4, 200});
    x.fill_uniform(2, -3, 3);
    x.set(1 * 200 + 77, NAN);  // seen by the vector loop that takes row 1's max while exponentiating row 0
    Buf y(dt, x.shape);
    softmax(x.ct(), y.t(), {.block_num = 1});
    for (size_t r = 0; r < 4; ++r) {
      double sum = 0;
      for (size_t i = 0; i < 200; ++i) sum += y.get(r * 200 + i);
      if (r == 1) EXPECT_TRUE(std::isnan(sum)) << dtype_name(dt);
      else EXPECT_NEAR(sum, 1.0, 0.02) << dtype_name(dt) << " row " << r;
    }
  }
}

TEST(Softmax, NonFiniteRowsAmongLongRowsBecomeNaNAlone) {
  // Rows of 3000: the staged path, whose output of row r is written while row r + 1 is exponentiated
  // (softmax and log_softmax).
  const size_t n = 3000;
  for (DType dt : testing::all_dtypes()) {
    Buf x(dt, Shape{6, static_cast<int64_t>(n)});
    x.fill_uniform(4, -3, 3);
    x.set(1 * n + 2999, NAN);
    x.set(2 * n + 5, INFINITY);
    for (size_t i = 0; i < n; ++i) x.set(4 * n + i, -INFINITY);
    for (bool log : {false, true}) {
      Buf y(dt, x.shape);
      if (log) log_softmax(x.ct(), y.t(), {.block_num = 1});
      else softmax(x.ct(), y.t(), {.block_num = 1});
      for (size_t r = 0; r < 6; ++r) {
        double sum = 0;  // of the probabilities (log_softmax: of exp(y))
        for (size_t i = 0; i < n; ++i) sum += log ? std::exp(y.get(r * n + i)) : y.get(r * n + i);
        if (r == 1 || r == 2 || r == 4) EXPECT_TRUE(std::isnan(sum)) << dtype_name(dt) << " log " << log << " row " << r;
        else EXPECT_NEAR(sum, 1.0, 0.02) << dtype_name(dt) << " log " << log << " row " << r;
      }
    }
  }
}

// Masked entries (-inf) and entries more than 86 below the row's maximum, in some rows only: the
// exponentials of a row skip the underflow flush when its minimum is within 86 of its maximum, and the
// minimum of row r + 1 is taken inside row r's exp loop, so rows cycle through untouched, masked and
// far-below-only rows. Masked
// entries must come out exactly 0 (log_softmax: -inf), on every path: whole short rows, staged rows, rows
// longer than the scratch, rows split across blocks.
TEST(Softmax, MaskedAndFarBelowEntriesOnEveryPath) {
  for (DType dt : testing::all_dtypes()) {
    for (Shape shape : {Shape{7, 100}, Shape{7, 4096}, Shape{3, 300000}, Shape{2, 40001}}) {
      Buf x(dt, shape);
      x.fill_uniform(8, -5, 5);
      const size_t n = static_cast<size_t>(shape.dims[1]), rows = x.size() / n;
      for (size_t r = 0; r < rows; ++r) {
        const size_t kind = (r + 1) % 3;  // 0: untouched (the unflushed form), 1: masked, 2: far below only
        if (kind == 0) continue;
        if (kind == 1)
          for (size_t i = 0; i < n; i += 3) x.set(r * n + i, -INFINITY);
        x.set(r * n + 1, -95.0);    // 90-100 below the maximum: flushed to 0 (reference: ~1e-40)
        x.set(r * n + n - 1, -81);  // 76-86 below: kept
      }
      for (bool log : {false, true})
        for (int blocks : {1, 3}) {
          check_input(x, log, blocks);
          Buf y(dt, shape);
          if (log) log_softmax(x.ct(), y.t(), {.block_num = blocks});
          else softmax(x.ct(), y.t(), {.block_num = blocks});
          for (size_t r = 0; r < rows; ++r)
            for (size_t i = 0; i < n; ++i)
              if (std::isinf(x.get(r * n + i))) {
                ASSERT_EQ(y.get(r * n + i), log ? -INFINITY : 0.0)
                    << dtype_name(dt) << " " << to_string(shape) << " row " << r << " col " << i;
              }
        }
    }
  }
}

TEST(Softmax, IdenticalRunToRun) {
  Buf x(DType::kBF16, Shape{3, 50000});
  x.fill_uniform(5, -4, 4);
  Buf a(DType::kBF16, x.shape), b(DType::kBF16, x.shape);
  softmax(x.ct(), a.t(), {.block_num = 4});
  softmax(x.ct(), b.t(), {.block_num = 4});
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(SoftmaxErrors, BadInputs) {
  Buf x(DType::kF32, Shape{4, 6});
  Buf y(DType::kF32, Shape{4, 5});
  try {
    softmax(x.ct(), y.t());
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("softmax: y.shape [4,5] differs from x.shape [4,6]"));
  }
  EXPECT_THROW(log_softmax(ConstTensor{nullptr, DType::kF32, Shape{2}}, y.t()), Error);
  Buf yh(DType::kF16, Shape{4, 6});
  EXPECT_THROW(softmax(x.ct(), yh.t()), Error);
  EXPECT_THROW(softmax(x.ct(), x.t(), {.block_num = 0}), Error);
}

}  // namespace
}  // namespace tessera::kernel
