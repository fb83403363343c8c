// Kernel runtime: launch, block identity, grid sync, scratch/workspace, errors, timeouts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "base/cpu.h"
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

// A launch of more blocks than CPUs that waited long for a block a worker had claimed (as when the worker is
// preempted holding it) makes the workers hold back their claims: short blocks then stay on the launching
// thread, while a block that waits for another still gets one.
TEST(Launch, ASlowClaimedBlockKeepsShortBlocksOnTheLaunchingThread) {
  const int n = usable_cpus() + 2;
  if (n > 31) GTEST_SKIP() << "launches of more than 31 blocks do not share their blocks out";
  // Block 0 runs on the launching thread and waits (10 s at most) until block 1 runs on a worker; block 1
  // then takes sleep_us, which the launching thread waits for once it has run the other blocks.
  auto one_block_elsewhere = [&](int sleep_us) {
    std::atomic<bool> started{false};
    std::atomic<bool> elsewhere{false};
    const pthread_t caller = pthread_self();
    launch({.block_num = n}, [&](BlockContext& b) {
      if (b.block_idx() == 1) {
        elsewhere.store(!pthread_equal(pthread_self(), caller));
        started.store(true);
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      } else if (b.block_idx() == 0) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!started.load() && std::chrono::steady_clock::now() < end) std::this_thread::yield();
      }
    });
    return started.load() && elsewhere.load();
  };
  // The launching thread then waits about 20 ms for block 1, well over the 200 us that holds claims back,
  // unless it was itself descheduled for that long after running the other blocks (a loaded host): then
  // once more, five times at most.
  for (int i = 0; i < 5 && !rt::claims_held_back(); ++i)
    ASSERT_TRUE(one_block_elsewhere(20'000)) << "block 1 did not run on a worker while block 0 waited for it";
  EXPECT_TRUE(rt::claims_held_back()) << "five 20 ms waits for a claimed block did not hold claims back";
  // Held back, a claim is a delay, not a ban.
  ASSERT_TRUE(one_block_elsewhere(0)) << "with claims held back, block 1 did not run on a worker within 10 s";
  // Where the blocks of short launches run. The workers leave the launching thread 2 us, which a loaded
  // host (a CI run of tests side by side on 2 CPUs) takes from it often enough that a bound on the count
  // would flake; with a 100 ms window a launch only leaves the caller when the caller is descheduled that
  // long. What the 2 us window gains beside busy processes is measured by a benchmark
  // (docs/shared_cpus.md), not asserted here.
  rt::hold_claims_for_test(100'000'000);
  constexpr int kLaunches = 2000;
  int on_caller = 0;
  for (int i = 0; i < kLaunches; ++i) {
    std::atomic<int> away{0};
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    const pthread_t caller = pthread_self();
    launch({.block_num = n}, [&](BlockContext& b) {
      if (!pthread_equal(pthread_self(), caller)) away.fetch_add(1);
      runs[static_cast<size_t>(b.block_idx())].fetch_add(1);
    });
    for (int k = 0; k < n; ++k) ASSERT_EQ(runs[static_cast<size_t>(k)].load(), 1) << "launch " << i << ", block " << k;
    on_caller += away.load() == 0;
  }
  rt::hold_claims_for_test(0);
  EXPECT_FALSE(rt::claims_held_back());
  EXPECT_GE(on_caller, kLaunches * 3 / 4) << "launches whose every block ran on the launching thread";
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
