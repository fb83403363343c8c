// Reduce{Sum,Mean,Max,Min,Prod}: every dtype, axis and block count against a double-precision reference.
//
// Tolerances (documented in docs/kernel.md):
//   sum/mean: |got - ref| <= u_out * |ref| + 4e-6 * sum|x| (accumulation in f32 runs, then f64)
//   prod:     |got - ref| <= (u_out + 1e-6) * |ref|     (f64 accumulation; inputs in [0.97, 1.03])
//   max/min:  exact
// u_out is the unit roundoff of the output dtype (result rounded once). The reference is computed from
// the dtype-rounded inputs, so input rounding is not part of the error.
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

struct Ref {
  std::vector<double> out;
  std::vector<double> abs;  // sum |x| per output (error scale)
};

Ref reference(ReduceOp op, const Buf& x, int axis) {
  size_t outer = 1, len = x.size(), inner = 1;
  if (axis != kAllAxes) {
    len = static_cast<size_t>(x.shape.dims[axis]);
    for (int i = 0; i < axis; ++i) outer *= static_cast<size_t>(x.shape.dims[i]);
    for (int i = axis + 1; i < x.shape.rank; ++i) inner *= static_cast<size_t>(x.shape.dims[i]);
  }
  Ref r;
  r.out.assign(outer * inner, 0);
  r.abs.assign(outer * inner, 0);
  for (size_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < inner; ++j) {
      double acc = op == ReduceOp::kProd ? 1 : op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : 0;
      double a = 0;
      for (size_t i = 0; i < len; ++i) {
        const double v = x.get((o * len + i) * inner + j);
        a += std::fabs(v);
        switch (op) {
          case ReduceOp::kProd: acc *= v; break;
          case ReduceOp::kMax: acc = std::max(acc, v); break;
          case ReduceOp::kMin: acc = std::min(acc, v); break;
          default: acc += v;
        }
      }
      if (op == ReduceOp::kMean) {
        acc /= static_cast<double>(len);
        a /= static_cast<double>(len);
      }
      r.out[o * inner + j] = acc;
      r.abs[o * inner + j] = a;
    }
  return r;
}

Shape out_shape(const Shape& s, int axis) {
  if (axis == kAllAxes) return Shape{};
  Shape o;
  for (int i = 0; i < s.rank; ++i)
    if (i != axis) o.dims[o.rank++] = s.dims[i];
  return o;
}

void check(ReduceOp op, DType dt, Shape shape, int axis, int blocks, Combine mode) {
  SCOPED_TRACE(::testing::Message() << reduce_op_name(op) << " " << dtype_name(dt) << " " << to_string(shape)
                                    << " axis " << axis << " blocks " << blocks << " combine " << int(mode));
  Buf x(dt, shape);
  if (op == ReduceOp::kProd) x.fill_uniform(7, 0.97, 1.03);
  else x.fill_uniform(7, -1.0, 3.0);
  Buf y(dt, out_shape(shape, axis));
  reduce(op, x.ct(), y.t(), axis, {.block_num = blocks, .combine = mode});
  const Ref r = reference(op, x, axis);
  ASSERT_EQ(y.size(), r.out.size());
  const double u = testing::unit_roundoff(dt);
  // f16 saturates at 65504 and underflows below 2^-24: compare with the reference rounded to the dtype.
  const double tiny = dt == DType::kF16 ? 0x1p-24 : 1e-37;
  Buf rounded(dt, Shape{1});
  for (size_t k = 0; k < r.out.size(); ++k) {
    const double got = y.get(k), want = r.out[k];
    rounded.set(0, want);
    if (!std::isfinite(rounded.get(0))) {
      ASSERT_EQ(got, rounded.get(0)) << "output " << k << " overflows the dtype";
      continue;
    }
    if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
      ASSERT_EQ(got, want) << "output " << k;
    } else if (op == ReduceOp::kProd) {
      ASSERT_NEAR(got, want, (u + 1e-6) * std::fabs(want) + tiny) << "output " << k;
    } else {
      ASSERT_NEAR(got, want, u * std::fabs(want) + 4e-6 * r.abs[k] + tiny) << "output " << k;
    }
  }
}

using Case = std::tuple<DType, int /*blocks*/>;
class ReduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceTest, AllAxes) {
  auto [dt, blocks] = GetParam();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd})
    for (Shape s : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{100003}})
      check(op, dt, s, kAllAxes, blocks, Combine::kFlat);
  // Long enough to be split across blocks, combined both ways.
  for (Combine m : {Combine::kFlat, Combine::kTree})
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax})
      check(op, dt, Shape{(1 << 18) + 5}, kAllAxes, blocks, m);
}

TEST_P(ReduceTest, EveryAxis) {
  auto [dt, blocks] = GetParam();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd}) {
    for (int axis : {0, 1}) {
      check(op, dt, Shape{3, 5}, axis, blocks, Combine::kAuto);
      check(op, dt, Shape{37, 1031}, axis, blocks, Combine::kAuto);  // odd sizes, vector tails
    }
    for (int axis : {0, 1, 2}) check(op, dt, Shape{4, 33, 19}, axis, blocks, Combine::kAuto);
  }
}

