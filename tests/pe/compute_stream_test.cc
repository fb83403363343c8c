// Compute streams (tessera/stream.hpp, kernel.hpp's launch(stream, ...) and OpOptions::stream) joined to comm
// streams by events in both directions, at 1-4 PEs and across hosts (kernel_dist.cmake): a kernel that writes
// and a collective that must see it; a collective that writes and a kernel that must see it; operators on a
// stream equal to the blocking ones bitwise; errors sticky on a compute stream as on a comm stream.
#include <shmem.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tessera/coll.hpp>
#include <tessera/kernel.hpp>

#include "pe_main.h"

namespace {
namespace tc = tessera::coll;
namespace tk = tessera::kernel;
using namespace std::chrono_literals;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// Items of a compute stream run in order, on the stream's thread, each kernel after the previous returned.
TEST(ComputeStream, KernelsRunInOrderOffTheCallersThread) {
  tessera::Stream s("compute stream");
  constexpr int kBlocks = 3, kLaunches = 50;
  std::vector<int> log;
  std::atomic<bool> off_thread{true};
  const auto caller = std::this_thread::get_id();
  for (int k = 0; k < kLaunches; ++k)
    tk::launch(s, {.block_num = kBlocks, .name = "append"}, [&, k](tk::BlockContext& b) {
      if (b.block_idx() == 0 && std::this_thread::get_id() == caller) off_thread = false;
      b.sync();
      if (b.block_idx() == 0) log.push_back(k);
    });
  s.synchronize();
  ASSERT_EQ(log.size(), static_cast<size_t>(kLaunches));
  for (int k = 0; k < kLaunches; ++k) EXPECT_EQ(log[static_cast<size_t>(k)], k);
  EXPECT_TRUE(off_thread.load());
}

// An operator on a stream gives the blocking operator's result bitwise.
TEST(ComputeStream, OperatorsOnAStreamEqualTheBlockingOnes) {
  constexpr int64_t kRows = 64, kCols = 1000;
  std::vector<float> x(kRows * kCols), a(x.size()), b(x.size()), ra(kRows), rb(kRows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 + static_cast<size_t>(me())) % 101) / 7.0f;
  const tk::ConstTensor in{x.data(), tk::DType::kF32, tk::Shape{kRows, kCols}};
  tessera::Stream s("compute stream");
  tk::softmax(in, {a.data(), tk::DType::kF32, tk::Shape{kRows, kCols}}, {.block_num = 2});
  tk::softmax(in, {b.data(), tk::DType::kF32, tk::Shape{kRows, kCols}}, {.block_num = 2, .stream = &s});
  tk::reduce(tk::ReduceOp::kSum, in, {ra.data(), tk::DType::kF32, tk::Shape{kRows}}, 1, {.block_num = 2});
  tk::reduce(tk::ReduceOp::kSum, in, {rb.data(), tk::DType::kF32, tk::Shape{kRows}}, 1, {.block_num = 2, .stream = &s});
  s.synchronize();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)), 0);
}

