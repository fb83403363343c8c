// The wait policy's last phase (sync/wait.h): a waiter asleep on its PE's doorbell is woken by the writer's
// notify_range, not by the end of a re-check slice. The slices make a lost wake-up cost only time, so these
// tests look at how the sleep ended (WaitStats) and, under the test hook TESSERA_TEST_NO_RECHECK=1 (ctest
// entry unit.sync.no_recheck), at when it ended.
#include "sync/wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace tessera::sync {
namespace {

// The symmetric offset the waiter watches; the writer's notify_range names the same bytes.
constexpr uint64_t kOffset = 4096;

struct Counts {
  uint64_t parks, bell, slice;
  static Counts now() {
    return {g_wait_stats.futex_waits.load(), g_wait_stats.woken_by_bell.load(), g_wait_stats.woken_by_slice.load()};
  }
};

// Another thread stores the flag once the waiter has registered as a sleeper and had time to park, then
// calls notify_range (when `ring`) for the flag's bytes. Returns the wait's length in nanoseconds.
uint64_t sleep_until_written(PeWaitWords& words, bool ring) {
  std::atomic<uint64_t> flag{0};
  std::thread writer([&] {
    while (words.sleepers.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    flag.store(1, std::memory_order_release);
    if (ring) notify_range(0, kOffset, sizeof(uint64_t));
  });
  const uint64_t start = now_ns();
  wait_until([&] { return flag.load(std::memory_order_acquire) != 0; },
             [] { return std::string("the test's flag at symmetric offset 4096 to be 1"); },
             Watch{kOffset, kOffset + sizeof(uint64_t)});
  const uint64_t took = now_ns() - start;
  writer.join();
  return took;
}

TEST(Wait, SleeperIsWokenByTheDoorbell) {
  static PeWaitWords words[1];
  set_wait_context({.pe_words = words, .my_pe = 0, .n_pes = 1});
  for (int round = 0; round < 3; ++round) {
    const Counts before = Counts::now();
    const uint64_t took = sleep_until_written(words[0], true);
    const Counts after = Counts::now();
    // A waiter descheduled between registering and its first park may find the flag set before it parks:
    // then it was not woken at all, and only the slice count is checked.
    EXPECT_EQ(after.slice - before.slice, 0u) << "round " << round << ": the sleep ended at a slice's end";
    if (after.parks != before.parks) {
      EXPECT_EQ(after.bell - before.bell, 1u) << "round " << round << ": the doorbell did not end the sleep";
    }
    // Under the hook the waiter has no slice to fall back on: it returns because it was woken, long before
    // its deadline (TESSERA_TIMEOUT), which unit.sync.no_recheck sets to 20 s.
    if (no_recheck()) {
      EXPECT_LT(took, timeout_ns() / 4) << "round " << round;
    }
  }
}

// The hook's contract: a write that rings nobody (a lost wake-up, made here by leaving out notify_range)
// ends the job at the deadline with the message naming what was awaited and that it came true unannounced;
// without the hook the next slice would have found the flag, and the wait would have passed. Threadsafe
// style: the child re-runs only this test, so it parses the environment it sets here, whatever the tests
// before it read.
TEST(WaitDeathTest, UnderNoRecheckALostWakeUpEndsTheJobAtTheDeadline) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("TESSERA_TEST_NO_RECHECK", "1", 1);
        setenv("TESSERA_TIMEOUT", "0.5", 1);
        static PeWaitWords words[1];
        set_wait_context({.pe_words = words, .my_pe = 0, .n_pes = 1});
        sleep_until_written(words[0], false);
      },
      "timed out after [0-9.]+ s \\(TESSERA_TIMEOUT=0\\.5\\) waiting for the test's flag at symmetric offset 4096 to "
      "be 1; that holds now, but nothing woke the waiter \\(a lost wake-up");
}

}  // namespace
}  // namespace tessera::sync
