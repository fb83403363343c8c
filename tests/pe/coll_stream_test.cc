// Comm streams, events and gradient bucketing (coll.hpp), at 1..4 PEs through the public C++ API.
#include <tessera/coll.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "pe_main.h"

namespace {
using namespace tessera::coll;
using namespace std::chrono_literals;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// Items run in enqueue order, on a thread that is not the caller's.
TEST(Stream, RunsItemsInOrderOnItsOwnThread) {
  Stream s;
  std::vector<int> order;
  std::atomic<bool> other_thread{true};
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < 100; ++i)
    s.enqueue("append " + std::to_string(i), [&, i] {
      if (std::this_thread::get_id() == caller) other_thread = false;
      order.push_back(i);
    });
  s.synchronize();
  std::vector<int> want(100);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order, want);
  EXPECT_TRUE(other_thread.load());
}

// An event completes only when the work before it has run; query() does not block.
TEST(Stream, EventCompletesAfterEarlierWork) {
  Stream s;
  std::atomic<bool> gate{false}, ran{false};
  s.enqueue("wait for the gate", [&] {
    while (!gate.load()) std::this_thread::sleep_for(1ms);
  });
  Event before;
  before.record(s);
  s.enqueue("after the gate", [&] { ran = true; });
  Event after;
  after.record(s);
  EXPECT_FALSE(before.query());
  EXPECT_FALSE(after.query());
  gate = true;
  after.synchronize();
  EXPECT_TRUE(before.query());
  EXPECT_TRUE(after.query());
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(Event().query());  // never recorded: complete
}

// When an item counts as done, the stream holds nothing it captured: the waiter may drop the last reference
// (a Python-owned tensor in the torch backend) without the stream's thread still releasing it.
TEST(Stream, ItemsCapturesAreGoneWhenItIsDone) {
  struct SlowToRelease {
    explicit SlowToRelease(std::atomic<bool>* r) : released(r) {}
    std::atomic<bool>* released;
    ~SlowToRelease() {
      std::this_thread::sleep_for(20ms);  // a destructor that takes a while, as a GIL acquisition may
      released->store(true);
    }
  };
  Stream s;
  std::atomic<bool> released{false};
  auto held = std::make_shared<SlowToRelease>(&released);
  s.enqueue("hold a capture", [held] {});
  Event e;
  e.record(s);
  held.reset();
  e.synchronize();
  EXPECT_TRUE(released.load());
  released = false;
  held = std::make_shared<SlowToRelease>(&released);
  s.enqueue("hold another", [held] {});
  held.reset();
  s.synchronize();
  EXPECT_TRUE(released.load());
}

// Stream::wait orders work across streams.
TEST(Stream, WaitOrdersAcrossStreams) {
  Stream a, b;
  std::atomic<int> value{0};
  std::atomic<bool> gate{false};
  a.enqueue("gate, then set 1", [&] {
    while (!gate.load()) std::this_thread::sleep_for(1ms);
    value = 1;
  });
  Event e;
  e.record(a);
  b.wait(e);
  int seen = -1;
  b.enqueue("read", [&] { seen = value.load(); });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(seen, -1);  // b is held by a's event
  gate = true;
  b.synchronize();
  EXPECT_EQ(seen, 1);
  a.synchronize();
}

