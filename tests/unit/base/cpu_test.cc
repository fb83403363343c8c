// fast_now_ns() reads the same clock as now_ns(), whichever way it is computed.
#include "base/cpu.h"

#include <gtest/gtest.h>

#include <ctime>

namespace tessera {
namespace {

TEST(FastNow, TracksTheMonotonicClock) {
  for (int i = 0; i < 2000; ++i) {
    const uint64_t a = now_ns();
    const uint64_t f = fast_now_ns();
    const uint64_t b = now_ns();
    // Within the interval read around it, up to the rate error allowed for (0.1 us) plus a margin for a
    // preemption between the reads.
    ASSERT_GE(f + 2'000, a) << "iteration " << i;
    ASSERT_LE(f, b + 2'000) << "iteration " << i;
    if (i % 200 == 0) {
      timespec d{0, 2'000'000};  // 2 ms: lets the rate be measured again over longer baselines
      nanosleep(&d, nullptr);
    }
  }
}

// fast_now_ns() and the clock read back to back (retried when a preemption fell between the reads).
bool pair(uint64_t* fast, uint64_t* mono) {
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = now_ns(), f = fast_now_ns(), b = now_ns();
    if (b - a < 20'000) {
      *fast = f;
      *mono = a + (b - a) / 2;
      return true;
    }
  }
  return false;
}

TEST(FastNow, MeasuresIntervals) {
  uint64_t f0, n0, f1, n1;
  ASSERT_TRUE(pair(&f0, &n0));
  timespec d{0, 30'000'000};
  nanosleep(&d, nullptr);
  ASSERT_TRUE(pair(&f1, &n1));
  // 0.1% of 30 ms is 30 us: far above the rate error, far below a wrong rate.
  const double ratio = static_cast<double>(f1 - f0) / static_cast<double>(n1 - n0);
  EXPECT_NEAR(ratio, 1.0, 0.001);
}

}  // namespace
}  // namespace tessera

// The progress thread's CPUs: a device hwloc does not know gives none; any device it knows gives CPUs of
// the job only.
TEST(Cpu, CpusNearNicAreJobCpus) {
  cpu_set_t near, job;
  EXPECT_FALSE(tessera::cpus_near_nic("no-such-nic0", &near));
  EXPECT_EQ(CPU_COUNT(&near), 0);
  ASSERT_TRUE(tessera::job_cpu_set(&job));
  if (tessera::cpus_near_nic("", &near)) {
    EXPECT_GT(CPU_COUNT(&near), 0);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &near)) {
        EXPECT_TRUE(CPU_ISSET(c, &job)) << "CPU " << c;
      }
  }
}