// Both directions, no host thread between them: per round a kernel on the compute stream writes x (late: its
// blocks first sleep, so an allreduce that did not wait for it would read last round's x); the comm stream
// waits for that event and allreduces x into y; the compute stream waits for the allreduce's event and a
// kernel reads y into z. The host only synchronizes the compute stream at the end of each round.
TEST(ComputeStream, EventsJoinKernelsAndCollectivesBothWays) {
  const int n = npes(), r = me();
  tc::Comm comm = tc::Comm::world();
  tessera::Stream compute("compute stream"), comm_stream;
  constexpr size_t kCount = 1 << 14;
  std::vector<float> x(kCount, -1.0f), y(kCount), z(kCount);
  for (int round = 0; round < 20; ++round) {
    tessera::Event written, reduced;
    tk::launch(compute, {.block_num = 2, .name = "write x"}, [&, round](tk::BlockContext& b) {
      std::this_thread::sleep_for(2ms);
      const size_t per = kCount / 2, lo = static_cast<size_t>(b.block_idx()) * per;
      for (size_t i = lo; i < lo + per; ++i) x[i] = static_cast<float>((r + 1) * (round + 1)) + static_cast<float>(i % 17);
    });
    written.record(compute);
    comm_stream.wait(written);
    comm.allreduce(x.data(), y.data(), kCount, tc::DataType::kFloat32, tc::RedOp::kSum, comm_stream);
    reduced.record(comm_stream);
    compute.wait(reduced);
    tk::launch(compute, {.block_num = 2, .name = "read y"}, [&](tk::BlockContext& b) {
      const size_t per = kCount / 2, lo = static_cast<size_t>(b.block_idx()) * per;
      for (size_t i = lo; i < lo + per; ++i) z[i] = 2.0f * y[i];
    });
    compute.synchronize();
    const float base = static_cast<float>((round + 1) * n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(z[i], 2.0f * (base + static_cast<float>(n) * static_cast<float>(i % 17))) << "round " << round << " element " << i;
  }
  comm_stream.synchronize();
}

// A persistent plan started on a comm stream after a kernel's event, as a training step's fixed schedule does.
TEST(ComputeStream, PlansStartAfterKernelEvents) {
  const int n = npes(), r = me();
  tc::Comm comm = tc::Comm::world();
  tessera::Stream compute("compute stream"), comm_stream;
  std::vector<int64_t> g(4096), out(4096);
  tc::Plan plan = comm.allreduce_init(g.data(), out.data(), g.size(), tc::DataType::kInt64, tc::RedOp::kSum);
  for (int step = 0; step < 10; ++step) {
    tk::launch(compute, {.block_num = 2, .name = "gradient"}, [&, step](tk::BlockContext& b) {
      std::this_thread::sleep_for(1ms);
      for (size_t i = static_cast<size_t>(b.block_idx()); i < g.size(); i += 2) g[i] = (r + 1) * (step + 1) + static_cast<int64_t>(i);
    });
    tessera::Event ready;
    ready.record(compute);
    comm_stream.wait(ready);
    plan.start(comm_stream);
    comm_stream.synchronize();
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_EQ(out[i], int64_t{n} * (n + 1) / 2 * (step + 1) + n * static_cast<int64_t>(i)) << step;
  }
}

// Gradients made by late kernels on a compute stream and handed to the Bucketer with their events: every
// bucket's allreduce waits for them (a bucket that did not would average last step's values).
TEST(ComputeStream, BucketerWaitsForGradientEvents) {
  const int n = npes(), r = me();
  tc::Comm comm = tc::Comm::world();
  tessera::Stream compute("compute stream"), comm_stream;
  const std::vector<size_t> sizes = {3000, 70, 20000, 5, 9000};
  size_t total = 0;
  std::vector<size_t> off;
  for (size_t c : sizes) off.push_back(total), total += c;
  std::vector<double> grads(total);
  tc::Bucketer buckets(comm, comm_stream, 64 << 10, tc::RedOp::kSum);
  for (size_t k = 0; k < sizes.size(); ++k) buckets.add(grads.data() + off[k], sizes[k], tc::DataType::kFloat64);
  for (int step = 0; step < 6; ++step) {
    for (size_t k = sizes.size(); k-- > 0;) {
      tk::launch(compute, {.block_num = 2, .name = "gradient"}, [&, k, step](tk::BlockContext& b) {
        std::this_thread::sleep_for(1ms);
        for (size_t i = static_cast<size_t>(b.block_idx()); i < sizes[k]; i += 2)
          grads[off[k] + i] = (r + 1) * (step + 1) + static_cast<double>(k * 1000 + i % 100);
      });
      tessera::Event ready;
      ready.record(compute);
      buckets.mark_ready(k, ready);
    }
    buckets.finish();
    for (size_t k = 0; k < sizes.size(); ++k)
      for (size_t i = 0; i < sizes[k]; ++i)
        ASSERT_EQ(grads[off[k] + i], (step + 1) * n * (n + 1) / 2 + n * static_cast<double>(k * 1000 + i % 100))
            << "step " << step << " gradient " << k << " element " << i;
  }
}

// A captured schedule (Graph): a kernel, a collective and a kernel recorded once on one stream and replayed
// with new inputs; the collective was made into a plan at capture, so the replays choose nothing.
TEST(ComputeStream, CapturedGraphsReplay) {
  const int n = npes(), r = me();
  tc::Comm comm = tc::Comm::world();
  tessera::Stream s("compute stream");
  constexpr size_t kCount = 5000;
  std::vector<float> in(kCount), x(kCount), y(kCount), z(kCount);
  s.begin_capture();
  EXPECT_TRUE(s.capturing());
  tk::launch(s, {.block_num = 2, .name = "scale"}, [&](tk::BlockContext& b) {
    for (size_t i = static_cast<size_t>(b.block_idx()); i < kCount; i += 2) x[i] = 3.0f * in[i];
  });
  comm.allreduce(x.data(), y.data(), kCount, tc::DataType::kFloat32, tc::RedOp::kSum, s);
  tk::softmax({y.data(), tk::DType::kF32, tk::Shape{1, static_cast<int64_t>(kCount)}},
              {z.data(), tk::DType::kF32, tk::Shape{1, static_cast<int64_t>(kCount)}}, {.block_num = 2, .stream = &s});
  tessera::Event e;
  EXPECT_THROW(e.record(s), tessera::Error);
  EXPECT_THROW(s.wait(e), tessera::Error);
  EXPECT_THROW(s.begin_capture(), tessera::Error);
  tessera::Graph g = s.end_capture();
  EXPECT_FALSE(s.capturing());
  EXPECT_EQ(g.size(), 3u);
  EXPECT_THROW(s.end_capture(), tessera::Error);
  std::vector<float> want(kCount);
  for (int round = 0; round < 4; ++round) {
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((r + 1) * (round + 1)) + static_cast<float>(i % 7) * 0.01f;
    g.launch(s);
    s.synchronize();
    // The same steps blocking, on this thread.
    std::vector<float> xs(kCount), ys(kCount);
    for (size_t i = 0; i < kCount; ++i) xs[i] = 3.0f * in[i];
    comm.allreduce(xs.data(), ys.data(), kCount, tc::DataType::kFloat32, tc::RedOp::kSum);
    tk::softmax({ys.data(), tk::DType::kF32, tk::Shape{1, static_cast<int64_t>(kCount)}},
                {want.data(), tk::DType::kF32, tk::Shape{1, static_cast<int64_t>(kCount)}}, {.block_num = 2});
    ASSERT_EQ(std::memcmp(y.data(), ys.data(), kCount * sizeof(float)), 0) << "round " << round;
    ASSERT_EQ(std::memcmp(z.data(), want.data(), kCount * sizeof(float)), 0) << "round " << round;
    ASSERT_NEAR(y[0], 3.0f * static_cast<float>((round + 1) * n * (n + 1) / 2), 1e-3f);
  }
}

// A bad operator on a compute stream fails its item; the error is sticky and names it; later items are skipped.
TEST(ComputeStream, ErrorsAreSticky) {
  tessera::Stream s("compute stream");
  std::vector<float> x(16, 1.0f), y(16);
  std::atomic<bool> ran{false};
  tk::softmax({nullptr, tk::DType::kF32, tk::Shape{4, 4}}, {y.data(), tk::DType::kF32, tk::Shape{4, 4}}, {.stream = &s});
  tk::launch(s, {.block_num = 1}, [&](tk::BlockContext&) { ran = true; });
  try {
    s.synchronize();
    ADD_FAILURE() << "synchronize did not report the failed softmax";
  } catch (const tessera::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("compute stream: item #1 (softmax [4,4] f32"), std::string::npos) << what;
    EXPECT_NE(what.find("the items after it were skipped"), std::string::npos) << what;
  }
  EXPECT_FALSE(ran.load());
}

}  // namespace
