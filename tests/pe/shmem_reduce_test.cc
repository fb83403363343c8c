// Team reductions (all seven operations, a type of each kind, complex), in place and out of place, small and
// large (the chunked path), over every team shape; 1.6 scans.
#include <complex>
#include <type_traits>
#include <string>
#include <vector>

#include "pe_main.h"

namespace {
int npes() { return shmem_n_pes(); }

struct TeamCase {
  std::string name;
  shmem_team_t team;
};
class Teams {
 public:
  Teams() {
    cases_.push_back({"world", SHMEM_TEAM_WORLD});
    shmem_team_t t, x, y;
    int start = npes() > 1 ? 1 : 0;
    EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, (npes() - start + 1) / 2, nullptr, 0, &t), 0);
    add("odd", t);
    EXPECT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, nullptr, 0, &x, nullptr, 0, &y), 0);
    add("x2", x);
    add("y2", y);
    EXPECT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, nullptr, 0, &x, nullptr, 0, &y), 0);
    add("solo", x);
    add("y1", y);
  }
  ~Teams() {
    for (shmem_team_t t : owned_) shmem_team_destroy(t);
  }
  const std::vector<TeamCase>& cases() const { return cases_; }

 private:
  void add(const char* name, shmem_team_t t) {
    if (t == SHMEM_TEAM_INVALID) return;
    cases_.push_back({name, t});
    owned_.push_back(t);
  }
  std::vector<TeamCase> cases_;
  std::vector<shmem_team_t> owned_;
};

constexpr size_t kCounts[] = {1, 7, 3000};  // 3000 longs: beyond the small path, uneven chunks
constexpr size_t kMax = 3000;

enum Op { kAnd, kOr, kXor, kMax_, kMin, kSum, kProd };
const char* op_name(Op o) {
  static const char* n[] = {"and", "or", "xor", "max", "min", "sum", "prod"};
  return n[o];
}

// Bitwise operand of member idx at element i: 8-bit patterns, with a second one in the top byte of wider
// types (a reduction that drops high bytes fails). In each byte, bits 0-5 are ((idx + 1) * 13 + 7i) mod 61,
// several bits each, different for every member (teams up to 61); bit 6 is set in every member but the one
// with (idx + i) mod 8 == 0 (and loses it when that member takes part); bit 7 is set in every member where
// i mod 3 != 0 (and is non-zero there at every team size, and or differs from xor at even ones).
inline unsigned bit_pattern(int idx, size_t i) {
  const unsigned low = static_cast<unsigned>(((idx + 1) * 13 + 7 * (i % 61)) % 61);
  const unsigned b6 = (static_cast<size_t>(idx) + i) % 8 != 0 ? 0x40u : 0u, b7 = i % 3 != 0 ? 0x80u : 0u;
  return low | b6 | b7;
}
template <typename T>
T bit_operand(int idx, size_t i) {
  T v = static_cast<T>(bit_pattern(idx, i));
  if constexpr (sizeof(T) > 1) v |= static_cast<T>(bit_pattern(idx, i + 5)) << (8 * sizeof(T) - 8);
  return v;
}

