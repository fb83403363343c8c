// Registered buffers (coll.h: tesseraCommRegister / tesseraCommDeregister; coll.hpp: Comm::register_buffer):
// a member's own memory, a torch tensor say, made reachable by the other members of its host once, so that
// collectives on it take the in-place rows the symmetric heap takes, with no staging copy and no
// single-copy read per call.
//
// Registration is collective over the communicator, in the same order on every member, each with its own
// buffer (sizes may differ). Each member's pages are turned into shared memory in place
// (transport/shm/remap.h: same addresses and contents), every member maps every other member's range on its
// host, and the buffers take the next region of the communicator's symmetric word space (SymMap::regions).
// Every member checks its own request first (null, empty, overlapping a buffer registered on this
// communicator but not the same one, memory that is not private and writable), and one exchange makes the
// verdict the same on every member, as a plan's Init does. Registering the same buffer again counts a
// reference (the same handle); deregistration drops one and, at the last, unmaps the peers' ranges and gives
// the pages back as private memory (contents kept). A buffer must be deregistered before it is freed.
//
// Calls then (handle.cc: run) treat a call whose send and receive buffers both lie in registered buffers as
// symmetric (Args::symmetric) for the kinds with symmetric rows, on a communicator within one host: every
// member must then pass its registered buffers at the same offsets (a member that does not picks another
// row, which the call's consistency check reports). Across hosts a registration is accepted and changes
// nothing: the rows between hosts take their usual paths.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "coll/algo.h"
#include "coll/comm.h"

namespace tessera::coll {

struct Registration;

// Collective. `routine` names errors ("tesseraCommRegister: ..."). `refused`: this member's verdict on an
// argument of the API's own (a null place for the handle); it still joins the exchange, so all fail alike.
Result<Registration*> register_buffer(const char* routine, Communicator& c, void* p, size_t bytes,
                                      const Status& refused = Status::ok());
// Not collective in effect (each member drops its own reference) but must be called by every member in the
// same order as register_buffer. Errors: a handle that is not one of this communicator's live registrations.
// Callers hold the communicator (handle.h: exclusive), so no call on it uses the buffer meanwhile.
Status deregister_buffer(const char* routine, Communicator& c, void* handle);
// Every registration of `c`, when the communicator is destroyed.
void deregister_all(Communicator& c);

// The symmetric words of a call's send and receive buffers (SymMap::word) for the kinds whose symmetric rows
// take a buffer from every member (allreduce, broadcast, allgather, alltoall); {0, 0} for the other kinds.
std::pair<uint64_t, uint64_t> symmetric_words(const Communicator& c, Kind kind, const Args& a);
// True when both buffers of the call lie in registered buffers of `c` (not the heap: a heap buffer is
// symmetric only where the caller says so) on a communicator within one host.
bool in_registered(const Communicator& c, Kind kind, const Args& a);

}  // namespace tessera::coll
