// Handles, their checks, and the guarded entry to dispatch (handle.h).
#include "coll/handle.h"

#include <mutex>
#include <string>
#include <vector>

#include "coll/dispatch.h"
#include "coll/register.h"
#include "coll/grow.h"
#include "coll/resilience.h"
#include "pgas/runtime.h"
#include "pgas/team_handle.h"

namespace tessera::coll {
void keep_dead_handle(void* h) {
  static std::mutex mu;
  static auto* kept = new std::vector<void*>;
  std::lock_guard lk(mu);
  kept->push_back(h);
}

namespace {
Result<tesseraComm*> new_comm(Result<Communicator*> r) {
  if (!r.is_ok()) return r.status();
  return r.value() ? new tesseraComm{kCommMagic, r.value()} : nullptr;
}
}  // namespace

Status bad_comm(const char* routine, const tesseraComm* h) {
  if (!h) return invalid_arg("{}: communicator is null", routine);
  if (h->magic == kDeadHandleMagic)
    return invalid_arg("{}: communicator {} was used after tesseraCommDestroy", routine, (const void*)h);
  return invalid_arg("{}: {} is not a communicator", routine, (const void*)h);
}
Status bad_stream(const char* routine, const tesseraStream* h) {
  return invalid_arg("{}: {} is not a stream (null, destroyed or never created)", routine, (const void*)h);
}
Status bad_graph(const char* routine, const tesseraGraph* h) {
  return invalid_arg("{}: {} is not a graph (null, destroyed or never made by tesseraStreamEndCapture)", routine,
                     (const void*)h);
}
Status bad_event(const char* routine, const tesseraEvent* h) {
  return invalid_arg("{}: {} is not an event (null, destroyed or never created)", routine, (const void*)h);
}

Result<tesseraComm*> open_world(const char* routine) {
  if (!pgas::is_initialized()) return invalid_arg("{}: call shmem_init first", routine);
  return new_comm(comm_create_team(pgas::team_world()));
}
Result<tesseraComm*> open_team(const char* routine, shmem_team_t team) {
  pgas::Team* t = pgas::team_of_handle(team);
  if (!t) return invalid_arg("{}: not a valid team", routine);
  return new_comm(comm_create_team(t));
}
Result<tesseraComm*> open_split(const char* routine, tesseraComm* parent, int color, int key) {
  TS_RETURN_IF_ERROR(check_comm(routine, parent));
  return new_comm(comm_split(parent->c, color, key));
}
Result<tesseraComm*> open_pes(const char* routine, std::vector<int> pes, uint64_t key,
                              const std::function<void()>& sync) {
  Result<Communicator*> r = comm_create_pes(std::move(pes), key, sync);
  if (!r.is_ok()) return make_status(r.status().code(), "{}: {}", routine, r.status().message());
  return new_comm(std::move(r));
}
Result<tesseraComm*> open_shrink(const char* routine, tesseraComm* parent) {
  TS_RETURN_IF_ERROR(check_comm(routine, parent));
  return new_comm(shrink(*parent->c));
}
Result<tesseraComm*> open_grow(const char* routine, tesseraComm* parent) {
  if (!parent) return new_comm(join());
  TS_RETURN_IF_ERROR(check_comm(routine, parent));
  return new_comm(grow(*parent->c));
}
void release_comm(tesseraComm* h) {
  comm_abandon(h->c);
  h->magic = kDeadHandleMagic;
  h->c = nullptr;
  keep_dead_handle(h);
}
void close_comm(tesseraComm* h) {
  comm_destroy(h->c);
  h->magic = kDeadHandleMagic;  // the handle itself is kept (a few bytes) so that late use is diagnosed
  h->c = nullptr;
  keep_dead_handle(h);
}

tesseraStream* open_stream() { return new tesseraStream{kStreamMagic, std::make_unique<Stream>()}; }
void close_stream(tesseraStream* h) {
  h->magic = kDeadHandleMagic;
  h->s.reset();  // ~Stream waits for the queue
  keep_dead_handle(h);
}
tesseraGraph* open_graph(tessera::Graph g) { return new tesseraGraph{kGraphMagic, std::move(g)}; }
void close_graph(tesseraGraph* h) {
  h->magic = kDeadHandleMagic;
  h->g = tessera::Graph();
  keep_dead_handle(h);
}
tesseraEvent* open_event() { return new tesseraEvent{kEventMagic, {}}; }
void close_event(tesseraEvent* h) {
  h->magic = kDeadHandleMagic;
  h->e = Event();
  keep_dead_handle(h);
}

Status in_use_error(const char* routine, const Communicator& c) {
  return invalid_arg("{}: {} is in use by another thread (work on a comm stream?): one thread at a time per "
                     "communicator; synchronize the stream first", routine, c.name);
}

Status run(const char* routine, Communicator& c, Kind kind, const Args& a) {
  return exclusive(routine, c, [&] {
    if (!c.sym.regions.empty() && !a.symmetric && in_registered(c, kind, a)) [[unlikely]] {
      Args in_place = a;  // registered buffers: the members' promise of register.h
      in_place.symmetric = true;
      return dispatch(c, kind, in_place);
    }
    return dispatch(c, kind, a);
  });
}

tesseraResult_t result_of(const Status& st) {
  switch (st.code()) {
    case Code::kOk: return tesseraSuccess;
    case Code::kInvalidArgument: return tesseraInvalidArgument;
    case Code::kUnsupported: return tesseraUnsupported;
    case Code::kSystem:
    case Code::kOutOfMemory: return tesseraSystemError;
    case Code::kPeerFailed: return tesseraPeerFailed;
    case Code::kRevoked: return tesseraRevoked;
    default: return tesseraInternalError;
  }
}
const char* result_text(tesseraResult_t r) {
  switch (r) {
    case tesseraSuccess: return "success";
    case tesseraInvalidArgument: return "invalid argument";
    case tesseraUnsupported: return "unsupported";
    case tesseraSystemError: return "system error";
    case tesseraInternalError: return "internal error";
    case tesseraStreamError: return "a work item of the stream failed";
    case tesseraInProgress: return "in progress";
    case tesseraPeerFailed: return "a peer failed";
    case tesseraRevoked: return "the communicator was revoked";
  }
  return "unknown result code";
}
void throw_if_error(const Status& st) {
  if (!st.is_ok()) [[unlikely]] {
    const std::string what = std::string(result_text(result_of(st))) + ": " + st.message();
    if (st.code() == Code::kPeerFailed || st.code() == Code::kRevoked) throw PeerFailure(what, st.code() == Code::kRevoked);
    throw Error(what);
  }
}

}  // namespace tessera::coll
