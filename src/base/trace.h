// Timeline tracing (TESSERA_TRACE=DIR): what each thread of a PE did and when, for a Chrome/Perfetto trace.
//
// Off by default. Every recording site tests g_on first and does nothing else when it is false: one load of
// a global that never changes after init and one predictable branch. Sites on hot paths record only on
// their slow path (a wait past its eager polls, a transfer large enough for the copy engine).
//
// On, each thread appends fixed-size binary events to a buffer of its own (no lock, no allocation after
// the thread's first event; full buffers drop further events and count them). Timestamps are fast_now_ns()
// (base/cpu.h), CLOCK_MONOTONIC nanoseconds, which every process of a host shares, so the PEs of a host line
// up on one time axis. finalize() (and, failing that, exit) writes DIR/pe<rank>.<pid>.trace; tessera-run
// merges a job's files into DIR/trace.json (tools/run/trace_merge.h, which also reads this format).
//
// Names, details and argument keys are pointers to strings that live as long as the process: literals, or
// intern() for text built at run time. Thread-safe: buffers are per thread; flush() reads each buffer's
// published event count (release/acquire), so it sees whole events only.
//
// File format (text, one record a line, fields separated by tabs):
//   tessera-trace 1 <pe> <pid> <dropped events>
//   T <tid> <thread name>
//   E <tid> <ph: X complete, i instant> <category> <ts ns> <dur ns> <name> <detail> <key0> <arg0> <key1> <arg1>
// An empty detail or key is written as "-".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "base/cpu.h"

namespace tessera::trace {

// True once init() found TESSERA_TRACE set; read without synchronisation (written before any PE thread
// starts, never changed afterwards).
inline bool g_on = false;

enum class Cat : uint8_t { kRma, kWait, kColl, kStream, kBucket, kKernel, kCount };
const char* cat_name(Cat c);

// Reads TESSERA_TRACE; when set, turns tracing on for this process as PE `pe` (creating DIR if needed) and
// arranges a flush at exit. Called once by the PGAS init, before other threads of the PE exist.
void init(int pe);
// Writes this process's events to DIR/pe<rank>.<pid>.trace (once; later calls do nothing). Called by the
// PGAS finalize after the PE's threads stop, and at exit.
void flush();
// The directory named by TESSERA_TRACE ("" when unset).
const std::string& dir();

inline uint64_t now() { return fast_now_ns(); }

// Names the calling thread's track ("main", "comm stream 2", "copy engine", "kernel block 3"). Only when
// tracing is on: callers test g_on.
void name_thread(std::string_view name);
// A copy of `s` that lives until exit (one copy per distinct text; past a bound, a shared "(more names)").
const char* intern(std::string_view s);

struct Args {
  const char* k0 = nullptr;
  int64_t a0 = 0;
  const char* k1 = nullptr;
  int64_t a1 = 0;
};
// A span [start, end) of this thread. Call only when g_on.
void complete(Cat c, const char* name, uint64_t start, uint64_t end, const char* detail = nullptr, Args args = {});
// A moment on this thread. Call only when g_on.
void instant(Cat c, const char* name, const char* detail = nullptr, Args args = {});

// A span from construction to destruction; costs one test of g_on each way when off.
class Scope {
 public:
  Scope(Cat c, const char* name, const char* detail = nullptr, Args args = {})
      : start_(g_on ? now() : 0), cat_(c), name_(name), detail_(detail), args_(args) {}
  ~Scope() {
    if (start_) [[unlikely]] complete(cat_, name_, start_, now(), detail_, args_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  void set_arg1(const char* k, int64_t v) { args_.k1 = k, args_.a1 = v; }

 private:
  uint64_t start_;
  Cat cat_;
  const char* name_;
  const char* detail_;
  Args args_;
};

// One event per wait that left its eager polls: from `start` (the slow path's entry) to the end, naming
// the last phase the wait reached. The waits of src/sync set `phase` as they move on.
enum WaitPhase : uint8_t { kSpin, kYield, kSleep };
void wait_done(uint64_t start, WaitPhase phase);
struct WaitSpan {
  uint64_t start;
  WaitPhase phase = kSpin;
  ~WaitSpan() {
    if (g_on) [[unlikely]] wait_done(start, phase);
  }
};

// Steps of a collective on this thread: coll_begin() marks the call's start, coll_step(t) (the engine, as
// step t finishes: Exec::end finishes the last) records step t as the span since the previous mark,
// coll_end() records the whole call, named by its kind, with the algorithm as detail.
uint64_t coll_begin();
void coll_step(uint64_t t);
void coll_end(uint64_t start, const char* kind, const char* algo, uint64_t bytes, uint64_t steps);

}  // namespace tessera::trace
