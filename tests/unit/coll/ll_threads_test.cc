// The LL protocol (coll/ll.cc) between threads of one process: each thread is one member of a communicator
// whose control blocks are plain memory, and runs the real LL algorithms (allgather_ll, allreduce_ll) on it.
// Under ThreadSanitizer (make test-tsan runs LLThreads.* as unit.coll.threads) the flag's release store in
// Exec::ll_publish is all that orders a payload's bytes before a reader's loads, and after a call that read
// no buffer (count 0) the reuse wait in ll_out (ll_sync_reuse) is all that keeps a writer off a buffer a
// reader may still read: a flag stored relaxed, or before the payload, is a reported data race, and without
// the reuse wait a member finds a later call's flag in the buffer and waits out the deadline. In every build
// the values are checked: each member's input differs per member and per call, so a payload of another call
// or member is a wrong result.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "coll/algos/algos.h"
#include "coll/comm.h"
#include "coll/engine.h"

namespace tessera::coll {
namespace {

constexpr int kMembers = 3;
constexpr uint64_t kCalls = 400;

// Member r's element i in call `call`: distinct for every (member, call, element).
int64_t input(int r, uint64_t call, size_t i) { return static_cast<int64_t>((call * 131 + i) * 8 + r + 1); }

struct Group {
  std::vector<std::unique_ptr<Ctrl>> blocks;
  std::vector<Communicator> comms;
  Group() : comms(kMembers) {
    std::vector<Ctrl*> ctrl;
    for (int m = 0; m < kMembers; ++m) {
      blocks.push_back(std::make_unique<Ctrl>());
      ctrl.push_back(blocks.back().get());
    }
    for (int r = 0; r < kMembers; ++r) {
      Communicator& c = comms[static_cast<size_t>(r)];
      c.rank = r;
      c.size = kMembers;
      c.name = "the test's LL group";
      c.ctrl = ctrl;
      c.checked.assign(1, 0);
      c.spin_for.assign(kMembers, 0);
      c.oversubscribed = true;  // the members may outnumber the CPUs: waits yield (coll_wait)
      for (int m = 0; m < kMembers; ++m) {
        c.world.push_back(m);
        if (m != r) c.wait_order.push_back(m);
      }
    }
  }
};

// Runs one LL call of `kind` as member c.rank: the algorithm, then the call's end, as dispatch does.
void call(Communicator& c, Kind kind, const Args& a) {
  CallDesc d;
  d.kind = kind;
  d.dtype = a.dtype;
  d.op = a.op;
  d.count = a.count;
  Exec ex(c, d, /*stepped=*/false);
  const uint64_t steps = kind == Kind::kAllgather ? algos::allgather_ll(ex, a) : algos::allreduce_ll(ex, a);
  ex.end(steps);
}

// Every member makes kCalls calls, alternating allgather and allreduce and a payload within the flag's line
// (5 elements) and one past it (48), every 7th call with nothing to move (count 0: the next call's ll_out
// must then wait for the reuse of its buffer); returns the number of wrong elements member r saw.
size_t run_member(Communicator& c) {
  const int r = c.rank;
  size_t wrong = 0;
  for (uint64_t k = 1; k <= kCalls; ++k) {
    const size_t count = k % 7 == 0 ? 0 : k % 4 < 2 ? 5 : 48;
    std::vector<int64_t> send(count), recv(count * kMembers, -1);
    for (size_t i = 0; i < count; ++i) send[i] = input(r, k, i);
    Args a;
    a.send = send.data();
    a.recv = recv.data();
    a.count = count;
    a.dtype = DType::kInt64;
    a.op = Op::kSum;
    if (k % 2) {
      call(c, Kind::kAllgather, a);
      for (int m = 0; m < kMembers; ++m)
        for (size_t i = 0; i < count; ++i) wrong += recv[static_cast<size_t>(m) * count + i] != input(m, k, i);
    } else {
      call(c, Kind::kAllreduce, a);
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int m = 0; m < kMembers; ++m) want += input(m, k, i);
        wrong += recv[i] != want;
      }
    }
  }
  return wrong;
}

TEST(LLThreads, PayloadsReachEveryMemberOfEveryCall) {
  Group g;
  std::vector<size_t> wrong(kMembers, 0);
  std::vector<std::thread> members;
  for (int r = 1; r < kMembers; ++r)
    members.emplace_back([&, r] { wrong[static_cast<size_t>(r)] = run_member(g.comms[static_cast<size_t>(r)]); });
  wrong[0] = run_member(g.comms[0]);
  for (std::thread& t : members) t.join();
  for (int r = 0; r < kMembers; ++r) EXPECT_EQ(wrong[static_cast<size_t>(r)], 0u) << "member " << r;
  // Every member made every call: its call counter and its published call number say so.
  for (int r = 0; r < kMembers; ++r) {
    EXPECT_EQ(g.comms[static_cast<size_t>(r)].seq, kCalls);
    EXPECT_EQ(g.blocks[static_cast<size_t>(r)]->hot.seq.load(), kCalls);
  }
}

}  // namespace
}  // namespace tessera::coll
