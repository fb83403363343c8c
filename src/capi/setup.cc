// Setup, query, memory management, teams and contexts of the C API.
#include <shmemx.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "capi/shmem_coll.h"
#include "capi/handles.h"
#include "capi/last_error.h"
#include "pgas/barrier.h"
#include "pgas/heap.h"
#include "pgas/order.h"
#include "pgas/peers.h"
#include "pgas/runtime.h"
#include "pgas/team.h"

using namespace tessera;

struct tessera_team tessera_team_world_handle = {capi::kTeamMagic, nullptr};
struct tessera_team tessera_team_shared_handle = {capi::kTeamMagic, nullptr};
struct tessera_ctx tessera_ctx_default_handle = {capi::kCtxMagic, 0, &tessera_team_world_handle, 0};

namespace tessera::capi {

void fail_team(const char* routine, shmem_team_t team) {
  if (!team) log::fatal("{}: team is SHMEM_TEAM_INVALID", routine);
  if (team->magic == kDeadMagic) log::fatal("{}: team {} was used after shmem_team_destroy", routine, (void*)team);
  log::fatal("{}: {} is not a team handle", routine, (void*)team);
}

void fail_ctx(const char* routine, shmem_ctx_t ctx) {
  if (!ctx) log::fatal("{}: context is SHMEM_CTX_INVALID", routine);
  if (ctx->magic == kDeadMagic) log::fatal("{}: context {} was used after shmem_ctx_destroy", routine, (void*)ctx);
  log::fatal("{}: {} is not a context handle", routine, (void*)ctx);
}

void fail_team_pe(const char* routine, int pe, const pgas::Team* t) {
  log::fatal("{}: PE {} is out of range: the context's {} has PEs 0..{}", routine, pe, t->describe(), t->size - 1);
}

namespace {
// Every handle ever made stays here (see handles.h): reachable, so leak checkers stay quiet.
std::mutex g_handles_mu;
std::vector<std::unique_ptr<tessera_team>> g_team_handles;
std::vector<std::unique_ptr<tessera_ctx>> g_ctx_handles;
}  // namespace

shmem_team_t new_team_handle(pgas::Team* t) {
  std::lock_guard lk(g_handles_mu);
  g_team_handles.push_back(std::make_unique<tessera_team>(tessera_team{kTeamMagic, t}));
  return g_team_handles.back().get();
}

shmem_ctx_t new_ctx_handle(long options, shmem_team_t team) {
  std::lock_guard lk(g_handles_mu);
  g_ctx_handles.push_back(std::make_unique<tessera_ctx>(tessera_ctx{kCtxMagic, options, team, 0}));
  return g_ctx_handles.back().get();
}

}  // namespace tessera::capi

namespace {
void init_or_die(int level) {
  Status st = pgas::init(level);
  if (!st.is_ok()) log::fatal("shmem_init: {}", st.message());
  tessera_team_world_handle.team = pgas::team_world();
  tessera_team_shared_handle.team = pgas::team_shared();
  capi::coll::make_team_comm("shmem_init", pgas::team_world());
  capi::coll::make_team_comm("shmem_init", pgas::team_shared());
}
void require_init(const char* routine) {
  if (!pgas::is_initialized()) [[unlikely]] pgas::fail_not_initialized(routine);
}
}  // namespace

extern "C" {

void shmem_init(void) { init_or_die(SHMEM_THREAD_MULTIPLE); }
int shmem_init_thread(int requested, int* provided) {
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
    log::fatal("shmem_init_thread: thread level {} is not one of SHMEM_THREAD_SINGLE..SHMEM_THREAD_MULTIPLE "
               "(0..3)", requested);
  init_or_die(SHMEM_THREAD_MULTIPLE);
  if (provided) *provided = SHMEM_THREAD_MULTIPLE;
  return 0;
}
void shmem_query_thread(int* provided) {
  require_init("shmem_query_thread");
  if (provided) *provided = SHMEM_THREAD_MULTIPLE;
}
void shmem_finalize(void) {
  if (pgas::is_initialized()) {
    // Communicators the OpenSHMEM collectives made (collective, like finalize itself).
    capi::coll::release_all_comms();
  }
  pgas::finalize();
}
void shmem_global_exit(int status) { pgas::global_exit(status); }
int shmem_query_initialized(int* initialized) {
  if (initialized) *initialized = pgas::is_initialized() ? 1 : 0;
  return 0;
}
int shmem_query_finalized(int* finalized) {
  if (finalized)
    *finalized = !pgas::is_initialized() && pgas::rt().ever_initialized.load(std::memory_order_relaxed) ? 1 : 0;
  return 0;
}
// Before shmem_init these end the job like every other routine (a program that prints shmem_my_pe() before
// init would otherwise label its output -1); after shmem_finalize they answer -1, as programs that print a
// last line after finalize expect.
int shmem_my_pe(void) {
  if (pgas::is_initialized()) [[likely]] return pgas::rt().my_pe;
  if (!pgas::rt().ever_initialized.load(std::memory_order_relaxed)) pgas::fail_not_initialized("shmem_my_pe");
  return -1;
}
int shmem_n_pes(void) {
  if (pgas::is_initialized()) [[likely]] return pgas::rt().n_pes;
  if (!pgas::rt().ever_initialized.load(std::memory_order_relaxed)) pgas::fail_not_initialized("shmem_n_pes");
  return -1;
}
int shmem_pe_accessible(int pe) { return pgas::is_initialized() && pe >= 0 && pe < pgas::rt().n_pes; }
int shmem_addr_accessible(const void* addr, int pe) {
  return shmem_pe_accessible(pe) && pgas::is_symmetric(addr, 1);
}
void* shmem_ptr(const void* dest, int pe) {
  require_init("shmem_ptr");
  if (pe < 0 || pe >= pgas::rt().n_pes || !pgas::is_symmetric(dest, 1)) return nullptr;
  return pgas::remote("shmem_ptr", dest, 1, pe);
}
void shmem_info_get_version(int* major, int* minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}
void shmem_info_get_name(char* name) {
  if (name) std::strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN);
}