// The first failing item makes the error sticky: later items are skipped, and every wait that covers the
// failed item reports it; an event recorded before it does not.
TEST(Stream, FailureIsStickyAndReported) {
  Stream s;
  bool ran_after = false;
  s.enqueue("fine", [] {});
  Event ok;
  ok.record(s);
  s.enqueue("broken item", [] { throw Error("bad value 42"); });
  s.enqueue("skipped item", [&] { ran_after = true; });
  Event later;
  later.record(s);
  EXPECT_NO_THROW(ok.synchronize());
  try {
    later.synchronize();
    ADD_FAILURE() << "no error reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken item"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad value 42"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ran_after);
  EXPECT_THROW(s.synchronize(), Error);
}

// Collectives on a stream: results as with blocking calls, in enqueue order.
TEST(Stream, CollectivesOnAStream) {
  Comm comm = Comm::world();
  Stream s;
  const size_t n = 100000;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(me() + 1) + static_cast<float>(i % 7);
  std::vector<int32_t> root(16, -1);
  if (me() == 0) std::iota(root.begin(), root.end(), 100);
  comm.allreduce(a.data(), b.data(), n, DataType::kFloat32, RedOp::kSum, s);
  comm.allreduce(b.data(), b.data(), n, DataType::kFloat32, RedOp::kMax, s);  // in place, after the first
  comm.broadcast(root.data(), root.data(), root.size(), DataType::kInt32, 0, s);
  comm.barrier(s);
  Event e;
  e.record(s);
  e.synchronize();
  const float ranks_sum = static_cast<float>(npes() * (npes() + 1) / 2);
  for (size_t i = 0; i < n; i += 997) ASSERT_EQ(b[i], ranks_sum + static_cast<float>(npes()) * static_cast<float>(i % 7)) << i;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(root[static_cast<size_t>(i)], 100 + i);
  // A bad argument fails its item with the library's message.
  comm.allreduce(nullptr, b.data(), 5, DataType::kFloat32, RedOp::kSum, s);
  try {
    s.synchronize();
    ADD_FAILURE() << "no error reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("send buffer is null"), std::string::npos) << e.what();
  }
  comm.barrier();
}

// While a stream's collective runs, the same communicator refuses a call from another thread.
TEST(Stream, ConcurrentUseOfACommunicatorIsRefused) {
  if (npes() < 2) GTEST_SKIP() << "needs a peer to hold the stream's collective open";
  Comm comm = Comm::world();
  std::vector<float> x(8, 1.0f);
  if (me() == 0) {
    Stream s;
    std::atomic<bool> started{false};
    s.enqueue("started", [&] { started = true; });
    comm.allreduce(x.data(), x.data(), x.size(), DataType::kFloat32, RedOp::kSum, s);
    while (!started.load()) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(300ms);  // the stream is inside the allreduce: the peers join after 3 s
    try {
      comm.barrier();
      ADD_FAILURE() << "a second thread was let into the communicator";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another thread"), std::string::npos) << e.what();
    }
    s.synchronize();
  } else {
    std::this_thread::sleep_for(3s);
    comm.allreduce(x.data(), x.data(), x.size(), DataType::kFloat32, RedOp::kSum);
  }
  for (float v : x) EXPECT_EQ(v, static_cast<float>(npes()));
  comm.barrier();
}

// Gradient bucketing: any readiness order per rank, several steps, mixed types, a gradient over the cap.
TEST(Bucketer, AveragesEveryGradientWhateverTheReadinessOrder) {
  Comm comm = Comm::world();
  Stream s;
  const std::vector<size_t> sizes = {1000, 3, 50000, 7, 7, 300000, 1, 4096, 20000};
  std::vector<std::vector<float>> g(sizes.size());
  std::vector<double> d(2500);
  Bucketer bk(comm, s, 64 << 10, RedOp::kAvg);  // 64 KiB buckets
  std::vector<size_t> idx;
  for (size_t k = 0; k < sizes.size(); ++k) {
    g[k].resize(sizes[k]);
    idx.push_back(bk.add(g[k].data(), sizes[k], DataType::kFloat32));
    if (k == 4) idx.push_back(bk.add(d.data(), d.size(), DataType::kFloat64));  // a type change starts a bucket
  }
  for (int step = 0; step < 3; ++step) {
    for (size_t k = 0; k < sizes.size(); ++k)
      for (size_t i = 0; i < sizes[k]; ++i) g[k][i] = static_cast<float>(me() * 8 + step + static_cast<int>(k) + static_cast<int>(i % 5));
    for (size_t i = 0; i < d.size(); ++i) d[i] = me() * 0.5 + step + static_cast<double>(i);
    // Reverse order on even ranks, forward on odd ones: launches must still match across ranks.
    std::vector<size_t> order = idx;
    if (me() % 2 == 0) std::reverse(order.begin(), order.end());
    for (size_t i : order) bk.mark_ready(i);
    bk.finish();
    const float mean_rank = static_cast<float>(npes() - 1) / 2.0f;
    for (size_t k = 0; k < sizes.size(); ++k)
      for (size_t i = 0; i < sizes[k]; i += 13)
        ASSERT_FLOAT_EQ(g[k][i], mean_rank * 8 + static_cast<float>(step + static_cast<int>(k) + static_cast<int>(i % 5)))
            << "step " << step << " gradient " << k << " element " << i;
    for (size_t i = 0; i < d.size(); i += 7)
      ASSERT_DOUBLE_EQ(d[i], (npes() - 1) * 0.25 + step + static_cast<double>(i)) << "step " << step << " element " << i;
  }
  // The 300000-float gradient (1.2 MB) is over the 64 KiB cap: a bucket of its own; the doubles too.
  EXPECT_NE(bk.bucket_of(idx[5]), bk.bucket_of(idx[4]));
  EXPECT_NE(bk.bucket_of(idx[6]), bk.bucket_of(idx[5]));
  EXPECT_NE(bk.bucket_of(idx[6]), bk.bucket_of(idx[7]));
  EXPECT_EQ(bk.bucket_of(idx[3]), bk.bucket_of(idx[4]));  // 3 and 7 floats share one
  EXPECT_GE(bk.bucket_count(), 5u);
  EXPECT_FALSE(bk.bucket_in_place(bk.bucket_of(idx[0])));  // separate vectors: packed
}

// Gradients that are views of one flat buffer: buckets are allreduced in place, no packing.
TEST(Bucketer, ViewsOfOneFlatBufferAreReducedInPlace) {
  Comm comm = Comm::world();
  Stream s;
  const std::vector<size_t> sizes = {5, 17000, 3, 40000, 9, 2};
  std::vector<int64_t> flat(std::accumulate(sizes.begin(), sizes.end(), size_t{0}));
  Bucketer bk(comm, s, 128 << 10, RedOp::kSum);
  for (size_t k = 0, off = 0; k < sizes.size(); off += sizes[k++]) bk.add(flat.data() + off, sizes[k], DataType::kInt64);
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < flat.size(); ++i) flat[i] = (me() + 1) * 1000 + static_cast<int64_t>(i) + step;
    for (size_t k = sizes.size(); k-- > 0;) bk.mark_ready(k);
    bk.finish();
    const int64_t n = npes(), rank_sum = n * (n + 1) / 2;
    for (size_t i = 0; i < flat.size(); ++i)
      ASSERT_EQ(flat[i], rank_sum * 1000 + n * (static_cast<int64_t>(i) + step)) << "step " << step << " element " << i;
  }
  ASSERT_GE(bk.bucket_count(), 2u);  // 456 KB over 128 KiB buckets
  for (size_t b = 0; b < bk.bucket_count(); ++b) EXPECT_TRUE(bk.bucket_in_place(b)) << "bucket " << b;
  EXPECT_THROW(bk.bucket_in_place(bk.bucket_count()), Error);
}

