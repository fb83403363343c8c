/* The OpenSHMEM 1.5 specification's routine index, plus the 1.6 additions Tessera claims
 * (docs/openshmem.md), as one table: X-macros of routine families and the specification's type tables.
 * Written from the specification, not from Tessera's headers (include/tessera/shmem_types.h), so that a
 * routine the header does not declare fails to compile and one the library does not define fails to link
 * (spec_index.c); the C11 generic names are tried over the same type tables (generics.c).
 *
 * Type tables: T(TYPE, TYPENAME). */
#ifndef SPEC_INDEX_H
#define SPEC_INDEX_H

/* Table 5: standard RMA types (RMA, and broadcast/collect/fcollect/alltoall/alltoalls). */
#define SPEC_RMA_TYPES(T)                                                                                    \
  T(float, float) T(double, double) T(long double, longdouble) T(char, char) T(signed char, schar)          \
  T(short, short) T(int, int) T(long, long) T(long long, longlong) T(unsigned char, uchar)                 \
  T(unsigned short, ushort) T(unsigned int, uint) T(unsigned long, ulong) T(unsigned long long, ulonglong) \
  T(int8_t, int8) T(int16_t, int16) T(int32_t, int32) T(int64_t, int64) T(uint8_t, uint8)                 \
  T(uint16_t, uint16) T(uint32_t, uint32) T(uint64_t, uint64) T(size_t, size) T(ptrdiff_t, ptrdiff)

/* Table 6: standard AMO types. */
#define SPEC_AMO_STD_TYPES(T)                                                                                \
  T(int, int) T(long, long) T(long long, longlong) T(unsigned int, uint) T(unsigned long, ulong)           \
  T(unsigned long long, ulonglong) T(int32_t, int32) T(int64_t, int64) T(uint32_t, uint32)                 \
  T(uint64_t, uint64) T(size_t, size) T(ptrdiff_t, ptrdiff)

/* Table 7: extended AMO types. */
#define SPEC_AMO_EXT_TYPES(T) SPEC_AMO_STD_TYPES(T) T(float, float) T(double, double)

/* Table 8: bitwise AMO types. */
#define SPEC_AMO_BIT_TYPES(T)                                                                                \
  T(unsigned int, uint) T(unsigned long, ulong) T(unsigned long long, ulonglong) T(int32_t, int32)         \
  T(int64_t, int64) T(uint32_t, uint32) T(uint64_t, uint64)

/* Point-to-point synchronisation types. */
#define SPEC_P2P_TYPES(T)                                                                                    \
  T(short, short) T(int, int) T(long, long) T(long long, longlong) T(unsigned short, ushort)               \
  T(unsigned int, uint) T(unsigned long, ulong) T(unsigned long long, ulonglong) T(int32_t, int32)         \
  T(int64_t, int64) T(uint32_t, uint32) T(uint64_t, uint64) T(size_t, size) T(ptrdiff_t, ptrdiff)

/* Reduction types, by operator class: bitwise (and, or, xor), ordered (max, min), arithmetic (sum, prod). */
#define SPEC_RED_BIT_TYPES(T)                                                                                \
  T(unsigned char, uchar) T(unsigned short, ushort) T(unsigned int, uint) T(unsigned long, ulong)          \
  T(unsigned long long, ulonglong) T(int8_t, int8) T(int16_t, int16) T(int32_t, int32) T(int64_t, int64)   \
  T(uint8_t, uint8) T(uint16_t, uint16) T(uint32_t, uint32) T(uint64_t, uint64) T(size_t, size)
#define SPEC_RED_MINMAX_TYPES(T)                                                                             \
  T(char, char) T(signed char, schar) T(short, short) T(int, int) T(long, long) T(long long, longlong)     \
  T(ptrdiff_t, ptrdiff) T(unsigned char, uchar) T(unsigned short, ushort) T(unsigned int, uint)            \
  T(unsigned long, ulong) T(unsigned long long, ulonglong) T(int8_t, int8) T(int16_t, int16)               \
  T(int32_t, int32) T(int64_t, int64) T(uint8_t, uint8) T(uint16_t, uint16) T(uint32_t, uint32)            \
  T(uint64_t, uint64) T(size_t, size) T(float, float) T(double, double) T(long double, longdouble)
#define SPEC_RED_ARITH_TYPES(T) \
  SPEC_RED_MINMAX_TYPES(T) T(double _Complex, complexd) T(float _Complex, complexf)

/* Deprecated active-set reductions (*_to_all), still in 1.5. */
#define SPEC_TOALL_BIT_TYPES(T) T(short, short) T(int, int) T(long, long) T(long long, longlong)
#define SPEC_TOALL_MINMAX_TYPES(T) \
  SPEC_TOALL_BIT_TYPES(T) T(float, float) T(double, double) T(long double, longdouble)
#define SPEC_TOALL_ARITH_TYPES(T) \
  SPEC_TOALL_MINMAX_TYPES(T) T(double _Complex, complexd) T(float _Complex, complexf)

/* Sizes of the sized RMA routines, in bits. */
#define SPEC_SIZES(S) S(8) S(16) S(32) S(64) S(128)

