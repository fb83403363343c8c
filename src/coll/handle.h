// The handles behind coll.h's opaque tesseraComm_t, tesseraStream_t and tesseraEvent_t, and the entry to
// the engine that both public APIs share. The C API (capi/coll_api.cc) and the C++ API (coll/api.cc) sit
// side by side on these functions; neither calls the other. Each returns a Status whose message starts with
// the C routine's name it was given (the C++ forms pass the C name of the same call), whichever layer found
// the error: run() makes it the communicator's caller, which dispatch names. The C API turns the Status
// into a result code and its message into the last-error text ("tesseraAllReduce: send buffer is null with
// a count of 1"); the C++ API throws it (throw_if_error) with the result's text in front ("invalid
// argument: tesseraAllReduce: send buffer is null with a count of 1").
//
// A handle carries a magic word that destroy overwrites; destroyed handles are kept (never freed, and
// reachable, so leak checkers stay quiet), so late use is reported by the checks below ("was used after
// tesseraCommDestroy") instead of dereferencing a dangling pointer.
//
// Thread safety: the checks and constructors may be called from any thread; a communicator is used by one
// thread at a time, which run() enforces for the calls it sees (Communicator::in_use).
#pragma once
#include <tessera/coll.hpp>

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "coll/algo.h"
#include "coll/comm.h"

struct tesseraComm {
  uint64_t magic;
  tessera::coll::Communicator* c;
};
struct tesseraStream {
  uint64_t magic;
  std::unique_ptr<tessera::coll::Stream> s;
};
struct tesseraEvent {
  uint64_t magic;
  tessera::coll::Event e;
};
struct tesseraGraph {
  uint64_t magic;
  tessera::Graph g;
};

namespace tessera::coll {

inline constexpr uint64_t kCommMagic = 0x7e55c0aa'11c0ffeeull;
inline constexpr uint64_t kStreamMagic = 0x57e4a0c0'11c0ffeeull;
inline constexpr uint64_t kEventMagic = 0xe7e47c0c'11c0ffeeull;
inline constexpr uint64_t kGraphMagic = 0x69a9c0aa'11c0ffeeull;
inline constexpr uint64_t kDeadHandleMagic = 0xdeadc0aa'deadbeefull;

// Destroyed handles stay listed, reachable (above); each kind's close calls this once its magic is dead.
void keep_dead_handle(void* h);

Status bad_comm(const char* routine, const tesseraComm* h);
Status bad_stream(const char* routine, const tesseraStream* h);
Status bad_event(const char* routine, const tesseraEvent* h);

// OK for a live handle; otherwise an invalid-argument Status naming `routine` and what the handle is
// (null, destroyed, or never a handle of that kind).
inline Status check_comm(const char* routine, const tesseraComm* h) {
  if (h && h->magic == kCommMagic) [[likely]] return {};
  return bad_comm(routine, h);
}
inline Status check_stream(const char* routine, const tesseraStream* h) {
  if (h && h->magic == kStreamMagic) [[likely]] return {};
  return bad_stream(routine, h);
}
Status bad_graph(const char* routine, const tesseraGraph* h);
inline Status check_graph(const char* routine, const tesseraGraph* h) {
  if (h && h->magic == kGraphMagic) [[likely]] return {};
  return bad_graph(routine, h);
}
inline Status check_event(const char* routine, const tesseraEvent* h) {
  if (h && h->magic == kEventMagic) [[likely]] return {};
  return bad_event(routine, h);
}

// Communicator handles. The three constructors are collective as their communicators are (comm.h); split
// gives null for color < 0. close_comm is collective too, and takes a live handle.
Result<tesseraComm*> open_world(const char* routine);
Result<tesseraComm*> open_team(const char* routine, shmem_team_t team);
Result<tesseraComm*> open_split(const char* routine, tesseraComm* parent, int color, int key);
Result<tesseraComm*> open_pes(const char* routine, std::vector<int> pes, uint64_t key,
                              const std::function<void()>& sync);
void close_comm(tesseraComm* h);
// The communicator of the survivors of `parent` (resilience.h: shrink).
Result<tesseraComm*> open_shrink(const char* routine, tesseraComm* parent);
// The communicator of `parent`'s survivors and the replacements that join (grow.h); a replacement passes null.
Result<tesseraComm*> open_grow(const char* routine, tesseraComm* parent);
// Not collective: this member's part only (comm_abandon).
void release_comm(tesseraComm* h);

// Stream and event handles (not collective). Closing a stream waits for its queue (~Stream).
tesseraStream* open_stream();
void close_stream(tesseraStream* h);
tesseraEvent* open_event();
void close_event(tesseraEvent* h);
tesseraGraph* open_graph(tessera::Graph g);
void close_graph(tesseraGraph* h);

// Runs f() as the communicator's one call at a time: a call that finds the communicator in use (by a comm
// stream's work, say) fails with a message saying so. `routine` is the communicator's caller meanwhile, the
// name dispatch's errors give.
Status in_use_error(const char* routine, const Communicator& c);
template <typename F>
auto exclusive(const char* routine, Communicator& c, F&& f) -> decltype(f()) {
  if (c.in_use.load(std::memory_order_relaxed)) [[unlikely]] return in_use_error(routine, c);
  c.in_use.store(true, std::memory_order_relaxed);
  c.caller = routine;
  auto st = f();
  c.caller = nullptr;
  c.in_use.store(false, std::memory_order_release);
  return st;
}

// Runs one collective on `c` through dispatch, under exclusive().
Status run(const char* routine, Communicator& c, Kind kind, const Args& a);

// The public result code of a Status, and the text of a result code (tesseraGetErrorString).
tesseraResult_t result_of(const Status& st);
const char* result_text(tesseraResult_t r);
// The C++ API's form of a failure: throws tessera::coll::Error("<result text>: <message>") unless ok.
void throw_if_error(const Status& st);

}  // namespace tessera::coll
