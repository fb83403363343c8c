// The rows across hosts (coll/hier/rows.cc) as selection sees them: which row the cost model picks where the
// answer is clear from the formulas, that the estimates follow them, and that rows keep to their scope.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "coll/select/link.h"
#include "coll/select/select.h"

namespace tessera::coll {
namespace {

LinkParams link(double us, double gbps, double host_gbps) {
  LinkParams l;
  l.alpha = us * 1e-6;
  l.stream_bw = l.oneway_bw = l.burst_bw = gbps * 1e9;
  l.host_bw = host_gbps * 1e9;
  return l;
}

struct Hosts {
  NetShape net;
  Shape s;
  Hosts(int hosts, int ppn, size_t bytes, const LinkParams& l, bool equal = true, Kind k = Kind::kAllreduce) {
    net.hosts = hosts;
    net.ppn = ppn;
    net.equal = equal;
    net.link = l;
    s = Shape{.kind = k, .n = hosts * ppn, .bytes = bytes, .slot_bytes = 2 << 20, .net = &net};
  }
  double cost(const ModelParams& m, const char* row) const {
    const Algorithm* a = find_algorithm(s.kind, row);
    EXPECT_TRUE(a) << row;
    return a && fits(*a, s) ? a->cost(s, m) : INFINITY;
  }
  std::string chosen(const ModelParams& m) const {
    const Algorithm* a = select(s, m, false).algo;
    return a ? a->name : "none";
  }
};

TEST(Link, RailsWinWhenAHostsStreamsTogetherCarryMore) {
  const ModelParams m;
  // Two streams of a host carry twice one stream: every PE's slice crosses at once.
  const Hosts h(2, 2, 64 << 20, link(20, 1, 2));
  EXPECT_EQ(h.chosen(m), "rails");
  EXPECT_LT(h.cost(m, "rails"), h.cost(m, "leaders"));
  EXPECT_LT(h.cost(m, "rails"), h.cost(m, "flat_ring"));
  EXPECT_LT(h.cost(m, "rails"), h.cost(m, "rails_rd")) << "large payloads: the ring between hosts";
}

// The same hosts as namespaces of one machine with half a CPU per PE: every rail works at once on shared
// CPUs and gains nothing from its concurrency, while the leaders' transfer is theirs alone. The local
// phases' copies and reductions take twice as long; their waits do not again. Local copies
// and reductions at the rates measured on the project's 2-CPU VMs (journal.md).
TEST(Link, RailsLoseWhenTheMachinesCpusAreShared) {
  ModelParams m;
  m.beta = 1 / 28e9;
  m.gamma = 1 / 16.5e9;
  Hosts h(2, 2, 64 << 20, link(5, 1.16, 1.6));
  EXPECT_EQ(h.chosen(m), "rails") << "a CPU per PE: the rails together carry more than a stream";
  ModelParams no_waits = m;
  no_waits.alpha = no_waits.oversub_alpha = 0;
  const double rails = h.cost(m, "rails"), ring = h.cost(m, "flat_ring"), leaders = h.cost(m, "leaders");
  const double rails_work = h.cost(no_waits, "rails");
  h.net.contention = 2;
  EXPECT_NEAR(h.cost(no_waits, "rails"), 2 * rails_work, 1e-9) << "copies, reductions and transfers: twice";
  EXPECT_NEAR(2 * rails - h.cost(m, "rails"), rails - rails_work, 1e-9)
      << "the local rows' waits once: priced as switches of process where PEs outnumber CPUs already";
  EXPECT_NEAR(h.cost(m, "flat_ring"), 2 * ring, 1e-9);
  EXPECT_GT(h.cost(m, "leaders"), leaders);
  EXPECT_LT(h.cost(m, "leaders"), 2 * leaders) << "the transfer between hosts is the leaders' alone";
  EXPECT_EQ(h.chosen(m), "leaders");
}

TEST(Link, HostsOfUnequalSizeNeverUseRails) {
  const Hosts h(3, 2, 64 << 20, link(20, 1, 2), false);
  EXPECT_TRUE(std::isinf(h.cost(ModelParams{}, "rails")));
  EXPECT_NE(h.chosen(ModelParams{}), "rails");
}

TEST(Link, SmallPayloadsOnPowerOfTwoHostsUseDoubling) {
  const LinkParams l = link(20, 1, 1);
  EXPECT_NEAR(net_doubling_seconds(8, 64, l.stream_bw, l, ModelParams{}), 3 * (20e-6 + 64 / 1e9 + 64 * ModelParams{}.gamma),
              1e-9);
  EXPECT_EQ(Hosts(8, 1, 64, l).chosen(ModelParams{}), "leaders_rd");
  EXPECT_TRUE(std::isinf(Hosts(6, 1, 64, l).cost(ModelParams{}, "leaders_rd"))) << "6 hosts are no power of two";
  const Hosts big(8, 1, size_t{256} << 20, l);
  EXPECT_LT(big.cost(ModelParams{}, "leaders"), big.cost(ModelParams{}, "leaders_rd"))
      << "large payloads: the ring moves 2(n-1)/n of the bytes, doubling log2(n) copies";
}

TEST(Link, FlatRingEstimateFollowsTheFormula) {
  const ModelParams m;
  const Hosts h(4, 2, 8 << 20, link(10, 2, 2));
  const double n = 8, b = 8 << 20;
  EXPECT_NEAR(h.cost(m, "flat_ring"), 2 * (n - 1) * (10e-6 + b / n / 2e9) + (n - 1) * b / n * m.gamma, 1e-9);
}

// A broadcast's tree sends one way at a time: priced at the one-way rate, where the allgather's ring of host
// blocks (both ways at once) is priced at the stream's rate with traffic both ways; either transfer's first
// MiB goes at the burst rate. Back-to-back broadcasts overlap a call's latency with the next call's: a level
// of the tree pays half the latency (its sender's and receiver's overheads), the ring step all of it.
TEST(Link, TreeStepsUseTheOneWayRateRingsTheTwoWayRate) {
  const ModelParams m;
  LinkParams l = link(10, 2, 2);
  l.oneway_bw = 4e9;
  l.burst_bw = 8e9;
  const double b = 8 << 20, mib = 1 << 20;
  const Hosts bcast(4, 1, 8 << 20, l, true, Kind::kBroadcast);
  EXPECT_NEAR(bcast.cost(m, "tree"), 2 * (5e-6 + mib / 8e9 + (b - mib) / 4e9), 1e-9)
      << "two tree steps over 4 hosts of one member";
  const Hosts gather(2, 1, 8 << 20, l, true, Kind::kAllgather);
  EXPECT_NEAR(gather.cost(m, "leaders"), 10e-6 + mib / 8e9 + (b - mib) / 2e9 + b * m.beta, 1e-9)
      << "one ring step of a host's block, and the member's own block copied to its output";
  const Hosts small(2, 1, 4096, l, true, Kind::kBroadcast);
  EXPECT_NEAR(small.cost(m, "tree"), 5e-6 + 4096 / 8e9, 1e-12) << "within the burst";
}

// Beyond the cache a local phase pays its rows' in-cache estimate and, for the bytes of the busiest member's
// own buffers (read or written once), half a copy's difference between the memory's rate and the cache's:
// the leaders' reduce (input and output) and in-place broadcast of the payload, the rails' reduce-scatter
// and allgather of a slice per member (the payload and the slice each).
TEST(Link, LocalPhasesBeyondTheCachePayTheirOwnBuffersAtTheMemorysRate) {
  ModelParams in_cache;
  in_cache.beta = 1 / 20e9;
  in_cache.gamma = 1 / 40e9;
  ModelParams beyond = in_cache;
  beyond.cache_bytes = 1 << 20;
  beyond.beta_mem = 1 / 5e9;
  const double d = beyond.beta_mem - beyond.beta, s = 64 << 20;
  const Hosts h(2, 2, 64 << 20, link(10, 2, 2));
  EXPECT_NEAR(h.cost(beyond, "leaders") - h.cost(in_cache, "leaders"), (2 * s + s) * d / 2, 1e-9);
  EXPECT_NEAR(h.cost(beyond, "rails") - h.cost(in_cache, "rails"), 2 * (1.5 * s) * d / 2, 1e-9);
  const Hosts one(2, 1, 64 << 20, link(10, 2, 2));
  EXPECT_NEAR(one.cost(beyond, "leaders"), one.cost(in_cache, "leaders"), 1e-12)
      << "a member alone per host: no local phase";
  const Hosts small(2, 2, 64 << 10, link(10, 2, 2));
  EXPECT_NEAR(small.cost(beyond, "leaders"), small.cost(in_cache, "leaders"), 1e-12)
      << "within the cache: the rows' own estimate";
}

// A transfer pays the receiver's wake-up in full from LinkParams::kWakeBytes, in proportion below it, and
// nothing for a byte's worth: the 8 B rows stay at the latency, the 64 KiB-1 MiB rows carry it once.
TEST(Link, TransfersPayTheWakeUpFromSixtyFourKiB) {
  LinkParams l = link(10, 2, 2);
  l.burst_bw = 4e9;
  l.wake = 8e-6;
  const double k64 = 64 << 10, mib = 1 << 20;
  EXPECT_NEAR(transfer_seconds(l, 0, l.stream_bw), 10e-6, 1e-12);
  EXPECT_NEAR(transfer_seconds(l, k64 / 2, l.stream_bw), 10e-6 + 4e-6 + k64 / 2 / 4e9, 1e-12);
  EXPECT_NEAR(transfer_seconds(l, k64, l.stream_bw), 10e-6 + 8e-6 + k64 / 4e9, 1e-12);
  EXPECT_NEAR(transfer_seconds(l, 4 * mib, l.stream_bw), 10e-6 + 8e-6 + mib / 4e9 + 3 * mib / 2e9, 1e-12);
  l.wake = 0;
  EXPECT_NEAR(transfer_seconds(l, k64, l.stream_bw), 10e-6 + k64 / 4e9, 1e-12) << "no wake-up given";
}

// Every collective has a row across hosts, chosen for a shape that spans hosts, and the engine's rows are
// chosen only for one host: a row never runs outside its scope.
TEST(Link, EveryCollectiveHasARowAcrossHostsAndRowsKeepToTheirScope) {
  const ModelParams m;
  for (int k = 0; k < kNumKinds; ++k) {
    const Kind kind = static_cast<Kind>(k);
    if (kind == Kind::kSendRecv) continue;
    const Hosts h(3, 2, 4096, link(20, 1, 1), false, kind);
    const Algorithm* across = select(h.s, m, false).algo;
    ASSERT_TRUE(across) << kind_name(kind);
    EXPECT_TRUE(across->compose) << kind_name(kind) << ": " << across->name;
    Shape one = h.s;
    one.net = nullptr;
    const Algorithm* here = select(one, m, false).algo;
    ASSERT_TRUE(here) << kind_name(kind);
    EXPECT_TRUE(here->run && !here->compose) << kind_name(kind) << ": " << here->name;
    for (const Algorithm& a : algorithms()) {
      if (a.kind != kind) continue;
      EXPECT_FALSE(fits(a, h.s) && fits(a, one)) << a.name << " fits both scopes";
    }
    // Deterministic mode: a canonical row across hosts too.
    const Algorithm* det = select(h.s, m, true).algo;
    ASSERT_TRUE(det) << kind_name(kind);
    EXPECT_TRUE(det->canonical && det->compose) << kind_name(kind) << ": " << det->name;
  }
}

}  // namespace
}  // namespace tessera::coll
