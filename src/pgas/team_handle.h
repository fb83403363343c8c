// The handle behind the public shmem_team_t (shmem.h). The C API creates and destroys team handles; the
// collective layer reads them too (tesseraCommInitTeam, Comm::from_team), so the definition lives below
// both. A destroyed handle keeps its storage with its magic overwritten (capi/handles.h), so reading a
// stale handle is diagnosed rather than undefined.
#pragma once
#include <cstdint>

#include "pgas/team.h"

struct tessera_team {
  uint32_t magic;
  tessera::pgas::Team* team;
};

namespace tessera::pgas {

inline constexpr uint32_t kTeamMagic = 0x7ea3a11e;

// The team behind a live handle; null for a null, destroyed or forged handle, and for a predefined team
// (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED) before shmem_init.
inline Team* team_of_handle(const tessera_team* h) { return h && h->magic == kTeamMagic ? h->team : nullptr; }

}  // namespace tessera::pgas
