// Kernel runtime: launch, block identity, grid sync, scratch/workspace, errors, timeouts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "kernel/ops/prims.h"
#include "kernel/runtime/runtime.h"
#include "tessera/kernel.hpp"

namespace tessera::kernel {
namespace {

using ::testing::HasSubstr;

class LaunchTest : public ::testing::TestWithParam<int> {};

TEST_P(LaunchTest, EveryBlockRunsOnceWithItsIndex) {
  const int n = GetParam();
  std::vector<int> seen(static_cast<size_t>(n), 0);
  std::vector<int> nums(static_cast<size_t>(n), 0);
  launch({.block_num = n}, [&](BlockContext& b) {
    seen[static_cast<size_t>(b.block_idx())] += 1;
    nums[static_cast<size_t>(b.block_idx())] = b.block_num();
    EXPECT_EQ(current_block(), &b);
  });
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << "block " << i;
    EXPECT_EQ(nums[static_cast<size_t>(i)], n);
  }
  EXPECT_EQ(current_block(), nullptr);
}

TEST_P(LaunchTest, SyncMakesEveryBlocksStoresVisible) {
  const int n = GetParam();
  constexpr int kRounds = 200;
  std::vector<int> slot(static_cast<size_t>(n), -1);
  std::atomic<int> errors{0};
  launch({.block_num = n}, [&](BlockContext& b) {
    for (int r = 0; r < kRounds; ++r) {
      slot[static_cast<size_t>(b.block_idx())] = r * 1000 + b.block_idx();
      b.sync();
      for (int k = 0; k < n; ++k)
        if (slot[static_cast<size_t>(k)] != r * 1000 + k) errors.fetch_add(1);
      b.sync();
    }
  });
  EXPECT_EQ(errors.load(), 0);
}

TEST_P(LaunchTest, ScratchIsPrivateAlignedAndWorkspaceShared) {
  const int n = GetParam();
  std::vector<void*> scratch(static_cast<size_t>(n));
  std::vector<void*> ws(static_cast<size_t>(n));
  launch({.block_num = n, .workspace_bytes = 4096}, [&](BlockContext& b) {
    scratch[static_cast<size_t>(b.block_idx())] = b.scratch();
    ws[static_cast<size_t>(b.block_idx())] = b.workspace();
    EXPECT_GE(b.scratch_bytes(), size_t{64} << 10);
    EXPECT_GE(b.workspace_bytes(), size_t{4096});
    b.workspace_as<int>()[b.block_idx()] = b.block_idx();
    b.sync();
    for (int k = 0; k < n; ++k) EXPECT_EQ(b.workspace_as<int>()[k], k);
  });
  std::set<void*> distinct(scratch.begin(), scratch.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(scratch[static_cast<size_t>(i)]) % 64, 0u);
    EXPECT_EQ(ws[static_cast<size_t>(i)], ws[0]);
  }
}

// 1, 2 (= the CI machine's cores), odd, and oversubscribed counts.
INSTANTIATE_TEST_SUITE_P(Blocks, LaunchTest, ::testing::Values(1, 2, 3, 4, 7, 16));

TEST(Launch, BackToBackLaunchesOfDifferentSizes) {
  std::atomic<int> total{0};
  for (int i = 0; i < 300; ++i) {
    const int n = 1 + i % 5;
    launch({.block_num = n}, [&](BlockContext& b) { total.fetch_add(1); if (n > 1) b.sync(); });
  }
  int expect = 0;
  for (int i = 0; i < 300; ++i) expect += 1 + i % 5;
  EXPECT_EQ(total.load(), expect);
}

// Launches of more blocks than CPUs share their blocks out to whichever thread is free (the caller
// included): back to back, without syncs, every block of every launch still runs exactly once, with its
// own index and the launch's block count, and no block runs after its launch returned.
TEST(Launch, BackToBackLaunchesWithoutSyncRunEveryBlockOnce) {
  constexpr int kLaunches = 200000, kMax = 12;
  std::vector<std::atomic<int>> runs(kMax);
  std::atomic<int> wrong_num{0}, late{0};
  std::atomic<int> current{-1};
  for (int i = 0; i < kLaunches; ++i) {
    // Mostly the sizes that share their blocks out on small machines, back to back (a worker woken for one
    // launch may look while the next is being set up), with every size now and then.
    const int n = i % 16 == 0 ? 1 + (i / 16) % kMax : 2 + i % 3;
    for (auto& r : runs) r.store(0, std::memory_order_relaxed);
    current.store(i, std::memory_order_relaxed);
    launch({.block_num = n}, [&, i, n](BlockContext& b) {
      if (b.block_num() != n) wrong_num.fetch_add(1);
      if (current.load(std::memory_order_relaxed) != i) late.fetch_add(1);
      runs[static_cast<size_t>(b.block_idx())].fetch_add(1, std::memory_order_relaxed);
    });
    for (int k = 0; k < kMax; ++k)
      ASSERT_EQ(runs[static_cast<size_t>(k)].load(), k < n ? 1 : 0) << "launch " << i << " of " << n << " blocks, block " << k;
  }
  EXPECT_EQ(wrong_num.load(), 0);
  EXPECT_EQ(late.load(), 0);
}

