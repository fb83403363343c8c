// Sessions (OpenSHMEM 1.6's shmem_session_start/stop) at 1-4 PEs and across hosts (pgas.cmake), where small
// puts to other hosts are held and sent in batches (transport/ucx/rma.cc): everything a program may rely on
// still holds: the session's end, a quiet and a barrier complete the puts; a fence orders them; a get or an
// atomic to a PE sees this PE's earlier puts to it; a PE that puts and then waits for its peer's answer is
// never left waiting for a put it holds; batches that fill are sent on their own.
#include <shmem.h>

#include <vector>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// Every PE puts kPuts distinct 8-byte values to every PE (more than one batch's worth), one at a time, in a
// session; after the session's end and a barrier every slot holds its value.
TEST(Session, SmallPutsLandAfterTheSessionEnds) {
  constexpr size_t kPuts = 3000;
  const size_t n = static_cast<size_t>(npes());
  long* slots = static_cast<long*>(shmem_calloc(kPuts * n, sizeof(long)));
  ASSERT_NE(slots, nullptr);
  for (int round = 1; round <= 2; ++round) {
    shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_SESSION_BATCH, nullptr, 0);
    for (size_t i = 0; i < kPuts; ++i)
      for (int pe = 0; pe < npes(); ++pe)
        shmem_long_p(slots + static_cast<size_t>(me()) * kPuts + i, round * 1000000L + me() * 10000L + static_cast<long>(i), pe);
    shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);
    shmem_barrier_all();
    size_t wrong = 0;
    for (size_t from = 0; from < n; ++from)
      for (size_t i = 0; i < kPuts; ++i)
        wrong += slots[from * kPuts + i] != round * 1000000L + static_cast<long>(from) * 10000L + static_cast<long>(i);
    EXPECT_EQ(wrong, 0u) << "round " << round;
    shmem_barrier_all();
  }
  shmem_free(slots);
}

// Puts of several sizes up to and past the largest a batch holds, in a session, completed by a quiet (not the
// session's end): the target checks them after a barrier that follows the quiet.
TEST(Session, QuietCompletesPutsOfEverySize) {
  const std::vector<size_t> sizes{1, 7, 8, 100, 1024, 1025, 4096};
  size_t total = 0;
  for (size_t s : sizes) total += s;
  const size_t n = static_cast<size_t>(npes());
  char* in = static_cast<char*>(shmem_calloc(total * n, 1));
  std::vector<char> out(total);
  for (size_t i = 0; i < total; ++i) out[i] = static_cast<char>((i * 31 + static_cast<size_t>(me()) * 7 + 1) % 251);
  shmem_session_start(SHMEM_CTX_DEFAULT, 0, nullptr, 0);
  const int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  size_t at = 0;
  for (size_t s : sizes) {
    shmem_putmem(in + static_cast<size_t>(me()) * total + at, out.data() + at, s, to);
    at += s;
  }
  shmem_quiet();
  shmem_barrier_all();
  size_t wrong = 0;
  for (size_t i = 0; i < total; ++i)
    wrong += in[static_cast<size_t>(from) * total + i] != static_cast<char>((i * 31 + static_cast<size_t>(from) * 7 + 1) % 251);
  EXPECT_EQ(wrong, 0u);
  shmem_session_stop(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  shmem_free(in);
}

// Data, fence, flag, all small puts in a session: a target that sees the flag sees the data, every round.
TEST(Session, FenceOrdersHeldPuts) {
  constexpr int kRounds = 200, kWords = 16;
  long* data = static_cast<long*>(shmem_calloc(kWords, sizeof(long)));
  long* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  const int to = (me() + 1) % npes();
  shmem_session_start(SHMEM_CTX_DEFAULT, SHMEM_SESSION_BATCH, nullptr, 0);
  size_t wrong = 0;
  for (int r = 1; r <= kRounds; ++r) {
    for (int w = 0; w < kWords; ++w) shmem_long_p(data + w, r * 100L + w, to);
    shmem_fence();
    shmem_long_p(flag, r, to);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, r);  // our predecessor's round r (a wait: the held flag goes)
    for (int w = 0; w < kWords; ++w) wrong += shmem_long_atomic_fetch(data + w, me()) < r * 100L + w;
    shmem_barrier_all();  // nobody starts round r + 1 before every PE has checked round r
  }
  shmem_session_stop(SHMEM_CTX_DEFAULT);
  EXPECT_EQ(wrong, 0u);
  shmem_barrier_all();
  shmem_free(data);
  shmem_free(flag);
}

// A get and an atomic to a PE see this PE's earlier puts to it, held or not.
TEST(Session, GetsAndAtomicsSeeEarlierPuts) {
  long* x = static_cast<long*>(shmem_calloc(4, sizeof(long)));
  const int to = (me() + 1) % npes();
  shmem_session_start(SHMEM_CTX_DEFAULT, 0, nullptr, 0);
  for (long v = 1; v <= 50; ++v) {
    shmem_long_p(x + 0, v, to);
    EXPECT_EQ(shmem_long_g(x + 0, to), v);
    shmem_long_p(x + 1, v * 3, to);
    EXPECT_EQ(shmem_long_atomic_fetch_add(x + 1, 1, to), v * 3);
  }
  shmem_session_stop(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  shmem_free(x);
}

// Ping-pong with no quiet anywhere, inside a session: each side puts and then waits for the other's put.
// Held puts go when their sender waits, so neither waits for a put the other holds.
TEST(Session, PingPongWithoutQuietNeverWaitsForAHeldPut) {
  if (npes() < 2) GTEST_SKIP() << "needs a peer";
  long* ball = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  shmem_session_start(SHMEM_CTX_DEFAULT, SHMEM_SESSION_BATCH, nullptr, 0);
  if (me() < 2) {
    const int other = 1 - me();
    for (long hit = 1; hit <= 100; ++hit) {
      if ((hit % 2 == 1) == (me() == 0)) shmem_long_p(ball, hit, other);
      else shmem_long_wait_until(ball, SHMEM_CMP_EQ, hit);
    }
    EXPECT_EQ(*ball, me() == 0 ? 100 : 99);
  }
  shmem_session_stop(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  shmem_free(ball);
}

// Nested sessions on two contexts: puts stay held until a completion point whichever session ends first.
TEST(Session, NestedSessionsOnTwoContexts) {
  shmem_ctx_t ctx;
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
  constexpr size_t kPuts = 500;
  int* slots = static_cast<int*>(shmem_calloc(kPuts, sizeof(int)));
  const int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  shmem_ctx_session_start(ctx, SHMEM_SESSION_BATCH, nullptr, 0);
  shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_SESSION_BATCH, nullptr, 0);
  for (size_t i = 0; i < kPuts; ++i)
    shmem_ctx_int_p(i % 2 ? ctx : SHMEM_CTX_DEFAULT, slots + i, me() * 1000 + static_cast<int>(i) + 1, to);
  shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  size_t wrong = 0;
  for (size_t i = 0; i < kPuts; ++i) wrong += slots[i] != from * 1000 + static_cast<int>(i) + 1;
  EXPECT_EQ(wrong, 0u);
  shmem_ctx_session_stop(ctx);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  shmem_free(slots);
}

}  // namespace
