/* The rest of the OpenSHMEM 1.5 C API: collectives on teams, 1.6 scans, distributed locks, the deprecated
 * active-set collectives and old names, and (C11) the generic bindings. Included at the end of shmem.h.
 *
 * Collectives (team or active set) on Tessera:
 *   - are collective over the members, which must call them in the same order with the same arguments
 *     (nelems may differ per PE for collect); dest and source must be symmetric;
 *   - on return the local dest holds the result and the local source may be reused; no quiet is implied
 *     for earlier puts (use shmem_barrier_all or shmem_quiet + the collective for that);
 *   - reductions and scans accept dest == source (in place); partially overlapping buffers end the job;
 *   - results of floating-point reductions are identical on every member (operands combined in team order).
 * Team collectives return 0; with SHMEM_TEAM_INVALID they print a warning and return -1 (no PE waits). A
 * destroyed team, a PE_root outside the team, a count whose byte size overflows, or a null buffer with a
 * non-zero size ends the job with one message naming the value and the limit.
 * Active-set collectives (deprecated) use the caller's pSync (SHMEM_*_SYNC_SIZE longs, all SHMEM_SYNC_VALUE
 * before first use; restored on return, so back-to-back calls by the same active set may reuse it); pWrk is
 * accepted and not used. An active set that leaves the job or does not contain the caller ends the job.
 * Locks: shmem_set_lock/shmem_test_lock/shmem_clear_lock on a symmetric long initialised to 0; fair
 * (first come, first served); clear_lock by a PE that does not hold the lock ends the job.
 * Thread safety: as the rest of the API, but a given team or pSync is used by one thread at a time. */
#ifndef TESSERA_SHMEM_EXTRA_H
#define TESSERA_SHMEM_EXTRA_H

#ifdef __cplusplus
#include <complex>
typedef std::complex<float> tessera_complexf;
typedef std::complex<double> tessera_complexd;
extern "C" {
#else
typedef float _Complex tessera_complexf;
typedef double _Complex tessera_complexd;
#endif

/* Complex types of the reduction tables (sum and prod only). */
#define TESSERA_REDUCE_COMPLEX_TYPES(X) X(tessera_complexf, complexf) X(tessera_complexd, complexd)

/* Active-set (*_to_all) reduction tables: and/or/xor, max/min, sum/prod. */
#define TESSERA_TOALL_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define TESSERA_TOALL_MINMAX_TYPES(X) \
  TESSERA_TOALL_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#define TESSERA_TOALL_ARITH_TYPES(X) TESSERA_TOALL_MINMAX_TYPES(X) TESSERA_REDUCE_COMPLEX_TYPES(X)

/* ---- Collectives on teams ---- */
#define TESSERA_DECL_TEAM_COLL(T, N)                                                                      \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root);    \
  int shmem_##N##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems);                   \
  int shmem_##N##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems);                  \
  int shmem_##N##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems);                  \
  int shmem_##N##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,   \
                            size_t nelems);
TESSERA_RMA_TYPES(TESSERA_DECL_TEAM_COLL)
#undef TESSERA_DECL_TEAM_COLL
int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems);

#define TESSERA_DECL_REDUCE(T, N, OP) \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce);
#define TESSERA_DECL_REDUCE_BIT(T, N) \
  TESSERA_DECL_REDUCE(T, N, and) TESSERA_DECL_REDUCE(T, N, or) TESSERA_DECL_REDUCE(T, N, xor)
#define TESSERA_DECL_REDUCE_MINMAX(T, N) TESSERA_DECL_REDUCE(T, N, max) TESSERA_DECL_REDUCE(T, N, min)
#define TESSERA_DECL_REDUCE_ARITH(T, N) TESSERA_DECL_REDUCE(T, N, sum) TESSERA_DECL_REDUCE(T, N, prod)
TESSERA_REDUCE_BIT_TYPES(TESSERA_DECL_REDUCE_BIT)
TESSERA_REDUCE_MINMAX_TYPES(TESSERA_DECL_REDUCE_MINMAX)
TESSERA_REDUCE_ARITH_TYPES(TESSERA_DECL_REDUCE_ARITH)
TESSERA_REDUCE_COMPLEX_TYPES(TESSERA_DECL_REDUCE_ARITH)
#undef TESSERA_DECL_REDUCE_BIT
#undef TESSERA_DECL_REDUCE_MINMAX
#undef TESSERA_DECL_REDUCE_ARITH
#undef TESSERA_DECL_REDUCE

