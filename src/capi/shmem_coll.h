// The OpenSHMEM collectives as a thin layer over the collective engine (src/coll).
//
// A team or an active set is a communicator of the engine: a team's is made on its first collective
// (collective over the team, as every team collective is) and destroyed with the team; an active set's on
// the set's first collective, synchronised once through its pSync, and kept until shmem_finalize (the
// specification lets a program reuse a set with any pSync, so the set, not the pSync, names it).
// Every call passes Args::symmetric: the specification makes dest and source symmetric on every member,
// so the engine may read and write peers' buffers in place (algos/symmetric.cc).
// In resilient mode a team's communicator is made with the team instead (make_team_comm), so that a shrink
// after a failure can agree over it, and a team collective that a failed member stops returns
// SHMEMX_PEER_FAILED (tesseraGetLastError names the PE) instead of ending the job.
// This layer checks arguments (ending the job with one message naming the routine, the value and the
// limit), translates handles and types, and calls coll::dispatch; the engine checks that every member made
// the same call (kind, count, type, operator, root) and names the routine when one did not.
#pragma once
#include <shmem.h>

namespace tessera::pgas { struct Team; }
namespace tessera::coll { struct Communicator; }

namespace tessera::capi::coll {

// The team's communicator, made now if it has none (collective over the team).
tessera::coll::Communicator& team_comm(const char* routine, pgas::Team* t);
// In resilient mode, makes the team's communicator now (collective over the team); else does nothing.
void make_team_comm(const char* routine, pgas::Team* t);
// Destroys the team's communicator if it has one (collective over the team: shmem_team_destroy).
void release_team_comm(pgas::Team* t);
// At shmem_finalize: the predefined teams' communicators (collective) and every active set's.
void release_all_comms();

}  // namespace tessera::capi::coll
