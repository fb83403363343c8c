// Non-blocking transfers shared with the copy engine. Run with the engine forced on and small chunk and
// threshold sizes (pgas.cmake), so that every transfer of a few KiB is split between caller and engine.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "pe_main.h"
#include "pgas/copy_engine.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

uint64_t pattern(int pe, long round, size_t i) {
  return (static_cast<uint64_t>(pe) << 48) ^ (static_cast<uint64_t>(round) << 32) ^ (i * 0x9e3779b97f4a7c15ull);
}

TEST(Engine, Runs) { ASSERT_TRUE(tessera::pgas::engine::running()); }

// Many nbi puts of odd sizes and offsets to every PE, then quiet + barrier: every byte arrives.
TEST(Engine, PutNbiThenQuietDeliversEverything) {
  const size_t n = (size_t{1} << 20) / 8 + 13;  // words per source PE, not a multiple of the chunk
  auto* dst = static_cast<uint64_t*>(shmem_malloc(n * sizeof(uint64_t) * static_cast<size_t>(npes())));
  std::vector<uint64_t> src(n);
  for (long round = 1; round <= 6; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), round, i);
    for (int k = 0; k < npes(); ++k) {
      int pe = (me() + k) % npes();
      // Pieces of growing size, from a few words (direct) to most of the buffer (engine).
      size_t off = 0, piece = 3;
      while (off < n) {
        size_t len = std::min(piece, n - off);
        shmem_putmem_nbi(dst + static_cast<size_t>(me()) * n + off, src.data() + off, len * 8, pe);
        off += len;
        piece = piece * 7 + 1;
      }
    }
    shmem_quiet();
    shmem_barrier_all();
    for (int pe = 0; pe < npes(); ++pe)
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[static_cast<size_t>(pe) * n + i], pattern(pe, round, i)) << "from PE " << pe << " word " << i;
    shmem_barrier_all();
  }
  shmem_free(dst);
}

// nbi get of a peer's buffer completes at quiet.
TEST(Engine, GetNbiCompletesAtQuiet) {
  const size_t n = 300000;
  auto* buf = static_cast<uint64_t*>(shmem_malloc(n * sizeof(uint64_t)));
  for (size_t i = 0; i < n; ++i) buf[i] = pattern(me(), 7, i);
  shmem_barrier_all();
  int from = (me() + 1) % npes();
  std::vector<uint64_t> got(n, 0);
  shmem_getmem_nbi(got.data(), buf, n * 8, from);
  shmem_quiet();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], pattern(from, 7, i)) << "word " << i;
  shmem_barrier_all();
  shmem_free(buf);
}

// put_nbi, fence, flag: a PE that sees the flag sees all of the large transfer before it.
TEST(Engine, FenceOrdersEngineCopiesBeforeFlag) {
  const size_t n = 200000;
  auto* data = static_cast<uint64_t*>(shmem_calloc(n, sizeof(uint64_t)));
  auto* flag = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<uint64_t> src(n);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (long round = 1; round <= 40; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), round, i);
    shmem_putmem_nbi(data, src.data(), n * 8, to);
    shmem_fence();
    shmem_long_p(flag, round, to);
    shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
    size_t wrong = 0, first = n;
    for (size_t i = 0; i < n; ++i)
      if (data[i] != pattern(from, round, i)) ++wrong, first = std::min(first, i);
    ASSERT_EQ(wrong, 0u) << "round " << round << ": words of the put (the first at " << first
                         << ") not there when the flag after the fence was";
    shmem_barrier_all();
  }
  shmem_free(flag);
  shmem_free(data);
}

// A PE asleep in wait_until on the last word of a large nbi put is woken by it, with no quiet on the
// sending side (delivery is eventual without one).
TEST(Engine, NbiPutWakesSleepingWaiter) {
  // The waiter is a peer. At one PE the put targets the PE itself: the engine thread's plain stores and the
  // waiter's loads then share a process with no quiet between them, a data race in the C++ memory model
  // (ThreadSanitizer runs this test).
  if (npes() == 1) GTEST_SKIP() << "needs a peer to wait";
  const size_t n = 100000;
  auto* data = static_cast<uint64_t*>(shmem_calloc(n, sizeof(uint64_t)));
  auto* ack = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<uint64_t> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = i + 1;
  int to = (me() + 1) % npes();
  shmem_barrier_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let the target go to sleep
  shmem_putmem_nbi(data, src.data(), n * 8, to);
  shmem_uint64_wait_until(&data[n - 1], SHMEM_CMP_EQ, n);
  // Without a quiet the chunks of one put arrive in any order (the engine copies from the back): every
  // word arrives, within the wait deadline.
  for (size_t i = 0; i < n; ++i) shmem_uint64_wait_until(&data[i], SHMEM_CMP_EQ, i + 1);
  shmem_long_atomic_inc(ack, to);
  shmem_long_wait_until(ack, SHMEM_CMP_EQ, 1);
  shmem_barrier_all();
  shmem_free(ack);
  shmem_free(data);
}

