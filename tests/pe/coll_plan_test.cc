// Persistent plans (coll.h: tesseraAllReduceInit ... tesseraStart; coll.hpp: Plan) through the public APIs, at
// 1-4 PEs on one host and across hosts (coll_algos.cmake): every collective's plan started several times with
// new inputs equals the one-shot call on the same inputs bitwise and the exact reference; starts on a stream,
// also after the plan is freed; symmetric buffers seen once; and Init's verdicts (a refused argument, calls
// that differ between members) given alike on every member, with the communicator usable afterwards.
#include <shmem.h>
#include <tessera/coll.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <tessera/coll.hpp>

#include "coll/plan.h"
#include "pe_main.h"

namespace {
using namespace tessera::coll;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
std::string last_error() { return tesseraGetLastError(); }

// The value rank r contributes at element i in round k: distinct per rank, element and round.
int64_t val(int r, size_t i, int k) { return (int64_t{r} + 1) * 1000003 + static_cast<int64_t>(i) * 7 + k * 131; }

class Plans : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(tesseraCommInitAll(&comm_), tesseraSuccess) << last_error(); }
  void TearDown() override { EXPECT_EQ(tesseraCommDestroy(comm_), tesseraSuccess) << last_error(); }
  // A plan started `rounds` times: before each start fill(k) writes the inputs; after it the result must
  // equal the one-shot call's (`once` writes into the other buffer) bitwise.
  template <typename Fill, typename Once>
  void replay(tesseraPlan_t plan, int rounds, const std::vector<int64_t>& out, const std::vector<int64_t>& ref,
              Fill fill, Once once, tesseraStream_t stream = nullptr) {
    for (int k = 0; k < rounds; ++k) {
      fill(k);
      ASSERT_EQ(tesseraStart(plan, stream), tesseraSuccess) << last_error();
      if (stream) {
        ASSERT_EQ(tesseraStreamSynchronize(stream), tesseraSuccess) << last_error();
      }
      ASSERT_EQ(once(), tesseraSuccess) << last_error();
      ASSERT_EQ(out.size(), ref.size());
      if (!out.empty()) {
        ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(int64_t)), 0) << "round " << k;
      }
    }
  }
  tesseraComm_t comm_ = nullptr;
};

constexpr size_t kCounts[] = {0, 1, 7, 1000, 70001};

TEST_F(Plans, AllreduceReplayEqualsOneShotAndReference) {
  const int n = npes(), r = me();
  for (size_t count : kCounts) {
    SCOPED_TRACE(count);
    std::vector<int64_t> in(count), out(count, -1), ref(count, -2);
    tesseraPlan_t plan = nullptr;
    ASSERT_EQ(tesseraAllReduceInit(in.data(), out.data(), count, tesseraInt64, tesseraSum, comm_, &plan), tesseraSuccess)
        << last_error();
    const char* row = nullptr;
    ASSERT_EQ(tesseraPlanAlgorithm(plan, &row), tesseraSuccess);
    EXPECT_NE(row, nullptr);
    for (int k = 0; k < 3; ++k) {
      for (size_t i = 0; i < count; ++i) in[i] = val(r, i, k);
      ASSERT_EQ(tesseraStart(plan, nullptr), tesseraSuccess) << last_error();
      ASSERT_EQ(tesseraAllReduce(in.data(), ref.data(), count, tesseraInt64, tesseraSum, comm_), tesseraSuccess);
      EXPECT_EQ(out, ref) << "round " << k;
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int m = 0; m < n; ++m) want += val(m, i, k);
        ASSERT_EQ(out[i], want) << "element " << i << " round " << k;
      }
    }
    EXPECT_EQ(tesseraPlanFree(plan), tesseraSuccess);
  }
}

