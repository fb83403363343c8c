// Ordering of puts: fence, quiet, barrier. Run plainly and with the copy engine holding back the last chunk
// of every non-blocking put (pgas.cmake: TESSERA_TEST_ENGINE_HOLD_NS), where a put whose completion a fence
// or quiet does not wait for is still incomplete when the flag after it arrives.
#include <cstdlib>
#include <vector>

#include <tessera/tessera.hpp>

#include "pe_main.h"
#include "pgas/copy_engine.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
bool engine_holds_chunks() {
  const char* h = std::getenv("TESSERA_TEST_ENGINE_HOLD_NS");
  return h && std::atoll(h) > 0;
}

// Round `round` of a non-blocking put of n longs to the next PE, ordered before a flag by `order` (fence,
// quiet, the C++ fence); the previous PE's put is checked word by word once its flag is seen.
template <typename Order>
void put_nbi_order_flag(const char* what, Order order, bool flag_by_put = false) {
  const size_t n = size_t{64} << 10;  // 512 KiB: over TESSERA_COPY_ENGINE_MIN, many chunks
  long* data = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  long* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<long> src(n);
  const int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  const uint64_t by_engine = tessera::pgas::engine::chunks_by_engine();
  for (long round = 1; round <= 10; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = round * 100000000 + me() * 1000000 + static_cast<long>(i);
    shmem_long_put_nbi(data, src.data(), n, to);
    order();
    if (flag_by_put) shmem_long_p(flag, round, to);  // across hosts: may arrive before the data has landed
    else shmem_long_atomic_set(flag, round, to);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += data[i] != round * 100000000 + from * 1000000 + static_cast<long>(i);
    ASSERT_EQ(wrong, 0u) << what << ": round " << round << ", words not yet delivered when the flag was seen";
    shmem_barrier_all();
  }
  if (engine_holds_chunks()) {
    EXPECT_GT(tessera::pgas::engine::chunks_by_engine(), by_engine) << "the engine held no chunk: no window";
  }
  shmem_free(flag);
  shmem_free(data);
}

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
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += data[i] != round * 1000 + from + static_cast<long>(i);
    ASSERT_EQ(wrong, 0u) << "round " << round << ": words of the put not there when the flag after the fence was";
    shmem_barrier_all();
  }
  shmem_free(flag);
  shmem_free(data);
}

TEST(Order, FenceOrdersNonBlockingPutBeforeFlag) {
  put_nbi_order_flag("shmem_fence", [] { shmem_fence(); });
  put_nbi_order_flag("shmem_ctx_fence", [] { shmem_ctx_fence(SHMEM_CTX_DEFAULT); });
  put_nbi_order_flag("tessera::fence", [] { tessera::fence(); });
}

TEST(Order, FenceOrdersNonBlockingPutBeforeFlagPut) {
  put_nbi_order_flag("shmem_fence, flag by shmem_long_p", [] { shmem_fence(); }, true);
}

TEST(Order, QuietCompletesNonBlockingPutBeforeFlag) {
  put_nbi_order_flag("shmem_quiet", [] { shmem_quiet(); });
  put_nbi_order_flag("tessera::quiet", [] { tessera::quiet(); });
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

// The same for puts large enough to travel apart from the barrier's own messages (across hosts: active
// messages, completed by the target's acknowledgment), from every PE to every PE at once.
TEST(Order, BarrierCompletesLargePuts) {
  const size_t n = size_t{32} << 10;  // 256 KiB per sender
  long* slots = static_cast<long*>(shmem_calloc(n * static_cast<size_t>(npes()), sizeof(long)));
  std::vector<long> src(n);
  for (long round = 1; round <= 5; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = round * 100000000 + me() * 1000000 + static_cast<long>(i);
    for (int pe = 0; pe < npes(); ++pe) shmem_long_put(slots + n * static_cast<size_t>(me()), src.data(), n, pe);
    shmem_barrier_all();
    for (int pe = 0; pe < npes(); ++pe) {
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i)
        wrong += slots[n * static_cast<size_t>(pe) + i] != round * 100000000 + pe * 1000000 + static_cast<long>(i);
      ASSERT_EQ(wrong, 0u) << "round " << round << ": words from PE " << pe << " missing after the barrier";
    }
    shmem_barrier_all();
  }
  shmem_free(slots);
}