/* ---- Routines without a type: R(NAME) ---- */
#define SPEC_UNTYPED(R)                                                                                     \
  /* setup, exit, query */                                                                                \
  R(shmem_init) R(shmem_init_thread) R(shmem_query_thread) R(shmem_finalize) R(shmem_global_exit)         \
  R(shmem_my_pe) R(shmem_n_pes) R(shmem_pe_accessible) R(shmem_addr_accessible) R(shmem_ptr)              \
  R(shmem_info_get_version) R(shmem_info_get_name)                                                        \
  /* memory management */                                                                                 \
  R(shmem_malloc) R(shmem_free) R(shmem_realloc) R(shmem_align) R(shmem_calloc) R(shmem_malloc_with_hints) \
  /* teams */                                                                                             \
  R(shmem_team_my_pe) R(shmem_team_n_pes) R(shmem_team_get_config) R(shmem_team_translate_pe)             \
  R(shmem_team_split_strided) R(shmem_team_split_2d) R(shmem_team_destroy)                                \
  /* contexts */                                                                                          \
  R(shmem_ctx_create) R(shmem_team_create_ctx) R(shmem_ctx_destroy) R(shmem_ctx_get_team)                 \
  /* untyped RMA and signals */                                                                           \
  R(shmem_putmem) R(shmem_ctx_putmem) R(shmem_getmem) R(shmem_ctx_getmem) R(shmem_putmem_nbi)             \
  R(shmem_ctx_putmem_nbi) R(shmem_getmem_nbi) R(shmem_ctx_getmem_nbi) R(shmem_putmem_signal)              \
  R(shmem_ctx_putmem_signal) R(shmem_putmem_signal_nbi) R(shmem_ctx_putmem_signal_nbi)                    \
  R(shmem_signal_fetch) R(shmem_signal_wait_until)                                                        \
  /* collectives */                                                                                       \
  R(shmem_barrier_all) R(shmem_barrier) R(shmem_sync) R(shmem_sync_all) R(shmem_team_sync)                \
  R(shmem_broadcastmem)                                                                                   \
  R(shmem_collectmem) R(shmem_fcollectmem) R(shmem_alltoallmem) R(shmem_alltoallsmem)                     \
  R(shmem_broadcast32) R(shmem_broadcast64) R(shmem_collect32) R(shmem_collect64) R(shmem_fcollect32)     \
  R(shmem_fcollect64) R(shmem_alltoall32) R(shmem_alltoall64) R(shmem_alltoalls32) R(shmem_alltoalls64)   \
  /* memory ordering, locks, cache (deprecated), profiling */                                             \
  R(shmem_fence) R(shmem_ctx_fence) R(shmem_quiet) R(shmem_ctx_quiet) R(shmem_set_lock)                   \
  R(shmem_test_lock) R(shmem_clear_lock) R(shmem_clear_cache_inv) R(shmem_set_cache_inv)                  \
  R(shmem_clear_cache_line_inv) R(shmem_set_cache_line_inv) R(shmem_udcflush) R(shmem_udcflush_line)      \
  R(shmem_pcontrol)                                                                                       \
  /* 1.6 additions Tessera claims */                                                                      \
  R(shmem_team_ptr) R(shmem_pe_quiet) R(shmem_ctx_pe_quiet) R(shmem_signal_add) R(shmem_ctx_signal_add)   \
  R(shmem_signal_set) R(shmem_ctx_signal_set) R(shmem_query_initialized) R(shmem_query_finalized)           \
  R(shmem_session_start) R(shmem_session_stop)

