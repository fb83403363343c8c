// tessera-run's placement policy (tools/run/placement.h), fed with made-up CPU-time and wait samples: when it
// unbinds, when it binds again, and what it ignores.
#include "placement.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace tessera::run {
namespace {
using Action = PlacementPolicy::Action;

// Feeds samples 100 ms apart in which processes outside the job use `outside` CPUs (of 2) and the job 1 CPU.
// With hand-offs: each PE's waits of the interval by length (short, mid, long); next() gives both PEs the
// same, next2() each its own.
struct Feed {
  PlacementPolicy policy;
  CpuTimes t;
  std::vector<pid_t> pids{100, 101};
  std::vector<WaitCounts> waits{2};
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  Action next(double outside, uint64_t short_waits = 0, uint64_t mid_waits = 0, uint64_t long_waits = 0) {
    return next2(outside, {short_waits, mid_waits, long_waits}, {short_waits, mid_waits, long_waits});
  }
  Action next2(double outside, WaitCounts pe0, WaitCounts pe1) {
    t.at_ns += 100'000'000;
    t.procs += static_cast<uint64_t>(1.0 * ticks / 10);
    t.cpus_busy += static_cast<uint64_t>((1.0 + outside) * ticks / 10);
    size_t pe = 0;
    for (const WaitCounts& d : {pe0, pe1}) {
      waits[pe].short_waits += d.short_waits, waits[pe].mid_waits += d.mid_waits;
      waits[pe++].long_waits += d.long_waits;
    }
    const Action load = policy.add_sample(t, pids);
    const Action hand_offs = policy.add_waits(waits);
    EXPECT_TRUE(load == Action::kNone || hand_offs == Action::kNone) << "two changes in one interval";
    return load != Action::kNone ? load : hand_offs;
  }
};
using State = PlacementPolicy::State;

// The monitor reads the /proc files of processes that may end at any moment: a process reaped between the
// open and the read makes the read fail (ESRCH), which must read as "gone", not throw (it once ended the
// launcher through std::terminate in a CI run).
TEST(Placement, AProcessReapedBetweenOpenAndReadReadsAsGone) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string path = "/proc/" + std::to_string(child) + "/stat";
  const int live = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int gone = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(live, 0);
  ASSERT_GE(gone, 0);
  EXPECT_NE(read_proc_fd(live).find(std::to_string(child) + " ("), std::string::npos);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(read_proc_fd(gone), "");
  // And the sample that counts the job's CPU time skips it.
  EXPECT_EQ(sample_cpu_times({0}, {child}).procs, 0u);
  ::close(live);
  ::close(gone);
}

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

// One PE per CPU: outside load keeps the PEs bound while their hand-offs are short (a busy neighbour takes
// half of one PE's CPU; unbound, the two PEs would share a CPU and switch at every hand-off).
TEST(Placement, OnePePerCpuStaysBoundWhileHandOffsAreShort) {
  Feed f{PlacementPolicy(true)};
  int shared = 0;
  for (int i = 0; i < 30; ++i) {
    const Action a = f.next(0.8, 5000, 30, 10);
    EXPECT_NE(a, Action::kUnbind) << "sample " << i;
    shared += a == Action::kShareBound;
  }
  EXPECT_EQ(shared, 1);
  EXPECT_EQ(f.policy.state(), State::kSharedBound);
}

