// Resilient mode of the collective engine (docs/resilience.md): calls that stop when a member fails,
// revocation, agreement among the survivors, and shrinking a communicator to them (as MPI's ULFM:
// MPIX_Comm_revoke, MPIX_Comm_agree, MPIX_Comm_shrink, with the failure detector inside).
//
// Failures come from the launcher: under tessera-run --on-failure continue it marks a PE that died kFailed
// in the job's control segment (pgas::JobControl) and rings every PE's doorbell. A collective on a
// communicator with that PE among its members then stops in its next wait and returns kPeerFailed naming
// it; the communicator is broken from then on. The survivors agree on the failed set and shrink.
//
// One host: the members' control blocks (Ctrl) are shared memory, and a failed member's block stays
// mapped by the others, so what it published before it died stays readable. A communicator across hosts
// keeps the same records in the job's control segment (sync::FailRecords), which every PE maps under the
// one-host launcher (tests/pe/as_hosts.sh); a job started with --hosts refuses resilient mode so far.
//
// Thread safety: as the communicator (one thread at a time).
#pragma once
#include <atomic>
#include <vector>

#include "base/status.h"
#include "coll/comm.h"
#include "sync/fail.h"

namespace tessera::coll {

// The job's failures as the launcher marks them in its control segment (pgas::JobControl; comm.cc, the
// engine's one door to the PGAS runtime): whether the job is resilient, how many PEs have failed (acquire:
// every PE with a smaller fail index then reads as failed), whether `pe` has, and its place in that order.
bool resilient_job();
uint32_t job_failures();
bool pe_failed(int pe);
uint32_t pe_fail_index(int pe);
// The replacement tessera-run --restarts started last under `pe`'s number (0: none; pgas/resilient.h).
uint32_t pe_incarnation(int pe);
// Communicators across hosts keep their agreement and revocation records in the control segment too.
sync::FailRecords* pe_records(int pe);
std::atomic<uint32_t>* job_revocations();

// 1 + the rank that revoked `c`, or 0.
uint64_t revoked_by(const Communicator& c);

// The failure watch of a call on `c` (sync/fail.h): trips when a member has failed or `c` was revoked.
class CommWatch final : public sync::FailWatch {
 public:
  explicit CommWatch(Communicator& c) : c_(c) {}
  // Asks `c` and the communicators it is part of (Communicator::parent): a call on a host's part of a
  // communicator across hosts stops for a failure on another host too.
  bool tripped() override;
  [[noreturn]] void raise() override;

 private:
  Communicator& c_;
  Communicator* why_ = nullptr;  // the one that tripped
};

// The error of a call `routine` on `c` stopped by `e`; marks `c` broken.
Status interrupted(Communicator& c, const char* routine, const sync::Interrupted& e);
// The error of a call `routine` on a broken `c` (ok while it is not broken).
Status broken_error(const Communicator& c, const char* routine);

// The members this PE knows to have failed (world PEs, ascending), looked up again now.
const std::vector<int>& known_failed(Communicator& c);

// Every member's pending and later calls on `c` fail with kRevoked (not collective; any member may).
Status revoke(Communicator& c);
// Collective over the members alive: the bitwise AND of their flags (and of the flags of members that
// published theirs before they failed), and the failed members (world PEs, ascending), the same on every
// survivor; they join c.failed. Works on a broken or revoked communicator.
Status agree(Communicator& c, int* flag, std::vector<int>* failed);
// Collective over the survivors: agrees on the failed members, then builds the communicator of the others
// (ranks in the old order). Alike on every survivor: all get the new communicator, or all get kPeerFailed
// (a survivor failed meanwhile) and may shrink again.
Result<Communicator*> shrink(Communicator& c);

}  // namespace tessera::coll