// Floats: the plan runs the row the one-shot call picks, so the sums round alike.
TEST_F(Plans, FloatAllreduceReplayIsBitwiseTheOneShotCall) {
  for (size_t count : {size_t{3}, size_t{5000}, size_t{300000}}) {
    std::vector<float> in(count), out(count), ref(count);
    tesseraPlan_t plan = nullptr;
    ASSERT_EQ(tesseraAllReduceInit(in.data(), out.data(), count, tesseraFloat32, tesseraAvg, comm_, &plan), tesseraSuccess);
    for (int k = 0; k < 3; ++k) {
      for (size_t i = 0; i < count; ++i) in[i] = 0.1f * static_cast<float>(me() + 1) + 1e-3f * static_cast<float>(i % 977 + k);
      ASSERT_EQ(tesseraStart(plan, nullptr), tesseraSuccess) << last_error();
      ASSERT_EQ(tesseraAllReduce(in.data(), ref.data(), count, tesseraFloat32, tesseraAvg, comm_), tesseraSuccess);
      ASSERT_EQ(std::memcmp(out.data(), ref.data(), count * sizeof(float)), 0) << count << " round " << k;
    }
    tesseraPlanFree(plan);
  }
}

TEST_F(Plans, EveryOtherCollectiveReplaysLikeItsOneShotCall) {
  const int n = npes(), r = me();
  const size_t N = static_cast<size_t>(n);
  const int root = n - 1;
  for (size_t count : kCounts) {
    SCOPED_TRACE(count);
    std::vector<int64_t> big(count * N), small(count), out, ref;
    auto fill_big = [&](int k) {
      for (size_t i = 0; i < big.size(); ++i) big[i] = val(r, i, k);
    };
    auto fill_small = [&](int k) {
      for (size_t i = 0; i < count; ++i) small[i] = val(r, i, k);
    };
    tesseraPlan_t p = nullptr;
    // reduce_scatter: rank r gets the sum of block r.
    out.assign(count, -1), ref.assign(count, -2);
    ASSERT_EQ(tesseraReduceScatterInit(big.data(), out.data(), count, tesseraInt64, tesseraSum, comm_, &p), tesseraSuccess)
        << last_error();
    replay(p, 2, out, ref, fill_big, [&] {
      return tesseraReduceScatter(big.data(), ref.data(), count, tesseraInt64, tesseraSum, comm_);
    });
    for (size_t i = 0; i < count; ++i) {
      int64_t want = 0;
      for (int m = 0; m < n; ++m) want += val(m, static_cast<size_t>(r) * count + i, 1);
      ASSERT_EQ(out[i], want);
    }
    tesseraPlanFree(p);
    // allgather
    out.assign(count * N, -1), ref.assign(count * N, -2);
    ASSERT_EQ(tesseraAllGatherInit(small.data(), out.data(), count, tesseraInt64, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_small, [&] { return tesseraAllGather(small.data(), ref.data(), count, tesseraInt64, comm_); });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], val(static_cast<int>(i / count), i % count, 1));
    tesseraPlanFree(p);
    // broadcast from the last rank
    out.assign(count, -1), ref.assign(count, -2);
    ASSERT_EQ(tesseraBroadcastInit(small.data(), out.data(), count, tesseraInt64, root, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_small, [&] {
      return tesseraBroadcast(small.data(), ref.data(), count, tesseraInt64, root, comm_);
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], val(root, i, 1));
    tesseraPlanFree(p);
    // reduce to the last rank (the others' receive buffers untouched)
    out.assign(count, -1), ref.assign(count, -1);
    ASSERT_EQ(tesseraReduceInit(small.data(), out.data(), count, tesseraInt64, tesseraMax, root, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_small, [&] {
      return tesseraReduce(small.data(), ref.data(), count, tesseraInt64, tesseraMax, root, comm_);
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], r == root ? val(n - 1, i, 1) : -1);
    tesseraPlanFree(p);
    // gather / scatter at the last rank
    out.assign(r == root ? count * N : 0, -1), ref.assign(out.size(), -2);
    ASSERT_EQ(tesseraGatherInit(small.data(), out.data(), count, tesseraInt64, root, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_small, [&] {
      return tesseraGather(small.data(), ref.data(), count, tesseraInt64, root, comm_);
    });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], val(static_cast<int>(i / count), i % count, 1));
    tesseraPlanFree(p);
    out.assign(count, -1), ref.assign(count, -2);
    ASSERT_EQ(tesseraScatterInit(big.data(), out.data(), count, tesseraInt64, root, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_big, [&] {
      return tesseraScatter(big.data(), ref.data(), count, tesseraInt64, root, comm_);
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], val(root, static_cast<size_t>(r) * count + i, 1));
    tesseraPlanFree(p);
    // alltoall: block m of my result is block r of member m's input.
    out.assign(count * N, -1), ref.assign(count * N, -2);
    ASSERT_EQ(tesseraAllToAllInit(big.data(), out.data(), count, tesseraInt64, comm_, &p), tesseraSuccess);
    replay(p, 2, out, ref, fill_big, [&] { return tesseraAllToAll(big.data(), ref.data(), count, tesseraInt64, comm_); });
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], val(static_cast<int>(i / count), static_cast<size_t>(r) * count + i % count, 1));
    tesseraPlanFree(p);
    // barrier
    ASSERT_EQ(tesseraBarrierInit(comm_, &p), tesseraSuccess);
    for (int k = 0; k < 3; ++k) ASSERT_EQ(tesseraStart(p, nullptr), tesseraSuccess) << last_error();
    tesseraPlanFree(p);
  }
}

