/* Tessera's OpenSHMEM extensions (shmemx_*), in the place other implementations keep theirs.
 *
 * - shmemx_wtime(): wall-clock seconds (monotonic clock), as in SOS and OSSS.
 * - shmemx_ names other implementations used for features that OpenSHMEM 1.6 standardised, mapped to the
 *   1.6 routines Tessera provides in shmem.h: signal_add/signal_set, pe_quiet, team_ptr, ibput/ibget (mem
 *   forms) and the sum scans. Programs written against those shmemx_ names build unchanged.
 * - Resilient mode (tessera-run --on-failure continue; docs/resilience.md): SHMEMX_PEER_FAILED, what a team
 *   collective or shmem_team_sync returns when a member of the team failed (tesseraGetLastError in
 *   <tessera/coll.h> names it), and shmemx_team_shrink, the team of the survivors. */
#ifndef TESSERA_SHMEMX_H
#define TESSERA_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif
/* A library routine rather than an inline one: clock_gettime is not declared under strict -std=c11. */
double shmemx_wtime(void);

/* Returned by a team's collectives and shmem_team_sync in resilient mode when a member of the team has failed.
 * The team is broken from then on: every later collective or sync on it returns this at once; the survivors
 * shrink it and destroy it. */
#define SHMEMX_PEER_FAILED 2

/* Collective over the team's survivors (resilient mode, one host): they agree on which members failed, then
 * *new_team becomes the team of the others, numbered in their old order (in general no stride describes
 * them). The agreement needs no list from the program; a member that fails meanwhile makes it return
 * SHMEMX_PEER_FAILED, and the survivors may shrink again. Works on a broken team and without failures (a
 * copy of the team). Returns 0, or nonzero with *new_team = SHMEM_TEAM_INVALID. */
int shmemx_team_shrink(shmem_team_t team, shmem_team_t* new_team);
#ifdef __cplusplus
}
#endif

#define shmemx_signal_add shmem_signal_add
#define shmemx_ctx_signal_add shmem_ctx_signal_add
#define shmemx_signal_set shmem_signal_set
#define shmemx_ctx_signal_set shmem_ctx_signal_set
#define shmemx_pe_quiet shmem_pe_quiet
#define shmemx_ctx_pe_quiet shmem_ctx_pe_quiet
#define shmemx_team_ptr shmem_team_ptr

/* Scans: shmemx_<TYPENAME>_sum_inscan / _exscan for the common types. */
#define shmemx_int_sum_inscan shmem_int_sum_inscan
#define shmemx_int_sum_exscan shmem_int_sum_exscan
#define shmemx_long_sum_inscan shmem_long_sum_inscan
#define shmemx_long_sum_exscan shmem_long_sum_exscan
#define shmemx_longlong_sum_inscan shmem_longlong_sum_inscan
#define shmemx_longlong_sum_exscan shmem_longlong_sum_exscan
#define shmemx_uint_sum_inscan shmem_uint_sum_inscan
#define shmemx_uint_sum_exscan shmem_uint_sum_exscan
#define shmemx_ulong_sum_inscan shmem_ulong_sum_inscan
#define shmemx_ulong_sum_exscan shmem_ulong_sum_exscan
#define shmemx_int32_sum_inscan shmem_int32_sum_inscan
#define shmemx_int32_sum_exscan shmem_int32_sum_exscan
#define shmemx_int64_sum_inscan shmem_int64_sum_inscan
#define shmemx_int64_sum_exscan shmem_int64_sum_exscan
#define shmemx_uint32_sum_inscan shmem_uint32_sum_inscan
#define shmemx_uint32_sum_exscan shmem_uint32_sum_exscan
#define shmemx_uint64_sum_inscan shmem_uint64_sum_inscan
#define shmemx_uint64_sum_exscan shmem_uint64_sum_exscan
#define shmemx_size_sum_inscan shmem_size_sum_inscan
#define shmemx_size_sum_exscan shmem_size_sum_exscan
#define shmemx_float_sum_inscan shmem_float_sum_inscan
#define shmemx_float_sum_exscan shmem_float_sum_exscan
#define shmemx_double_sum_inscan shmem_double_sum_inscan
#define shmemx_double_sum_exscan shmem_double_sum_exscan

#endif /* TESSERA_SHMEMX_H */