// Every PE's waits mostly 16 us-4 ms (one PE transfers while the other waits): unbound after kSwitchSamples
// such intervals in a row, bound again after as many intervals of short hand-offs; one odd interval changes
// nothing, nor do intervals with too few waits to tell.
TEST(Placement, HandOffLengthsChooseBetweenBoundAndUnbound) {
  Feed f{PlacementPolicy(true)};
  Action a = Action::kNone;
  for (int i = 0; i <= PlacementPolicy::kWindowSamples && a == Action::kNone; ++i) a = f.next(1.0, 100, 0, 0);
  ASSERT_EQ(a, Action::kShareBound);
  constexpr int kSwitch = PlacementPolicy::kSwitchSamples;
  for (int i = 0; i < kSwitch - 1; ++i) EXPECT_EQ(f.next(1.0, 10, 500, 5), Action::kNone);  // long transfers
  EXPECT_EQ(f.next(1.0, 500, 10, 5), Action::kNone);  // and the streak is broken
  for (int i = 0; i < kSwitch - 1; ++i) EXPECT_EQ(f.next(1.0, 10, 500, 5), Action::kNone);
  EXPECT_EQ(f.next(1.0, 10, 500, 5), Action::kUnbind);
  EXPECT_EQ(f.policy.state(), State::kSharedUnbound);
  EXPECT_EQ(f.policy.last_waits().mid_waits, 1000u);  // both PEs
  EXPECT_EQ(f.next(1.0, 10, 500, 5), Action::kNone);  // already unbound
  for (int i = 0; i < 2 * kSwitch; ++i) EXPECT_EQ(f.next(1.0, 2, 2, 0), Action::kNone);  // too few to tell
  // Unbound, waits that are not mostly transfers are not enough: most must be short.
  for (int i = 0; i < 2 * kSwitch; ++i) EXPECT_EQ(f.next(1.0, 400, 100, 300), Action::kNone);
  for (int i = 0; i < kSwitch - 1; ++i) EXPECT_EQ(f.next(1.0, 600, 100, 100), Action::kNone);
  EXPECT_EQ(f.next(1.0, 600, 100, 100), Action::kBindShared);
  EXPECT_FALSE(f.policy.probing());
  EXPECT_EQ(f.policy.state(), State::kSharedBound);
  // Quiet again: bound, not shared.
  for (int i = 0; i < PlacementPolicy::kQuietSamples - 1; ++i) ASSERT_EQ(f.next(0, 500, 10, 0), Action::kNone) << i;
  EXPECT_EQ(f.next(0, 500, 10, 0), Action::kRebind);
  EXPECT_EQ(f.policy.state(), State::kQuiet);
}

// A collective, bound beside the busy process: its peer waits for the PE that shares its CPU (mid-length
// waits), while that PE's own waits are short or too few. Stays bound.
TEST(Placement, OnePeWaitingForTheOtherIsNotATransfer) {
  Feed f{PlacementPolicy(true)};
  for (int i = 0; i <= PlacementPolicy::kWindowSamples; ++i) f.next(1.0, 100, 0, 0);
  ASSERT_EQ(f.policy.state(), State::kSharedBound);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f.next2(1.0, {20, 2, 0}, {5, 300, 10}), Action::kNone) << i;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f.next2(1.0, {0, 2, 0}, {5, 300, 10}), Action::kNone) << i;
  EXPECT_EQ(f.policy.state(), State::kSharedBound);
}

// Unbound, the PEs are tried bound again every kProbeSamples intervals; transfers unbind them again.
TEST(Placement, UnboundJobsAreProbedBoundAgain) {
  Feed f{PlacementPolicy(true)};
  for (int i = 0; i <= PlacementPolicy::kWindowSamples; ++i) f.next(1.0, 10, 500, 0);
  int unbinds = 0, probes = 0;
  for (int i = 0; i < 3 * PlacementPolicy::kProbeSamples; ++i) {
    const Action a = f.next(1.0, 10, 500, 0);
    unbinds += a == Action::kUnbind;
    probes += a == Action::kBindShared;
  }
  EXPECT_GE(probes, 2);
  EXPECT_LE(probes, 3);
  EXPECT_GE(unbinds, probes);
  EXPECT_TRUE(f.policy.probing() || f.policy.state() == State::kSharedUnbound);
}

// Without a CPU left by the busy processes, transfers do not unbind the PEs; unbound ones are bound again.
TEST(Placement, NoCpuLeftKeepsThePesBound) {
  Feed f{PlacementPolicy(true)};
  for (int i = 0; i <= PlacementPolicy::kWindowSamples; ++i) f.next(1.0, 100, 0, 0);
  ASSERT_EQ(f.policy.state(), State::kSharedBound);
  f.policy.set_room(false);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(f.next(1.8, 10, 500, 5), Action::kNone) << i;
  f.policy.set_room(true);
  Action a = Action::kNone;
  for (int i = 0; i < PlacementPolicy::kSwitchSamples && a == Action::kNone; ++i) a = f.next(1.0, 10, 500, 5);
  EXPECT_EQ(a, Action::kUnbind);
  f.policy.set_room(false);
  a = Action::kNone;
  for (int i = 0; i < PlacementPolicy::kSwitchSamples && a == Action::kNone; ++i) a = f.next(1.8, 10, 500, 5);
  EXPECT_EQ(a, Action::kBindShared);
}

// More PEs than CPUs (no one-per-CPU layout): unbound at once, whatever the hand-offs.
TEST(Placement, MorePesThanCpusUnbindWhateverTheHandOffs) {
  Feed f;
  Action a = Action::kNone;
  for (int i = 0; i <= PlacementPolicy::kWindowSamples && a == Action::kNone; ++i) a = f.next(1.0, 5000, 0, 0);
  EXPECT_EQ(a, Action::kUnbind);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f.next(1.0, 5000, 0, 0), Action::kNone);
  EXPECT_EQ(f.policy.state(), State::kSharedUnbound);
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