// The v variants with uneven counts (member m has m + c elements); the plan copies the arrays, so the caller's
// may change or go after Init.
TEST_F(Plans, VariantsKeepTheirOwnCopyOfTheCountArrays) {
  const int n = npes(), r = me();
  const size_t N = static_cast<size_t>(n);
  for (size_t c : {size_t{0}, size_t{3}, size_t{20000}}) {
    SCOPED_TRACE(c);
    std::vector<size_t> counts(N), displs(N);
    size_t total = 0;
    for (size_t m = 0; m < N; ++m) counts[m] = m + c, displs[m] = total, total += counts[m];
    std::vector<int64_t> in(total), mine(counts[static_cast<size_t>(r)]), out, ref;
    auto fill_in = [&](int k) {
      for (size_t i = 0; i < in.size(); ++i) in[i] = val(r, i, k);
    };
    auto fill_mine = [&](int k) {
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = val(r, i, k);
    };
    tesseraPlan_t p = nullptr;
    std::vector<size_t> cc = counts, dd = displs;  // the caller's arrays, scribbled over after Init
    // allgatherv
    out.assign(total, -1), ref.assign(total, -2);
    ASSERT_EQ(tesseraAllGatherVInit(mine.data(), mine.size(), out.data(), cc.data(), dd.data(), tesseraInt64, comm_, &p),
              tesseraSuccess) << last_error();
    std::fill(cc.begin(), cc.end(), 0), std::fill(dd.begin(), dd.end(), 0);
    replay(p, 2, out, ref, fill_mine, [&] {
      return tesseraAllGatherV(mine.data(), mine.size(), ref.data(), counts.data(), displs.data(), tesseraInt64, comm_);
    });
    for (size_t m = 0; m < N; ++m)
      for (size_t i = 0; i < counts[m]; ++i) ASSERT_EQ(out[displs[m] + i], val(static_cast<int>(m), i, 1));
    tesseraPlanFree(p);
    // reduce_scatterv: my block of the sum.
    cc = counts;
    out.assign(counts[static_cast<size_t>(r)], -1), ref.assign(out.size(), -2);
    ASSERT_EQ(tesseraReduceScatterVInit(in.data(), out.data(), cc.data(), tesseraInt64, tesseraSum, comm_, &p),
              tesseraSuccess) << last_error();
    std::fill(cc.begin(), cc.end(), 0);
    replay(p, 2, out, ref, fill_in, [&] {
      return tesseraReduceScatterV(in.data(), ref.data(), counts.data(), tesseraInt64, tesseraSum, comm_);
    });
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t want = 0;
      for (int m = 0; m < n; ++m) want += val(m, displs[static_cast<size_t>(r)] + i, 1);
      ASSERT_EQ(out[i], want);
    }
    tesseraPlanFree(p);
    // gatherv / scatterv at rank 0
    out.assign(r == 0 ? total : 0, -1), ref.assign(out.size(), -2);
    cc = counts, dd = displs;
    ASSERT_EQ(tesseraGatherVInit(mine.data(), mine.size(), out.data(), cc.data(), dd.data(), tesseraInt64, 0, comm_, &p),
              tesseraSuccess) << last_error();
    std::fill(cc.begin(), cc.end(), 0), std::fill(dd.begin(), dd.end(), 0);
    replay(p, 2, out, ref, fill_mine, [&] {
      return tesseraGatherV(mine.data(), mine.size(), ref.data(), counts.data(), displs.data(), tesseraInt64, 0, comm_);
    });
    tesseraPlanFree(p);
    out.assign(counts[static_cast<size_t>(r)], -1), ref.assign(out.size(), -2);
    cc = counts, dd = displs;
    ASSERT_EQ(tesseraScatterVInit(in.data(), cc.data(), dd.data(), out.data(), out.size(), tesseraInt64, 0, comm_, &p),
              tesseraSuccess) << last_error();
    std::fill(cc.begin(), cc.end(), 0), std::fill(dd.begin(), dd.end(), 0);
    replay(p, 2, out, ref, fill_in, [&] {
      return tesseraScatterV(in.data(), counts.data(), displs.data(), ref.data(), ref.size(), tesseraInt64, 0, comm_);
    });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], val(0, displs[static_cast<size_t>(r)] + i, 1));
    tesseraPlanFree(p);
    // alltoallv: member m sends m + c + dest elements to dest... kept simple: every pair moves counts[dest].
    std::vector<size_t> sc(N), sd(N), rc(N), rd(N);
    size_t st = 0, rt = 0;
    for (size_t m = 0; m < N; ++m) {
      sc[m] = c + m + static_cast<size_t>(r), sd[m] = st, st += sc[m];
      rc[m] = c + static_cast<size_t>(r) + m, rd[m] = rt, rt += rc[m];
    }
    std::vector<int64_t> send(st);
    out.assign(rt, -1), ref.assign(rt, -2);
    ASSERT_EQ(tesseraAllToAllVInit(send.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), tesseraInt64,
                                   comm_, &p), tesseraSuccess) << last_error();
    const std::vector<size_t> sc0 = sc, sd0 = sd, rc0 = rc, rd0 = rd;
    std::fill(sc.begin(), sc.end(), 0), std::fill(rd.begin(), rd.end(), 0);
    replay(p, 2, out, ref, [&](int k) {
      for (size_t i = 0; i < send.size(); ++i) send[i] = val(r, i, k);
    }, [&] {
      return tesseraAllToAllV(send.data(), sc0.data(), sd0.data(), ref.data(), rc0.data(), rd0.data(), tesseraInt64, comm_);
    });
    tesseraPlanFree(p);
  }
}

