// The transport table (transport.h): every record declares what it can do, and the declaration is what
// the runtime relies on when it chooses a memory path and a message path per peer. A capability without
// its functions, or a function that no capability promises, fails here rather than as a null call at run
// time.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "transport/transport.h"

namespace tessera::transport {
namespace {

std::vector<const Transport*> table() {
  int n = 0;
  const Transport* const* t = all(&n);
  return std::vector<const Transport*>(t, t + n);
}

TEST(Records, CapabilitiesNameTheirFunctions) {
  for (const Transport* t : table()) {
    SCOPED_TRACE(t->name);
    ASSERT_NE(t->can_reach, nullptr);
    ASSERT_NE(t->map, nullptr);
    ASSERT_NE(t->unmap, nullptr);
    const bool rma = t->caps & kRma, amo = t->caps & kAtomics, msg = t->caps & kMessages;
    EXPECT_NE(t->caps, 0u) << "a record that can do nothing";
    EXPECT_FALSE((t->caps & kMaps) && rma) << "a mapping makes the data functions unused";
    EXPECT_EQ(t->put != nullptr, rma);
    EXPECT_EQ(t->get != nullptr, rma);
    EXPECT_EQ(t->put_signal != nullptr, rma);
    EXPECT_EQ(t->fence != nullptr, rma);
    EXPECT_EQ(t->quiet != nullptr, rma);
    EXPECT_EQ(t->progress != nullptr, rma);
    if (!rma) {
      EXPECT_EQ(t->put_nbi, nullptr);
    }
    EXPECT_EQ(t->atomic != nullptr, amo);
    EXPECT_EQ(t->send != nullptr, msg);
    EXPECT_EQ(t->recv != nullptr, msg);
    EXPECT_EQ(t->wait != nullptr, msg);
    // An eager limit is a property of puts that go through the record.
    if (rma) {
      EXPECT_GT(t->eager_limit, 0u);
    } else {
      EXPECT_EQ(t->eager_limit, 0u);
    }
  }
}

TEST(Records, NamesAreUniqueAndTheOrderIsThePreference) {
  std::set<std::string> names;
  std::vector<std::string> order;
  for (const Transport* t : table()) {
    EXPECT_TRUE(names.insert(t->name).second) << t->name;
    order.push_back(t->name);
  }
  // TCP opens before UCX (UCX's open() finds its streams open) and, where it is on, carries the messages.
  const std::vector<std::string> want{"self", "shm", "tcp", "ucx"};
  EXPECT_EQ(order, want);
}

// Without open() (no job), the records that need connections reach nobody; the mapping ones decide by
// host alone, and choose() keeps to the capabilities asked for.
TEST(Records, ChooseKeepsToTheCapabilityAskedFor) {
  const PeerInfo me{0, "h0"}, same{1, "h0"}, other{2, "h1"};
  const Transport* self = choose(me, me, kMaps | kRma);
  ASSERT_NE(self, nullptr);
  EXPECT_STREQ(self->name, "self");
  const Transport* shm = choose(me, same, kMaps | kRma);
  ASSERT_NE(shm, nullptr);
  EXPECT_STREQ(shm->name, "shm");
  EXPECT_EQ(choose(me, same, kMessages), nullptr) << "within a host the collectives use shared memory";
  // UCX reaches every other host; TCP only once open() made its connections (not here).
  const Transport* rma = choose(me, other, kMaps | kRma);
  ASSERT_NE(rma, nullptr);
  EXPECT_STREQ(rma->name, "ucx");
  const Transport* msg = choose(me, other, kMessages);
  ASSERT_NE(msg, nullptr);
  EXPECT_STREQ(msg->name, "ucx");
  EXPECT_EQ(choose(me, other, kMaps), nullptr);
}

}  // namespace
}  // namespace tessera::transport
