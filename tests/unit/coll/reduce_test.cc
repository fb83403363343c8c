// The reduction kernels against an independent scalar reference: every type x op, source counts 1..9,
// lengths around the tile and vector sizes, in place; float16/bfloat16 accumulate in float32 and round
// once; the result does not depend on how the range is split (deterministic mode relies on it).
#include "coll/reduce/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coll/reduce/reference.h"
#include "coll/types.h"

namespace tessera::coll {
namespace {

// nsrc inputs of count elements from the reference, and the reference's expected result.
struct Case {
  std::vector<std::vector<char>> in;
  std::vector<const void*> srcs;
  std::vector<char> expect;
};
Case make_case(DType dt, Op op, int nsrc, size_t count) {
  const size_t es = dtype_size(dt);
  Case c{std::vector<std::vector<char>>(nsrc, std::vector<char>(count * es)), {}, std::vector<char>(count * es)};
  for (int r = 0; r < nsrc; ++r) {
    for (size_t i = 0; i < count; ++i) ref::store(c.in[r].data(), i, dt, ref::input_value(r, i, dt, op));
    c.srcs.push_back(c.in[r].data());
  }
  for (size_t i = 0; i < count; ++i) ref::expected(c.expect.data() + i * es, i, dt, op, nsrc);
  return c;
}

TEST(Reduce, EveryTypeOpAndSourceCountMatchesReference) {
  for (int t = 0; t < kNumDTypes; ++t)
    for (int o = 0; o < kNumOps; ++o)
      if (op_applies(static_cast<DType>(t), static_cast<Op>(o)))
      for (int nsrc : {1, 2, 3, 8})
        for (size_t count : {size_t{1}, size_t{7}, size_t{33}, size_t{513}, size_t{1500}}) {
          const DType dt = static_cast<DType>(t);
          const Op op = static_cast<Op>(o);
          Case c = make_case(dt, op, nsrc, count);
          std::vector<char> out(c.expect.size());
          reduce(out.data(), c.srcs.data(), nsrc, count, dt, op, op == Op::kAvg ? nsrc : 0);
          EXPECT_EQ(std::memcmp(out.data(), c.expect.data(), out.size()), 0)
              << dtype_name(dt) << " " << op_name(op) << " nsrc " << nsrc << " count " << count;
          // in place on the first source
          reduce(c.in[0].data(), c.srcs.data(), nsrc, count, dt, op, op == Op::kAvg ? nsrc : 0);
          EXPECT_EQ(std::memcmp(c.in[0].data(), c.expect.data(), out.size()), 0) << "in place";
        }
}

// The reference inputs can tell members apart: at every element, members 0..6 feed 7 different values
// (sum, avg, min, max), so a result built from the wrong members' data differs somewhere; prod's twos move
// from member to member; and the extremes of 8 members stay exact in every type (the sum of 8 within int8,
// the product of 8 within int8 and a power of two).
TEST(Reduce, ReferenceInputsDifferPerMemberAndStayExact) {
  for (int t = 0; t < kNumDTypes; ++t)
    for (int o = 0; o < kNumOps; ++o)
      if (op_applies(static_cast<DType>(t), static_cast<Op>(o)))
      for (size_t i = 0; i < 64; ++i) {
        const DType dt = static_cast<DType>(t);
        const Op op = static_cast<Op>(o);
        double sum = 0, prod = 1;
        std::vector<double> v;
        for (int r = 0; r < 8; ++r) {
          v.push_back(ref::input_value(r, i, dt, op));
          sum += v.back();
          prod *= v.back();
        }
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + op_name(op) + " element " + std::to_string(i));
        if (op == Op::kProd) {
          EXPECT_LE(prod, 8);
          EXPECT_EQ(std::count(v.begin(), v.begin() + 3, 2.0), 1) << "members 0..2: exactly one feeds a two";
        } else {
          std::vector<double> first7(v.begin(), v.begin() + 7);
          std::sort(first7.begin(), first7.end());
          EXPECT_EQ(std::unique(first7.begin(), first7.end()), first7.end()) << "two members feed the same value";
          EXPECT_LE(std::abs(sum), 127);
          EXPECT_NE(v[0], ref::input_value(0, i + 1, dt, op)) << "member 0 feeds the same value at i and i+1";
        }
      }
}

// Both kernel tables, whichever this host would choose: the baseline x86-64 one (for hosts without AVX2)
// is otherwise never run where the tests run. Bitwise against the reference, so the two agree too.
TEST(Reduce, BaselineAndAvx2TablesMatchReference) {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  for (const ReduceFn* table : {reduce_table_base(), avx2 ? reduce_table_avx2() : nullptr}) {
    if (!table) continue;
    for (int t = 0; t < kNumDTypes; ++t)
      for (int o = 0; o < kNumOps; ++o)
        if (op_applies(static_cast<DType>(t), static_cast<Op>(o)))
        for (int nsrc : {2, 3, 8})
          for (size_t count : {size_t{1}, size_t{7}, size_t{33}, size_t{1500}}) {
            const DType dt = static_cast<DType>(t);
            const Op op = static_cast<Op>(o);
            Case c = make_case(dt, op, nsrc, count);
            std::vector<char> out(c.expect.size());
            table[t](out.data(), c.srcs.data(), nsrc, count, o, op == Op::kAvg ? nsrc : 0);
            EXPECT_EQ(std::memcmp(out.data(), c.expect.data(), out.size()), 0)
                << (table == reduce_table_base() ? "baseline " : "avx2 ") << dtype_name(dt) << " " << op_name(op)
                << " nsrc " << nsrc << " count " << count;
          }
  }
}

TEST(Reduce, HalfPrecisionAccumulatesInFloat32AndRoundsOnce) {
  // 1 + 2^-11 + 2^-11: in float16 steps the small terms vanish; accumulated in float32 they carry.
  const uint16_t one = ref::float_to_f16(1.0f), tiny = ref::float_to_f16(1.0f / 2048);
  uint16_t a[1] = {one}, b[1] = {tiny}, c[1] = {tiny}, out[1];
  const void* s[3] = {a, b, c};
  reduce(out, s, 3, 1, DType::kFloat16, Op::kSum);
  EXPECT_EQ(ref::f16_to_float(out[0]), 1.0f + 1.0f / 1024);
  uint16_t ba[1] = {ref::float_to_bf16(256.0f)}, bb[1] = {ref::float_to_bf16(1.0f)}, bc[1] = {ref::float_to_bf16(1.0f)};
  const void* t[3] = {ba, bb, bc};
  reduce(out, t, 3, 1, DType::kBFloat16, Op::kSum);
  EXPECT_EQ(ref::bf16_to_float(out[0]), 258.0f);
}

TEST(Reduce, IntegersWrapAround) {
  int8_t a[1] = {127}, b[1] = {1}, out[1];
  const void* s[2] = {a, b};
  reduce(out, s, 2, 1, DType::kInt8, Op::kSum);
  EXPECT_EQ(out[0], -128);
}

TEST(Reduce, SplittingTheRangeDoesNotChangeBits) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1, 1);
  const size_t n = 10007;
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const size_t es = dtype_size(t);
    std::vector<std::vector<char>> in(5, std::vector<char>(n * es));
    std::vector<const void*> srcs;
    for (auto& v : in) {
      for (size_t i = 0; i < n; ++i) ref::store(v.data(), i, t, d(g));
      srcs.push_back(v.data());
    }
    std::vector<char> whole(n * es), pieces(n * es);
    reduce(whole.data(), srcs.data(), 5, n, t, Op::kAvg, 5);
    for (size_t at = 0; at < n;) {
      size_t len = std::min<size_t>(n - at, 1 + at % 997);
      std::vector<const void*> s;
      for (auto& v : in) s.push_back(v.data() + at * es);
      reduce(pieces.data() + at * es, s.data(), 5, len, t, Op::kAvg, 5);
      at += len;
    }
    EXPECT_EQ(whole, pieces) << dtype_name(t);
  }
}

TEST(Types, NamesRoundTrip) {
  for (int t = 0; t < kNumDTypes; ++t) EXPECT_EQ(parse_dtype(dtype_name(static_cast<DType>(t))), static_cast<DType>(t));
  for (int o = 0; o < kNumOps; ++o) EXPECT_EQ(parse_op(op_name(static_cast<Op>(o))), static_cast<Op>(o));
  for (int k = 0; k < kNumKinds; ++k) EXPECT_EQ(parse_kind(kind_name(static_cast<Kind>(k))), static_cast<Kind>(k));
  EXPECT_EQ(parse_dtype("half"), DType::kFloat16);
  EXPECT_EQ(parse_kind("bcast"), Kind::kBroadcast);
  EXPECT_FALSE(parse_dtype("float128"));
}

}  // namespace
}  // namespace tessera::coll