// Starts on a stream run in order with the stream's other work; a plan freed with starts queued still runs them.
TEST_F(Plans, StartsOnAStreamAlsoAfterFree) {
  const int n = npes();
  tesseraStream_t s = nullptr;
  ASSERT_EQ(tesseraStreamCreate(&s), tesseraSuccess);
  constexpr size_t kCount = 4096;
  std::vector<int64_t> a(kCount, me() + 1), b(kCount), c(kCount);
  tesseraPlan_t first = nullptr, second = nullptr;
  ASSERT_EQ(tesseraAllReduceInit(a.data(), b.data(), kCount, tesseraInt64, tesseraSum, comm_, &first), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduceInit(b.data(), c.data(), kCount, tesseraInt64, tesseraSum, comm_, &second), tesseraSuccess);
  // b = sum of a, then c = n * b: the second start must see the first one's result.
  ASSERT_EQ(tesseraStart(first, s), tesseraSuccess);
  ASSERT_EQ(tesseraStart(second, s), tesseraSuccess);
  ASSERT_EQ(tesseraPlanFree(first), tesseraSuccess);
  ASSERT_EQ(tesseraPlanFree(second), tesseraSuccess);
  ASSERT_EQ(tesseraStreamSynchronize(s), tesseraSuccess) << last_error();
  const int64_t sum = int64_t{n} * (n + 1) / 2;
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(b[i], sum);
    ASSERT_EQ(c[i], sum * n);
  }
  EXPECT_EQ(tesseraStreamDestroy(s), tesseraSuccess);
}