TEST(Bucketer, MisuseIsReported) {
  Comm comm = Comm::world();
  Stream s;
  std::vector<float> a(10), b(10);
  Bucketer bk(comm, s, 1 << 20);
  bk.add(a.data(), a.size(), DataType::kFloat32);
  bk.add(b.data(), b.size(), DataType::kFloat32);
  EXPECT_THROW(bk.add(nullptr, 4, DataType::kFloat32), Error);
  bk.mark_ready(0);
  EXPECT_THROW(bk.add(a.data(), 1, DataType::kFloat32), Error);  // layout fixed
  EXPECT_THROW(bk.mark_ready(0), Error);                         // twice in one step
  EXPECT_THROW(bk.mark_ready(2), Error);                         // out of range
  try {
    bk.finish();
    ADD_FAILURE() << "finish with an unready gradient";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 gradient(s) not marked ready"), std::string::npos) << e.what();
  }
  bk.mark_ready(1);  // completes the step on every rank, so the communicator stays in step
  bk.finish();
  EXPECT_THROW(Bucketer(comm, s, 0), Error);
}

// Time-window fusion. Eight gradients of 1000 floats: 0..5 are views of one flat buffer, 6 and 7 separate
// vectors (packed). With 16000-byte buckets the size-only layout is {0..3} {4..7}.
struct WindowCase {
  static constexpr size_t kGrads = 8, kCount = 1000, kCap = 16000;
  std::vector<float> flat = std::vector<float>(6 * kCount);
  std::vector<float> g6 = std::vector<float>(kCount), g7 = std::vector<float>(kCount);
  float* grad(size_t k) { return k < 6 ? flat.data() + k * kCount : k == 6 ? g6.data() : g7.data(); }