// Operand of member idx at element i, chosen so every result is exact in every type.
template <typename T>
T operand(Op o, int idx, size_t i) {
  switch (o) {
    case kAnd: case kOr: case kXor:
      if constexpr (std::is_integral_v<T>) return bit_operand<T>(idx, i);
      break;
    case kMax_: case kMin: return static_cast<T>((idx * 37 + static_cast<int>(i % 101)) % 11);
    case kSum: return static_cast<T>((idx + 1) * static_cast<int>(i % 5 + 1));
    case kProd: return static_cast<T>(idx % 2 + 1 + static_cast<int>(i % 2));
  }
  return T{};
}
// The bitwise results bit by bit from how many of the n members set each bit (and: all, or: any, xor: an
// odd number), not by folding the operator over the members.
template <typename T>
T expected_bits(Op o, int n, size_t i) {
  T acc{};
  for (unsigned b = 0; b < 8 * sizeof(T); ++b) {
    int set = 0;
    for (int j = 0; j < n; ++j) set += (bit_operand<T>(j, i) >> b) & 1;
    const bool bit = o == kAnd ? set == n : o == kOr ? set > 0 : set % 2 == 1;
    if (bit) acc |= static_cast<T>(T{1} << b);
  }
  return acc;
}
template <typename T>
T expected(Op o, int n, size_t i) {
  if constexpr (std::is_integral_v<T>)
    if (o == kAnd || o == kOr || o == kXor) return expected_bits<T>(o, n, i);
  T acc = operand<T>(o, 0, i);
  for (int j = 1; j < n; ++j) {
    T v = operand<T>(o, j, i);
    switch (o) {
      case kAnd: case kOr: case kXor: break;
      case kMax_: acc = acc < v ? v : acc; break;
      case kMin: acc = v < acc ? v : acc; break;
      case kSum: acc = static_cast<T>(acc + v); break;
      case kProd: acc = static_cast<T>(acc * v); break;
    }
  }
  return acc;
}

template <typename T>
using ReduceFn = int (*)(shmem_team_t, T*, const T*, size_t);

// Runs `fn` for `op` over every team, count and placement and checks every element.
template <typename T>
void check_reduce(const char* type, Op op, ReduceFn<T> fn, T* src, T* dst, const Teams& teams) {
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t cnt : kCounts) {
      for (bool in_place : {false, true}) {
        for (size_t i = 0; i < cnt; ++i) src[i] = operand<T>(op, idx, i), dst[i] = T{};
        T* out = in_place ? src : dst;
        ASSERT_EQ(fn(c.team, out, src, cnt), 0);
        for (size_t i = 0; i < cnt; ++i)
          ASSERT_EQ(out[i], expected<T>(op, n, i)) << type << " " << op_name(op) << " on " << c.name << " count "
                                                   << cnt << (in_place ? " in place" : "") << " i " << i;
      }
    }
  }
}

template <typename T>
struct Bufs {
  T* src = static_cast<T*>(shmem_malloc(kMax * sizeof(T)));
  T* dst = static_cast<T*>(shmem_malloc(kMax * sizeof(T)));
  ~Bufs() {
    shmem_free(src);
    shmem_free(dst);
  }
};

