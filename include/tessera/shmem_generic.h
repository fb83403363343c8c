/* C11 generic bindings of the OpenSHMEM API (shmem_put, shmem_atomic_fetch_add, shmem_sum_reduce, ...).
 *
 * Included by shmem.h when compiling C11 or later (not C++). Each generic name is a macro that selects the
 * typed routine from the type of its pointer argument, and the shmem_ctx_ routine when the first argument is
 * a shmem_ctx_t. Only the standard C types are listed: the fixed-width and size types are typedefs of them
 * (int64_t is long, size_t is unsigned long on the ABIs we support), so they select the same routine.
 * A pointer of any other type fails to compile with "too many arguments to function
 * 'tessera_c11_type_error'". */
#ifndef TESSERA_SHMEM_GENERIC_H
#define TESSERA_SHMEM_GENERIC_H

void tessera_c11_type_error(void); /* never defined: selected only for unsupported argument types */

#define TESSERA_C11_ARG0(a, ...) a
#define TESSERA_C11_ARG1(a, b, ...) b

/* Type lists: X(TYPE, TYPENAME, ROUTINE). */
#define TESSERA_C11_RMA(X, F)                                                                             \
  X(float, float, F) X(double, double, F) X(long double, longdouble, F) X(char, char, F)                 \
  X(signed char, schar, F) X(short, short, F) X(int, int, F) X(long, long, F) X(long long, longlong, F)  \
  X(unsigned char, uchar, F) X(unsigned short, ushort, F) X(unsigned int, uint, F)                       \
  X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)
#define TESSERA_C11_AMO_STD(X, F)                                                                         \
  X(int, int, F) X(long, long, F) X(long long, longlong, F) X(unsigned int, uint, F)                     \
  X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)
#define TESSERA_C11_AMO_EXT(X, F) TESSERA_C11_AMO_STD(X, F) X(float, float, F) X(double, double, F)
/* Table 8 lists int32_t and int64_t beside the unsigned types: int and long on our ABIs. */
#define TESSERA_C11_AMO_BIT(X, F)                                                                         \
  X(unsigned int, uint, F) X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)                \
  X(int, int32, F) X(long, int64, F)
#define TESSERA_C11_P2P(X, F)                                                                             \
  X(short, short, F) X(int, int, F) X(long, long, F) X(long long, longlong, F)                           \
  X(unsigned short, ushort, F) X(unsigned int, uint, F) X(unsigned long, ulong, F)                       \
  X(unsigned long long, ulonglong, F)
#define TESSERA_C11_RED_UNSIGNED(X, F)                                                                    \
  X(unsigned char, uchar, F) X(unsigned short, ushort, F) X(unsigned int, uint, F)                       \
  X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)
/* The bitwise reductions take int8_t..int64_t too: signed char, short, int and long on our ABIs. */
#define TESSERA_C11_RED_BIT(X, F)                                                                         \
  TESSERA_C11_RED_UNSIGNED(X, F) X(signed char, int8, F) X(short, int16, F) X(int, int32, F)             \
  X(long, int64, F)
#define TESSERA_C11_RED_MINMAX(X, F)                                                                      \
  X(char, char, F) X(signed char, schar, F) X(short, short, F) X(int, int, F) X(long, long, F)           \
  X(long long, longlong, F) TESSERA_C11_RED_UNSIGNED(X, F) X(float, float, F) X(double, double, F)       \
  X(long double, longdouble, F)
#define TESSERA_C11_RED_ARITH(X, F) \
  TESSERA_C11_RED_MINMAX(X, F) X(float _Complex, complexf, F) X(double _Complex, complexd, F)
#define TESSERA_C11_OLD_STD(X, F) X(int, int, F) X(long, long, F) X(long long, longlong, F)
#define TESSERA_C11_OLD_EXT(X, F) TESSERA_C11_OLD_STD(X, F) X(float, float, F) X(double, double, F)

/* Associations: T* (and const T* for routines whose pointer argument is const). */
#define TESSERA_C11_SEL(T, N, F) T*: shmem_##N##_##F,
#define TESSERA_C11_SEL_CTX(T, N, F) T*: shmem_ctx_##N##_##F,
#define TESSERA_C11_SELC(T, N, F) T*: shmem_##N##_##F, const T*: shmem_##N##_##F,
#define TESSERA_C11_SELC_CTX(T, N, F) T*: shmem_ctx_##N##_##F, const T*: shmem_ctx_##N##_##F,

/* Routine with a shmem_ctx_ twin, selected on its first pointer argument. */
#define TESSERA_C11_CTX(LIST, F, SEL, SELCTX, ...)                                                        \
  _Generic(TESSERA_C11_ARG0(__VA_ARGS__, 0),                                                             \
           shmem_ctx_t: _Generic(TESSERA_C11_ARG1(__VA_ARGS__, 0),                                      \
                                 LIST(SELCTX, F) default: tessera_c11_type_error),                       \
           LIST(SEL, F) default: tessera_c11_type_error)(__VA_ARGS__)
/* Routine without a ctx form, selected on argument 0 (P2P) or 1 (team collectives). */
#define TESSERA_C11_ON0(LIST, F, ...) \
  _Generic(TESSERA_C11_ARG0(__VA_ARGS__, 0), LIST(TESSERA_C11_SEL, F) default: tessera_c11_type_error)(__VA_ARGS__)
#define TESSERA_C11_ON1(LIST, F, ...) \
  _Generic(TESSERA_C11_ARG1(__VA_ARGS__, 0), LIST(TESSERA_C11_SEL, F) default: tessera_c11_type_error)(__VA_ARGS__)

#define TESSERA_C11_RMA_CTX(F, ...) \
  TESSERA_C11_CTX(TESSERA_C11_RMA, F, TESSERA_C11_SEL, TESSERA_C11_SEL_CTX, __VA_ARGS__)

