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

TEST(FastNow, MeasuresIntervals) {
  const uint64_t f0 = fast_now_ns(), n0 = now_ns();
  timespec d{0, 30'000'000};
  nanosleep(&d, nullptr);
  const uint64_t f1 = fast_now_ns(), n1 = now_ns();
  const double ratio = static_cast<double>(f1 - f0) / static_cast<double>(n1 - n0);
  EXPECT_NEAR(ratio, 1.0, 0.001);
}

}  // namespace
}  // namespace tessera
