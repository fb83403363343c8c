// Teams: ordered subsets of the job's PEs. The splits of the specification make teams of the form
// {start + i*stride : 0 <= i < size} in world numbering (every split of a strided team is strided again; the
// stride may be negative); a shrink after a failure (resilient mode, shmemx_team_shrink) makes a team of its
// survivors, which in general no stride describes: such a team lists its members.
//
// Each team owns a sync slot (layout.h): its barrier counters live in the reserved area of the team's
// first PE. A slot index is agreed by all parent members during the split (they OR their in-use masks on
// the parent's first PE), so two live teams that share a member never share a slot.
//
// Collective calls (split, sync, destroy) must be made by all members in the same order, as the
// specification says; a team object is used by one thread at a time for collectives.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "pgas/layout.h"
#include "pgas/runtime.h"
#include "sync/where.h"

namespace tessera::pgas {

struct Team {
  int start = 0, stride = 1, size = 1;  // world PEs of a strided team (members empty)
  std::vector<int> members;             // world PEs of a listed team, in team order (empty: strided)
  int my_index = 0;                     // this PE's number in the team
  int slot = 0;                         // sync slot (layout.h)
  int num_contexts = 0;                 // from shmem_team_config_t
  long config_mask = 0;
  bool predefined = false;              // world and shared cannot be destroyed
  // Barrier bookkeeping: counters at the root are monotonic; these bases were read at creation.
  uint64_t arrive_base = 0, gen_base = 0, epoch = 0;
  uint64_t split_count = 0;
  // The program's own barriers and syncs on the team (ProgramSync), for deadline messages: `epoch` also
  // counts the syncs that shmem_init, allocations, splits and collectives make.
  uint64_t program_syncs = 0;
  const char* program_call = nullptr;   // the routine of the sync in progress, when the program called it
  void* coll_state = nullptr;           // owned by the collective layer (spec collectives, comms)
  // More PEs than CPUs, every member bound to one CPU: the other members bound to this PE's CPU, whose
  // arrival a barrier waits for first (team.cc). Learned on entry to the first barrier that finds every
  // member's CPU published (sync::PeWaitWords::cpu_plus1): the team's second barrier at the latest.
  std::vector<int> same_cpu;
  bool cpus_learned = false;
  bool unbound_here = false;           // this PE is not bound to one CPU: barriers yield on every poll
  // Some member has no mapping (another host): syncs run the dissemination barrier on every member's own
  // words (TeamSync::rounds, read at creation into round_base) through the members' transports.
  bool spans_hosts = false;
  uint64_t round_base[kMaxSyncRounds] = {};
  // Resilient mode: a sync of the team (shmem_team_sync) stopped because a member failed. The members no
  // longer agree on the team's sync count, so every later sync fails at once; shmemx_team_shrink and
  // shmem_team_destroy still work.
  bool broken = false;

  int world_pe(int i) const { return members.empty() ? start + i * stride : members[static_cast<size_t>(i)]; }
  // Team number of world PE `pe`, or -1 when not a member.
  // The stride may be negative (a team listed in decreasing parent order); a team of one PE has stride 1.
  int index_of(int pe) const {
    if (!members.empty()) {
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i] == pe) return static_cast<int>(i);
      return -1;
    }
    int d = pe - start;
    if (stride == 0) return d == 0 ? 0 : -1;
    if (d % stride != 0) return -1;
    int i = d / stride;
    return i >= 0 && i < size ? i : -1;
  }
  TeamSync* root_sync() const { return &reserved_of(rt().bases[static_cast<size_t>(world_pe(0))])->teams[slot]; }
  TeamSync* sync_on(int index) const {
    return &reserved_of(rt().bases[static_cast<size_t>(world_pe(index))])->teams[slot];
  }
  // The stride the hang report reads (sync/where.h): 0 for a listed team, whose members it cannot name.
  int where_stride() const { return members.empty() ? stride : 0; }
  std::string describe() const;
};

// Labels the team's next sync as the program's own call (shmem_barrier_all, shmem_team_sync, ...), so that
// a deadline names that call and counts the program's barriers, not the library's; and records it as the
// call this PE is in (sync/where.h) with the team sync number it will wait in, the same on every member.
class ProgramSync {
 public:
  ProgramSync(Team* t, const char* name, sync::Call call)
      : t_(t), where_(call, 0, t->epoch + 1, 0, t->world_pe(0), t->where_stride(), t->size) {
    ++t->program_syncs;
    t->program_call = name;
  }
  ~ProgramSync() { t_->program_call = nullptr; }
  ProgramSync(const ProgramSync&) = delete;
  ProgramSync& operator=(const ProgramSync&) = delete;

 private:
  Team* t_;
  sync::WhereScope where_;
};

Team* team_world();
Team* team_shared();

void teams_init();
void teams_fini();

// Barrier without memory ordering of puts (shmem_team_sync / shmem_sync_all). In resilient mode a failed
// member ends the job, naming it: the callers have no error to return.
void team_sync(Team* team);
// The same for callers that return an error (shmem_team_sync): in resilient mode a failed member, now or
// in the sync's wait, gives kPeerFailed naming it and leaves the team broken; a broken team fails at once.
Status team_sync_or_error(Team* team);
// Quiet, then team_sync (shmem_barrier_all on the world team).
void team_barrier(Team* team);

// Splits: collective over the parent. *out is null for PEs outside the new team. Errors (bad arguments,
// no free slot) are returned on every parent member alike.
Status team_split_strided(Team* parent, int start, int stride, int size, int num_contexts, long config_mask,
                          Team** out);
Status team_split_2d(Team* parent, int xrange, int num_contexts_x, long mask_x, int num_contexts_y,
                     long mask_y, Team** xteam, Team** yteam);
// Collective over the team's members; the world and shared teams are not destroyed. In resilient mode a
// team that is broken or has a failed member is destroyed by each survivor alone (no sync), and its sync
// slot stays taken for the rest of the job: a survivor that has not noticed the failure yet may still
// arrive in it.
void team_destroy(Team* team);

// For a shrink (capi/team_shrink.cc), which agrees over the survivors' communicator: the sync slots this
// PE's live teams take (bit i: slot i), and the team of `members` (world PEs; this PE among them) on a slot
// free on every member. The caller syncs the members after every member made it and before any uses it.
uint64_t team_slots_in_use();
Team* team_from_members(std::vector<int> members, int slot, int num_contexts, long config_mask);

// PE number of src_pe of `src` in `dst`, or -1.
int team_translate(const Team* src, int src_pe, const Team* dst);

}  // namespace tessera::pgas
