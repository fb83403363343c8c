#include <unistd.h>

#include "pe_main.h"
#include "sync/wait.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

TEST(Wait, EveryComparison) {
  long* v = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  int to = (me() + 1) % npes();
  struct Case { int cmp; long target; long value; };
  // The writer stores `value`; the waiter waits for `cmp target`, which only that value satisfies.
  Case cases[] = {{SHMEM_CMP_EQ, 5, 5}, {SHMEM_CMP_NE, 5, 6}, {SHMEM_CMP_GT, 6, 7},
                  {SHMEM_CMP_GE, 8, 8}, {SHMEM_CMP_LT, 0, -3}, {SHMEM_CMP_LE, -4, -4}};
  for (auto& c : cases) {
    // Reset to a value that fails the comparison.
    *v = c.cmp == SHMEM_CMP_NE ? 5 : (c.cmp == SHMEM_CMP_LT || c.cmp == SHMEM_CMP_LE) ? 100 : -100;
    shmem_barrier_all();
    EXPECT_FALSE(shmem_long_test(v, c.cmp, c.target));
    shmem_barrier_all();
    shmem_long_atomic_set(v, c.value, to);
    shmem_long_wait_until(v, c.cmp, c.target);
    EXPECT_EQ(*v, c.value);
    EXPECT_TRUE(shmem_long_test(v, c.cmp, c.target));
    shmem_barrier_all();
  }
  shmem_free(v);
}

TEST(Wait, SleepingWaiterIsWoken) {
  // The writer waits long enough for the reader to park on its futex (after spin and yield phases).
  int* flag = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  if (npes() > 1) {
    if (me() == 1) {
      usleep(300000);
      shmem_int_p(flag, 1, 0);
    } else if (me() == 0) {
      shmem_int_wait_until(flag, SHMEM_CMP_EQ, 1);
      EXPECT_EQ(*flag, 1);
    }
  }
  shmem_barrier_all();
  shmem_free(flag);
}

// As above, with how the sleep ended checked: the writer's notify_range rings the sleeper's doorbell, so the
// wait ends by it and not at a re-check slice's end (sync::WaitStats), which would only cost time. PE 1 writes
// once PE 0 sleeps watching some bytes (not the barrier, which watches none), plus 50 ms for it to park:
// first with a put (shmem_int_p), then with a put-with-signal. Nobody else may ring PE 0 meanwhile (a PE
// arriving at a barrier notifies the others, which would wake PE 0 whatever the put did): the other PEs poll
// for PE 0's go-ahead before the barrier. Under the test hook TESSERA_TEST_NO_RECHECK=1
// (pe.pgas_wait.n*_no_recheck) PE 0 has no slice to fall back on, so the wait must also end long before its
// deadline; a lost wake-up there ends the job with the deadline's message.
TEST(Wait, SleeperIsWokenByTheDoorbell) {
  namespace ts = tessera::sync;
  int* flag = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  int* done = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  for (int how = 0; how < 2 && npes() > 1; ++how) {
    shmem_barrier_all();
    if (me() == 0) {
      const ts::WaitStats& st = ts::g_wait_stats;
      const uint64_t parks = st.futex_waits.load(), bell = st.woken_by_bell.load(), slice = st.woken_by_slice.load();
      const uint64_t start = tessera::now_ns();
      if (how == 0) shmem_int_wait_until(flag, SHMEM_CMP_EQ, 1);
      else shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
      const uint64_t took = tessera::now_ns() - start;
      EXPECT_EQ(*flag, 1);
      // A PE descheduled between registering as a sleeper and its first park may find the write before it
      // parks; then nothing woke it, and only the slice count is checked.
      EXPECT_EQ(st.woken_by_slice.load() - slice, 0u) << "way " << how << ": the sleep ended at a slice's end";
      if (st.futex_waits.load() != parks) {
        EXPECT_EQ(st.woken_by_bell.load() - bell, 1u) << "way " << how << ": the doorbell did not end the sleep";
      }
      if (ts::no_recheck()) {
        EXPECT_LT(took, ts::timeout_ns() / 4) << "way " << how;
      }
      for (int pe = 1; pe < npes(); ++pe) shmem_int_atomic_set(done, how + 1, pe);
    } else {
      if (me() == 1) {
        const ts::PeWaitWords& pe0 = ts::wait_context().pe_words[0];
        while (pe0.watch_hi.load() == 0) usleep(1000);
        usleep(50000);
        const int one = 1;
        if (how == 0) shmem_int_p(flag, 1, 0);
        else shmem_int_put_signal(flag, &one, 1, sig, 1, SHMEM_SIGNAL_SET, 0);
      }
      while (shmem_int_atomic_fetch(done, me()) != how + 1) usleep(1000);
    }
    shmem_barrier_all();
    *flag = 0;
  }
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(done);
  shmem_free(flag);
}