void* shmem_malloc(size_t size) { return pgas::sym_malloc(size, "shmem_malloc"); }
void* shmem_malloc_with_hints(size_t size, long hints) {
  // Every hint is satisfied by the shared-memory heap: atomics and signals are local instructions.
  return pgas::sym_malloc(size, "shmem_malloc_with_hints");
}
void* shmem_calloc(size_t count, size_t size) { return pgas::sym_calloc(count, size, "shmem_calloc"); }
void* shmem_align(size_t alignment, size_t size) { return pgas::sym_align(alignment, size, "shmem_align"); }
void* shmem_realloc(void* ptr, size_t size) { return pgas::sym_realloc(ptr, size, "shmem_realloc"); }
void shmem_free(void* ptr) { pgas::sym_free(ptr, "shmem_free"); }

int shmem_team_my_pe(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  return capi::team_of("shmem_team_my_pe", team)->my_index;
}
int shmem_team_n_pes(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  return capi::team_of("shmem_team_n_pes", team)->size;
}
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  pgas::Team* t = capi::team_of("shmem_team_get_config", team);
  if (config && (config_mask & SHMEM_TEAM_NUM_CONTEXTS)) config->num_contexts = t->num_contexts;
  return 0;
}
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) return -1;
  return pgas::team_translate(capi::team_of("shmem_team_translate_pe", src_team), src_pe,
                              capi::team_of("shmem_team_translate_pe", dest_team));
}
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask, shmem_team_t* new_team) {
  if (new_team) *new_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  pgas::Team* parent = capi::team_of("shmem_team_split_strided", parent_team);
  int nctx = (config && (config_mask & SHMEM_TEAM_NUM_CONTEXTS)) ? config->num_contexts : 0;
  pgas::Team* t = nullptr;
  Status st = pgas::team_split_strided(parent, start, stride, size, nctx, config_mask, &t);
  if (!st.is_ok()) {
    log::warn("{}", st.message());
    return -1;
  }
  if (t) capi::coll::make_team_comm("shmem_team_split_strided", t);
  if (t && new_team) *new_team = capi::new_team_handle(t);
  return 0;
}
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  if (xaxis_team) *xaxis_team = SHMEM_TEAM_INVALID;
  if (yaxis_team) *yaxis_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  pgas::Team* parent = capi::team_of("shmem_team_split_2d", parent_team);
  int ncx = (xaxis_config && (xaxis_mask & SHMEM_TEAM_NUM_CONTEXTS)) ? xaxis_config->num_contexts : 0;
  int ncy = (yaxis_config && (yaxis_mask & SHMEM_TEAM_NUM_CONTEXTS)) ? yaxis_config->num_contexts : 0;
  pgas::Team *x = nullptr, *y = nullptr;
  Status st = pgas::team_split_2d(parent, xrange, ncx, xaxis_mask, ncy, yaxis_mask, &x, &y);
  if (!st.is_ok()) {
    log::warn("{}", st.message());
    return -1;
  }
  capi::coll::make_team_comm("shmem_team_split_2d", x);
  capi::coll::make_team_comm("shmem_team_split_2d", y);
  if (xaxis_team) *xaxis_team = capi::new_team_handle(x);
  if (yaxis_team) *yaxis_team = capi::new_team_handle(y);
  return 0;
}
void shmem_team_destroy(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return;
  pgas::Team* t = capi::team_of("shmem_team_destroy", team);
  if (t->predefined) log::fatal("shmem_team_destroy: the predefined {} cannot be destroyed", t->describe());
  capi::coll::release_team_comm(t);
  pgas::team_destroy(t);
  team->magic = capi::kDeadMagic;
  team->team = nullptr;
}
void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  pgas::Team* t = capi::team_of("shmem_team_ptr", team);
  if (pe < 0 || pe >= t->size) return nullptr;
  return shmem_ptr(dest, t->world_pe(pe));
}
int shmem_team_sync(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  pgas::Team* t = capi::team_of("shmem_team_sync", team);
  pgas::ProgramSync label(t, "shmem_team_sync", sync::Call::kTeamSync);
  if (Status st = pgas::team_sync_or_error(t); !st.is_ok()) [[unlikely]] {
    (void)capi::to_result(Status(st.code(), "shmem_team_sync: " + st.message()));
    return SHMEMX_PEER_FAILED;
  }
  return 0;
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  if (ctx) *ctx = SHMEM_CTX_INVALID;
  if (team == SHMEM_TEAM_INVALID || !ctx) return -1;
  capi::team_of("shmem_team_create_ctx", team);
  *ctx = capi::new_ctx_handle(options, team);
  return 0;
}
int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  require_init("shmem_ctx_create");
  return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}