  void add_to(Bucketer& bk) {
    for (size_t k = 0; k < kGrads; ++k) ASSERT_EQ(bk.add(grad(k), kCount, DataType::kFloat32), k);
  }
  void fill(int step) {
    for (size_t k = 0; k < kGrads; ++k)
      for (size_t i = 0; i < kCount; ++i)
        grad(k)[i] = static_cast<float>((me() + 1) * static_cast<int>(k + 1) + step + static_cast<int>(i % 3));
  }
  // Sums over the ranks (small integers: exact in float).
  void check(int step) {
    const int n = npes();
    for (size_t k = 0; k < kGrads; ++k)
      for (size_t i = 0; i < kCount; ++i)
        ASSERT_EQ(grad(k)[i], static_cast<float>(n * (n + 1) / 2 * static_cast<int>(k + 1) + n * (step + static_cast<int>(i % 3))))
            << "step " << step << " gradient " << k << " element " << i;
  }
  // One step: marks 0 and 1, pauses `pause` if `pauser` is this rank, marks 2..7, finishes.
  void step(Bucketer& bk, int step, int pauser, std::chrono::milliseconds pause) {
    fill(step);
    bk.mark_ready(0);
    bk.mark_ready(1);
    if (me() == pauser) std::this_thread::sleep_for(pause);
    for (size_t k = 2; k < kGrads; ++k) bk.mark_ready(k);
    bk.finish();
    check(step);
  }
};

// bucket_of for every gradient on every rank (row r: rank r's layout).
std::vector<uint64_t> all_layouts(Comm& comm, const Bucketer& bk) {
  std::vector<uint64_t> mine(WindowCase::kGrads), all(WindowCase::kGrads * static_cast<size_t>(npes()));
  for (size_t k = 0; k < mine.size(); ++k) mine[k] = bk.bucket_of(k);
  comm.allgather(mine.data(), all.data(), mine.size());
  return all;
}

void expect_layout_everywhere(const std::vector<uint64_t>& all, const std::vector<uint64_t>& want) {
  for (int r = 0; r < npes(); ++r) {
    const std::vector<uint64_t> row(all.begin() + r * WindowCase::kGrads, all.begin() + (r + 1) * WindowCase::kGrads);
    EXPECT_EQ(row, want) << "rank " << r << "'s layout";
  }
}

// The layout a bucketer describes is a valid one: buckets in order, none over the cap (all gradients have one
// size and type here), in place exactly when its gradients are consecutive views of the flat buffer.
void expect_valid_layout(const Bucketer& bk) {
  std::vector<size_t> members(bk.bucket_count(), 0);
  std::vector<bool> separate(bk.bucket_count(), false);  // holds gradient 6 or 7
  for (size_t k = 0; k < WindowCase::kGrads; ++k) {
    const size_t b = bk.bucket_of(k);
    if (k > 0) {
      EXPECT_LE(bk.bucket_of(k - 1), b);
      EXPECT_LE(b - bk.bucket_of(k - 1), 1u);
    }
    ++members.at(b);
    if (k >= 6) separate[b] = true;
  }
  for (size_t b = 0; b < members.size(); ++b) {
    EXPECT_GE(members[b], 1u) << "bucket " << b;
    EXPECT_LE(members[b] * WindowCase::kCount * sizeof(float), WindowCase::kCap) << "bucket " << b;
    EXPECT_EQ(bk.bucket_in_place(b), members[b] == 1 || !separate[b]) << "bucket " << b;
  }
}

