// tessera-run's hang report (tools/run/hang_report.h) over a control segment in private memory, its
// where-areas written by the library's own recorder (sync/where.h) on behalf of each PE in turn.
#include "hang_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "coll/types.h"
#include "control_segment.h"
#include "sync/where.h"

namespace tessera::run {
namespace {

using sync::Call;

struct Job : ControlSegment {
  using ControlSegment::ControlSegment;
  std::string report() { return hang_report(ctl, "test", fast_now_ns()); }
  // The report's line for PE `pe`, without its "for N s" (the time taken here varies).
  static std::string line(const std::string& r, int pe) {
    const std::string head = "\n  PE " + std::to_string(pe) + ": ";
    const size_t b = r.find(head), e = r.find('\n', b + 1);
    if (b == std::string::npos) return "";
    std::string l = r.substr(b + 1, e - b - 1);
    const size_t f = l.find(" for "), semi = l.find(';', f);
    if (f != std::string::npos && l.compare(f + 5, 1, "a") != 0 && l.compare(f + 5, 1, "m") != 0)
      l.erase(f, (semi == std::string::npos ? l.size() : semi) - f);
    return l;
  }
};

TEST(HangReport, NamesThePeOutsideTessera) {
  Job j(4);
  for (int pe = 0; pe < 4; ++pe) j.call(pe, Call::kBarrierAll, 2, false);
  for (int pe = 0; pe < 3; ++pe) j.call(pe, Call::kBarrierAll, 3, true);
  std::vector<bool> exited(4, false);
  EXPECT_FALSE(hang_report_settled(j.ctl, exited)) << "PEs 0-2 are in a call and have not described it";
  j.settle(0, "the barrier\nflight recorder lines", true);
  j.settle(1, "the barrier");
  exited[2] = true;
  EXPECT_TRUE(hang_report_settled(j.ctl, exited)) << "PE 3 is in no call, PE 2 has ended";
  EXPECT_EQ(j.ctl->deadline_pe.load(), 1u);
  const std::string r = j.report();
  EXPECT_NE(r.find("  PE 0: is in shmem_barrier_all (world, team sync 3) for "), std::string::npos) << r;
  EXPECT_NE(r.find("; waits for PE 3\n        waiting for the barrier\n"), std::string::npos) << r;
  EXPECT_NE(r.find("        waiting for: as PE 0\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("flight recorder"), std::string::npos) << "only the first line is kept: " << r;
  EXPECT_NE(r.find("  PE 3: is not in a Tessera call (last: shmem_barrier_all (world, team sync 2), "),
            std::string::npos) << r;
  EXPECT_NE(r.find("  summary: PEs 0,1,2 wait for PE 3; PE 3 is not in a Tessera call"), std::string::npos) << r;
}

TEST(HangReport, MembersAheadAreNotAwaitedAndSubteamsCountOnlyMembers) {
  Job j(4);
  // Team {0, 2}: PE 0 is in its sync 5, PE 2 already in sync 6 (ahead): nobody is named for PE 0. Team {1, 3}:
  // PE 1 in allreduce #4, PE 3 in a barrier of the world.
  j.call(0, Call::kTeamSync, 5, true, 0, 2, 2);
  j.call(2, Call::kTeamSync, 6, true, 0, 2, 2);
  j.call(1, Call::kCollective, 4, true, 1, 2, 2, static_cast<uint16_t>(coll::Kind::kAllreduce));
  j.call(3, Call::kBarrierAll, 9, true);
  const std::string r = j.report();
  EXPECT_EQ(Job::line(r, 0), "  PE 0: is in shmem_team_sync (PEs 0,2, team sync 5)") << r;
  EXPECT_EQ(Job::line(r, 1), "  PE 1: is in allreduce 0 B (PEs 1,3, call #4); waits for PE 3") << r;
  EXPECT_EQ(Job::line(r, 3), "  PE 3: is in shmem_barrier_all (world, team sync 9); waits for PEs 0,1,2") << r;
}

TEST(HangReport, MembersThatAreNotStridedAreNotNamed) {
  Job j(4);
  j.call(0, Call::kCollective, 1, true, 0, 0, 3);
  j.call(1, Call::kWaitUntil, 0, true, 0, 0, 0);
  const std::string r = j.report();
  EXPECT_NE(r.find("; waits for members it cannot name (not a strided set of PEs)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("; waits for a write (no PE named)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("PE 2 is not in a Tessera call (no blocking call yet)"), std::string::npos) << r;
}

// A wait outside recorded calls (shmem_finalize's barrier, a kernel launch) still shows its text.
TEST(HangReport, WaitOutsideRecordedCallsIsShown) {
  Job j(2);
  j.call(0, Call::kBarrierAll, 2, false, 0, 1, 2);
  j.settle(0, "team sync 3 on the world team (made by the library)");
  const std::string r = j.report();
  EXPECT_NE(r.find("  PE 0: is in a Tessera wait that is not a recorded call (last call: shmem_barrier_all (world, "
                   "team sync 2), "), std::string::npos) << r;
  EXPECT_NE(r.find("        waiting for team sync 3 on the world team (made by the library)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("  PE 1: is not in a Tessera call (no blocking call yet)\n"), std::string::npos) << r;
}

TEST(HangReport, NestedCallsAreNotRecorded) {
  Job j(1);
  j.call(0, Call::kCollective, 1, true, 0, 1, 1);
  EXPECT_FALSE(sync::where_begin(Call::kBarrierAll, 0, 1, 0, 0, 1, 1));
  EXPECT_EQ(j.ctl->where(0)->calls.load(), 1u);
}

}  // namespace
}  // namespace tessera::run