// The C form of a captured schedule: Async calls recorded between BeginCapture and EndCapture (as plans), the
// graph launched several times with new inputs.
TEST_F(Plans, CapturedGraphOfAsyncCalls) {
  const int n = npes();
  tesseraStream_t s = nullptr;
  ASSERT_EQ(tesseraStreamCreate(&s), tesseraSuccess);
  std::vector<int64_t> a(300), b(300), c(300);
  ASSERT_EQ(tesseraStreamBeginCapture(s), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduceAsync(a.data(), b.data(), a.size(), tesseraInt64, tesseraSum, comm_, s), tesseraSuccess)
      << last_error();
  ASSERT_EQ(tesseraBroadcastAsync(b.data(), c.data(), b.size(), tesseraInt64, n - 1, comm_, s), tesseraSuccess);
  tesseraEvent_t ev = nullptr;
  ASSERT_EQ(tesseraEventCreate(&ev), tesseraSuccess);
  EXPECT_EQ(tesseraEventRecord(ev, s), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("the stream is capturing"), std::string::npos) << last_error();
  EXPECT_EQ(tesseraStreamBeginCapture(s), tesseraInvalidArgument);
  tesseraGraph_t g = nullptr;
  ASSERT_EQ(tesseraStreamEndCapture(s, &g), tesseraSuccess);
  EXPECT_EQ(tesseraStreamEndCapture(s, &g), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("the stream is not capturing"), std::string::npos) << last_error();
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = val(me(), i, k);
    ASSERT_EQ(tesseraGraphLaunch(g, s), tesseraSuccess) << last_error();
    ASSERT_EQ(tesseraStreamSynchronize(s), tesseraSuccess) << last_error();
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t want = 0;
      for (int m = 0; m < n; ++m) want += val(m, i, k);
      ASSERT_EQ(b[i], want);
      ASSERT_EQ(c[i], want);
    }
  }
  EXPECT_EQ(tesseraGraphDestroy(g), tesseraSuccess);
  EXPECT_EQ(tesseraGraphLaunch(g, s), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("is not a graph"), std::string::npos) << last_error();
  EXPECT_EQ(tesseraEventDestroy(ev), tesseraSuccess);
  EXPECT_EQ(tesseraStreamDestroy(s), tesseraSuccess);
}

// Buffers in the symmetric heap at the same offsets on every member of one host: the plan is made for the
// rows that work in place; private buffers, or heap buffers at offsets that differ, are not.
TEST_F(Plans, SymmetricBuffersAreSeenOnce) {
  const int n = npes();
  constexpr size_t kCount = 1 << 16;
  auto* heap = static_cast<float*>(shmem_malloc(3 * kCount * sizeof(float)));
  ASSERT_NE(heap, nullptr);
  std::vector<float> priv(kCount);
  const bool one_host = comm_->c->hier == nullptr;
  tesseraPlan_t sym = nullptr, mixed = nullptr, skewed = nullptr;
  ASSERT_EQ(tesseraAllReduceInit(heap, heap + kCount, kCount, tesseraFloat32, tesseraSum, comm_, &sym), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduceInit(heap, priv.data(), kCount, tesseraFloat32, tesseraSum, comm_, &mixed), tesseraSuccess);
  float* off = heap + kCount + (me() % 2);  // member 1's receive buffer one element further on
  ASSERT_EQ(tesseraAllReduceInit(heap, off, kCount - 1, tesseraFloat32, tesseraSum, comm_, &skewed), tesseraSuccess);
  EXPECT_EQ(sym->p->a.symmetric, n > 1 && one_host);
  EXPECT_FALSE(mixed->p->a.symmetric);
  EXPECT_FALSE(skewed->p->a.symmetric);
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < kCount; ++i) heap[i] = static_cast<float>((me() + 1) * (k + 1)) + static_cast<float>(i % 64);
    // No barrier: a start returns only once no member reads this member's buffers any more.
    ASSERT_EQ(tesseraStart(sym, nullptr), tesseraSuccess) << last_error();
    ASSERT_EQ(tesseraStart(mixed, nullptr), tesseraSuccess) << last_error();
    const float base = static_cast<float>((k + 1) * n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; ++i) {
      const float want = base + static_cast<float>(n) * static_cast<float>(i % 64);
      ASSERT_EQ(heap[kCount + i], want) << i;
      ASSERT_EQ(priv[i], want) << i;
    }
  }
  tesseraPlanFree(sym);
  tesseraPlanFree(mixed);
  tesseraPlanFree(skewed);
  shmem_barrier_all();
  shmem_free(heap);
}