// Rank 0 pauses between gradients 1 and 2 for far longer than the window: the first step runs on the
// size-only layout; after it every rank cuts there (rank 0's timings), so there are more buckets than the
// size-only layout's two, and the later steps keep that layout.
TEST(Bucketer, WindowCutsWhereRankZeroPaused) {
  Comm comm = Comm::world();
  Stream s;
  WindowCase w;
  Bucketer bk(comm, s, WindowCase::kCap, RedOp::kSum, std::chrono::milliseconds(20));
  w.add_to(bk);
  w.fill(1);
  bk.mark_ready(0);
  bk.mark_ready(1);
  if (me() == 0) std::this_thread::sleep_for(150ms);
  for (size_t k = 2; k < WindowCase::kGrads; ++k) bk.mark_ready(k);
  EXPECT_EQ(bk.bucket_count(), 2u);
  EXPECT_EQ(bk.bucket_of(1), bk.bucket_of(2));
  bk.finish();
  w.check(1);
  expect_valid_layout(bk);
  EXPECT_GT(bk.bucket_count(), 2u);
  EXPECT_NE(bk.bucket_of(1), bk.bucket_of(2)) << "no cut where rank 0 paused";
  const std::vector<uint64_t> all = all_layouts(comm, bk);
  const std::vector<uint64_t> rank0(all.begin(), all.begin() + WindowCase::kGrads);
  expect_layout_everywhere(all, rank0);
  for (int step = 2; step <= 3; ++step) {
    w.step(bk, step, /*pauser=*/-1, 0ms);
    expect_layout_everywhere(all_layouts(comm, bk), rank0);
  }
}

// The pause is on rank 1 only: rank 0's timings decide, so nobody cuts there, and all ranks agree.
TEST(Bucketer, WindowFollowsRankZeroNotTheOthers) {
  if (npes() < 2) GTEST_SKIP() << "needs a rank other than 0 to pause";
  Comm comm = Comm::world();
  Stream s;
  WindowCase w;
  Bucketer bk(comm, s, WindowCase::kCap, RedOp::kSum, std::chrono::milliseconds(50));
  w.add_to(bk);
  for (int step = 1; step <= 3; ++step) {
    w.step(bk, step, /*pauser=*/1, std::chrono::milliseconds(250));
    expect_valid_layout(bk);
    EXPECT_EQ(bk.bucket_of(1), bk.bucket_of(2)) << "step " << step << ": cut where rank 1 paused";
    const std::vector<uint64_t> all = all_layouts(comm, bk);
    expect_layout_everywhere(all, std::vector<uint64_t>(all.begin(), all.begin() + WindowCase::kGrads));
  }
}

// Window off (explicitly, or by the variable's default): today's size-only layout, never rebuilt, however
// long rank 0 pauses.
TEST(Bucketer, WindowOffKeepsTheSizeOnlyLayout) {
  Comm comm = Comm::world();
  Stream s;
  const bool env_set = std::getenv("TESSERA_BUCKET_WINDOW_US") != nullptr;
  for (int mode = 0; mode < (env_set ? 1 : 2); ++mode) {
    WindowCase w;
    std::unique_ptr<Bucketer> bk = mode == 0 ? std::make_unique<Bucketer>(comm, s, WindowCase::kCap, RedOp::kSum,
                                                                          std::chrono::microseconds(0))
                                             : std::make_unique<Bucketer>(comm, s, WindowCase::kCap, RedOp::kSum);
    w.add_to(*bk);
    for (int step = 1; step <= 3; ++step) {
      w.step(*bk, step, /*pauser=*/0, std::chrono::milliseconds(30));
      ASSERT_EQ(bk->bucket_count(), 2u) << "mode " << mode << " step " << step;
      expect_layout_everywhere(all_layouts(comm, *bk), {0, 0, 0, 0, 1, 1, 1, 1});
      expect_valid_layout(*bk);
    }
  }
  EXPECT_THROW(Bucketer(comm, s, WindowCase::kCap, RedOp::kSum, std::chrono::microseconds(-1)), Error);
}

