// The reduction kernels against an independent scalar reference: every type x op, source counts 1 to 16,
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
      for (int nsrc : {1, 2, 3, 8, 16})
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

// Reference result of members `who` (a list of member indices, repeats allowed) at element i, in double.
double reduce_of(const std::vector<int>& who, size_t i, DType dt, Op op) {
  double acc = ref::input_value(who[0], i, dt, op);
  for (size_t k = 1; k < who.size(); ++k) {
    const double v = ref::input_value(who[k], i, dt, op);
    const int64_t x = static_cast<int64_t>(acc), y = static_cast<int64_t>(v);
    switch (op) {
      case Op::kSum: case Op::kAvg: acc += v; break;
      case Op::kProd: acc *= v; break;
      case Op::kMin: acc = std::min(acc, v); break;
      case Op::kMax: acc = std::max(acc, v); break;
      case Op::kBand: acc = static_cast<double>(x & y); break;
      case Op::kBor: acc = static_cast<double>(x | y); break;
      case Op::kBxor: acc = static_cast<double>(x ^ y); break;
    }
  }
  return acc;
}

// Whether v survives a store as type dt and a load back (exactly representable, in range).
bool representable(double v, DType dt) {
  std::vector<char> b(dtype_size(dt));
  ref::store(b.data(), 0, dt, v);
  return ref::load(b.data(), 0, dt) == v;
}

// The reference inputs tell members apart at every member count up to 16 (coll/reduce/reference.h), for
// every type and operator:
//   no two members' inputs are equal; replacing any member's input by member 0's (member 0 counted twice)
//   changes the result at some element; every partial result of a ring or tree (the members of any cyclic
//   range of the 16) is exact in the type, so every algorithm's result is too;
//   every operator but prod: at every element the 16 members feed 16 different values, and member 0 feeds
//   different values at i and i+1;
//   prod: the factors have no period in rank below 17;
//   min, max: the member holding the extreme changes from element to element at every count;
//   band, bor, bxor: at every count from 2, or differs from xor at some element, and and is non-zero at some.
TEST(Reduce, ReferenceInputsTellMembersApartAndStayExact) {
  constexpr int kMembers = 16;
  constexpr size_t kElems = 256;
  for (int t = 0; t < kNumDTypes; ++t)
    for (int o = 0; o < kNumOps; ++o) {
      const DType dt = static_cast<DType>(t);
      const Op op = static_cast<Op>(o);
      if (!op_applies(dt, op)) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + op_name(op));
      std::vector<std::vector<double>> in(kMembers, std::vector<double>(kElems));
      for (int r = 0; r < kMembers; ++r)
        for (size_t i = 0; i < kElems; ++i) in[r][i] = ref::input_value(r, i, dt, op);
      for (int r = 0; r < kMembers; ++r)
        for (int q = 0; q < r; ++q) EXPECT_NE(in[r], in[q]) << "members " << q << " and " << r << " feed the same input";
      for (int first = 0; first < kMembers; ++first)
        for (int len = 1; len <= kMembers; ++len) {
          std::vector<int> who;
          for (int k = 0; k < len; ++k) who.push_back((first + k) % kMembers);
          for (size_t i = 0; i < kElems; ++i) {
            const double v = reduce_of(who, i, dt, op);
            ASSERT_TRUE(representable(v, dt)) << "members " << first << ".." << (first + len - 1) % kMembers
                                              << " element " << i << ": " << v;
          }
        }
      for (int n = 2; n <= kMembers; ++n) {
        std::vector<int> all(n);
        for (int r = 0; r < n; ++r) all[r] = r;
        for (int j = 1; j < n; ++j) {
          std::vector<int> twice = all;
          twice[j] = 0;
          bool differs = false;
          for (size_t i = 0; i < kElems && !differs; ++i) differs = reduce_of(twice, i, dt, op) != reduce_of(all, i, dt, op);
          EXPECT_TRUE(differs) << n << " members, member " << j << " replaced by member 0";
        }
        if (op == Op::kMin || op == Op::kMax) {
          std::vector<int> holders;
          for (size_t i = 0; i < kElems; ++i) {
            const double v = reduce_of(all, i, dt, op);
            holders.push_back(-1);
            for (int r = 0; r < n; ++r)
              if (in[r][i] == v) holders.back() = r;
          }
          std::sort(holders.begin(), holders.end());
          EXPECT_EQ(std::unique(holders.begin(), holders.end()) - holders.begin(), n)
              << n << " members: not every member holds the extreme at some element";
        }
        if (op == Op::kBand) {
          bool or_ne_xor = false, and_nonzero = false;
          for (size_t i = 0; i < kElems; ++i) {
            or_ne_xor |= reduce_of(all, i, dt, Op::kBor) != reduce_of(all, i, dt, Op::kBxor);
            and_nonzero |= reduce_of(all, i, dt, Op::kBand) != 0;
          }
          EXPECT_TRUE(or_ne_xor) << n << " members: or equals xor at every element";
          EXPECT_TRUE(and_nonzero) << n << " members: and is 0 at every element";
        }
      }
      if (op == Op::kProd) {
        for (int p = 1; p < kMembers; ++p) {
          bool differs = false;
          for (int r = 0; r + p < kMembers; ++r) differs |= in[r] != in[r + p];
          EXPECT_TRUE(differs) << "the factors repeat every " << p << " members";
        }
      } else {
        for (size_t i = 0; i + 1 < kElems; ++i) {
          std::vector<double> at;
          for (int r = 0; r < kMembers; ++r) at.push_back(in[r][i]);
          std::sort(at.begin(), at.end());
          EXPECT_EQ(std::unique(at.begin(), at.end()), at.end()) << "two members feed the same value at " << i;
          EXPECT_NE(in[0][i], in[0][i + 1]) << "member 0 feeds the same value at " << i << " and " << i + 1;
        }
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
        for (int nsrc : {2, 3, 8, 16})
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
