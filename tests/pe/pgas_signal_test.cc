#include <vector>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// A barrier completes every put-with-signal before it (it implies quiet): data and signals are checked
// without waiting on a signal, so a signal that is never written fails here at once rather than at the
// deadline of a wait.
TEST(Signal, BarrierCompletesPutWithSignal) {
  const size_t n = 64;
  long* inbox = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(2, sizeof(uint64_t)));
  std::vector<long> out(n);
  const int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (size_t i = 0; i < n; ++i) out[i] = me() * 1000 + static_cast<long>(i);
  shmem_long_put_signal(inbox, out.data(), n, sig, 7, SHMEM_SIGNAL_SET, to);
  shmem_long_put_signal_nbi(inbox, out.data(), n, sig + 1, 5, SHMEM_SIGNAL_ADD, to);
  shmem_barrier_all();
  EXPECT_EQ(shmem_signal_fetch(sig), 7u) << "SHMEM_SIGNAL_SET";
  EXPECT_EQ(shmem_signal_fetch(sig + 1), 5u) << "SHMEM_SIGNAL_ADD";
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += inbox[i] != from * 1000 + static_cast<long>(i);
  EXPECT_EQ(wrong, 0u);
  shmem_barrier_all();
  shmem_free(inbox);
  shmem_free(sig);
}

// As above with blocks large enough to travel as one message carrying its signal (across hosts), from
// every PE to every PE: each target counts every arrival and holds every block after the barrier.
TEST(Signal, BarrierCompletesLargePutWithSignalAdd) {
  const size_t n = size_t{16} << 10;  // 128 KiB per sender
  long* slots = static_cast<long*>(shmem_calloc(n * static_cast<size_t>(npes()), sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  std::vector<long> out(n);
  for (uint64_t round = 1; round <= 4; ++round) {
    for (size_t i = 0; i < n; ++i) out[i] = me() * 1000000 + static_cast<long>(round * i);
    for (int pe = 0; pe < npes(); ++pe)
      shmem_long_put_signal_nbi(slots + n * static_cast<size_t>(me()), out.data(), n, sig, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_barrier_all();
    EXPECT_EQ(shmem_signal_fetch(sig), round * static_cast<uint64_t>(npes()));
    for (int pe = 0; pe < npes(); ++pe) {
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i)
        wrong += slots[n * static_cast<size_t>(pe) + i] != pe * 1000000 + static_cast<long>(round * i);
      ASSERT_EQ(wrong, 0u) << "round " << round << ": block from PE " << pe;
    }
    shmem_barrier_all();
  }
  shmem_free(slots);
  shmem_free(sig);
}

TEST(Signal, PutWithSignalSetDeliversDataFirst) {
  const size_t n = 1 << 16;
  long* inbox = static_cast<long*>(shmem_malloc(n * sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  std::vector<long> out(n);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (uint64_t round = 1; round <= 20; ++round) {
    for (size_t i = 0; i < n; ++i) out[i] = me() * 31 + static_cast<long>(round * i);
    shmem_long_put_signal(inbox, out.data(), n, sig, round, SHMEM_SIGNAL_SET, to);
    uint64_t s = shmem_signal_wait_until(sig, SHMEM_CMP_GE, round);
    EXPECT_GE(s, round);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += inbox[i] != from * 31 + static_cast<long>(round * i);
    ASSERT_EQ(wrong, 0u) << "round " << round;
    shmem_barrier_all();
  }
  EXPECT_EQ(shmem_signal_fetch(sig), 20u);
  shmem_barrier_all();
  shmem_free(inbox);
  shmem_free(sig);
}

TEST(Signal, AddCountsArrivalsFromEveryPe) {
  char* slots = static_cast<char*>(shmem_calloc(static_cast<size_t>(npes()), 64));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  char msg[64];
  for (int pe = 0; pe < npes(); ++pe) {
    snprintf(msg, sizeof msg, "from %d to %d", me(), pe);
    shmem_putmem_signal_nbi(slots + 64 * me(), msg, sizeof msg, sig, 1, SHMEM_SIGNAL_ADD, pe);
  }
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, static_cast<uint64_t>(npes()));
  for (int pe = 0; pe < npes(); ++pe) {
    snprintf(msg, sizeof msg, "from %d to %d", pe, me());
    EXPECT_STREQ(slots + 64 * pe, msg);
  }
  shmem_barrier_all();
  shmem_free(slots);
  shmem_free(sig);
}

TEST(Signal, SignalSetAndAddWithoutData) {
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(2, sizeof(uint64_t)));
  int to = (me() + 1) % npes();
  shmem_signal_set(sig, 40, to);
  shmem_signal_add(sig + 1, 2, to);
  shmem_signal_add(sig + 1, 3, to);
  shmem_signal_wait_until(sig + 1, SHMEM_CMP_EQ, 5);
  EXPECT_EQ(shmem_signal_fetch(sig), 40u);
  shmem_barrier_all();
  shmem_free(sig);
}

}  // namespace