/* ---- Typed families: F(TYPENAME) lists the routines of one type ---- */
#define SPEC_RMA_ROUTINES(R, N)                                                                              \
  R(shmem_##N##_put) R(shmem_ctx_##N##_put) R(shmem_##N##_get) R(shmem_ctx_##N##_get)                      \
  R(shmem_##N##_put_nbi) R(shmem_ctx_##N##_put_nbi) R(shmem_##N##_get_nbi) R(shmem_ctx_##N##_get_nbi)      \
  R(shmem_##N##_p) R(shmem_ctx_##N##_p) R(shmem_##N##_g) R(shmem_ctx_##N##_g) R(shmem_##N##_iput)          \
  R(shmem_ctx_##N##_iput) R(shmem_##N##_iget) R(shmem_ctx_##N##_iget) R(shmem_##N##_put_signal)            \
  R(shmem_ctx_##N##_put_signal) R(shmem_##N##_put_signal_nbi) R(shmem_ctx_##N##_put_signal_nbi)            \
  R(shmem_##N##_broadcast) R(shmem_##N##_collect) R(shmem_##N##_fcollect) R(shmem_##N##_alltoall)          \
  R(shmem_##N##_alltoalls)                                                                                 \
  /* 1.6 */ R(shmem_##N##_ibput) R(shmem_ctx_##N##_ibput) R(shmem_##N##_ibget) R(shmem_ctx_##N##_ibget)
#define SPEC_SIZED_ROUTINES(R, B)                                                                            \
  R(shmem_put##B) R(shmem_ctx_put##B) R(shmem_get##B) R(shmem_ctx_get##B) R(shmem_put##B##_nbi)            \
  R(shmem_ctx_put##B##_nbi) R(shmem_get##B##_nbi) R(shmem_ctx_get##B##_nbi) R(shmem_iput##B)               \
  R(shmem_ctx_iput##B) R(shmem_iget##B) R(shmem_ctx_iget##B) R(shmem_put##B##_signal)                      \
  R(shmem_ctx_put##B##_signal) R(shmem_put##B##_signal_nbi) R(shmem_ctx_put##B##_signal_nbi)               \
  /* 1.6 */ R(shmem_ibput##B) R(shmem_ctx_ibput##B) R(shmem_ibget##B) R(shmem_ctx_ibget##B)
#define SPEC_AMO_STD_ROUTINES(R, N)                                                                          \
  R(shmem_##N##_atomic_compare_swap) R(shmem_ctx_##N##_atomic_compare_swap) R(shmem_##N##_atomic_fetch_inc) \
  R(shmem_ctx_##N##_atomic_fetch_inc) R(shmem_##N##_atomic_inc) R(shmem_ctx_##N##_atomic_inc)              \
  R(shmem_##N##_atomic_fetch_add) R(shmem_ctx_##N##_atomic_fetch_add) R(shmem_##N##_atomic_add)            \
  R(shmem_ctx_##N##_atomic_add) R(shmem_##N##_atomic_compare_swap_nbi)                                     \
  R(shmem_ctx_##N##_atomic_compare_swap_nbi) R(shmem_##N##_atomic_fetch_inc_nbi)                           \
  R(shmem_ctx_##N##_atomic_fetch_inc_nbi) R(shmem_##N##_atomic_fetch_add_nbi)                              \
  R(shmem_ctx_##N##_atomic_fetch_add_nbi)
#define SPEC_AMO_EXT_ROUTINES(R, N)                                                                          \
  R(shmem_##N##_atomic_fetch) R(shmem_ctx_##N##_atomic_fetch) R(shmem_##N##_atomic_set)                    \
  R(shmem_ctx_##N##_atomic_set) R(shmem_##N##_atomic_swap) R(shmem_ctx_##N##_atomic_swap)                  \
  R(shmem_##N##_atomic_fetch_nbi) R(shmem_ctx_##N##_atomic_fetch_nbi) R(shmem_##N##_atomic_swap_nbi)       \
  R(shmem_ctx_##N##_atomic_swap_nbi)
#define SPEC_AMO_BIT_ROUTINES1(R, N, OP)                                                                     \
  R(shmem_##N##_atomic_##OP) R(shmem_ctx_##N##_atomic_##OP) R(shmem_##N##_atomic_fetch_##OP)               \
  R(shmem_ctx_##N##_atomic_fetch_##OP) R(shmem_##N##_atomic_fetch_##OP##_nbi)                              \
  R(shmem_ctx_##N##_atomic_fetch_##OP##_nbi)
#define SPEC_AMO_BIT_ROUTINES(R, N) \
  SPEC_AMO_BIT_ROUTINES1(R, N, and) SPEC_AMO_BIT_ROUTINES1(R, N, or) SPEC_AMO_BIT_ROUTINES1(R, N, xor)
#define SPEC_P2P_ROUTINES(R, N)                                                                              \
  R(shmem_##N##_wait_until) R(shmem_##N##_wait_until_all) R(shmem_##N##_wait_until_any)                    \
  R(shmem_##N##_wait_until_some) R(shmem_##N##_wait_until_all_vector) R(shmem_##N##_wait_until_any_vector) \
  R(shmem_##N##_wait_until_some_vector) R(shmem_##N##_test) R(shmem_##N##_test_all)                        \
  R(shmem_##N##_test_any) R(shmem_##N##_test_some) R(shmem_##N##_test_all_vector)                          \
  R(shmem_##N##_test_any_vector) R(shmem_##N##_test_some_vector)
#define SPEC_RED_BIT_ROUTINES(R, N) R(shmem_##N##_and_reduce) R(shmem_##N##_or_reduce) R(shmem_##N##_xor_reduce)
#define SPEC_RED_MINMAX_ROUTINES(R, N) R(shmem_##N##_max_reduce) R(shmem_##N##_min_reduce)
#define SPEC_RED_ARITH_ROUTINES(R, N) R(shmem_##N##_sum_reduce) R(shmem_##N##_prod_reduce)
/* 1.6 scans: the arithmetic reduction types without the complex ones. */
#define SPEC_SCAN_ROUTINES(R, N) R(shmem_##N##_sum_inscan) R(shmem_##N##_sum_exscan)
#define SPEC_TOALL_BIT_ROUTINES(R, N) R(shmem_##N##_and_to_all) R(shmem_##N##_or_to_all) R(shmem_##N##_xor_to_all)
#define SPEC_TOALL_MINMAX_ROUTINES(R, N) R(shmem_##N##_max_to_all) R(shmem_##N##_min_to_all)
#define SPEC_TOALL_ARITH_ROUTINES(R, N) R(shmem_##N##_sum_to_all) R(shmem_##N##_prod_to_all)

#endif