// The C API's streams and events (coll.h).
TEST(StreamCApi, AsyncCollectivesEventsAndErrors) {
  tesseraComm_t comm = nullptr;
  ASSERT_EQ(tesseraCommInitAll(&comm), tesseraSuccess) << tesseraGetLastError();
  tesseraStream_t st = nullptr;
  tesseraEvent_t ev = nullptr;
  ASSERT_EQ(tesseraStreamCreate(&st), tesseraSuccess);
  ASSERT_EQ(tesseraEventCreate(&ev), tesseraSuccess);
  std::vector<double> x(1000, me() + 1.0), y(1000);
  std::vector<int64_t> all(static_cast<size_t>(npes()));
  int64_t mine = me() * 10;
  if (npes() > 1 && me() != 0) std::this_thread::sleep_for(500ms);  // rank 0's work waits for the others
  ASSERT_EQ(tesseraAllReduceAsync(x.data(), y.data(), x.size(), tesseraFloat64, tesseraSum, comm, st), tesseraSuccess);
  ASSERT_EQ(tesseraAllGatherAsync(&mine, all.data(), 1, tesseraInt64, comm, st), tesseraSuccess);
  ASSERT_EQ(tesseraBarrierAsync(comm, st), tesseraSuccess);
  ASSERT_EQ(tesseraEventRecord(ev, st), tesseraSuccess);
  if (npes() > 1 && me() == 0) {
    EXPECT_EQ(tesseraEventQuery(ev), tesseraInProgress);
  }
  ASSERT_EQ(tesseraEventSynchronize(ev), tesseraSuccess) << tesseraGetLastError();
  EXPECT_EQ(tesseraEventQuery(ev), tesseraSuccess);
  const double want = npes() * (npes() + 1) / 2.0;
  for (double v : y) ASSERT_EQ(v, want);
  for (int r = 0; r < npes(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], r * 10);
  // A failing item: the enqueue succeeds, the synchronize reports it.
  ASSERT_EQ(tesseraAllReduceAsync(nullptr, y.data(), 4, tesseraFloat64, tesseraSum, comm, st), tesseraSuccess);
  EXPECT_EQ(tesseraStreamSynchronize(st), tesseraStreamError);
  EXPECT_NE(std::string(tesseraGetLastError()).find("send buffer is null"), std::string::npos) << tesseraGetLastError();
  // Bad handles.
  EXPECT_EQ(tesseraStreamSynchronize(nullptr), tesseraInvalidArgument);
  EXPECT_EQ(tesseraBarrierAsync(comm, nullptr), tesseraInvalidArgument);
  EXPECT_EQ(tesseraEventQuery(nullptr), tesseraInvalidArgument);
  ASSERT_EQ(tesseraStreamDestroy(st), tesseraSuccess);
  EXPECT_EQ(tesseraStreamSynchronize(st), tesseraInvalidArgument);
  EXPECT_NE(std::string(tesseraGetLastError()).find("not a stream"), std::string::npos) << tesseraGetLastError();
  ASSERT_EQ(tesseraEventDestroy(ev), tesseraSuccess);
  EXPECT_EQ(tesseraEventSynchronize(ev), tesseraInvalidArgument);
  EXPECT_EQ(tesseraBarrier(comm), tesseraSuccess);
  ASSERT_EQ(tesseraCommDestroy(comm), tesseraSuccess);
}

}  // namespace