#define CHECK_OPS_BIT(T, N)                                          \
  check_reduce<T>(#N, kAnd, shmem_##N##_and_reduce, b.src, b.dst, teams); \
  check_reduce<T>(#N, kOr, shmem_##N##_or_reduce, b.src, b.dst, teams);   \
  check_reduce<T>(#N, kXor, shmem_##N##_xor_reduce, b.src, b.dst, teams);
#define CHECK_OPS_ARITH(T, N)                                           \
  check_reduce<T>(#N, kMax_, shmem_##N##_max_reduce, b.src, b.dst, teams);  \
  check_reduce<T>(#N, kMin, shmem_##N##_min_reduce, b.src, b.dst, teams);   \
  check_reduce<T>(#N, kSum, shmem_##N##_sum_reduce, b.src, b.dst, teams);   \
  check_reduce<T>(#N, kProd, shmem_##N##_prod_reduce, b.src, b.dst, teams);

TEST(Reduce, BitwiseTypes) {
  Teams teams;
  {
    Bufs<unsigned char> b;
    CHECK_OPS_BIT(unsigned char, uchar)
  }
  {
    Bufs<uint64_t> b;
    CHECK_OPS_BIT(uint64_t, uint64)
  }
  {
    Bufs<size_t> b;
    CHECK_OPS_BIT(size_t, size)
  }
}

TEST(Reduce, ArithmeticTypes) {
  Teams teams;
  {
    Bufs<int> b;
    CHECK_OPS_ARITH(int, int)
  }
  {
    Bufs<long> b;
    CHECK_OPS_ARITH(long, long)
  }
  {
    Bufs<signed char> b;
    CHECK_OPS_ARITH(signed char, schar)
  }
  {
    Bufs<uint16_t> b;
    CHECK_OPS_ARITH(uint16_t, uint16)
  }
  {
    Bufs<float> b;
    CHECK_OPS_ARITH(float, float)
  }
  {
    Bufs<double> b;
    CHECK_OPS_ARITH(double, double)
  }
  {
    Bufs<long double> b;
    CHECK_OPS_ARITH(long double, longdouble)
  }
}

TEST(Reduce, Complex) {
  Teams teams;
  Bufs<std::complex<double>> b;
  Bufs<std::complex<float>> f;
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t cnt : {size_t{3}, size_t{1000}}) {
      for (size_t i = 0; i < cnt; ++i) {
        b.src[i] = {static_cast<double>(idx + 1), static_cast<double>(i % 3)};
        f.src[i] = {1.0f, static_cast<float>(idx % 2)};
      }
      ASSERT_EQ(shmem_complexd_sum_reduce(c.team, b.dst, b.src, cnt), 0);
      ASSERT_EQ(shmem_complexf_prod_reduce(c.team, f.dst, f.src, cnt), 0);
      std::complex<float> prod = 1.0f;
      for (int j = 0; j < n; ++j) prod *= std::complex<float>(1.0f, static_cast<float>(j % 2));
      for (size_t i = 0; i < cnt; ++i) {
        ASSERT_EQ(b.dst[i], std::complex<double>(n * (n + 1) / 2.0, static_cast<double>(n * (i % 3)))) << c.name;
        ASSERT_EQ(f.dst[i], prod) << c.name;
      }
    }
  }
}

TEST(Reduce, FloatingPointResultIdenticalEverywhere) {
  // Non-associative sums: every member must still see the same bits.
  Bufs<double> b;
  const int me = shmem_my_pe();
  for (size_t i = 0; i < kMax; ++i) b.src[i] = 1.0 / (3.0 + me * 7.0 + static_cast<double>(i));
  ASSERT_EQ(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, b.dst, b.src, kMax), 0);
  double* all = static_cast<double*>(shmem_malloc(kMax * sizeof(double) * static_cast<size_t>(npes())));
  ASSERT_EQ(shmem_double_fcollect(SHMEM_TEAM_WORLD, all, b.dst, kMax), 0);
  for (int j = 0; j < npes(); ++j)
    for (size_t i = 0; i < kMax; ++i) ASSERT_EQ(all[j * kMax + i], b.dst[i]) << "PE " << j << " element " << i;
  shmem_free(all);
}

TEST(Scan, InclusiveAndExclusive) {
  Teams teams;
  Bufs<long> b;
  Bufs<double> d;
  for (const TeamCase& c : teams.cases()) {
    const int idx = shmem_team_my_pe(c.team);
    for (size_t cnt : kCounts) {
      for (bool in_place : {false, true}) {
        for (size_t i = 0; i < cnt; ++i) b.src[i] = (idx + 1) * 10L + static_cast<long>(i), d.src[i] = idx + 0.5;
        long* out = in_place ? b.src : b.dst;
        ASSERT_EQ(shmem_long_sum_inscan(c.team, out, b.src, cnt), 0);
        for (size_t i = 0; i < cnt; ++i)
          ASSERT_EQ(out[i], 10L * (idx + 1) * (idx + 2) / 2 + (idx + 1) * static_cast<long>(i)) << c.name;
        ASSERT_EQ(shmem_double_sum_exscan(c.team, d.dst, d.src, cnt), 0);
        for (size_t i = 0; i < cnt; ++i) ASSERT_EQ(d.dst[i], idx * (idx - 1) / 2.0 + 0.5 * idx) << c.name;
      }
    }
  }
}

}  // namespace