TEST(Order, QuietAndSyncAll) {
  long* x = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  const long mine = 1000 + me(), from = (me() + npes() - 1) % npes();
  shmem_long_put_nbi(x, &mine, 1, (me() + 1) % npes());
  shmem_quiet();
  shmem_sync_all();
  EXPECT_EQ(*x, 1000 + from) << "the previous PE's put, quiet before the sync";
  int pes[1] = {(me() + 1) % npes()};
  shmem_pe_quiet(pes, 1);
  shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
  shmem_ctx_fence(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  shmem_free(x);
}

// A put followed by a get from the same PE, with no fence or quiet between them, returns what was put
// (OpenSHMEM's RMA ordering from one PE to one target). Across hosts the put travels as a message and a small
// get as a UCX RMA read: the get must wait until the target has taken the put in. Every PE to every other
// at once, small and large (64 KiB and up travels over Tessera's connections), 200 rounds of new values.
TEST(Order, PutThenGetWithoutQuietSeesThePut) {
  const int n = npes();
  for (size_t words : {size_t{1}, size_t{3}, size_t{16} << 10}) {
    long* slots = static_cast<long*>(shmem_calloc(words * static_cast<size_t>(n), sizeof(long)));
    std::vector<long> src(words), back(words);
    long* mine = slots + words * static_cast<size_t>(me());  // the slot this PE writes on every target
    const int rounds = words > 1024 ? 20 : 200;
    for (int round = 1; round <= rounds; ++round)
      for (int d = 1; d < n; ++d) {
        const int pe = (me() + d) % n;
        for (size_t i = 0; i < words; ++i) src[i] = (static_cast<long>(round) << 32) + pe * 65536L + static_cast<long>(i);
        shmem_long_put(mine, src.data(), words, pe);
        shmem_long_get(back.data(), mine, words, pe);
        size_t wrong = 0;
        for (size_t i = 0; i < words; ++i) wrong += back[i] != src[i];
        ASSERT_EQ(wrong, 0u) << words << " words to PE " << pe << ", round " << round
                             << ": the get did not see the put before it";
      }
    shmem_barrier_all();
    shmem_free(slots);
  }
}

// Large gets every way at once: each PE reads 8 MiB, more than a socket's buffers hold, from every other PE
// while they read from it. Across hosts the replies travel on the pairs' stream connections, written by
// each target's replier thread while its progress thread reads what it asked for itself: a target that
// wrote its replies from the progress thread would wait for the requester to read, while the requester's
// progress thread waits the same way on it. Every word checked.
TEST(Order, LargeGetsEveryWayAtOnce) {
  const int n = npes();
  constexpr size_t kWords = size_t{1} << 20;  // 8 MiB
  long* mine = static_cast<long*>(shmem_malloc(kWords * sizeof(long)));
  for (size_t i = 0; i < kWords; ++i) mine[i] = me() * 1000003L + static_cast<long>(i);
  shmem_barrier_all();
  std::vector<long> back(kWords);
  for (int d = 1; d < n; ++d) {
    const int pe = (me() + d) % n;
    shmem_long_get(back.data(), mine, kWords, pe);
    size_t wrong = 0;
    for (size_t i = 0; i < kWords; ++i) wrong += back[i] != pe * 1000003L + static_cast<long>(i);
    ASSERT_EQ(wrong, 0u) << "8 MiB from PE " << pe;
  }
  shmem_barrier_all();
  shmem_free(mine);
}

// A put followed by an atomic on the same word of the same PE, no quiet between: the atomic acts on the
// value put (fetch-add returns it), and a later get sees the sum.
TEST(Order, PutThenAtomicWithoutQuietActsOnThePut) {
  const int n = npes();
  long* words = static_cast<long*>(shmem_calloc(static_cast<size_t>(n), sizeof(long)));
  long* mine = words + me();
  for (long round = 1; round <= 200; ++round)
    for (int d = 1; d < n; ++d) {
      const int pe = (me() + d) % n;
      const long v = round * 1000 + pe;
      shmem_long_p(mine, v, pe);
      ASSERT_EQ(shmem_long_atomic_fetch_add(mine, 7, pe), v) << "PE " << pe << ", round " << round;
      ASSERT_EQ(shmem_long_g(mine, pe), v + 7) << "PE " << pe << ", round " << round;
    }
  shmem_barrier_all();
  shmem_free(words);
}

// shmem_barrier_all completes every PE's earlier atomics (no quiet first): after it PE 0 counts them all.
TEST(Order, BarrierAllCompletesAtomicsWithoutQuiet) {
  long* counter = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  for (long round = 1; round <= 50; ++round) {
    for (int k = 0; k < 3; ++k) shmem_long_atomic_inc(counter, 0);
    shmem_long_atomic_add(counter, 2, 0);
    shmem_barrier_all();
    if (me() == 0) {
      ASSERT_EQ(*counter, round * 5 * npes()) << "round " << round;
    }
    shmem_barrier_all();
  }
  shmem_free(counter);
}

}  // namespace