// Init's verdicts are the same on every member, and the communicator goes on working after one.
TEST_F(Plans, InitRefusesDifferingCallsOnEveryMember) {
  const int n = npes();
  if (n < 2) GTEST_SKIP() << "needs two members";
  std::vector<int64_t> in(64, 1), out(64);
  tesseraPlan_t p = nullptr;
  auto check_usable = [&] {
    std::vector<int64_t> x(5, 2), y(5);
    ASSERT_EQ(tesseraAllReduce(x.data(), y.data(), 5, tesseraInt64, tesseraSum, comm_), tesseraSuccess) << last_error();
    for (int64_t v : y) ASSERT_EQ(v, 2 * n);
  };
  // A count that differs on rank 1.
  EXPECT_EQ(tesseraAllReduceInit(in.data(), out.data(), me() == 1 ? 63 : 64, tesseraInt64, tesseraSum, comm_, &p),
            tesseraInvalidArgument);
  EXPECT_NE(last_error().find("tesseraAllReduceInit: the members describe different calls: rank 1 (PE 1) passes "
                              "bytes per rank 504 where rank 0 (PE 0) passes 512"), std::string::npos) << last_error();
  EXPECT_EQ(p, nullptr);
  check_usable();
  // Another collective on the last rank.
  tesseraResult_t res = me() == n - 1 ? tesseraBroadcastInit(in.data(), out.data(), 64, tesseraInt64, 0, comm_, &p)
                                      : tesseraAllReduceInit(in.data(), out.data(), 64, tesseraInt64, tesseraSum, comm_, &p);
  EXPECT_EQ(res, tesseraInvalidArgument);
  EXPECT_NE(last_error().find("passes the collective broadcast where rank 0 (PE 0) passes allreduce"), std::string::npos)
      << last_error();
  check_usable();
  // Another root, another operator.
  EXPECT_EQ(tesseraBroadcastInit(in.data(), out.data(), 64, tesseraInt64, me() == 1 ? 1 : 0, comm_, &p),
            tesseraInvalidArgument);
  EXPECT_NE(last_error().find("passes the root 1 where rank 0 (PE 0) passes 0"), std::string::npos) << last_error();
  EXPECT_EQ(tesseraAllReduceInit(in.data(), out.data(), 64, tesseraInt64, me() == 1 ? tesseraMax : tesseraSum, comm_, &p),
            tesseraInvalidArgument);
  EXPECT_NE(last_error().find("passes the operator max where rank 0 (PE 0) passes sum"), std::string::npos) << last_error();
  // reduce_scatterv with count arrays that differ.
  std::vector<size_t> counts(static_cast<size_t>(n), 4);
  if (me() == 1) counts[0] = 5, counts[1] = 3;
  std::vector<int64_t> big(64), mine(8);
  EXPECT_EQ(tesseraReduceScatterVInit(big.data(), mine.data(), counts.data(), tesseraInt64, tesseraSum, comm_, &p),
            tesseraInvalidArgument);
  EXPECT_NE(last_error().find("passes count arrays with hash"), std::string::npos) << last_error();
  check_usable();
  // A refused argument on rank 1: its own message there, the verdict elsewhere.
  EXPECT_EQ(tesseraAllReduceInit(me() == 1 ? nullptr : in.data(), out.data(), 64, tesseraInt64, tesseraSum, comm_, &p),
            tesseraInvalidArgument);
  if (me() == 1)
    EXPECT_NE(last_error().find("tesseraAllReduceInit: send buffer is null with a count of 64"), std::string::npos)
        << last_error();
  else
    EXPECT_NE(last_error().find("tesseraAllReduceInit: rank 1 (PE 1) refused its arguments, so no member makes the plan"),
              std::string::npos) << last_error();
  EXPECT_EQ(p, nullptr);
  check_usable();
}

