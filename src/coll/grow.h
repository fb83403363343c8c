// Growing back (resilient mode, docs/resilience.md "Growing back"): after tessera-run --restarts has started
// a replacement under a failed PE's number (pgas/resilient.h), the survivors grow their communicator to take it
// in, like NCCL's ncclCommGrow and ULFM's spawn-and-merge, without a list from the application.
//
// The survivors call grow(c) on the communicator they shrank to; the replacement calls join(). The new
// communicator's members are c's survivors and the replacements of PEs that failed out of c or out of the
// communicators c was shrunk from (Communicator::former), in world order: a replaced PE gets its old rank
// back when c was shrunk from the world.
//
// The grow meets over the job's control segment (JobControl::GrowBoard; one grow at a time per job):
//   1. the survivors agree on c (so they know the same failed set);
//   2. its leader (the lowest survivor) waits for the replacements the launcher has started to publish
//      their segments, then posts the members and the new key; the others and the replacements read them;
//   3. every member maps the replacements' segments (pgas::remap_peer) and builds the communicator over the
//      grow's meetings 1 and 2; a replacement whose symmetric allocations differ from the leader's refuses;
//   4. meeting 3 commits: it passes for every member or for none (each member posts a mark in the control
//      segment, and a member that dies after posting counts as arrived), so the grow succeeds or fails
//      (kPeerFailed) alike everywhere; then the replacements count as alive (state kInitialized), and
//      meeting 4 lets every member see that before any returns.
// After a failed grow the survivors shrink and grow again, and a replacement calls join() again (it takes
// only a grow posted later than the one it tried). A member that dies after the commit is a member of the
// new communicator for all; its first call fails on all. One host only.
#pragma once
#include "base/status.h"
#include "coll/comm.h"

namespace tessera::coll {

// Collective over c's survivors and the replacements that join.
Result<Communicator*> grow(Communicator& c);
// A replacement PE's side of the grow that names it; waits for it up to TESSERA_TIMEOUT.
Result<Communicator*> join();

}  // namespace tessera::coll
