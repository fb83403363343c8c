#include <vector>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// put data, fence, put flag: a PE that sees the flag sees the data.
TEST(Order, FenceOrdersPutsToOnePe) {
  const size_t n = 4096;
  long* data = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  long* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<long> src(n);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (long round = 1; round <= 200; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = round * 1000 + me() + static_cast<long>(i);
    shmem_long_put(data, src.data(), n, to);
    shmem_fence();
    shmem_long_p(flag, round, to);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
    ASSERT_EQ(data[0], round * 1000 + from);
    ASSERT_EQ(data[n - 1], round * 1000 + from + static_cast<long>(n - 1));
    shmem_barrier_all();
  }
  shmem_free(flag);
  shmem_free(data);
}

// Barrier semantics: after barrier_all every PE sees what every PE put before it.
TEST(Order, BarrierCompletesPuts) {
  int* slots = static_cast<int*>(shmem_calloc(static_cast<size_t>(npes()), sizeof(int)));
  for (int round = 1; round <= 500; ++round) {
    for (int pe = 0; pe < npes(); ++pe) shmem_int_p(slots + me(), round, pe);
    shmem_barrier_all();
    for (int pe = 0; pe < npes(); ++pe) ASSERT_EQ(slots[pe], round) << "round " << round << " slot " << pe;
    shmem_barrier_all();
  }
  shmem_free(slots);
}

TEST(Order, QuietAndSyncAll) {
  long* x = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  shmem_long_put_nbi(x, reinterpret_cast<const long*>(&x), 1, (me() + 1) % npes());
  shmem_quiet();
  shmem_sync_all();
  EXPECT_NE(*x, 0);
  int pes[1] = {(me() + 1) % npes()};
  shmem_pe_quiet(pes, 1);
  shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
  shmem_ctx_fence(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  shmem_free(x);
}

}  // namespace
