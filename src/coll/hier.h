// Collectives across hosts: a communicator whose members span hosts is built from the communicator of the
// members on each host (the shared-memory engine of comm.h) and the transports between hosts, and its
// collectives are registry rows like the engine's (hier/rows.cc: rails, leaders, flat_ring, ...), selected
// by the same cost model with the link's parameters (Shape::net). Those rows compose the host-local
// communicator's collectives with patterns between hosts (hier/net.h).
// Deterministic mode (TESSERA_DETERMINISTIC): only canonical rows run; the reductions then gather every
// member's input and fold them in rank order, so results are bitwise identical to the one-host canonical
// algorithms.
#pragma once
#include "base/status.h"
#include "coll/algo.h"
#include "coll/comm.h"

namespace tessera::coll {

struct Hier;

// Makes the two-level part of `c` (members c.world, this PE's rank c.rank): `local` is the communicator of
// the members on this PE's host, already made. Takes ownership of `local`.
Hier* hier_create(Communicator& c, Communicator* local);
void hier_destroy(Hier* h);
// This member's part only, with no barrier on the host's communicator (comm_abandon).
void hier_abandon(Hier* h);
// "2 hosts, 2 members each, rails" for messages and tessera-info.
std::string hier_describe(const Communicator& c);

// TESSERA_COMPRESS as a mode; an unknown value ends the job naming the choices.
Compress default_compress();
// tesseraCommSetCompression: collective; every member passes the same mode (0..3, hier/compress.h) and
// feedback flag, which one exchange checks (a member with another value, or a mode out of range, fails every
// member alike). On a communicator within one host it is accepted and changes nothing (no phase between hosts).
// Error feedback residuals kept so far are dropped.
Status set_compression(const char* routine, Communicator& c, int mode, bool feedback);
// TESSERA_COMPRESS_ALLGATHER as a mode, and tesseraCommSetAllGatherCompression: the same rules, no feedback.
Compress default_allgather_compress();
Status set_allgather_compression(const char* routine, Communicator& c, int mode);

// Send/recv (coll/p2p.cc). A peer on this host is reached through the local communicator: returns it and
// sets *local_peer; a peer on another host: returns null, and the message goes through hier_post (a tag of
// its own, apart from the collectives' messages), completed by hier_complete.
Communicator* hier_local_peer(Communicator& c, int peer, int* local_peer);
void* hier_post(Communicator& c, bool send, void* buf, size_t bytes, int peer);
void hier_complete(Communicator& c, void* request, bool send, size_t bytes, int peer);

}  // namespace tessera::coll