/* ---- RMA ---- */
#define shmem_put(...) TESSERA_C11_RMA_CTX(put, __VA_ARGS__)
#define shmem_get(...) TESSERA_C11_RMA_CTX(get, __VA_ARGS__)
#define shmem_put_nbi(...) TESSERA_C11_RMA_CTX(put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) TESSERA_C11_RMA_CTX(get_nbi, __VA_ARGS__)
#define shmem_p(...) TESSERA_C11_RMA_CTX(p, __VA_ARGS__)
#define shmem_g(...) TESSERA_C11_CTX(TESSERA_C11_RMA, g, TESSERA_C11_SELC, TESSERA_C11_SELC_CTX, __VA_ARGS__)
#define shmem_iput(...) TESSERA_C11_RMA_CTX(iput, __VA_ARGS__)
#define shmem_iget(...) TESSERA_C11_RMA_CTX(iget, __VA_ARGS__)
#define shmem_ibput(...) TESSERA_C11_RMA_CTX(ibput, __VA_ARGS__)
#define shmem_ibget(...) TESSERA_C11_RMA_CTX(ibget, __VA_ARGS__)
#define shmem_put_signal(...) TESSERA_C11_RMA_CTX(put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) TESSERA_C11_RMA_CTX(put_signal_nbi, __VA_ARGS__)

/* ---- AMO ---- */
#define TESSERA_C11_AMO(LIST, F, ...) TESSERA_C11_CTX(LIST, F, TESSERA_C11_SEL, TESSERA_C11_SEL_CTX, __VA_ARGS__)
#define shmem_atomic_fetch(...) \
  TESSERA_C11_CTX(TESSERA_C11_AMO_EXT, atomic_fetch, TESSERA_C11_SELC, TESSERA_C11_SELC_CTX, __VA_ARGS__)
#define shmem_atomic_set(...) TESSERA_C11_AMO(TESSERA_C11_AMO_EXT, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) TESSERA_C11_AMO(TESSERA_C11_AMO_EXT, atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_xor, __VA_ARGS__)
/* Non-blocking fetching AMOs select on the fetch pointer. */
#define shmem_atomic_fetch_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_EXT, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_EXT, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) \
  TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_STD, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) TESSERA_C11_AMO(TESSERA_C11_AMO_BIT, atomic_fetch_xor_nbi, __VA_ARGS__)

/* ---- Point-to-point synchronisation ---- */
#define shmem_wait_until(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test, __VA_ARGS__)
#define shmem_test_all(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_all, __VA_ARGS__)
#define shmem_test_any(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_any, __VA_ARGS__)
#define shmem_test_some(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) TESSERA_C11_ON0(TESSERA_C11_P2P, test_some_vector, __VA_ARGS__)

/* ---- Collectives on teams: selected on dest (argument 1) ---- */
#define shmem_broadcast(...) TESSERA_C11_ON1(TESSERA_C11_RMA, broadcast, __VA_ARGS__)
#define shmem_collect(...) TESSERA_C11_ON1(TESSERA_C11_RMA, collect, __VA_ARGS__)
#define shmem_fcollect(...) TESSERA_C11_ON1(TESSERA_C11_RMA, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) TESSERA_C11_ON1(TESSERA_C11_RMA, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) TESSERA_C11_ON1(TESSERA_C11_RMA, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_BIT, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_BIT, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_BIT, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_MINMAX, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_MINMAX, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_ARITH, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) TESSERA_C11_ON1(TESSERA_C11_RED_ARITH, prod_reduce, __VA_ARGS__)
#define shmem_sum_inscan(...) TESSERA_C11_ON1(TESSERA_C11_RED_MINMAX, sum_inscan, __VA_ARGS__)
#define shmem_sum_exscan(...) TESSERA_C11_ON1(TESSERA_C11_RED_MINMAX, sum_exscan, __VA_ARGS__)
/* shmem_sync(team) is shmem_team_sync; the deprecated shmem_sync(PE_start, logPE_stride, PE_size, pSync)
 * stays a function. */
#define shmem_sync(...) \
  _Generic(TESSERA_C11_ARG0(__VA_ARGS__, 0), shmem_team_t: shmem_team_sync, default: shmem_sync)(__VA_ARGS__)

/* ---- Deprecated generic names ---- */
#define shmem_cswap(...) TESSERA_C11_ON0(TESSERA_C11_OLD_STD, cswap, __VA_ARGS__)
#define shmem_finc(...) TESSERA_C11_ON0(TESSERA_C11_OLD_STD, finc, __VA_ARGS__)
#define shmem_inc(...) TESSERA_C11_ON0(TESSERA_C11_OLD_STD, inc, __VA_ARGS__)
#define shmem_fadd(...) TESSERA_C11_ON0(TESSERA_C11_OLD_STD, fadd, __VA_ARGS__)
#define shmem_add(...) TESSERA_C11_ON0(TESSERA_C11_OLD_STD, add, __VA_ARGS__)
#define shmem_fetch(...)                                                                                  \
  _Generic(TESSERA_C11_ARG0(__VA_ARGS__, 0), TESSERA_C11_OLD_EXT(TESSERA_C11_SELC, fetch)                \
           default: tessera_c11_type_error)(__VA_ARGS__)
#define shmem_set(...) TESSERA_C11_ON0(TESSERA_C11_OLD_EXT, set, __VA_ARGS__)
#define shmem_swap(...) TESSERA_C11_ON0(TESSERA_C11_OLD_EXT, swap, __VA_ARGS__)
#define shmem_wait(...) TESSERA_C11_ON0(TESSERA_C11_P2P, wait, __VA_ARGS__)

#endif /* TESSERA_SHMEM_GENERIC_H */
