// tessera-run's placement policy (tools/run/placement.h), fed with made-up CPU-time samples: when it
// unbinds, when it binds again, and what it ignores.
#include "placement.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace tessera::run {
namespace {
using Action = PlacementPolicy::Action;

// Feeds samples 100 ms apart in which processes outside the job use `outside` CPUs (of 2) and the job 1 CPU.
struct Feed {
  PlacementPolicy policy;
  CpuTimes t;
  std::vector<pid_t> pids{100, 101};
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  Action next(double outside) {
    t.at_ns += 100'000'000;
    t.procs += static_cast<uint64_t>(1.0 * ticks / 10);
    t.cpus_busy += static_cast<uint64_t>((1.0 + outside) * ticks / 10);
    return policy.add_sample(t, pids);
  }
};

TEST(Placement, OutsideCpusIsBusyTimeNotTheJobs) {
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  CpuTimes a{1000, 500, 1'000'000'000}, b{1000 + static_cast<uint64_t>(1.5 * ticks), 500 + static_cast<uint64_t>(ticks), 2'000'000'000};
  EXPECT_NEAR(outside_cpus(a, b), 0.5, 0.02);
  b.procs = 500 + static_cast<uint64_t>(2 * ticks);  // the job above the CPUs' busy time: clamped, not negative
  EXPECT_EQ(outside_cpus(a, b), 0);
  EXPECT_EQ(outside_cpus(b, a), 0);  // time going backwards
}

TEST(Placement, StaysBoundWhileTheCpusAreTheJobsOnly) {
  Feed f;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(f.next(0.05), Action::kNone) << "sample " << i;
  EXPECT_FALSE(f.policy.shared());
}

TEST(Placement, UnbindsOnceAWindowOfOutsideLoadIsSeen) {
  Feed f;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(f.next(0), Action::kNone);
  // A short burst (a whole CPU for two intervals: a process starting up) averages below kShareCpus over the
  // window: stays bound.
  ASSERT_EQ(f.next(1.0), Action::kNone);
  ASSERT_EQ(f.next(1.0), Action::kNone);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(f.next(0), Action::kNone);
  // Sustained load: unbinds once, within the window, and not again while it lasts.
  int unbinds = 0, at = -1;
  for (int i = 0; i < 20; ++i)
    if (f.next(0.8) == Action::kUnbind) ++unbinds, at = i;
  EXPECT_EQ(unbinds, 1);
  EXPECT_GE(at, 1);
  EXPECT_LT(at, PlacementPolicy::kWindowSamples);
  EXPECT_TRUE(f.policy.shared());
  EXPECT_GE(f.policy.load(), PlacementPolicy::kShareCpus);
}

TEST(Placement, BindsAgainAfterQuietSamplesInARow) {
  Feed f;
  for (int i = 0; i <= PlacementPolicy::kWindowSamples; ++i) f.next(1.0);
  ASSERT_TRUE(f.policy.shared());
  // Quiet but for one busy interval: the count starts again.
  for (int i = 0; i < PlacementPolicy::kQuietSamples - 1; ++i) ASSERT_EQ(f.next(0), Action::kNone);
  ASSERT_EQ(f.next(0.5), Action::kNone);
  for (int i = 0; i < PlacementPolicy::kQuietSamples - 1; ++i) ASSERT_EQ(f.next(0), Action::kNone) << i;
  EXPECT_EQ(f.next(0), Action::kRebind);
  EXPECT_FALSE(f.policy.shared());
}

TEST(Placement, APeThatEndsStartsTheWindowAgain) {
  Feed f;
  f.next(0);
  f.next(1.0);
  f.next(1.0);
  f.pids[1] = -1;  // PE 1 ended: its CPU time leaves the sum, which must not read as outside load
  f.t.procs -= 1000;
  for (int i = 0; i < PlacementPolicy::kWindowSamples; ++i) EXPECT_EQ(f.next(1.0), Action::kNone) << i;
  EXPECT_EQ(f.next(1.0), Action::kUnbind);  // a full window after the change
}

TEST(Placement, LayoutBindsWholeMultiplesOnly) {
  Layout one = plan_layout(1);
  ASSERT_FALSE(one.cpus.empty());
  EXPECT_TRUE(one.bound());
  const int n = static_cast<int>(one.cpus.size());
  Layout twice = plan_layout(2 * n);
  ASSERT_EQ(twice.pe_cpu.size(), static_cast<size_t>(2 * n));
  for (int r = 0; r < 2 * n; ++r) EXPECT_EQ(twice.pe_cpu[static_cast<size_t>(r)], one.cpus[static_cast<size_t>(r % n)]);
  if (n > 1) {
    EXPECT_FALSE(plan_layout(n + 1).bound());
  }
  EXPECT_EQ(cpu_list({0, 2, 5}), "0,2,5");
}

TEST(Placement, BindModesParseAndNameThemselves) {
  BindMode m;
  for (const char* s : {"auto", "core", "none"}) {
    ASSERT_TRUE(parse_bind_mode(s, &m));
    EXPECT_STREQ(bind_mode_name(m), s);
  }
  EXPECT_FALSE(parse_bind_mode("socket", &m));
  EXPECT_FALSE(parse_bind_mode("", &m));
}

}  // namespace
}  // namespace tessera::run
