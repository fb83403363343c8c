#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/cpu.h"
#include "sync/wait.h"
#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

TEST(Threads, InitThreadProvidesMultiple) {
  int provided = -1;
  shmem_query_thread(&provided);
  EXPECT_EQ(provided, SHMEM_THREAD_MULTIPLE);
}

// Four threads per PE put disjoint slices to every PE and signal; receivers count the arrivals.
TEST(Threads, ConcurrentPutsAtomicsAndSignals) {
  const int nthreads = 4, per = 256;
  size_t slots = static_cast<size_t>(npes()) * nthreads * per;
  long* data = static_cast<long*>(shmem_calloc(slots, sizeof(long)));
  uint64_t* arrivals = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  long* counter = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<std::thread> ts;
  for (int t = 0; t < nthreads; ++t)
    ts.emplace_back([&, t] {
      std::vector<long> buf(per);
      for (int i = 0; i < per; ++i) buf[static_cast<size_t>(i)] = me() * 100000L + t * 1000L + i;
      for (int pe = 0; pe < npes(); ++pe) {
        size_t off = (static_cast<size_t>(me()) * nthreads + static_cast<size_t>(t)) * per;
        shmem_long_put_signal(data + off, buf.data(), per, arrivals, 1, SHMEM_SIGNAL_ADD, pe);
        shmem_long_atomic_inc(counter, pe);
      }
    });
  for (auto& t : ts) t.join();
  shmem_signal_wait_until(arrivals, SHMEM_CMP_EQ, static_cast<uint64_t>(npes() * nthreads));
  size_t wrong = 0;
  for (int p = 0; p < npes(); ++p)
    for (int t = 0; t < nthreads; ++t)
      for (int i = 0; i < per; ++i)
        wrong += data[(static_cast<size_t>(p) * nthreads + static_cast<size_t>(t)) * per + static_cast<size_t>(i)] !=
                 p * 100000L + t * 1000L + i;
  EXPECT_EQ(wrong, 0u);
  shmem_barrier_all();
  EXPECT_EQ(*counter, npes() * nthreads);
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(arrivals);
  shmem_free(data);
}

// Allocation from several threads is serialised (each thread's allocation is collective across PEs only
// if the program orders them; here every thread allocates and frees privately sized blocks in turn).
// One PE, two threads: a writer puts a block with a signal to its own PE, a reader waits for the signal and
// reads the block, then acknowledges with a second signal. Under ThreadSanitizer (make test-tsan runs this
// binary) the signal's release store is what orders the block's bytes before the reader's loads: a signal
// written relaxed, or before the data, is a reported data race on the block. On x86 without the sanitizer
// the values are checked too.
TEST(Threads, PutWithSignalToOwnPePublishesTheData) {
  const size_t n = 4096;
  long* block = static_cast<long*>(shmem_calloc(n, sizeof(long)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(2, sizeof(uint64_t)));  // [0] data ready, [1] consumed
  constexpr uint64_t kRounds = 200;
  std::thread writer([&] {
    std::vector<long> src(n);
    for (uint64_t round = 1; round <= kRounds; ++round) {
      for (size_t i = 0; i < n; ++i) src[i] = static_cast<long>(round * 100000 + i);
      shmem_long_put_signal(block, src.data(), n, sig, round, SHMEM_SIGNAL_SET, me());
      shmem_signal_wait_until(sig + 1, SHMEM_CMP_GE, round);  // the reader is done with this round's block
    }
  });
  size_t wrong = 0;
  for (uint64_t round = 1; round <= kRounds; ++round) {
    shmem_signal_wait_until(sig, SHMEM_CMP_GE, round);
    for (size_t i = 0; i < n; ++i) wrong += block[i] != static_cast<long>(round * 100000 + i);
    shmem_signal_add(sig + 1, 1, me());
  }
  writer.join();
  EXPECT_EQ(wrong, 0u) << "words of a block not there when its signal was";
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(block);
}

TEST(Threads, WaitsInSeveralThreads) {
  int* flags = static_cast<int*>(shmem_calloc(4, sizeof(int)));
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { shmem_int_wait_until(flags + t, SHMEM_CMP_EQ, 1); });
  for (int t = 0; t < 4; ++t) shmem_int_atomic_set(flags + t, 1, (me() + 1) % npes());
  for (auto& t : ts) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(flags[t], 1);
  shmem_barrier_all();
  shmem_free(flags);
}

// tessera-run starts each PE bound to a CPU of its own when they fit (the rank-th CPU of TESSERA_JOB_CPUS);
// with TESSERA_BIND=none the PE runs on every CPU of the job. Either way usable_cpus() counts the job's
// CPUs, and the copy engine's thread is never confined to the PE's CPU.
std::vector<int> listed_cpus(const char* list) {
  std::vector<int> cpus;
  for (const char* p = list; *p;) {
    char* end = nullptr;
    cpus.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = *end == ',' ? end + 1 : end;
  }
  return cpus;
}

TEST(Threads, PeIsBoundToItsCpuUnlessUnbound) {
  const char* list = std::getenv("TESSERA_JOB_CPUS");
  if (!list) GTEST_SKIP() << "not started by tessera-run";
  // tessera-run places PE r on the (r mod CPUs)-th CPU when the PEs fit or are a whole multiple of the CPUs;
  // when processes outside the job use the CPUs it keeps them bound or runs every PE on all of them, as its
  // samples of the load say (tools/run/placement.h), and says which in the job's placement word.
  const std::vector<int> cpus = listed_cpus(list);
  const int ncpu = static_cast<int>(cpus.size());
  const size_t mine = static_cast<size_t>(me()) % cpus.size();
  const char* bind = std::getenv("TESSERA_BIND");
  const bool placed = (npes() <= ncpu || npes() % ncpu == 0) && !(bind && std::string(bind) == "none");
  // Widened (every CPU of the job) exactly when the launcher unbound the PEs (kSharedUnbound); bound to its
  // CPU otherwise, including while outside processes share the CPUs and the PEs stay bound (kSharedBound,
  // kSharedBoundSpare). The launcher samples the load and may change the placement while this runs: it sets
  // the threads' affinity first and the word after, so the two agree within moments; wait up to 2 s for that.
  cpu_set_t set;
  bool widened = false, agree = false;
  uint32_t mode = 0;
  for (int i = 0; i < 200 && !agree; ++i) {
    if (i) usleep(10000);
    mode = tessera::sync::shared_mode();
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    widened = !placed || mode == tessera::sync::kSharedUnbound;
    agree = widened ? CPU_COUNT(&set) == ncpu : CPU_COUNT(&set) == 1 && CPU_ISSET(cpus[mine], &set);
  }
  EXPECT_TRUE(agree) << "PE " << me() << " is on " << CPU_COUNT(&set) << " CPUs; the job's placement word is "
                     << mode << " (1: unbound), so it should be on " << (widened ? ncpu : 1)
                     << " (TESSERA_JOB_CPUS=" << list << ", its CPU " << cpus[mine] << ")";
  EXPECT_EQ(tessera::usable_cpus(), static_cast<int>(cpus.size()));
  // A thread the PE starts for itself may run on every CPU of the job.
  std::thread t([&] {
    tessera::unbind_thread_to_job_cpus();
    cpu_set_t s2;
    ASSERT_EQ(sched_getaffinity(0, sizeof s2, &s2), 0);
    EXPECT_EQ(CPU_COUNT(&s2), static_cast<int>(cpus.size()));
  });
  t.join();
}

}  // namespace
