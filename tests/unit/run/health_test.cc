// The health view (tools/run/health.h) over a control segment in private memory, its where-areas written by
// the library's own recorder (sync/where.h) on behalf of each PE, and real processes for the PEs' states: this
// test process (running) and a child it stops with SIGSTOP.
#include "health.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "control_segment.h"
#include "sync/where.h"

namespace tessera::run {
namespace {

using sync::Call;

struct Job : ControlSegment {
  using ControlSegment::ControlSegment;
  void call(int pe, Call c, uint64_t seq, bool open) {
    ControlSegment::call(pe, c, seq, open, 0, 1, static_cast<int>(ctl->n_pes));
  }
};

// A child that sleeps until killed, stopped by SIGSTOP; reaped at the end.
struct StoppedChild {
  StoppedChild() {
    pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    kill(pid, SIGSTOP);
    for (int i = 0; i < 200 && process_state(pid) != 'T'; ++i) usleep(5000);
  }
  ~StoppedChild() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  pid_t pid;
};

TEST(Health, EveryPeRunningAndNoCallOverdueIsHealthy) {
  Job j(3);
  for (int pe = 0; pe < 3; ++pe) j.call(pe, Call::kBarrierAll, 1, false);
  j.call(0, Call::kBarrierAll, 2, true);  // in a barrier, but only just: not overdue at a limit of 60 s
  const std::vector<PeProcess> procs(3, PeProcess{getpid(), true});
  const Health h = health_report(j.ctl, "job1", procs, fast_now_ns(), 60'000'000'000ull);
  EXPECT_TRUE(h.healthy) << h.text;
  EXPECT_NE(h.text.find("summary: healthy"), std::string::npos) << h.text;
  EXPECT_NE(h.text.find("  PE 0 (pid " + std::to_string(getpid()) + ", running): is in shmem_barrier_all"),
            std::string::npos) << h.text;
  const auto js = nlohmann::json::parse(h.json);
  EXPECT_TRUE(js["healthy"].get<bool>());
  EXPECT_EQ(js["pe"].size(), 3u);
  EXPECT_EQ(js["pe"][0]["call"], "shmem_barrier_all");
  EXPECT_TRUE(js["pe"][0]["in_call"].get<bool>());
  EXPECT_FALSE(js["pe"][1]["in_call"].get<bool>());
}

// A stopped PE: the others overdue in the barrier it has not entered; the view names it, its call, and
// that the others wait for it, and does not say healthy.
TEST(Health, NamesTheStoppedPeAndTheOverdueCalls) {
  Job j(3);
  for (int pe = 0; pe < 3; ++pe) j.call(pe, Call::kBarrierAll, 4, false);
  j.call(0, Call::kBarrierAll, 5, true);
  j.call(2, Call::kBarrierAll, 5, true);
  StoppedChild stopped;
  ASSERT_EQ(process_state(stopped.pid), 'T');
  std::vector<PeProcess> procs(3, PeProcess{getpid(), true});
  procs[1].pid = stopped.pid;
  const uint64_t later = fast_now_ns() + 3'000'000'000ull;  // as if looked at 3 s later
  const Health h = health_report(j.ctl, "job2", procs, later, 1'000'000'000ull);
  EXPECT_FALSE(h.healthy) << h.text;
  EXPECT_NE(h.text.find("  PE 1 (pid " + std::to_string(stopped.pid) + ", stopped): is not in a Tessera call (last: "
                        "shmem_barrier_all (world, team sync 4)"), std::string::npos) << h.text;
  EXPECT_NE(h.text.find("OVERDUE; waits for PE 1\n"), std::string::npos) << h.text;
  EXPECT_NE(h.text.find("summary: NOT HEALTHY: PE 1 is stopped; PEs 0,2 overdue (in one call for more than 1.0 s), "
                        "waiting for PE 1"), std::string::npos) << h.text;
  const auto js = nlohmann::json::parse(h.json);
  EXPECT_FALSE(js["healthy"].get<bool>());
  EXPECT_EQ(js["stopped"], nlohmann::json::array({1}));
  EXPECT_EQ(js["overdue"], nlohmann::json::array({0, 2}));
  EXPECT_EQ(js["pe"][0]["waits_for"], nlohmann::json::array({1}));
  EXPECT_EQ(js["pe"][1]["process"], "stopped");
  EXPECT_GE(js["pe"][0]["in_call_s"].get<double>(), 2.9);
}

// Overdue alone (every process running) is enough to say not healthy; a PE that ended without finalizing too.
TEST(Health, AnOverdueCallOrALostPeIsNeverHealthy) {
  Job j(2);
  j.call(0, Call::kWaitUntil, 0, true);
  std::vector<PeProcess> procs(2, PeProcess{getpid(), true});
  Health h = health_report(j.ctl, "job3", procs, fast_now_ns() + 2'000'000'000ull, 1'000'000'000ull);
  EXPECT_FALSE(h.healthy);
  EXPECT_NE(h.text.find("summary: NOT HEALTHY: PE 0 overdue"), std::string::npos) << h.text;
  procs[1].running = false;
  h = health_report(j.ctl, "job3", procs, fast_now_ns(), 60'000'000'000ull);
  EXPECT_FALSE(h.healthy);
  EXPECT_NE(h.text.find("PE 1 ended without finalizing"), std::string::npos) << h.text;
  j.ctl->state(1)->store(pgas::JobControl::kFinalized);
  h = health_report(j.ctl, "job3", procs, fast_now_ns(), 60'000'000'000ull);
  EXPECT_TRUE(h.healthy) << "a PE that finalized and exited is done, not lost: " << h.text;
}

}  // namespace
}  // namespace tessera::run
