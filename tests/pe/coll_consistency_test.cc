// One test per mismatch the consistency check must catch (different count, type, op, collective, root,
// a skipped call, LL against stepped calls, v-variant counts): each ends with a message naming the
// collective, the ranks and their values. Runs at 1, 2, 3, 4, 7 and 8 PEs (coll_algos.cmake).
#include <shmem.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "coll/engine.h"
#include "coll_common.h"
#include "pe_main.h"

namespace coll_test {
namespace {

testing::Environment* const kEnv = testing::AddGlobalTestEnvironment(new WorldEnv);

// ---- Consistency check: each kind of mismatch ends with a message naming collective, ranks and values.
// Test mode turns the fatal error into an exception; the communicator is then abandoned.
std::string mismatch_message(void (*call)(Communicator& c)) {
  auto cr = comm_create_team(tessera::pgas::team_world());
  EXPECT_TRUE(cr.is_ok());
  Communicator* c = cr.value();
  set_mismatch_throws(true);
  std::string msg;
  try {
    call(*c);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  set_mismatch_throws(false);
  shmem_barrier_all();
  comm_abandon(c);
  shmem_barrier_all();
  return msg;
}

void allreduce_count(Communicator& c, size_t count, DType t, Op op) {
  std::vector<double> buf(1000, 1.0);
  Args a;
  a.send = a.recv = buf.data();
  a.count = count;
  a.dtype = t;
  a.op = op;
  (void)dispatch(c, Kind::kAllreduce, a);
}

TEST(Consistency, DifferentCount) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) { allreduce_count(c, c.rank == 1 ? 20 : 10, DType::kFloat32, Op::kSum); });
  if (world().rank <= 1) {
    EXPECT_NE(m.find("collective mismatch"), std::string::npos) << m;
    EXPECT_TRUE(m.find("count 10 vs 20") != std::string::npos || m.find("count 20 vs 10") != std::string::npos) << m;
  }
}
TEST(Consistency, DifferentTypeAndOp) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) {
    allreduce_count(c, 16, c.rank == 1 ? DType::kFloat64 : DType::kFloat32, c.rank == 1 ? Op::kMax : Op::kSum);
  });
  if (world().rank <= 1) {
    EXPECT_NE(m.find("type "), std::string::npos) << m;
    EXPECT_NE(m.find("op "), std::string::npos) << m;
  }
}
TEST(Consistency, DifferentCollectiveOrSkippedCall) {
  if (world().size < 2) GTEST_SKIP();
  // Rank 1 skips the allreduce and goes on to the barrier.
  std::string m = mismatch_message([](Communicator& c) {
    if (c.rank != 1) allreduce_count(c, 16, DType::kFloat32, Op::kSum);
    (void)dispatch(c, Kind::kBarrier, Args{});
  });
  if (world().rank <= 1) {
    EXPECT_NE(m.find("allreduce"), std::string::npos) << m;
    EXPECT_NE(m.find("barrier"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 (PE 1)"), std::string::npos) << m;
  }
}
// One side on the LL protocol, the other on stepped algorithms: both still report the mismatch.
void allreduce_forced(Communicator& c, size_t count, const char* algo) {
  std::vector<double> buf(count, 1.0);
  Args a;
  a.send = a.recv = buf.data();
  a.count = count;
  a.dtype = DType::kFloat64;
  (void)dispatch(c, Kind::kAllreduce, a, algo ? find_algorithm(Kind::kAllreduce, algo) : nullptr);
}
TEST(Consistency, LLAgainstSteppedCount) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) { allreduce_forced(c, c.rank == 1 ? 5000 : 10, nullptr); });
  if (world().rank <= 1) {
    EXPECT_TRUE(m.find("count 10 vs 5000") != std::string::npos || m.find("count 5000 vs 10") != std::string::npos) << m;
  }
}
TEST(Consistency, LLAgainstSteppedAlgorithm) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) { allreduce_forced(c, 4, c.rank == 1 ? "oneshot" : "ll"); });
  if (world().rank <= 1) {
    EXPECT_TRUE(m.find("algorithm ll vs oneshot") != std::string::npos ||
                m.find("algorithm oneshot vs ll") != std::string::npos) << m;
  }
}
TEST(Consistency, LLBarrierAgainstLLAllreduce) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) {
    if (c.rank == 1) {
      (void)dispatch(c, Kind::kBarrier, Args{}, find_algorithm(Kind::kBarrier, "ll"));
    } else {
      allreduce_forced(c, 3, "ll");
    }
  });
  if (world().rank <= 1) {
    EXPECT_TRUE(m.find("collective allreduce vs barrier") != std::string::npos ||
                m.find("collective barrier vs allreduce") != std::string::npos) << m;
  }
}
// A gatherv or scatterv with root 0 and 2 elements per member, where rank 1's own count is `rank1_count`.
void v_call(Communicator& c, Kind kind, size_t rank1_count) {
  std::vector<float> pieces(4 * static_cast<size_t>(c.size), 1.0f), mine(4, 1.0f);
  std::vector<size_t> counts(static_cast<size_t>(c.size), 2), displs(static_cast<size_t>(c.size));
  for (size_t i = 0; i < displs.size(); ++i) displs[i] = 4 * i;
  const bool gather = kind == Kind::kGatherv;
  Args a;
  a.root = 0;
  a.count = c.rank == 1 ? rank1_count : 2;
  a.send = gather ? mine.data() : pieces.data();
  a.recv = gather ? pieces.data() : mine.data();
  (gather ? a.rcounts : a.scounts) = counts.data();
  (gather ? a.rdispls : a.sdispls) = displs.data();
  (void)dispatch(c, kind, a);
}

// A member whose own count differs from the root's entry for it: gatherv reports it at the root, scatterv
// at the member.
TEST(Consistency, VCountsDisagreeWithTheRoot) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) { v_call(c, Kind::kGatherv, 3); });
  if (world().rank == 0) {
    EXPECT_NE(m.find("gatherv"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 (PE 1) sends 3 elements to the root, rank 0 (PE 0), which expects 2"), std::string::npos) << m;
  } else {
    EXPECT_TRUE(m.empty()) << m;
  }
  m = mismatch_message([](Communicator& c) { v_call(c, Kind::kScatterv, 1); });
  if (world().rank == 1) {
    EXPECT_NE(m.find("scatterv"), std::string::npos) << m;
    EXPECT_NE(m.find("the root, rank 0 (PE 0), sends 2 elements to rank 1 (PE 1), which expects 1"), std::string::npos) << m;
  } else {
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST(Consistency, DifferentRoot) {
  if (world().size < 2) GTEST_SKIP();
  std::string m = mismatch_message([](Communicator& c) {
    std::vector<float> buf(64, 1.0f);
    Args a;
    a.send = a.recv = buf.data();
    a.count = 64;
    a.root = c.rank == 0 ? 0 : 1;
    (void)dispatch(c, Kind::kBroadcast, a);
  });
  // Whoever detects it names both roots.
  if (!m.empty()) {
    EXPECT_TRUE(m.find("root 0 vs 1") != std::string::npos || m.find("root 1 vs 0") != std::string::npos) << m;
  }
  int found = !m.empty();
  int any = 0;
  static int sym_found;
  sym_found = 0;
  shmem_barrier_all();
  shmem_int_atomic_add(&sym_found, found, 0);
  shmem_barrier_all();
  if (world().rank == 0) any = shmem_int_atomic_fetch(&sym_found, 0);
  if (world().rank == 0) {
    EXPECT_GE(any, 1) << "nobody detected the root mismatch";
  }
}

}  // namespace
}  // namespace coll_test
