// shmemx_team_shrink (shmemx.h; docs/resilience.md): the team of a team's survivors.
//
// The agreement runs over the team's communicator, which resilient mode makes with the team
// (shmem_coll.h): coll::shrink agrees on the failed members and builds the survivors' communicator, which
// becomes the new team's. The survivors then agree on a sync slot free on each of them (the AND of their
// free masks, 32 bits per agreement), each makes the team on it, and a last agreement keeps every survivor
// from syncing on the team before all of them have read the slot's counters (pgas::team_from_members).
#include <shmemx.h>

#include <bit>
#include <string>
#include <vector>

#include "base/log.h"
#include "capi/handles.h"
#include "capi/last_error.h"
#include "capi/shmem_coll.h"
#include "coll/comm.h"
#include "coll/resilience.h"
#include "pgas/team.h"

using namespace tessera;

namespace {

constexpr const char* kRoutine = "shmemx_team_shrink";

// Keeps `st` for tesseraGetLastError, prefixed with the routine; SHMEMX_PEER_FAILED when a member failed.
int fail(const Status& st) {
  std::string m = st.message();
  if (m.starts_with("tesseraCommShrink: ")) m.erase(0, std::string("tesseraCommShrink: ").size());
  (void)capi::to_result(Status(st.code(), fmt::format("{}: {}", kRoutine, m)));
  return st.code() == Code::kPeerFailed ? SHMEMX_PEER_FAILED : -1;
}

// An agreement on the survivors' communicator that must see no new failure.
Status agree_all(coll::Communicator& c, int* flag) {
  std::vector<int> failed;
  TS_RETURN_IF_ERROR(coll::agree(c, flag, &failed));
  if (!failed.empty())
    return make_status(Code::kPeerFailed, "PE {} failed while the team was shrinking; shrink again", failed[0]);
  return Status::ok();
}

}  // namespace

extern "C" int shmemx_team_shrink(shmem_team_t team, shmem_team_t* new_team) {
  if (new_team) *new_team = SHMEM_TEAM_INVALID;
  if (team == SHMEM_TEAM_INVALID) return -1;
  if (!new_team) log::fatal("{}: new_team is null", kRoutine);
  pgas::Team* t = capi::team_of(kRoutine, team);
  if (t->spans_hosts)
    return fail(make_status(Code::kUnsupported, "the {} spans hosts; resilient mode runs on one host", t->describe()));
  coll::Communicator& c = capi::coll::team_comm(kRoutine, t);
  Result<coll::Communicator*> r = coll::shrink(c);
  if (!r.is_ok()) return fail(r.status());
  coll::Communicator* nc = r.value();

  const uint64_t free = ~pgas::team_slots_in_use();
  int lo = static_cast<int>(static_cast<uint32_t>(free)), hi = static_cast<int>(static_cast<uint32_t>(free >> 32));
  Status st = agree_all(*nc, &lo);
  if (st.is_ok()) st = agree_all(*nc, &hi);
  const uint64_t all_free = uint64_t{static_cast<uint32_t>(lo)} | uint64_t{static_cast<uint32_t>(hi)} << 32;
  if (st.is_ok() && all_free == 0)
    st = make_status(Code::kOutOfMemory, "all {} team slots are in use on some survivor of the {}; destroy teams "
                     "that are no longer needed", pgas::kMaxTeams, t->describe());
  if (!st.is_ok()) {
    coll::comm_destroy(nc);
    return fail(st);
  }
  pgas::Team* nt = pgas::team_from_members(nc->world, std::countr_zero(all_free), t->num_contexts, t->config_mask);
  nt->coll_state = nc;
  int done = 1;
  if (st = agree_all(*nc, &done); !st.is_ok()) {
    capi::coll::release_team_comm(nt);
    pgas::team_destroy(nt);
    return fail(st);
  }
  *new_team = capi::new_team_handle(nt);
  return 0;
}
