// Staging stores chosen per call (algos/stage.cc): calls are timed with each kind of store and the faster
// kind is used, whatever a single slow sample among the first ones says. The calls here stand in for
// collectives: each spins for the time its kind of store "costs".
#include <gtest/gtest.h>

#include <chrono>

#include "coll/comm.h"

namespace tessera::coll {
namespace {

void spin_us(int us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Makes one call of `bytes` per rank whose duration is ordinary_us or streaming_us by the kind chosen for
// it (plus extra_us); returns whether it streamed.
bool call(Communicator& c, size_t bytes, int ordinary_us, int streaming_us, int extra_us = 0) {
  const uint64_t t0 = stage_call_begin(c, Kind::kAllgather, bytes);
  const bool stream = c.stores.stream;
  spin_us((stream ? streaming_us : ordinary_us) + extra_us);
  stage_call_end(c, t0, bytes);
  return stream;
}

TEST(StageStores, FirstCallsAlternateThenTheFasterKindIsUsed) {
  Communicator c;
  const size_t b = size_t{1} << 20;
  // the warm-up call, then three of each kind, ordinary first
  const bool first[] = {false, false, true, false, true, false, true};
  for (bool want : first) EXPECT_EQ(call(c, b, 400, 40), want);
  EXPECT_TRUE(call(c, b, 400, 40));  // decided by each kind's best of three
  // Later choices follow a mean that a preempted call can move; the calls that keep both kinds measured
  // do not depend on it: call 32 runs ordinary, call 48 streaming.
  for (int k = 8; k < 32; ++k) call(c, b, 400, 40);
  EXPECT_FALSE(call(c, b, 400, 40));
  for (int k = 33; k < 48; ++k) call(c, b, 400, 40);
  EXPECT_TRUE(call(c, b, 40, 400));
}

TEST(StageStores, OneSlowFirstSampleDoesNotHoldAKindBack) {
  // The first streamed call is slowed 25x (a preemption): the best of its kind's three decides.
  Communicator c;
  const size_t b = size_t{1} << 20;
  for (int k = 0; k < 7; ++k) call(c, b, 400, 40, k == 2 ? 1000 : 0);
  EXPECT_TRUE(call(c, b, 400, 40));
  // and the other way round: ordinary stores faster, the first ordinary sample slow
  Communicator d;
  for (int k = 0; k < 7; ++k) call(d, b, 40, 400, k == 1 ? 1000 : 0);
  EXPECT_FALSE(call(d, b, 40, 400));
}

TEST(StageStores, LargeCallsExploreOnceEachAndSmallOnesAreNotTimed) {
  Communicator c;
  const size_t big = size_t{8} << 20;
  EXPECT_FALSE(call(c, big, 400, 40));  // warm-up
  EXPECT_FALSE(call(c, big, 400, 40));
  EXPECT_TRUE(call(c, big, 400, 40));
  // from here on the kind with the lower time per byte (one sample each: a preempted call may have
  // reversed them, so the choice is checked against the recorded costs, not against the spins)
  const uint64_t t1 = stage_call_begin(c, Kind::kAllgather, big);
  ASSERT_NE(c.stores.timing, nullptr);
  EXPECT_EQ(c.stores.stream, c.stores.timing->cost[1] < c.stores.timing->cost[0]);
  EXPECT_GT(c.stores.timing->cost[0], 0.0);
  EXPECT_GT(c.stores.timing->cost[1], 0.0);
  stage_call_end(c, t1, big);
  // below 128 KiB per rank: ordinary stores, no timing
  const uint64_t t0 = stage_call_begin(c, Kind::kAllgather, 64 << 10);
  EXPECT_EQ(t0, 0u);
  EXPECT_FALSE(c.stores.stream);
  EXPECT_EQ(c.stores.timing, nullptr);
}

TEST(StageStores, TheKindKeepsBeingMeasuredAfterTheChoice) {
  // Streaming chosen; then the host moves the CPUs and ordinary stores become faster: the calls that keep
  // ordinary stores measured (one in 32) bring the choice back within a few hundred calls.
  Communicator c;
  const size_t b = size_t{1} << 20;
  for (int k = 0; k < 10; ++k) call(c, b, 300, 30);
  int k = 10;
  for (; k < 400 && call(c, b, 10, 300); ++k) {
  }
  EXPECT_LT(k, 400) << "streaming stores kept although ordinary ones measured 30x faster";
}

}  // namespace
}  // namespace tessera::coll
