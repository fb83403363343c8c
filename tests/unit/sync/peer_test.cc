// sync::peer_vanished: a PE that finds a peer's process gone leaves the report to the launcher and ends with
// the job, or reports it itself when no launcher watches.
#include "sync/peer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sync/futex.h"
#include "sync/wait.h"

namespace tessera::sync {
namespace {

TEST(PeerVanishedDeathTest, WithoutJobControlEndsTheJobNamingThePeer) {
  EXPECT_DEATH(peer_vanished("comm 1: rank 2 (PE 2, pid 7) is gone"), "comm 1: rank 2 \\(PE 2, pid 7\\) is gone");
}

// With a job control segment the PE says nothing of its own and exits with the job's status once the abort
// word is set (as the launcher sets it after reaping the dead PE), not before.
TEST(PeerVanishedDeathTest, WaitsForTheJobToEndThenExitsWithItsStatus) {
  EXPECT_EXIT(
      {
        static std::atomic<uint32_t> abort_word{0};
        static std::atomic<int32_t> exit_code{3};
        static PeWaitWords words[1];
        set_wait_context({.abort_word = &abort_word, .exit_code = &exit_code, .pe_words = words, .my_pe = 0,
                          .n_pes = 1});
        std::thread launcher([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          exit_code.store(5);
          abort_word.store(3);
          words[0].doorbell.fetch_add(1);
          futex_wake(&words[0].doorbell);
        });
        launcher.detach();
        peer_vanished("comm 1: rank 2 (PE 2, pid 7) is gone");
      },
      ::testing::ExitedWithCode(5), "^$");
}

}  // namespace
}  // namespace tessera::sync
