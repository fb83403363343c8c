// The PE sets the specification's collectives run over, and how their members synchronise.
//
// A collective runs over a Group: {start + i*stride : 0 <= i < size} in world numbering, either a team
// (shmem_team_t) or a deprecated active set (PE_start, logPE_stride, PE_size, pSync). Both offer the same
// three operations to the algorithms in coll_algos.h:
//   barrier()        every member has arrived; stores a member made before it are visible to every member
//                    after it (acq_rel atomics; no quiet: collectives complete their own stores);
//   publish(v)       makes a small value readable by every member after the next barrier and until the
//                    barrier after that (collect's element counts);
//   peer_value(i)    the value member i published.
//
// Teams also check that every member made the same call (on by default, TESSERA_CHECK_TEAM_COLL=0 turns it
// off): expect_same() names the routine and up to two arguments every member must pass alike (a count, a
// root); the first barrier() publishes them in the member's scratch line and, once it opens, compares them
// with team member 0's, ending the job with a message naming the argument, both values and both PEs. The
// records (pgas::CallRecords in each member's reserved area, per team slot) alternate by parity of the
// team's call count. Costs a cache line read per call; no extra barrier.
//
// Teams synchronise with pgas::team_sync (the team's slot counters) and publish into a per-slot scratch
// line in the reserved area of each PE's own segment (kCollScratchOffset): slots are agreed so that two live
// teams sharing a member never share one, and every PE maps the area at init, so nothing is allocated and
// the heap's deterministic allocation sequence is untouched.
//
// Active sets synchronise through the caller's pSync (SHMEM_SYNC_SIZE longs, all SHMEM_SYNC_VALUE on entry,
// restored on return, reusable back to back by the same set): member 0's pSync[0] counts arrivals, each other
// member's pSync[1] is its release flag, pSync[2] carries the published value. Each word is reset by its
// owner before anyone can touch it again, so two barriers in a row over the same pSync are safe.
//
// Errors end the job with one message naming the routine, the value and the limit.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "capi/handles.h"
#include "pgas/layout.h"
#include "pgas/rma.h"
#include "pgas/runtime.h"
#include "pgas/team.h"
#include "sync/wait.h"

namespace tessera::capi::coll {

// Per-slot scratch of the spec collectives: Reserved::coll_scratch (pgas/layout.h).
using pgas::kCollScratchBytes;
inline constexpr size_t kCollScratchOffset = offsetof(pgas::Reserved, coll_scratch);

class Group {
 public:
  // A team's collective. `routine` names the caller in messages.
  Group(const char* routine, pgas::Team* t);
  // A deprecated active set; checks the triplet against the job and that the caller is a member.
  Group(const char* routine, int pe_start, int log_stride, int pe_size, long* psync);

  int size() const { return size_; }
  int me() const { return me_; }
  int world(int i) const { return start_ + i * stride_; }
  const char* routine() const { return routine_; }

  void barrier();
  // The call's arguments every member must pass alike, checked with the first barrier (teams only).
  void expect_same(const char* name_a = nullptr, uint64_t a = 0, const char* name_b = nullptr, uint64_t b = 0);
  void publish(uint64_t v);
  uint64_t peer_value(int i) const;
  // Restores what the collective changed in pSync (active sets); nothing for teams.
  void finish();

  // Address of symmetric `sym` (spanning `bytes`) on member i; checked like any RMA.
  template <typename T>
  T* at(const T* sym, size_t bytes, int i) const {
    return reinterpret_cast<T*>(pgas::remote(routine_, sym, bytes, world(i)));
  }

 private:
  std::atomic<uint64_t>* scratch_on(int i) const;
  void psync_barrier();
  void compare_with_first();
  pgas::CallRecords& calls_on(int i) const;  // member i's team-collective records for this team's slot

  const char* routine_;
  pgas::Team* team_ = nullptr;
  long* psync_ = nullptr;
  int start_ = 0, stride_ = 1, size_ = 1, me_ = 0;
  bool published_ = false;
  bool check_pending_ = false;
  const char* name_a_ = nullptr;
  const char* name_b_ = nullptr;
  uint64_t a_ = 0, b_ = 0, call_ = 0;
};

// Checks shared by every collective: the byte count of `nelems` elements does not overflow, and a null
// buffer comes with a size of zero.
size_t checked_extent(const char* routine, const void* dest, const void* source, size_t nelems, size_t elem);

// Team behind a handle for a collective; null for SHMEM_TEAM_INVALID (the caller returns -1 after a warning),
// a fatal error for a destroyed or forged handle.
pgas::Team* coll_team(const char* routine, shmem_team_t team);

}  // namespace tessera::capi::coll
