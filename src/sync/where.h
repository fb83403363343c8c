// Where each PE is: the blocking call it is in now and its last blocking calls, kept in the job's control
// segment (pgas::JobControl) so that the launcher can read every PE's state when a wait passes its deadline
// and print one report for the whole job (tools/run/hang_report.h).
//
// Recorded: the program's barriers and syncs (pgas::ProgramSync), collectives (coll::dispatch), an active
// set's first call (its set-up, capi/shmem_coll.cc), point-to-point waits (pgas::wait_until, which signal
// waits use too). Puts, gets and atomics are not recorded: they
// do not block, and recording them would cost the smallest operations a visible share of their time.
// A call made from inside another recorded call (a collective's internal barrier) is not recorded: the
// outer call is what the program is in.
//
// Writers: only the PE itself, with relaxed stores to lines that no other PE touches, so recording costs a
// few stores and one fast clock read per blocking call, and no cache line moves between PEs. Two threads of
// one PE in recorded calls at once overwrite each other's entries: the area describes one of them.
// Readers: the launcher, after the job started to end (JobControl::abort). A PE that sees the abort word (or
// whose own deadline expired) while it waits writes its own description of the wait (`detail`) and then
// sets `settled` with a release store; the launcher reads `detail` only after it saw `settled` (acquire).
// The fields of a ring entry are read without a lock: an entry being rewritten at that moment may mix two
// calls, which a diagnostic can afford.
//
// Times are CLOCK_MONOTONIC nanoseconds (fast_now_ns), comparable between the processes of one host.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

#include "base/cpu.h"

namespace tessera::sync {

// The kinds of recorded call; call_name() gives the routine the report prints.
enum class Call : uint16_t {
  kNone = 0,
  kBarrierAll,   // shmem_barrier_all
  kSyncAll,      // shmem_sync_all
  kTeamSync,     // shmem_team_sync
  kCollective,   // any collective (detail: coll::Kind)
  kWaitUntil,    // shmem_*_wait_until, shmem_*_wait, shmem_signal_wait_until
  kSetSetup,     // the first call on an active set: its communicator is made (a barrier on the pSync)
  kNumCalls
};
const char* call_name(Call c);

inline constexpr int kWhereCalls = 8;  // last calls kept per PE

// One recorded call. team_size 0: not a call over a team; team_stride 0 with team_size > 0: the members are
// not an arithmetic progression of world PEs (the report cannot tell which members are missing).
struct WhereEntry {
  std::atomic<uint16_t> call{0};     // Call
  std::atomic<uint16_t> detail{0};   // coll::Kind of a collective
  std::atomic<int32_t> team_start{0};
  std::atomic<int32_t> team_stride{0};
  std::atomic<int32_t> team_size{0};
  std::atomic<uint64_t> seq{0};      // team sync or collective number, the same on every member
  std::atomic<uint64_t> arg{0};      // bytes of a collective's per-PE payload; symmetric offset of a waited word
  std::atomic<uint64_t> start_ns{0};
};
static_assert(sizeof(WhereEntry) == 40);

// The area of one PE (a whole number of cache lines).
struct alignas(kCacheLine) PeWhere {
  std::atomic<uint64_t> calls{0};    // calls recorded; the latest is ring[(calls - 1) % kWhereCalls]
  std::atomic<uint32_t> in_call{0};  // 1 while the latest is running
  std::atomic<uint32_t> settled{0};  // 1: `detail` holds this PE's own text about its wait, at the job's end
  WhereEntry ring[kWhereCalls];
  char detail[304];                  // NUL-terminated; written once, before `settled`
};
inline constexpr size_t kDetailBytes = sizeof(PeWhere::detail);
static_assert(sizeof(PeWhere) % kCacheLine == 0);

// Installed by the PGAS layer at init (null before: nothing is recorded).
struct WhereContext {
  PeWhere* all = nullptr;                    // one per PE of the job
  PeWhere* mine = nullptr;
  std::atomic<uint32_t>* deadline = nullptr;  // JobControl::deadline_pe: first PE whose wait expired, + 1
  int my_pe = 0;
};
extern WhereContext g_where;
void set_where_context(const WhereContext& ctx);

// Records the start of a call; false (nothing recorded) when this PE is already in a recorded call.
inline bool where_begin(Call call, uint16_t detail, uint64_t seq, uint64_t arg, int start, int stride, int size) {
  PeWhere* w = g_where.mine;
  if (!w || w->in_call.load(std::memory_order_relaxed)) return false;
  const uint64_t n = w->calls.load(std::memory_order_relaxed);
  WhereEntry& e = w->ring[n % kWhereCalls];
  e.call.store(static_cast<uint16_t>(call), std::memory_order_relaxed);
  e.detail.store(detail, std::memory_order_relaxed);
  e.team_start.store(start, std::memory_order_relaxed);
  e.team_stride.store(stride, std::memory_order_relaxed);
  e.team_size.store(size, std::memory_order_relaxed);
  e.seq.store(seq, std::memory_order_relaxed);
  e.arg.store(arg, std::memory_order_relaxed);
  e.start_ns.store(fast_now_ns(), std::memory_order_relaxed);
  w->calls.store(n + 1, std::memory_order_relaxed);
  w->in_call.store(1, std::memory_order_relaxed);
  return true;
}
inline void where_end(bool recorded) {
  if (recorded) g_where.mine->in_call.store(0, std::memory_order_relaxed);
}

// The scope of one recorded call.
class WhereScope {
 public:
  WhereScope(Call call, uint16_t detail, uint64_t seq, uint64_t arg, int start = 0, int stride = 0, int size = 0)
      : recorded_(where_begin(call, detail, seq, arg, start, stride, size)) {}
  ~WhereScope() { where_end(recorded_); }
  WhereScope(const WhereScope&) = delete;
  WhereScope& operator=(const WhereScope&) = delete;

 private:
  bool recorded_;
};

// A waiter that is about to end: writes `what` (its description of the wait, first line) as this PE's
// detail and marks the area settled. deadline: its own wait expired, which it records in
// JobControl::deadline_pe if no PE did before. Cold path; safe to call more than once (the first text stays).
void where_settle(std::string_view what, bool deadline);

}  // namespace tessera::sync