/* 1.6: prefix sums over a team. inscan: dest on PE i = source of PEs 0..i; exscan: PEs 0..i-1 (PE 0 gets 0). */
#define TESSERA_DECL_SCAN(T, N)                                                                           \
  int shmem_##N##_sum_inscan(shmem_team_t team, T* dest, const T* source, size_t nelems);                \
  int shmem_##N##_sum_exscan(shmem_team_t team, T* dest, const T* source, size_t nelems);
TESSERA_REDUCE_ARITH_TYPES(TESSERA_DECL_SCAN)
#undef TESSERA_DECL_SCAN

/* ---- Distributed locks ---- */
void shmem_set_lock(long* lock);
int shmem_test_lock(long* lock);
void shmem_clear_lock(long* lock);

/* ---- Profiling interface (accepted, no effect) ---- */
void shmem_pcontrol(int level, ...);

/* ---- Deprecated: active-set collectives ---- */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync);
#define TESSERA_DECL_ASET(BITS)                                                                           \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,   \
                             int logPE_stride, int PE_size, long* pSync);                                \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, \
                           int PE_size, long* pSync);                                                    \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start,                 \
                            int logPE_stride, int PE_size, long* pSync);                                 \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start,                 \
                            int logPE_stride, int PE_size, long* pSync);                                 \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,\
                             int PE_start, int logPE_stride, int PE_size, long* pSync);
TESSERA_DECL_ASET(32)
TESSERA_DECL_ASET(64)
#undef TESSERA_DECL_ASET

#define TESSERA_DECL_TOALL(T, N, OP)                                                                      \
  void shmem_##N##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start, int logPE_stride,  \
                                 int PE_size, T* pWrk, long* pSync);
#define TESSERA_DECL_TOALL_BIT(T, N) \
  TESSERA_DECL_TOALL(T, N, and) TESSERA_DECL_TOALL(T, N, or) TESSERA_DECL_TOALL(T, N, xor)
#define TESSERA_DECL_TOALL_MINMAX(T, N) TESSERA_DECL_TOALL(T, N, max) TESSERA_DECL_TOALL(T, N, min)
#define TESSERA_DECL_TOALL_ARITH(T, N) TESSERA_DECL_TOALL(T, N, sum) TESSERA_DECL_TOALL(T, N, prod)
TESSERA_TOALL_BIT_TYPES(TESSERA_DECL_TOALL_BIT)
TESSERA_TOALL_MINMAX_TYPES(TESSERA_DECL_TOALL_MINMAX)
TESSERA_TOALL_ARITH_TYPES(TESSERA_DECL_TOALL_ARITH)
#undef TESSERA_DECL_TOALL_BIT
#undef TESSERA_DECL_TOALL_MINMAX
#undef TESSERA_DECL_TOALL_ARITH
#undef TESSERA_DECL_TOALL

/* ---- Deprecated: setup, memory and cache names of earlier versions ---- */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void* shmalloc(size_t size);
void shfree(void* ptr);
void* shrealloc(void* ptr, size_t size);
void* shmemalign(size_t alignment, size_t size);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void* dest);
void shmem_set_cache_line_inv(void* dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void* dest);

/* ---- Deprecated: untyped (long) point-to-point waits; in C11 the generic names below take precedence ---- */
void shmem_wait_until(long* ivar, int cmp, long cmp_value);
void shmem_wait(long* ivar, long cmp_value);

/* ---- Deprecated: atomic names before 1.4 ---- */
#define TESSERA_OLD_AMO_STD_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define TESSERA_OLD_AMO_EXT_TYPES(X) TESSERA_OLD_AMO_STD_TYPES(X) X(float, float) X(double, double)
#define TESSERA_DECL_OLD_AMO_STD(T, N)                                                                    \
  T shmem_##N##_cswap(T* dest, T cond, T value, int pe);                                                 \
  T shmem_##N##_finc(T* dest, int pe);                                                                   \
  void shmem_##N##_inc(T* dest, int pe);                                                                 \
  T shmem_##N##_fadd(T* dest, T value, int pe);                                                          \
  void shmem_##N##_add(T* dest, T value, int pe);
