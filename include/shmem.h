/* Tessera's OpenSHMEM 1.5 C API.
 *
 * Programs written for other OpenSHMEM implementations build with `tessera-cc` and run with
 * `tessera-run -n N`. Memory ordering and completion on Tessera (see docs/design.md):
 *   - every put, get and atomic to a PE of this host is complete when the call returns; non-blocking
 *     (_nbi) calls are performed eagerly;
 *   - shmem_fence orders a PE's puts/AMOs to each target; shmem_quiet makes all of them visible everywhere;
 *   - put-with-signal makes the data visible before the signal;
 *   - every blocking call has a deadline (TESSERA_TIMEOUT, default 300 s) after which the job ends with a
 *     message naming the PE and what it waited for.
 * Bad arguments (PE out of range, address outside symmetric memory, null buffer with a non-zero size, a
 * size that overflows, an invalid team or context) end the job with one message naming the value and the
 * limit. All routines are thread-safe (SHMEM_THREAD_MULTIPLE). */
#ifndef TESSERA_SHMEM_H
#define TESSERA_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/shmem_types.h"
#include "tessera/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Library constants ---- */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "Tessera"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options and memory hints. */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Team configuration. */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)
typedef struct {
  int num_contexts;
} shmem_team_config_t;

/* Opaque handles. A destroyed team or context is detected and reported, not used. */
typedef struct tessera_team* shmem_team_t;
typedef struct tessera_ctx* shmem_ctx_t;
extern struct tessera_team tessera_team_world_handle;
extern struct tessera_team tessera_team_shared_handle;
extern struct tessera_ctx tessera_ctx_default_handle;
#define SHMEM_TEAM_WORLD (&tessera_team_world_handle)
#define SHMEM_TEAM_SHARED (&tessera_team_shared_handle)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_DEFAULT (&tessera_ctx_default_handle)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* Deprecated active-set synchronisation arrays (pSync/pWrk sizes and initial value). */
#define SHMEM_SYNC_VALUE (-1L)
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define SHMEM_SYNC_SIZE 64
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- Library setup, exit and query ---- */
void shmem_init(void);
int shmem_init_thread(int requested, int* provided);
void shmem_query_thread(int* provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void* addr, int pe);
void* shmem_ptr(const void* dest, int pe);
void shmem_info_get_version(int* major, int* minor);
void shmem_info_get_name(char* name);
/* OpenSHMEM 1.6: 1 between the first shmem_init (or _thread) and the matching last shmem_finalize, else 0;
 * and 1 once the library has been finalized. Callable at any time; they return 0. */
int shmem_query_initialized(int* initialized);
int shmem_query_finalized(int* finalized);

/* ---- Memory management ---- */
void* shmem_malloc(size_t size);
void* shmem_malloc_with_hints(size_t size, long hints);
void* shmem_calloc(size_t count, size_t size);
void* shmem_align(size_t alignment, size_t size);
void* shmem_realloc(void* ptr, size_t size);
void shmem_free(void* ptr);

/* ---- Teams ---- */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask, shmem_team_t* new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team);
void shmem_team_destroy(shmem_team_t team);
void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe);

/* ---- Contexts ---- */
/* Sessions (OpenSHMEM 1.6): hints that a context is about to issue many operations. The options and the
 * configuration are checked (an unknown bit ends the job naming it); a session changes no result or
 * ordering, and its end completes nothing (shmem_ctx_quiet does). shmem_ctx_session_start/stop and
 * shmem_ctx_session_config_t are the names of the specification's drafts. */
#define SHMEM_SESSION_BATCH (1L << 0)
#define SHMEM_SESSION_SAME_AMO (1L << 1)
#define SHMEM_SESSION_TOTAL_OPS (1L << 0)
typedef struct {
  size_t total_ops;
} shmem_session_config_t;
void shmem_session_start(shmem_ctx_t ctx, long options, const shmem_session_config_t* config, long config_mask);
void shmem_session_stop(shmem_ctx_t ctx);
typedef shmem_session_config_t shmem_ctx_session_config_t;
#define SHMEM_CTX_SESSION_BATCH SHMEM_SESSION_BATCH
#define SHMEM_CTX_SESSION_SAME_AMO SHMEM_SESSION_SAME_AMO
#define SHMEM_CTX_SESSION_TOTAL_OPS SHMEM_SESSION_TOTAL_OPS
void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_session_config_t* config, long config_mask);
void shmem_ctx_session_stop(shmem_ctx_t ctx);
int shmem_ctx_create(long options, shmem_ctx_t* ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team);

