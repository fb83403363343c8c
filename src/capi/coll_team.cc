// Collectives on teams (OpenSHMEM 1.5 section 9.9): broadcast, collect, fcollect, alltoall, alltoalls in every
// type of the standard RMA table and the mem forms. Reductions are in coll_reduce_team.cc.
#include "capi/coll_algos.h"

using namespace tessera;
using namespace tessera::capi::coll;

namespace {

int team_broadcast(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem,
                   int root) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same("nelems", nelems, "PE_root", static_cast<uint64_t>(root));
  broadcast(g, dest, source, checked_extent(r, dest, source, nelems, elem), root, /*update_root=*/true);
  return 0;
}

int team_collect(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same();  // nelems may differ per member
  size_t bytes = pgas::checked_bytes(r, nelems, elem);
  if (bytes && !source) pgas::fail_null(r, "source", bytes);
  collect(g, dest, source, bytes);
  return 0;
}

int team_fcollect(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same("nelems", nelems);
  fcollect(g, dest, source, checked_extent(r, dest, source, nelems, elem));
  return 0;
}

int team_alltoall(const char* r, shmem_team_t team, void* dest, const void* source, size_t nelems, size_t elem) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same("nelems", nelems);
  alltoall(g, dest, source, checked_extent(r, dest, source, nelems, elem));
  return 0;
}

int team_alltoalls(const char* r, shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                   ptrdiff_t sst, size_t nelems, size_t elem) {
  pgas::Team* t = coll_team(r, team);
  if (!t) return -1;
  Group g(r, t);
  g.expect_same("nelems", nelems, "dst", static_cast<uint64_t>(dst));
  checked_extent(r, dest, source, nelems, elem);
  alltoalls(g, dest, source, dst, sst, nelems, elem);
  return 0;
}

}  // namespace

extern "C" {

#define TS_DEF_TEAM_COLL(T, N)                                                                                \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root) {        \
    return team_broadcast("shmem_" #N "_broadcast", team, dest, source, nelems, sizeof(T), PE_root);          \
  }                                                                                                           \
  int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                       \
    return team_collect("shmem_" #N "_collect", team, dest, source, nelems, sizeof(T));                       \
  }                                                                                                           \
  int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                      \
    return team_fcollect("shmem_" #N "_fcollect", team, dest, source, nelems, sizeof(T));                     \
  }                                                                                                           \
  int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems) {                      \
    return team_alltoall("shmem_" #N "_alltoall", team, dest, source, nelems, sizeof(T));                     \
  }                                                                                                           \
  int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,        \
                            size_t nelems) {                                                                  \
    return team_alltoalls("shmem_" #N "_alltoalls", team, dest, source, dst, sst, nelems, sizeof(T));         \
  }
TESSERA_RMA_TYPES(TS_DEF_TEAM_COLL)

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root) {
  return team_broadcast("shmem_broadcastmem", team, dest, source, nelems, 1, PE_root);
}
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_collect("shmem_collectmem", team, dest, source, nelems, 1);
}
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_fcollect("shmem_fcollectmem", team, dest, source, nelems, 1);
}
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return team_alltoall("shmem_alltoallmem", team, dest, source, nelems, 1);
}
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems) {
  return team_alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

}  // extern "C"