TEST_P(ReduceTest, LongRowsAndColumnsAreSplitAcrossBlocks) {
  auto [dt, blocks] = GetParam();
  for (Combine m : {Combine::kFlat, Combine::kTree}) {
    check(ReduceOp::kSum, dt, Shape{2, 70001}, 1, blocks, m);    // 2 long rows
    check(ReduceOp::kSum, dt, Shape{5003, 3}, 0, blocks, m);     // long, narrow columns
    check(ReduceOp::kMax, dt, Shape{3001, 70}, 0, blocks, m);
    check(ReduceOp::kMean, dt, Shape{2, 4001, 9}, 1, blocks, m); // middle axis
    check(ReduceOp::kSum, dt, Shape{1000, 4100}, 0, blocks, m);  // more than one column tile
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ReduceTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(1, 2, 3, 8)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_b" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Reduce, ResultsAreIdenticalRunToRunAndAccurateForLongRows) {
  // 2^22 values around 1e4 with a small spread: naive f32 summation loses ~6 digits here.
  Buf x(DType::kF32, Shape{1 << 22});
  x.fill_uniform(3, 1e4, 1e4 + 1);
  double ref = 0;
  for (size_t i = 0; i < x.size(); ++i) ref += x.get(i);
  for (int blocks : {1, 3}) {
    Buf a(DType::kF32, Shape{}), b(DType::kF32, Shape{});
    reduce(ReduceOp::kSum, x.ct(), a.t(), kAllAxes, {.block_num = blocks});
    reduce(ReduceOp::kSum, x.ct(), b.t(), kAllAxes, {.block_num = blocks});
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_NEAR(a.get(0), ref, 2e-7 * ref);  // one f32 rounding of the result
  }
}

TEST(Reduce, EmptyInputsAndKeepdims) {
  Buf x(DType::kF32, Shape{0, 4});
  Buf y(DType::kF32, Shape{4});
  for (size_t i = 0; i < 4; ++i) y.set(i, 9);
  reduce(ReduceOp::kSum, x.ct(), y.t(), 0);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y.get(i), 0);
  reduce(ReduceOp::kProd, x.ct(), y.t(), 0);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y.get(i), 1);
  reduce(ReduceOp::kMean, x.ct(), y.t(), 0);
  EXPECT_TRUE(std::isnan(y.get(0)));
  EXPECT_THROW(reduce(ReduceOp::kMax, x.ct(), y.t(), 0), Error);
  Buf none(DType::kF32, Shape{0});  // reducing the other axis: no outputs, nothing to do
  reduce(ReduceOp::kMax, x.ct(), none.t(), 1);

  Buf m(DType::kF32, Shape{2, 3});
  for (size_t i = 0; i < 6; ++i) m.set(i, double(i));
  Buf keep(DType::kF32, Shape{2, 1});
  reduce(ReduceOp::kSum, m.ct(), keep.t(), -1);
  EXPECT_EQ(keep.get(0), 3);
  EXPECT_EQ(keep.get(1), 12);
}

TEST(Reduce, MaxAndMinPropagateNaN) {
  for (DType dt : testing::all_dtypes()) {
    Buf x(dt, Shape{5, 40});
    x.fill_uniform(1, -1, 1);
    x.set(77, std::numeric_limits<double>::quiet_NaN());  // row 1, column 37
    Buf all(dt, Shape{}), rows(dt, Shape{5}), cols(dt, Shape{40});
    reduce(ReduceOp::kMax, x.ct(), all.t());
    EXPECT_TRUE(std::isnan(all.get(0))) << dtype_name(dt);
    reduce(ReduceOp::kMin, x.ct(), rows.t(), 1);
    EXPECT_TRUE(std::isnan(rows.get(1)));
    EXPECT_FALSE(std::isnan(rows.get(0)));
    reduce(ReduceOp::kMax, x.ct(), cols.t(), 0);
    EXPECT_TRUE(std::isnan(cols.get(37)));
    EXPECT_FALSE(std::isnan(cols.get(36)));
  }
}

TEST(ReduceErrors, BadInputsSayWhatIsWrong) {
  Buf x(DType::kF32, Shape{4, 6});
  Buf y(DType::kF32, Shape{4});
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, ConstTensor{nullptr, DType::kF32, Shape{4, 6}}, y.t(), 1); }),
              HasSubstr("reduce sum: x.data is null"));
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, x.ct(), y.t(), 2); }),
              HasSubstr("axis 2 out of range for rank 2 (allowed -2..1)"));
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, x.ct(), y.t(), 0); }),
              HasSubstr("y.shape [4] must be [6] (or [1,6] with keepdims)"));
  Buf yb(DType::kBF16, Shape{4});
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, x.ct(), yb.t(), 1); }), HasSubstr("y.dtype=bf16 differs"));
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, x.ct(), y.t(), 1, {.block_num = 0}); }),
              HasSubstr("block_num=0 must be in 1.."));
  EXPECT_THAT(msg([&] { reduce(ReduceOp::kSum, x.ct(), y.t()); }), HasSubstr("must hold one element"));
}

}  // namespace
}  // namespace tessera::kernel