TEST(Launch, DefaultBlockNumIsUsableCpus) {
  EXPECT_GE(default_block_num(), 1);
  int seen = 0;
  launch({}, [&](BlockContext& b) { if (b.block_idx() == 0) seen = b.block_num(); });
  EXPECT_EQ(seen, default_block_num());
}

TEST(LaunchErrors, ZeroOrTooManyBlocks) {
  auto noop = [](BlockContext&) {};
  try {
    launch({.block_num = 0, .name = "mykernel"}, noop);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("mykernel: block_num=0 must be in 1.."));
  }
  EXPECT_THROW(launch({.block_num = -7}, noop), Error);
  EXPECT_THROW(launch({.block_num = 1 << 20}, noop), Error);
  EXPECT_THROW(launch_raw({}, nullptr, nullptr), Error);
}

TEST(LaunchErrors, NestedLaunchIsAnErrorNotADeadlock) {
  Status inner;
  launch({.block_num = 2, .name = "outer"}, [&](BlockContext& b) {
    if (b.block_idx() == 1) inner = rt::launch_fn(LaunchOptions{.block_num = 1, .name = "inner"}, [](BlockContext&) {});
  });
  ASSERT_FALSE(inner.is_ok());
  EXPECT_THAT(inner.message(), HasSubstr("from inside kernel 'outer' (block 1)"));
}

TEST(LaunchDeathTest, StuckGridSyncEndsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("TESSERA_TIMEOUT", "0.3", 1);
        launch({.block_num = 3, .name = "stuck"}, [](BlockContext& b) {
          if (b.block_idx() != 2) b.sync();
        });
      },
      "grid sync #1 of kernel 'stuck' \\(3 blocks\\): block\\(s\\) 2 never arrived");
}

TEST(LaunchDeathTest, ExceptionInKernelEndsWithItsMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(launch({.block_num = 2, .name = "thrower"},
                      [](BlockContext& b) { if (b.block_idx() == 1) throw std::runtime_error("boom"); }),
               "kernel 'thrower' block 1: exception escaped the kernel: boom");
}

// Run by ctest with TESSERA_KERNEL_SIMD=avx2 and sse4 (unit.kernel.simd_*): the cap must take effect, or those
// runs would test the AVX-512 code again.
TEST(Simd, CapFromTheEnvironmentTakesEffect) {
  const char* cap = std::getenv("TESSERA_KERNEL_SIMD");
  const std::string target = ops::prims(DType::kF32).target;
  if (cap && std::string(cap) == "avx2") {
    EXPECT_THAT(target, testing::AnyOf("AVX2", "SSE4"));
  }
  if (cap && std::string(cap) == "sse4") {
    EXPECT_EQ(target, "SSE4");
  }
  EXPECT_EQ(std::string(ops::prims(DType::kBF16).target), target);
}

// The first dispatch reads the SIMD cap and the prefetch choice; an unknown value ends the process with the
// variable, the value and the choices.
void expect_refused_at_first_dispatch(const char* var, const char* value, const char* message) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv(var, value, 1);
        ops::prims(DType::kF32);
      },
      message);
}

TEST(SimdDeathTest, UnknownCapIsRefusedWithTheChoices) {
  expect_refused_at_first_dispatch("TESSERA_KERNEL_SIMD", "avx1024",
                                   "TESSERA_KERNEL_SIMD=avx1024: expected auto, avx512, avx2 or sse4");
}

TEST(SimdDeathTest, UnknownPrefetchChoiceIsRefusedWithTheChoices) {
  expect_refused_at_first_dispatch("TESSERA_KERNEL_PREFETCH", "sometimes",
                                   "TESSERA_KERNEL_PREFETCH=sometimes: expected auto, on or off");
}

}  // namespace
}  // namespace tessera::kernel
