#include "capi/coll_route.h"

#include "base/config.h"

namespace tessera::capi::coll {
namespace {
// Off by default: on symmetric buffers the direct algorithm, which reads peers' buffers in place, measured
// faster than the library, which stages user buffers (docs/openshmem.md).
const config::Var<uint64_t> kRouteMin{
    "TESSERA_SHMEM_COLL_MIN", uint64_t{0},
    "OpenSHMEM team reductions of at least this many bytes run in the collective library (src/coll) "
    "instead of the direct shared-memory algorithm; 0 (the default) never routes"};
}  // namespace

size_t route_min_bytes() {
  uint64_t v = kRouteMin.get();
  return v == 0 ? SIZE_MAX : v;
}

tesseraComm_t team_comm(const char* routine, pgas::Team* t, shmem_team_t handle) {
  if (!t->coll_state) {
    tesseraComm_t comm = nullptr;
    if (tesseraCommInitTeam(handle, &comm) != tesseraSuccess)
      log::fatal("{}: cannot make a communicator for the {}: {}", routine, t->describe(), tesseraGetLastError());
    t->coll_state = comm;
  }
  return static_cast<tesseraComm_t>(t->coll_state);
}

void release_team_comm(pgas::Team* t) {
  if (!t || !t->coll_state) return;
  tesseraCommDestroy(static_cast<tesseraComm_t>(t->coll_state));
  t->coll_state = nullptr;
}

}  // namespace tessera::capi::coll