/* ---- RMA: typed, sized and untyped; each with a shmem_ctx_ form ---- */
#define TESSERA_DECL_RMA(T, N)                                                                            \
  void shmem_##N##_put(T* dest, const T* source, size_t nelems, int pe);                                 \
  void shmem_ctx_##N##_put(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);            \
  void shmem_##N##_get(T* dest, const T* source, size_t nelems, int pe);                                 \
  void shmem_ctx_##N##_get(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);            \
  void shmem_##N##_put_nbi(T* dest, const T* source, size_t nelems, int pe);                             \
  void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);        \
  void shmem_##N##_get_nbi(T* dest, const T* source, size_t nelems, int pe);                             \
  void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems, int pe);        \
  void shmem_##N##_p(T* dest, T value, int pe);                                                          \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T* dest, T value, int pe);                                     \
  T shmem_##N##_g(const T* source, int pe);                                                              \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T* source, int pe);                                         \
  void shmem_##N##_iput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);  \
  void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,     \
                            size_t nelems, int pe);                                                      \
  void shmem_##N##_iget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);  \
  void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,     \
                            size_t nelems, int pe);                                                      \
  void shmem_##N##_ibput(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,           \
                         size_t nblocks, int pe);                                                        \
  void shmem_ctx_##N##_ibput(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,    \
                             size_t bsize, size_t nblocks, int pe);                                      \
  void shmem_##N##_ibget(T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,           \
                         size_t nblocks, int pe);                                                        \
  void shmem_ctx_##N##_ibget(shmem_ctx_t ctx, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,    \
                             size_t bsize, size_t nblocks, int pe);                                      \
  void shmem_##N##_put_signal(T* dest, const T* source, size_t nelems, uint64_t* sig_addr,              \
                              uint64_t signal, int sig_op, int pe);                                      \
  void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,             \
                                  uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);              \
  void shmem_##N##_put_signal_nbi(T* dest, const T* source, size_t nelems, uint64_t* sig_addr,          \
                                  uint64_t signal, int sig_op, int pe);                                  \
  void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T* dest, const T* source, size_t nelems,         \
                                      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
TESSERA_RMA_TYPES(TESSERA_DECL_RMA)
#undef TESSERA_DECL_RMA

#define TESSERA_DECL_SIZED(BITS, BYTES)                                                                   \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems, int pe);                           \
  void shmem_ctx_put##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);      \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems, int pe);                           \
  void shmem_ctx_get##BITS(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);      \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe);                     \
  void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);\
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems, int pe);                     \
  void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);\
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                        int pe);                                                                         \
  void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,              \
                            ptrdiff_t sst, size_t nelems, int pe);                                       \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                        int pe);                                                                         \
  void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,              \
                            ptrdiff_t sst, size_t nelems, int pe);                                       \
  void shmem_ibput##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                         size_t nblocks, int pe);                                                        \
  void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,             \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                       \
  void shmem_ibget##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                         size_t nblocks, int pe);                                                        \
  void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst,             \
                             ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                       \
  void shmem_put##BITS##_signal(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,       \
                                uint64_t signal, int sig_op, int pe);                                    \
  void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,      \
                                    uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);            \
  void shmem_put##BITS##_signal_nbi(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,   \
                                    uint64_t signal, int sig_op, int pe);                                \
  void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,  \
                                        uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
TESSERA_SIZED_RMA(TESSERA_DECL_SIZED)
#undef TESSERA_DECL_SIZED

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem(void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe);
void shmem_putmem_signal(void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,
                         int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                             uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void* dest, const void* source, size_t nelems, uint64_t* sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void* dest, const void* source, size_t nelems,
                                 uint64_t* sig_addr, uint64_t signal, int sig_op, int pe);

/* ---- Signals ---- */
uint64_t shmem_signal_fetch(const uint64_t* sig_addr);
uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);
void shmem_signal_add(uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_signal_set(uint64_t* sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t* sig_addr, uint64_t signal, int pe);

/* ---- Atomic memory operations ---- */
#define TESSERA_DECL_AMO_EXT(T, N)                                                                        \
  T shmem_##N##_atomic_fetch(const T* source, int pe);                                                   \
  T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T* source, int pe);                              \
  void shmem_##N##_atomic_set(T* dest, T value, int pe);                                                 \
  void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T* dest, T value, int pe);                            \
  T shmem_##N##_atomic_swap(T* dest, T value, int pe);                                                   \
  T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T* dest, T value, int pe);                              \
  void shmem_##N##_atomic_fetch_nbi(T* fetch, const T* source, int pe);                                  \
  void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T* fetch, const T* source, int pe);             \
  void shmem_##N##_atomic_swap_nbi(T* fetch, T* dest, T value, int pe);                                  \
  void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