void shmem_ctx_destroy(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  capi::check_ctx("shmem_ctx_destroy", ctx);
  if (ctx == SHMEM_CTX_DEFAULT) log::fatal("shmem_ctx_destroy: SHMEM_CTX_DEFAULT cannot be destroyed");
  pgas::quiet();
  ctx->magic = capi::kDeadMagic;  // handle kept (see handles.h)
}
void shmem_session_start(shmem_ctx_t ctx, long options, const shmem_session_config_t* config, long config_mask) {
  require_init("shmem_session_start");
  capi::check_ctx("shmem_session_start", ctx);
  constexpr long kOptions = SHMEM_SESSION_BATCH | SHMEM_SESSION_SAME_AMO, kMask = SHMEM_SESSION_TOTAL_OPS;
  if (options & ~kOptions)
    log::fatal("shmem_session_start: options {:#x} hold bits no session option has (SHMEM_SESSION_BATCH {:#x}, "
               "SHMEM_SESSION_SAME_AMO {:#x})", options, SHMEM_SESSION_BATCH, SHMEM_SESSION_SAME_AMO);
  if (config_mask & ~kMask)
    log::fatal("shmem_session_start: config_mask {:#x} holds bits no configuration field has "
               "(SHMEM_SESSION_TOTAL_OPS {:#x})", config_mask, SHMEM_SESSION_TOTAL_OPS);
  if (config_mask && !config) log::fatal("shmem_session_start: config_mask is {:#x} but config is null", config_mask);
  std::atomic_ref<int>(ctx->sessions).fetch_add(1, std::memory_order_relaxed);  // threads may share the context
  pgas::routed_session(true);  // small puts to other hosts are batched until the session ends (or a quiet)
}
void shmem_session_stop(shmem_ctx_t ctx) {
  require_init("shmem_session_stop");
  capi::check_ctx("shmem_session_stop", ctx);
  if (std::atomic_ref<int>(ctx->sessions).fetch_sub(1, std::memory_order_relaxed) <= 0) {
    std::atomic_ref<int>(ctx->sessions).fetch_add(1, std::memory_order_relaxed);
    log::fatal("shmem_session_stop: context {} is not in a session", (void*)ctx);
  }
  pgas::routed_session(false);
}
void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_session_config_t* config, long config_mask) {
  shmem_session_start(ctx, options, config, config_mask);
}
void shmem_ctx_session_stop(shmem_ctx_t ctx) { shmem_session_stop(ctx); }

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  if (team) *team = SHMEM_TEAM_INVALID;
  if (ctx == SHMEM_CTX_INVALID || !team) return -1;
  capi::check_ctx("shmem_ctx_get_team", ctx);
  *team = ctx->team;
  return 0;
}

void shmem_barrier_all(void) {
  require_init("shmem_barrier_all");
  pgas::ProgramSync label(pgas::team_world(), "shmem_barrier_all", sync::Call::kBarrierAll);
  pgas::team_barrier(pgas::team_world());
}
void shmem_sync_all(void) {
  require_init("shmem_sync_all");
  pgas::ProgramSync label(pgas::team_world(), "shmem_sync_all", sync::Call::kSyncAll);
  pgas::team_sync(pgas::team_world());
}

double shmemx_wtime(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void shmem_fence(void) { pgas::fence(); }
// On SHMEM_CTX_INVALID the context forms of fence and quiet do nothing, as the specification says: there is
// nothing the invalid context could have issued.
void shmem_ctx_fence(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  capi::check_ctx("shmem_ctx_fence", ctx);
  pgas::fence();
}
void shmem_quiet(void) { pgas::quiet(); }
void shmem_ctx_quiet(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID) return;
  capi::check_ctx("shmem_ctx_quiet", ctx);
  pgas::quiet();
}
void shmem_pe_quiet(const int* target_pes, size_t npes) {
  for (size_t i = 0; i < npes; ++i)
    if (target_pes[i] < 0 || target_pes[i] >= pgas::rt().n_pes) pgas::fail_bad_pe("shmem_pe_quiet", target_pes[i], pgas::rt().n_pes);
  pgas::quiet();
}
void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes) {
  if (ctx == SHMEM_CTX_INVALID) return;
  capi::check_ctx("shmem_ctx_pe_quiet", ctx);
  shmem_pe_quiet(target_pes, npes);
}

}  // extern "C"