// Several threads of one PE submit at once; one thread's quiet completes everything queued before it. Every
// put has a destination of its own: non-blocking puts to the same bytes with no quiet between them are a race
// in the program (ThreadSanitizer runs this test).
TEST(Engine, ThreadsShareTheEngine) {
  const int threads = 3, reps = 8;
  const size_t n = 20000;
  auto* dst = static_cast<uint64_t*>(shmem_calloc(n * threads * reps, sizeof(uint64_t)));
  std::vector<std::vector<uint64_t>> src(threads, std::vector<uint64_t>(n));
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (int t = 0; t < threads; ++t)
    for (size_t i = 0; i < n; ++i) src[t][i] = pattern(me(), t, i);
  auto region = [&](int t, int rep) { return dst + (static_cast<size_t>(t) * reps + static_cast<size_t>(rep)) * n; };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int rep = 0; rep < reps; ++rep) shmem_putmem_nbi(region(t, rep), src[t].data(), n * 8, to);
    });
  for (auto& t : ts) t.join();
  shmem_quiet();
  shmem_barrier_all();
  for (int t = 0; t < threads; ++t)
    for (int rep = 0; rep < reps; ++rep)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(region(t, rep)[i], pattern(from, t, i)) << "thread " << t << " put " << rep;
  shmem_barrier_all();
  shmem_free(dst);
}

// Blocking put and get of engine-sized transfers are complete when they return: a get's data is there
// without a quiet, and a put's source may be overwritten at once.
TEST(Engine, BlockingPutAndGetCompleteOnReturn) {
  const size_t n = 150001;
  auto* buf = static_cast<uint64_t*>(shmem_calloc(n, sizeof(uint64_t)));
  std::vector<uint64_t> src(n), got(n);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (long round = 1; round <= 10; ++round) {
    for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), round, i);
    shmem_putmem(buf, src.data(), n * 8, to);
    std::fill(src.begin(), src.end(), 0);  // the put is complete locally: this must not reach the peer
    shmem_barrier_all();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(buf[i], pattern(from, round, i)) << "round " << round << " word " << i;
    shmem_getmem(got.data(), buf, n * 8, to);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], pattern(me(), round, i)) << "get, word " << i;
    shmem_barrier_all();
  }
  shmem_free(buf);
}

// More jobs than the queue holds: the oldest are completed to make room, nothing is lost.
TEST(Engine, QueueOverflowCompletesOldest) {
  const size_t piece = 8192 / 8;
  const int pieces = 300;
  auto* dst = static_cast<uint64_t*>(shmem_calloc(piece * pieces, sizeof(uint64_t)));
  std::vector<uint64_t> src(piece * pieces);
  for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(me(), 3, i);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  for (int p = 0; p < pieces; ++p)
    shmem_putmem_nbi(dst + static_cast<size_t>(p) * piece, src.data() + static_cast<size_t>(p) * piece, piece * 8, to);
  shmem_barrier_all();  // implies quiet
  for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(dst[i], pattern(from, 3, i)) << "word " << i;
  shmem_barrier_all();
  shmem_free(dst);
}

// The engine thread takes part (not only the callers): within a few seconds of transfers it has copied
// some chunks itself.
TEST(Engine, EngineThreadCopies) {
  const size_t n = (size_t{4} << 20) / 8;
  auto* dst = static_cast<uint64_t*>(shmem_malloc(n * sizeof(uint64_t)));
  std::vector<uint64_t> src(n, 1);
  uint64_t before = tessera::pgas::engine::chunks_by_engine();
  auto t0 = std::chrono::steady_clock::now();
  while (tessera::pgas::engine::chunks_by_engine() == before &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
    shmem_putmem_nbi(dst, src.data(), n * 8, me());
    shmem_quiet();
  }
  EXPECT_GT(tessera::pgas::engine::chunks_by_engine(), before);
  shmem_barrier_all();
  shmem_free(dst);
}

}  // namespace
