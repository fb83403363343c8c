// Names of earlier OpenSHMEM versions: _my_pe/_num_pes, shmalloc/shfree/shrealloc/shmemalign, the cache
// no-ops, the pre-1.4 atomics, shmem_pcontrol.
#include <cstdint>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

TEST(Deprecated, QueryAndMemory) {
  EXPECT_EQ(_my_pe(), me());
  EXPECT_EQ(_num_pes(), npes());
  long* p = static_cast<long*>(shmalloc(4 * sizeof(long)));
  ASSERT_NE(p, nullptr);
  p[0] = me();
  long* q = static_cast<long*>(shrealloc(p, 1000 * sizeof(long)));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q[0], me());
  void* a = shmemalign(4096, 100);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  EXPECT_TRUE(shmem_addr_accessible(a, 0));
  shfree(a);
  shfree(q);
  shmem_clear_cache_inv();
  shmem_set_cache_inv();
  shmem_clear_cache_line_inv(&p);
  shmem_set_cache_line_inv(&p);
  shmem_udcflush();
  shmem_udcflush_line(&p);
  shmem_pcontrol(1);
}

TEST(Deprecated, OldAtomicNames) {
  int* i = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  long* l = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  long long* ll = static_cast<long long*>(shmem_calloc(1, sizeof(long long)));
  double* d = static_cast<double*>(shmem_calloc(1, sizeof(double)));
  float* f = static_cast<float*>(shmem_calloc(1, sizeof(float)));
  int* owner = static_cast<int*>(shmem_malloc(sizeof(int)));
  *owner = -1;
  shmem_barrier_all();
  shmem_int_inc(i, 0);
  shmem_int_add(i, 2, 0);
  EXPECT_GE(shmem_long_finc(l, 0), 0);
  EXPECT_GE(shmem_long_fadd(l, 4, 0), 0);
  shmem_longlong_add(ll, 3, 0);
  int old = shmem_int_cswap(owner, -1, me(), 0);
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(*i, 3 * npes());
    EXPECT_EQ(*l, 5L * npes());
    EXPECT_EQ(*ll, 3LL * npes());
    EXPECT_GE(*owner, 0);
  }
  EXPECT_EQ(shmem_int_fetch(owner, 0) == me(), old == -1);
  shmem_barrier_all();
  if (me() == npes() - 1) {
    shmem_double_set(d, 2.5, 0);
    shmem_float_set(f, 1.5f, 0);
  }
  shmem_barrier_all();
  EXPECT_EQ(shmem_double_fetch(d, 0), 2.5);
  EXPECT_EQ(shmem_float_fetch(f, 0), 1.5f);
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(shmem_double_swap(d, 4.0, 0), 2.5);
    EXPECT_EQ(shmem_long_swap(l, 7, 0), 5L * npes());
    EXPECT_EQ(shmem_longlong_fetch(ll, 0), 3LL * npes());
    EXPECT_EQ(shmem_longlong_cswap(ll, 3LL * npes(), 1, 0), 3LL * npes());
    EXPECT_EQ(shmem_longlong_finc(ll, 0), 1);
    EXPECT_EQ(shmem_int_swap(i, 0, 0), 3 * npes());
    shmem_long_set(l, 9, 0);
    EXPECT_EQ(shmem_long_fetch(l, 0), 9);
  }
  shmem_barrier_all();
  shmem_free(i);
  shmem_free(l);
  shmem_free(ll);
  shmem_free(d);
  shmem_free(f);
  shmem_free(owner);
}

}  // namespace
