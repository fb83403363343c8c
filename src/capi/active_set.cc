// Deprecated active sets as communicators of the engine (active_set.h): argument checks, the set-up
// barrier through the pSync, the sets' communicators and each thread's memory of its last set.
#include "capi/active_set.h"

#include <shmem.h>

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "base/log.h"
#include "coll/comm.h"
#include "pgas/amo.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"
#include "sync/barrier_forms.h"
#include "sync/wait.h"
#include "sync/where.h"

using tessera::coll::Communicator;

namespace tessera::capi::coll {
namespace {

// An active set: the members {start + i*stride}, this PE's index among them, and its pSync.
struct Set {
  int start, stride, size, me;
  long* psync;
};

Set check_set(const char* routine, int pe_start, int log_stride, int pe_size, long* psync) {
  if (!pgas::is_initialized()) pgas::fail_not_initialized(routine);
  const int n = pgas::rt().n_pes, my = pgas::rt().my_pe;
  if (pe_start < 0 || pe_start >= n)
    log::fatal("{}: PE_start {} is outside the job's PEs 0..{}", routine, pe_start, n - 1);
  if (log_stride < 0 || log_stride > 30)
    log::fatal("{}: logPE_stride {} is out of range 0..30", routine, log_stride);
  if (pe_size < 1 || pe_size > n)
    log::fatal("{}: PE_size {} is out of range 1..{} (the job has {} PEs)", routine, pe_size, n, n);
  const int64_t stride = int64_t{1} << log_stride;
  const int64_t last = pe_start + stride * (pe_size - 1);
  if (last >= n)
    log::fatal("{}: the active set (PE_start {}, logPE_stride {}, PE_size {}) ends at PE {}, beyond the job's "
               "last PE {}", routine, pe_start, log_stride, pe_size, last, n - 1);
  const int64_t d = my - pe_start;
  if (d < 0 || d % stride != 0 || d / stride >= pe_size)
    log::fatal("{}: PE {} is not a member of the active set (PE_start {}, logPE_stride {}, PE_size {})", routine,
               my, pe_start, log_stride, pe_size);
  if (!psync) log::fatal("{}: pSync is a null pointer", routine);
  (void)pgas::remote(routine, psync, 2 * sizeof(long), my);  // in symmetric memory (then on every member)
  return Set{pe_start, static_cast<int>(pe_size > 1 ? stride : 1), pe_size, static_cast<int>(d / stride), psync};
}

// The barrier that makes an active set's communicator (twice, once per set): the counter form of
// sync/barrier_forms.h with member 0 as the opener. Member 0's pSync[0] counts arrivals, every other
// member's pSync[1] is its release flag; each word is back at SHMEM_SYNC_VALUE before anyone can touch it
// again, so the pSync is restored on return, as the specification requires (which is why the opener is
// fixed: a gate opened by the last arrival would need a word that stays changed).
void psync_barrier(const char* routine, const Set& s) {
  if (s.size == 1) return;
  constexpr long kIdle = SHMEM_SYNC_VALUE;
  // Word 0 on the set's first PE counts arrivals; word 1 on each other member is its release flag. Both
  // through the members' transports (atomics on this host's mappings, remote atomics from another host).
  std::atomic_ref<long> count(s.psync[0]), flag(s.psync[1]);
  auto where = [&] { return fmt::format("{}: setting up the active set on PEs {}..{} (stride {}, pSync {})", routine, s.start,
                                        s.start + (s.size - 1) * s.stride, s.stride, (void*)s.psync); };
  // Member 0 opens once every other member has added itself; the others add themselves and return false.
  auto arrive = [&] {
    if (s.me != 0) {
      (void)pgas::atomic_fetch_add(routine, s.psync, 1L, s.start);
      return false;
    }
    const long want = kIdle + (s.size - 1);
    sync::wait_until([&] { return count.load(std::memory_order_acquire) == want; },
                     [&] { return fmt::format("{}: {} of {} PEs arrived", where(), count.load() - kIdle + 1, s.size); });
    count.store(kIdle, std::memory_order_relaxed);
    return true;
  };
  auto open = [&] {
    for (int i = 1; i < s.size; ++i) pgas::atomic_set(routine, s.psync + 1, kIdle + 2, s.start + i * s.stride);
  };
  auto wait_open = [&] {
    sync::wait_until([&] { return flag.load(std::memory_order_acquire) != kIdle; },
                     [&] { return fmt::format("{}: waiting for PE {} to release it", where(), s.start); });
    flag.store(kIdle, std::memory_order_relaxed);
  };
  sync::barrier::counter(arrive, open, wait_open);
}

// Active sets' communicators, made on first use and kept until finalize (release_set_comms), shared by
// the PE's threads. The lock is not held while a communicator is made, which waits for the set's other
// PEs: a thread making one set must not hold up a thread of the same PE that another set's PEs wait for.
std::mutex g_sets_mu;
std::map<std::tuple<int, int, int>, Communicator*> g_sets;  // by (start, stride, size)
std::atomic<uint64_t> g_sets_epoch{1};                      // advanced at finalize: every thread forgets

Communicator& set_comm(const char* routine, const Set& s) {
  const std::tuple<int, int, int> key{s.start, s.stride, s.size};
  Communicator* c = nullptr;
  {
    std::lock_guard lk(g_sets_mu);
    if (auto it = g_sets.find(key); it != g_sets.end()) c = it->second;
  }
  if (!c) [[unlikely]] {
    // One thread at a time uses a given set (its pSync), so no other thread of this PE makes this one.
    // Recorded for the hang report: the set's barrier waits for every member's first call on it.
    sync::WhereScope where(sync::Call::kSetSetup, 0, 0, 0, s.start, s.stride, s.size);
    Result<Communicator*> r =
        tessera::coll::comm_create_set(s.start, s.stride, s.size, [&] { psync_barrier(routine, s); });
    if (!r.is_ok()) log::fatal("{}: cannot make a communicator for the active set: {}", routine, r.status().message());
    c = r.value();
    std::lock_guard lk(g_sets_mu);
    g_sets[key] = c;
  }
  return *c;
}

// Each thread remembers the set it used last and the last two pSyncs it passed with it (the specification
// has consecutive calls alternate between two): the same arguments again skip the checks, which they
// passed in the same job (the epoch moves at finalize), the lock and the lookup.
struct LastSet {
  uint64_t epoch = 0;
  int start = 0, log_stride = 0, size = 0;
  long* psync[2] = {nullptr, nullptr};  // both checked (never null once set)
  Communicator* comm = nullptr;
};
thread_local LastSet t_last_set;

}  // namespace

Communicator& set_of(const char* r, int start, int log_stride, int size, long* psync) {
  LastSet& last = t_last_set;
  const uint64_t epoch = g_sets_epoch.load(std::memory_order_relaxed);
  if (last.epoch == epoch && last.start == start && last.log_stride == log_stride && last.size == size) [[likely]] {
    if (psync == last.psync[0] || psync == last.psync[1]) [[likely]] return *last.comm;
    (void)check_set(r, start, log_stride, size, psync);  // a new pSync for the same set
    last.psync[1] = last.psync[0];
    last.psync[0] = psync;
    return *last.comm;
  }
  Communicator& c = set_comm(r, check_set(r, start, log_stride, size, psync));
  last = LastSet{.epoch = epoch, .start = start, .log_stride = log_stride, .size = size, .psync = {psync, psync},
                 .comm = &c};
  return c;
}

void release_set_comms() {
  // The world communicator's barrier, or finalize's own, is past every collective; the segments were
  // unlinked when made, so unmapping needs no barrier.
  std::lock_guard lk(g_sets_mu);
  for (auto& [key, c] : g_sets) tessera::coll::comm_abandon(c);
  g_sets.clear();
  g_sets_epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tessera::capi::coll
