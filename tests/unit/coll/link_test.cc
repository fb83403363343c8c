// The two-level allreduce's cost model (coll/select/link.h): which pattern it picks where the answer is
// clear from the formulas, and that the estimates follow them.
#include <gtest/gtest.h>

#include <cmath>

#include "coll/select/link.h"

namespace tessera::coll {
namespace {

LinkParams link(double us, double gbps, double host_gbps) {
  LinkParams l;
  l.alpha = us * 1e-6;
  l.stream_bw = gbps * 1e9;
  l.host_bw = host_gbps * 1e9;
  return l;
}

HierShape shape(int hosts, int ppn, size_t bytes, bool equal = true) {
  HierShape s;
  s.hosts = hosts;
  s.ppn = ppn;
  s.equal = equal;
  s.bytes = bytes;
  s.slot_bytes = 2 << 20;
  return s;
}

TEST(Link, RailsWinWhenAHostsStreamsTogetherCarryMore) {
  const ModelParams m;
  // Two streams of a host carry twice one stream: every PE's slice crosses at once.
  const HierPlan p = plan_allreduce(shape(2, 2, 64 << 20), m, link(20, 1, 2));
  EXPECT_EQ(p.how, HierAllreduce::kRails);
  EXPECT_LT(p.rails, p.leaders);
  EXPECT_LT(p.rails, p.ring);
}

// The same hosts as namespaces of one machine with half a CPU per PE: every rail works at once on shared
// CPUs and gains nothing from its concurrency, while the leaders' transfer is theirs alone. Local copies
// and reductions at the rates measured on the project's 2-CPU VMs (docs/coll.md: 28 GB/s, 16.5 GB/s).
TEST(Link, RailsLoseWhenTheMachinesCpusAreShared) {
  ModelParams m;
  m.beta = 1 / 28e9;
  m.gamma = 1 / 16.5e9;
  HierShape s = shape(2, 2, 64 << 20);
  const HierPlan free_cpus = plan_allreduce(s, m, link(5, 1.16, 1.6));
  EXPECT_EQ(free_cpus.how, HierAllreduce::kRails) << "a CPU per PE: the rails together carry more than a stream";
  s.contention = 2;
  const HierPlan p = plan_allreduce(s, m, link(5, 1.16, 1.6));
  EXPECT_NEAR(p.rails, 2 * free_cpus.rails, 1e-9);
  EXPECT_NEAR(p.ring, 2 * free_cpus.ring, 1e-9);
  EXPECT_GT(p.leaders, free_cpus.leaders);
  EXPECT_LT(p.leaders, 2 * free_cpus.leaders) << "the transfer between hosts is the leaders' alone";
  EXPECT_EQ(p.how, HierAllreduce::kLeaders) << "rails " << p.rails << " s, leaders " << p.leaders << " s";
}

TEST(Link, HostsOfUnequalSizeNeverUseRails) {
  const HierPlan p = plan_allreduce(shape(3, 2, 64 << 20, false), ModelParams{}, link(20, 1, 2));
  EXPECT_TRUE(std::isinf(p.rails));
  EXPECT_NE(p.how, HierAllreduce::kRails);
}

TEST(Link, SmallPayloadsOnPowerOfTwoHostsUseDoubling) {
  bool doubling = false;
  const LinkParams l = link(20, 1, 1);
  const double t = net_allreduce_seconds(8, 64, l.stream_bw, l, ModelParams{}, &doubling);
  EXPECT_TRUE(doubling);
  EXPECT_NEAR(t, 3 * (20e-6 + 64 / 1e9 + 64 * ModelParams{}.gamma), 1e-9);
  (void)net_allreduce_seconds(6, 64, l.stream_bw, l, ModelParams{}, &doubling);
  EXPECT_FALSE(doubling) << "6 hosts are no power of two";
  (void)net_allreduce_seconds(8, size_t{256} << 20, l.stream_bw, l, ModelParams{}, &doubling);
  EXPECT_FALSE(doubling) << "large payloads: the ring moves 2(n-1)/n of the bytes, doubling log2(n) copies";
}

TEST(Link, RingEstimateFollowsTheFormula) {
  const ModelParams m;
  const HierPlan p = plan_allreduce(shape(4, 2, 8 << 20), m, link(10, 2, 2));
  const double n = 8, b = 8 << 20;
  EXPECT_NEAR(p.ring, 2 * (n - 1) * (10e-6 + b / n / 2e9) + (n - 1) * b / n * m.gamma, 1e-9);
}

}  // namespace
}  // namespace tessera::coll
