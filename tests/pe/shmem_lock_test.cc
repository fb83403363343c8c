// Distributed locks: mutual exclusion under contention (a non-atomic read-modify-write of a counter on one
// PE), shmem_test_lock's return values, and locks in the heap and in the data segment.
#include <thread>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

long g_lock = 0;  // data segment: symmetric, zero-initialised as the specification asks

TEST(Lock, MutualExclusion) {
  long* counter = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  int* inside = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  const int iters = 200;
  for (int k = 0; k < iters; ++k) {
    shmem_set_lock(&g_lock);
    ASSERT_EQ(shmem_int_atomic_fetch_inc(inside, 0), 0) << "two PEs inside the critical section";
    long v = shmem_long_g(counter, 0);
    shmem_long_p(counter, v + 1, 0);
    shmem_int_atomic_add(inside, -1, 0);
    shmem_clear_lock(&g_lock);
  }
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(*counter, static_cast<long>(iters) * npes());
  }
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(inside);
}

TEST(Lock, TestLock) {
  long* lock = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  int* winners = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  // Everyone tries once while PE 0 holds it: nobody else gets it.
  if (me() == 0) {
    ASSERT_EQ(shmem_test_lock(lock), 0);
  }
  shmem_barrier_all();
  if (me() != 0) {
    EXPECT_EQ(shmem_test_lock(lock), 1);
  }
  shmem_barrier_all();
  if (me() == 0) shmem_clear_lock(lock);
  shmem_barrier_all();
  // Spin with test_lock until acquired: everyone gets it exactly once.
  while (shmem_test_lock(lock) != 0) std::this_thread::yield();
  shmem_int_atomic_inc(winners, 0);
  shmem_clear_lock(lock);
  shmem_barrier_all();
  if (me() == 0) {
    EXPECT_EQ(*winners, npes());
  }
  shmem_barrier_all();
  shmem_free(lock);
  shmem_free(winners);
}

TEST(Lock, ClearMakesUpdatesVisibleToNextHolder) {
  long* lock = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  long* data = static_cast<long*>(shmem_calloc(64, sizeof(long)));
  for (int k = 0; k < 20; ++k) {
    shmem_set_lock(lock);
    long seen = shmem_long_g(data, 0);
    // The previous holder's put (before its clear_lock) must be visible: values only grow by one.
    for (int i = 1; i < 64; ++i) ASSERT_EQ(shmem_long_g(data + i, npes() - 1), seen) << "element " << i;
    for (int i = 1; i < 64; ++i) shmem_long_p(data + i, seen + 1, npes() - 1);
    shmem_long_p(data, seen + 1, 0);
    shmem_clear_lock(lock);
  }
  shmem_barrier_all();
  shmem_free(lock);
  shmem_free(data);
}

}  // namespace
