#include "capi/coll_group.h"

#include <shmem.h>

#include "base/config.h"
#include "base/log.h"

namespace tessera::capi::coll {
namespace {
const config::Var<bool> kCheckTeamColl{
    "TESSERA_CHECK_TEAM_COLL", true,
    "Check that every member of a team passes the same routine, counts and root to an OpenSHMEM team "
    "collective (a cache line read per call); 0 turns it off"};

// Names a routine alike on every PE without reading it: routine names are literals of this library, whose
// distance from a symbol of the same library is the same in every process of the job (ASLR moves the
// library as a whole).
uint64_t routine_id(const char* r) {
  return reinterpret_cast<uintptr_t>(r) - reinterpret_cast<uintptr_t>(&kCheckTeamColl);
}
}  // namespace

Group::Group(const char* routine, pgas::Team* t) : routine_(routine), team_(t) {
  start_ = t->start;
  stride_ = t->stride;
  size_ = t->size;
  me_ = t->my_index;
}

Group::Group(const char* routine, int pe_start, int log_stride, int pe_size, long* psync) : routine_(routine) {
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
  (void)pgas::remote(routine, psync, 3 * sizeof(long), my);  // symmetric, or a message naming the address
  psync_ = psync;
  start_ = pe_start;
  stride_ = static_cast<int>(pe_size > 1 ? stride : 1);
  size_ = pe_size;
  me_ = static_cast<int>(d / stride);
}

std::atomic<uint64_t>* Group::scratch_on(int i) const {
  char* base = pgas::rt().bases[static_cast<size_t>(world(i))];
  return reinterpret_cast<std::atomic<uint64_t>*>(base + kCollScratchOffset +
                                                  static_cast<size_t>(team_->slot) * kCollScratchBytes);
}

void Group::expect_same(const char* name_a, uint64_t a, const char* name_b, uint64_t b) {
  if (!team_ || size_ == 1 || !kCheckTeamColl.get()) return;
  name_a_ = name_a;
  name_b_ = name_b;
  a_ = a;
  b_ = b;
  call_ = ++team_->coll_calls;
  calls_on(me_).publish(call_, routine_id(routine_), a, b);
  check_pending_ = true;
}

pgas::CallRecords& Group::calls_on(int i) const {
  return pgas::reserved_of(pgas::rt().bases[static_cast<size_t>(world(i))])->team_calls[team_->slot];
}

void Group::compare_with_first() {
  check_pending_ = false;
  if (me_ == 0) return;
  uint64_t rec[3];
  const uint64_t call = calls_on(0).read(call_, rec);
  const int first = world(0);
  if (call == 0) return;  // team member 0 does not check (TESSERA_CHECK_TEAM_COLL=0 there)
  if (call != call_)
    log::fatal("{}: this is this PE's OpenSHMEM collective #{} on the team of {} PEs, but team PE 0 (PE {}) is at "
               "#{} (every member must make the same collective calls in the same order)",
               routine_, call_, size_, first, call);
  if (rec[0] != routine_id(routine_))
    log::fatal("{}: team PE 0 (PE {}) called a different collective routine at the same point (collective #{} on "
               "the team of {} PEs)", routine_, first, call_, size_);
  const uint64_t a = rec[1], b = rec[2];
  if (name_a_ && a != a_)
    log::fatal("{}: {} is {} on this PE (team PE {}) but {} on team PE 0 (PE {}); every member must pass the same",
               routine_, name_a_, static_cast<int64_t>(a_), me_, static_cast<int64_t>(a), first);
  if (name_b_ && b != b_)
    log::fatal("{}: {} is {} on this PE (team PE {}) but {} on team PE 0 (PE {}); every member must pass the same",
               routine_, name_b_, static_cast<int64_t>(b_), me_, static_cast<int64_t>(b), first);
}

void Group::barrier() {
  if (team_) {
    pgas::team_sync(team_);
    if (check_pending_) compare_with_first();
  } else {
    psync_barrier();
  }
}

void Group::psync_barrier() {
  if (size_ == 1) return;
  constexpr long kIdle = SHMEM_SYNC_VALUE;
  long* count_word = at(psync_, sizeof(long), 0);
  std::atomic_ref<long> count(*count_word);
  if (me_ == 0) {
    // Root: wait for everyone else, re-arm the counter, then release each member.
    const long want = kIdle + (size_ - 1);
    sync::wait_until([&] { return count.load(std::memory_order_acquire) == want; },
                     [&] {
                       return fmt::format("{}: active-set barrier on PEs {}..{} (stride {}): {} of {} PEs arrived "
                                          "(pSync[0] is {}, pSync {})",
                                          routine_, world(0), world(size_ - 1), stride_,
                                          count.load() - kIdle + 1, size_, count.load(), (void*)psync_);
                     });
    count.store(kIdle, std::memory_order_relaxed);
    for (int i = 1; i < size_; ++i) {
      std::atomic_ref<long>(*at(psync_ + 1, sizeof(long), i)).store(kIdle + 2, std::memory_order_release);
      sync::notify(world(i));
    }
  } else {
    count.fetch_add(1, std::memory_order_acq_rel);
    sync::notify(world(0));
    std::atomic_ref<long> flag(psync_[1]);
    sync::wait_until([&] { return flag.load(std::memory_order_acquire) != kIdle; },
                     [&] {
                       return fmt::format("{}: active-set barrier on PEs {}..{} (stride {}): waiting for PE {} to "
                                          "release it (pSync {})",
                                          routine_, world(0), world(size_ - 1), stride_, world(0), (void*)psync_);
                     });
    flag.store(kIdle, std::memory_order_relaxed);
  }
}

void Group::publish(uint64_t v) {
  published_ = true;
  if (team_) {
    scratch_on(me_)->store(v, std::memory_order_relaxed);
  } else {
    std::atomic_ref<long>(psync_[2]).store(static_cast<long>(v), std::memory_order_relaxed);
  }
}

uint64_t Group::peer_value(int i) const {
  if (team_) return scratch_on(i)->load(std::memory_order_relaxed);
  return static_cast<uint64_t>(std::atomic_ref<long>(*at(psync_ + 2, sizeof(long), i)).load(std::memory_order_relaxed));
}

void Group::finish() {
  if (psync_ && published_) std::atomic_ref<long>(psync_[2]).store(SHMEM_SYNC_VALUE, std::memory_order_relaxed);
  published_ = false;
}

size_t checked_extent(const char* routine, const void* dest, const void* source, size_t nelems, size_t elem) {
  size_t bytes = pgas::checked_bytes(routine, nelems, elem);
  if (bytes && !dest) pgas::fail_null(routine, "dest", bytes);
  if (bytes && !source) pgas::fail_null(routine, "source", bytes);
  return bytes;
}

pgas::Team* coll_team(const char* routine, shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) {
    log::warn("{}: team is SHMEM_TEAM_INVALID; nothing was done and the call returns -1", routine);
    return nullptr;
  }
  pgas::Team* t = team_of(routine, team);
  if (!t) pgas::fail_not_initialized(routine);
  return t;
}

}  // namespace tessera::capi::coll