TEST_F(Plans, HandlesAreChecked) {
  std::vector<int64_t> in(8, 1), out(8);
  EXPECT_EQ(tesseraAllReduceInit(in.data(), out.data(), 8, tesseraInt64, tesseraSum, comm_, nullptr), tesseraInvalidArgument);
  EXPECT_EQ(last_error(), "tesseraAllReduceInit: plan is null");
  EXPECT_EQ(tesseraStart(nullptr, nullptr), tesseraInvalidArgument);
  EXPECT_EQ(last_error(), "tesseraStart: plan is null");
  tesseraPlan_t p = nullptr;
  ASSERT_EQ(tesseraAllReduceInit(in.data(), out.data(), 8, tesseraInt64, tesseraSum, comm_, &p), tesseraSuccess);
  ASSERT_EQ(tesseraPlanFree(p), tesseraSuccess);
  EXPECT_EQ(tesseraStart(p, nullptr), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("was used after tesseraPlanFree"), std::string::npos) << last_error();
  EXPECT_EQ(tesseraPlanFree(p), tesseraInvalidArgument);
  const char* name = nullptr;
  EXPECT_EQ(tesseraPlanAlgorithm(p, &name), tesseraInvalidArgument);
  EXPECT_EQ(tesseraStart(reinterpret_cast<tesseraPlan_t>(in.data()), nullptr), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("is not a plan"), std::string::npos) << last_error();
  // A plan whose communicator was destroyed.
  tesseraComm_t other = nullptr;
  ASSERT_EQ(tesseraCommSplit(comm_, 0, me(), &other), tesseraSuccess);
  ASSERT_EQ(tesseraAllReduceInit(in.data(), out.data(), 8, tesseraInt64, tesseraSum, other, &p), tesseraSuccess);
  ASSERT_EQ(tesseraCommDestroy(other), tesseraSuccess);
  EXPECT_EQ(tesseraStart(p, nullptr), tesseraInvalidArgument);
  EXPECT_NE(last_error().find("tesseraStart: communicator"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("was used after tesseraCommDestroy"), std::string::npos) << last_error();
  tesseraPlanFree(p);
}

// The C++ forms.
TEST(PlanCpp, CommInitCallsAndStreams) {
  Comm comm = Comm::world();
  const int n = comm.size();
  std::vector<double> in(1000), out(1000);
  Plan p = comm.allreduce_init(in.data(), out.data(), in.size(), DataType::kFloat64, RedOp::kMax);
  EXPECT_NE(std::string(p.algorithm()), "");
  Stream s;
  for (int k = 0; k < 4; ++k) {
    std::iota(in.begin(), in.end(), static_cast<double>(comm.rank() + k));
    if (k % 2) {
      p.start(s);
      s.synchronize();
    } else {
      p.start();
    }
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<double>(n - 1 + k) + static_cast<double>(i));
  }
  Plan b = comm.barrier_init();
  b.start();
  std::vector<int> one(1, comm.rank() + 5), all(static_cast<size_t>(n));
  Plan g = comm.allgather_init(one.data(), all.data(), 1, DataType::kInt32);
  g.start();
  for (int m = 0; m < n; ++m) EXPECT_EQ(all[static_cast<size_t>(m)], m + 5);
  try {
    (void)comm.allreduce_init(nullptr, out.data(), 3, DataType::kFloat64, RedOp::kSum);
    ADD_FAILURE() << "a null send buffer made a plan";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid argument: tesseraAllReduceInit: send buffer is null"), std::string::npos)
        << e.what();
  }
  Plan moved = std::move(p);
  EXPECT_FALSE(p);
  moved.start();
}

}  // namespace
