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
    ASSERT_EQ(data[0], round * 1000 + from);
    ASSERT_EQ(data[n - 1], round * 1000 + from + static_cast<long>(n - 1));
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