TEST(Wait, AllAnySomeWithStatusMask) {
  int n = npes();
  uint64_t* flags = static_cast<uint64_t*>(shmem_calloc(static_cast<size_t>(n) + 1, sizeof(uint64_t)));
  // Everyone sets its own slot on every PE.
  for (int pe = 0; pe < n; ++pe) shmem_uint64_atomic_set(flags + me(), static_cast<uint64_t>(me() + 1), pe);
  std::vector<int> status(static_cast<size_t>(n) + 1, 0);
  status[static_cast<size_t>(n)] = 1;  // the extra slot is never set: excluded
  shmem_uint64_wait_until_all(flags, static_cast<size_t>(n) + 1, status.data(), SHMEM_CMP_NE, 0);
  for (int i = 0; i < n; ++i) EXPECT_EQ(flags[i], static_cast<uint64_t>(i + 1));
  size_t any = shmem_uint64_wait_until_any(flags, static_cast<size_t>(n), nullptr, SHMEM_CMP_GE, 1);
  EXPECT_LT(any, static_cast<size_t>(n));
  std::vector<size_t> idx(static_cast<size_t>(n));
  size_t k = shmem_uint64_wait_until_some(flags, static_cast<size_t>(n), idx.data(), nullptr, SHMEM_CMP_GT, 0);
  EXPECT_EQ(k, static_cast<size_t>(n));
  std::vector<uint64_t> want(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) want[static_cast<size_t>(i)] = static_cast<uint64_t>(i + 1);
  shmem_uint64_wait_until_all_vector(flags, static_cast<size_t>(n), nullptr, SHMEM_CMP_EQ, want.data());
  EXPECT_EQ(shmem_uint64_test_all_vector(flags, static_cast<size_t>(n), nullptr, SHMEM_CMP_EQ, want.data()), 1);
  want[0] = 99;
  EXPECT_EQ(shmem_uint64_test_all_vector(flags, static_cast<size_t>(n), nullptr, SHMEM_CMP_EQ, want.data()), 0);
  EXPECT_EQ(shmem_uint64_test_any_vector(flags, 1, nullptr, SHMEM_CMP_EQ, want.data()), SIZE_MAX);
  EXPECT_EQ(shmem_uint64_test_some(flags, static_cast<size_t>(n) + 1, idx.data(), status.data(), SHMEM_CMP_EQ, 1), 1u);
  EXPECT_EQ(idx[0], 0u);
  // Everything excluded: any returns SIZE_MAX at once, some returns 0.
  std::vector<int> none(static_cast<size_t>(n), 1);
  EXPECT_EQ(shmem_uint64_wait_until_any(flags, static_cast<size_t>(n), none.data(), SHMEM_CMP_EQ, 0), SIZE_MAX);
  EXPECT_EQ(shmem_uint64_wait_until_some(flags, static_cast<size_t>(n), idx.data(), none.data(), SHMEM_CMP_EQ, 0), 0u);
  shmem_barrier_all();
  shmem_free(flags);
}

TEST(Wait, DeprecatedWaitWaitsWhileEqual) {
  short* s = static_cast<short*>(shmem_calloc(1, sizeof(short)));
  shmem_short_p(s, 3, (me() + 1) % npes());
  shmem_short_wait(s, 0);
  EXPECT_EQ(*s, 3);
  shmem_barrier_all();
  shmem_free(s);
}

}  // namespace