#define TESSERA_DECL_OLD_AMO_EXT(T, N)                                                                    \
  T shmem_##N##_fetch(const T* source, int pe);                                                          \
  void shmem_##N##_set(T* dest, T value, int pe);                                                        \
  T shmem_##N##_swap(T* dest, T value, int pe);
TESSERA_OLD_AMO_STD_TYPES(TESSERA_DECL_OLD_AMO_STD)
TESSERA_OLD_AMO_EXT_TYPES(TESSERA_DECL_OLD_AMO_EXT)
#undef TESSERA_DECL_OLD_AMO_STD
#undef TESSERA_DECL_OLD_AMO_EXT

/* ---- Tessera extension: a job wired by the user's own launcher (as ncclGetUniqueId) ----
 * tessera_bootstrap_uid makes a listening socket on `host` (an IPv4 address or a host name; NULL or "":
 * this machine's name), on a port the kernel chooses, keeps it open in this process, and writes
 * "tcp://HOST:PORT/SECRET" (SECRET: 64 fresh hex digits) into out. Hand the string to every process of the
 * job by your own means (MPI, a file, ...), and in each set TESSERA_BOOTSTRAP to it, TESSERA_RANK and
 * TESSERA_SIZE, before shmem_init. The process that made it must be rank 0: it serves the rendezvous on
 * that socket. A later call replaces (and closes) the earlier socket.
 * Returns 0, or a negative value after printing why: -1 for arguments (null out, a buffer smaller than the
 * id: the message names the size needed; TESSERA_BOOTSTRAP_UID_SIZE is always enough), -2 when the id
 * cannot be made (a malformed host, a host that is not this machine's, a failed name lookup). The secret
 * is the job's only guard: keep the string as private as the job's data. */
#define TESSERA_BOOTSTRAP_UID_SIZE 512
int tessera_bootstrap_uid(char* out, size_t size, const char* host);

#ifdef __cplusplus
}

/* C++ code written against other implementations' headers passes the C complex types (float _Complex,
 * double _Complex: a GCC and Clang extension in C++) to the complex reductions; these overloads take them
 * and call the std::complex routines, whose layout is the same (two values, real part first). */
#define TESSERA_CXX_CREDUCE(CT, ST, N, OP)                                                                \
  inline int shmem_##N##_##OP##_reduce(shmem_team_t team, CT* dest, const CT* source, size_t nreduce) {  \
    return shmem_##N##_##OP##_reduce(team, reinterpret_cast<ST*>(dest), reinterpret_cast<const ST*>(source), \
                                     nreduce);                                                           \
  }                                                                                                      \
  inline void shmem_##N##_##OP##_to_all(CT* dest, const CT* source, int nreduce, int PE_start,           \
                                        int logPE_stride, int PE_size, CT* pWrk, long* pSync) {          \
    shmem_##N##_##OP##_to_all(reinterpret_cast<ST*>(dest), reinterpret_cast<const ST*>(source), nreduce,  \
                              PE_start, logPE_stride, PE_size, reinterpret_cast<ST*>(pWrk), pSync);      \
  }
#define TESSERA_CXX_CREDUCE_ARITH(CT, ST, N) TESSERA_CXX_CREDUCE(CT, ST, N, sum) TESSERA_CXX_CREDUCE(CT, ST, N, prod)
TESSERA_CXX_CREDUCE_ARITH(__complex__ float, tessera_complexf, complexf)
TESSERA_CXX_CREDUCE_ARITH(__complex__ double, tessera_complexd, complexd)
#undef TESSERA_CXX_CREDUCE_ARITH
#undef TESSERA_CXX_CREDUCE
static_assert(sizeof(__complex__ float) == sizeof(tessera_complexf) &&
                  sizeof(__complex__ double) == sizeof(tessera_complexd),
              "C and C++ complex types differ in size");
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#include "tessera/shmem_generic.h"
#endif

#endif /* TESSERA_SHMEM_EXTRA_H */
