#include <thread>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

TEST(Amo, FetchAddUnderContention) {
  long* c = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  int* c32 = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  const int iters = 2000;
  long seen_max = -1;
  for (int i = 0; i < iters; ++i) {
    long old = shmem_long_atomic_fetch_add(c, 2, 0);
    EXPECT_EQ(old % 2, 0);
    seen_max = std::max(seen_max, old);
    shmem_int_atomic_inc(c32, npes() - 1);
  }
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*c, 2L * iters * npes()); }
  if (me() == npes() - 1) { EXPECT_EQ(*c32, iters * npes()); }
  EXPECT_LT(seen_max, 2L * iters * npes());
  shmem_barrier_all();
  shmem_free(c);
  shmem_free(c32);
}

TEST(Amo, FetchIncGivesUniqueTickets) {
  unsigned long long* t = static_cast<unsigned long long*>(shmem_calloc(1, 8));
  int* seen = static_cast<int*>(shmem_calloc(static_cast<size_t>(npes()) * 50, sizeof(int)));
  for (int i = 0; i < 50; ++i) {
    unsigned long long k = shmem_ulonglong_atomic_fetch_inc(t, 0);
    ASSERT_LT(k, 50ull * npes());
    shmem_int_atomic_add(seen + k, 1, 0);
  }
  shmem_barrier_all();
  if (me() == 0) {
    for (int i = 0; i < 50 * npes(); ++i) EXPECT_EQ(seen[i], 1) << "ticket " << i;
  }
  shmem_barrier_all();
  shmem_free(t);
  shmem_free(seen);
}

TEST(Amo, CompareSwapElectsOneWinner) {
  long* owner = static_cast<long*>(shmem_malloc(sizeof(long)));
  *owner = -1;
  shmem_barrier_all();
  long old = shmem_long_atomic_compare_swap(owner, -1, me(), 0);
  int won = old == -1;
  int* wins = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  shmem_int_atomic_add(wins, won, 0);
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(*wins, 1);
    EXPECT_GE(*owner, 0);
    EXPECT_LT(*owner, npes());
  }
  // A failing compare_swap returns the current value and changes nothing.
  long cur = shmem_long_atomic_fetch(owner, 0);
  EXPECT_EQ(shmem_long_atomic_compare_swap(owner, -5, 77, 0), cur);
  EXPECT_EQ(shmem_long_atomic_fetch(owner, 0), cur);
  shmem_barrier_all();
  shmem_free(owner);
  shmem_free(wins);
}

TEST(Amo, BitwiseEachPeOwnsABit) {
  uint64_t* bits = static_cast<uint64_t*>(shmem_calloc(1, 8));
  unsigned int* b32 = static_cast<unsigned int*>(shmem_malloc(4));
  *b32 = 0xffffffffu;
  shmem_barrier_all();
  shmem_uint64_atomic_or(bits, uint64_t{1} << me(), 0);
  shmem_uint_atomic_and(b32, ~(1u << me()), 0);
  shmem_barrier_all();
  uint64_t all = (npes() == 64) ? ~uint64_t{0} : (uint64_t{1} << npes()) - 1;
  if (me() == 0) {
    EXPECT_EQ(*bits, all);
    EXPECT_EQ(*b32, ~static_cast<unsigned int>(all));
  }
  shmem_barrier_all();
  uint64_t before = shmem_uint64_atomic_fetch_xor(bits, uint64_t{1} << me(), 0);
  EXPECT_NE(before & (uint64_t{1} << me()), 0u);
  shmem_barrier_all();
  if (me() == 0) { EXPECT_EQ(*bits, 0u); }
  uint64_t f = 0;
  shmem_uint64_atomic_fetch_or_nbi(&f, bits, 0, 0);
  shmem_quiet();
  EXPECT_EQ(f, 0u);
  shmem_barrier_all();
  shmem_free(bits);
  shmem_free(b32);
}

TEST(Amo, SetSwapFetchIncludingFloatingPoint) {
  double* d = static_cast<double*>(shmem_calloc(1, sizeof(double)));
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  shmem_double_atomic_set(d, me() + 0.5, to);
  shmem_barrier_all();
  EXPECT_EQ(*d, from + 0.5);
  EXPECT_EQ(shmem_double_atomic_fetch(d, to), me() + 0.5);
  shmem_barrier_all();
  double old = shmem_double_atomic_swap(d, -1.0, to);
  EXPECT_EQ(old, me() + 0.5);
  shmem_barrier_all();
  EXPECT_EQ(*d, -1.0);
  int32_t* i32 = static_cast<int32_t*>(shmem_calloc(1, 4));
  int32_t fetched = 0;
  shmem_int32_atomic_fetch_add_nbi(&fetched, i32, 5, to);
  shmem_quiet();
  EXPECT_EQ(fetched, 0);
  shmem_barrier_all();
  EXPECT_EQ(*i32, 5);
  shmem_barrier_all();
  shmem_free(d);
  shmem_free(i32);
}

TEST(Amo, ThreadsOfOnePeAddConcurrently) {
  long* c = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::thread ts[3];
  for (auto& t : ts)
    t = std::thread([&] {
      for (int i = 0; i < 1000; ++i) shmem_long_atomic_add(c, 1, (me() + 1) % npes());
    });
  for (auto& t : ts) t.join();
  shmem_barrier_all();
  EXPECT_EQ(*c, 3000);
  shmem_barrier_all();
  shmem_free(c);
}

}  // namespace
