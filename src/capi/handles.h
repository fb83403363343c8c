// Handles behind the C API's opaque shmem_team_t and shmem_ctx_t.
//
// A handle carries a magic word that destroy clears; handles are never freed, so a destroyed or forged
// handle is reported ("used after shmem_team_destroy") instead of being dereferenced as a dangling pointer.
#pragma once
#include <shmem.h>

#include <cstdint>

#include "pgas/team.h"
#include "pgas/team_handle.h"  // struct tessera_team

struct tessera_ctx {
  uint32_t magic;
  long options;
  shmem_team_t team;
  int sessions = 0;  // shmem_session_start calls not yet stopped (atomic_ref: a context may be shared)
};

namespace tessera::capi {

using pgas::kTeamMagic;
inline constexpr uint32_t kCtxMagic = 0xc0c7e47a;
inline constexpr uint32_t kDeadMagic = 0xdeadbeef;

[[noreturn]] void fail_team(const char* routine, shmem_team_t team);
[[noreturn]] void fail_ctx(const char* routine, shmem_ctx_t ctx);

inline pgas::Team* team_of(const char* routine, shmem_team_t t) {
  if (!t || t->magic != kTeamMagic) [[unlikely]] fail_team(routine, t);
  return t->team;
}
inline void check_ctx(const char* routine, shmem_ctx_t c) {
  if (!c || c->magic != kCtxMagic) [[unlikely]] fail_ctx(routine, c);
}

shmem_team_t new_team_handle(pgas::Team* t);
shmem_ctx_t new_ctx_handle(long options, shmem_team_t team);

}  // namespace tessera::capi

namespace tessera::capi {
[[noreturn]] void fail_team_pe(const char* routine, int pe, const pgas::Team* t);

// World PE number of `pe` as seen by a context: contexts made on a team take team-relative PE numbers.
inline int ctx_pe(const char* routine, shmem_ctx_t c, int pe) {
  check_ctx(routine, c);
  pgas::Team* t = c->team->team;
  if (!t || t->predefined) return pe;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(t->size)) [[unlikely]] fail_team_pe(routine, pe, t);
  return t->world_pe(pe);
}
}  // namespace tessera::capi

// Defines `RET shmem_NAME(PARAMS..., int pe) { BODY }` and its context twin
// `RET shmem_ctx_NAME(shmem_ctx_t ctx, PARAMS..., int pe)`, which checks ctx, maps pe through ctx's team
// (ctx_pe) and calls shmem_NAME with ARGS. PARAMS and ARGS are parenthesised lists without pe; BODY names
// the routine as __func__ (the C name, for error messages).
#define TS_UNPAREN(...) __VA_ARGS__
#define TS_WITH_CTX(RET, NAME, PARAMS, ARGS, ...)                                                            \
  RET shmem_##NAME(TS_UNPAREN PARAMS, int pe) { __VA_ARGS__ }                                                 \
  RET shmem_ctx_##NAME(shmem_ctx_t ctx, TS_UNPAREN PARAMS, int pe) {                                          \
    return shmem_##NAME(TS_UNPAREN ARGS, tessera::capi::ctx_pe("shmem_ctx_" #NAME, ctx, pe));                 \
  }