TESSERA_AMO_EXT_TYPES(TESSERA_DECL_AMO_EXT)
#undef TESSERA_DECL_AMO_EXT

#define TESSERA_DECL_AMO_STD(T, N)                                                                        \
  T shmem_##N##_atomic_compare_swap(T* dest, T cond, T value, int pe);                                   \
  T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T* dest, T cond, T value, int pe);              \
  T shmem_##N##_atomic_fetch_inc(T* dest, int pe);                                                       \
  T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T* dest, int pe);                                  \
  void shmem_##N##_atomic_inc(T* dest, int pe);                                                          \
  void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T* dest, int pe);                                     \
  T shmem_##N##_atomic_fetch_add(T* dest, T value, int pe);                                              \
  T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T* dest, T value, int pe);                         \
  void shmem_##N##_atomic_add(T* dest, T value, int pe);                                                 \
  void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T* dest, T value, int pe);                            \
  void shmem_##N##_atomic_compare_swap_nbi(T* fetch, T* dest, T cond, T value, int pe);                  \
  void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T cond, T value,      \
                                               int pe);                                                  \
  void shmem_##N##_atomic_fetch_inc_nbi(T* fetch, T* dest, int pe);                                      \
  void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T* fetch, T* dest, int pe);                 \
  void shmem_##N##_atomic_fetch_add_nbi(T* fetch, T* dest, T value, int pe);                             \
  void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
TESSERA_AMO_STD_TYPES(TESSERA_DECL_AMO_STD)
#undef TESSERA_DECL_AMO_STD

#define TESSERA_DECL_AMO_BIT_OP(T, N, OP)                                                                 \
  T shmem_##N##_atomic_fetch_##OP(T* dest, T value, int pe);                                             \
  T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T* dest, T value, int pe);                        \
  void shmem_##N##_atomic_##OP(T* dest, T value, int pe);                                                \
  void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T* dest, T value, int pe);                           \
  void shmem_##N##_atomic_fetch_##OP##_nbi(T* fetch, T* dest, T value, int pe);                          \
  void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T* fetch, T* dest, T value, int pe);
#define TESSERA_DECL_AMO_BIT(T, N) \
  TESSERA_DECL_AMO_BIT_OP(T, N, and) TESSERA_DECL_AMO_BIT_OP(T, N, or) TESSERA_DECL_AMO_BIT_OP(T, N, xor)
TESSERA_AMO_BIT_TYPES(TESSERA_DECL_AMO_BIT)
#undef TESSERA_DECL_AMO_BIT
#undef TESSERA_DECL_AMO_BIT_OP

/* ---- Point-to-point synchronisation ---- */
#define TESSERA_DECL_P2P(T, N)                                                                            \
  void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value);                                            \
  void shmem_##N##_wait_until_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);     \
  size_t shmem_##N##_wait_until_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);   \
  size_t shmem_##N##_wait_until_some(T* ivars, size_t nelems, size_t* indices, const int* status,        \
                                     int cmp, T cmp_value);                                              \
  void shmem_##N##_wait_until_all_vector(T* ivars, size_t nelems, const int* status, int cmp,            \
                                         T* cmp_values);                                                 \
  size_t shmem_##N##_wait_until_any_vector(T* ivars, size_t nelems, const int* status, int cmp,          \
                                           T* cmp_values);                                               \
  size_t shmem_##N##_wait_until_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status, \
                                            int cmp, T* cmp_values);                                     \
  int shmem_##N##_test(T* ivar, int cmp, T cmp_value);                                                   \
  int shmem_##N##_test_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);            \
  size_t shmem_##N##_test_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);         \
  size_t shmem_##N##_test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,     \
                               T cmp_value);                                                             \
  int shmem_##N##_test_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);   \
  size_t shmem_##N##_test_any_vector(T* ivars, size_t nelems, const int* status, int cmp,                \
                                     T* cmp_values);                                                     \
  size_t shmem_##N##_test_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status,       \
                                      int cmp, T* cmp_values);                                           \
  void shmem_##N##_wait(T* ivar, T cmp_value);
TESSERA_P2P_TYPES(TESSERA_DECL_P2P)
#undef TESSERA_DECL_P2P

/* ---- Memory ordering ---- */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_pe_quiet(const int* target_pes, size_t npes);
void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes);

/* ---- Synchronisation ---- */
void shmem_barrier_all(void);
void shmem_sync_all(void);
int shmem_team_sync(shmem_team_t team);

#ifdef __cplusplus
}
#endif

#include "tessera/shmem_extra.h"

#endif /* TESSERA_SHMEM_H */
