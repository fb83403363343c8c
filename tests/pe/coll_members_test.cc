// Communicators made by their members alone (Comm::from_pes), released without a barrier
// (Comm::release), receives from any source (Comm::recv_any) and mismatches that throw
// (throw_on_mismatch): what a framework's process groups need (python/csrc/process_group.cc).
#include <tessera/coll.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "pe_main.h"

namespace {
using namespace tessera::coll;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// A barrier over `members` only, on a counter at members[0] (the other PEs never touch it).
struct CountingBarrier {
  long* counter;
  std::vector<int> members;
  long rounds = 0;
  void operator()() {
    ++rounds;
    shmem_long_atomic_inc(counter, members[0]);
    const long want = rounds * static_cast<long>(members.size());
    while (shmem_long_atomic_fetch(counter, members[0]) < want) std::this_thread::yield();
  }
};

// The even PEs, listed from the highest down, form a communicator while the odd PEs do something else:
// ranks follow the list, and an allreduce over it sums the members' PE numbers.
TEST(FromPes, MembersAloneInTheirOrder) {
  long* counter = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  std::vector<int> evens;
  for (int pe = npes() - 1; pe >= 0; --pe)
    if (pe % 2 == 0) evens.push_back(pe);
  if (me() % 2 == 0) {
    CountingBarrier b{counter, evens};
    Comm c = Comm::from_pes(evens, 7, std::ref(b));
    const auto at = std::find(evens.begin(), evens.end(), me()) - evens.begin();
    EXPECT_EQ(c.rank(), at);
    EXPECT_EQ(c.size(), static_cast<int>(evens.size()));
    long v = me(), sum = 0;
    c.allreduce(&v, &v, 1, DataType::kInt64, RedOp::kSum);
    for (int pe : evens) sum += pe;
    EXPECT_EQ(v, sum);
    c.release();  // not collective: members leave in any order
    EXPECT_FALSE(c);
  }
  shmem_barrier_all();
  shmem_free(counter);
}

TEST(FromPes, BadMemberListsAreRefused) {
  auto noop = [] {};
  try {
    Comm::from_pes({me(), me()}, 1, noop);
    ADD_FAILURE() << "a PE listed twice was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("listed twice"), std::string::npos) << e.what();
  }
  try {
    Comm::from_pes({me(), npes()}, 1, noop);
    ADD_FAILURE() << "PE " << npes() << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  if (npes() > 1) {
    try {
      Comm::from_pes({(me() + 1) % npes()}, 1, noop);
      ADD_FAILURE() << "a list without this PE was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not among"), std::string::npos) << e.what();
    }
  }
}

// Every rank but 0 sends its rank; rank 0 takes the messages as they come and learns each source.
TEST(RecvAny, EachMessageWithItsSource) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  Comm c = Comm::world();
  if (me() == 0) {
    std::set<int> sources;
    for (int i = 1; i < npes(); ++i) {
      int v[4] = {-1, -1, -1, -1};
      const int from = c.recv_any(v, 4, DataType::kInt32);
      EXPECT_EQ(v[0], from);
      EXPECT_EQ(v[3], from * 10);
      sources.insert(from);
    }
    EXPECT_EQ(static_cast<int>(sources.size()), npes() - 1);
  } else {
    // Later ranks send first, so that arrival order differs from rank order.
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (npes() - me())));
    int v[4] = {me(), 0, 0, me() * 10};
    c.send(v, 4, DataType::kInt32, 0);
  }
  c.barrier();
}

// With throw_on_mismatch, members that call different counts throw an Error naming the mismatch.
TEST(ThrowOnMismatch, EveryMemberThatSeesItThrows) {
  if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
  Comm c = Comm::world();
  throw_on_mismatch(true);
  std::vector<float> v(64, 1.0f);
  std::string msg;
  try {
    c.allreduce(v.data(), v.data(), me() == 0 ? 8 : 16, DataType::kFloat32, RedOp::kSum);
  } catch (const std::exception& e) {
    msg = e.what();
  }
  throw_on_mismatch(false);
  EXPECT_NE(msg.find("mismatch"), std::string::npos) << "got: " << msg;
  shmem_barrier_all();
  c.release();
  shmem_barrier_all();
}
}  // namespace
