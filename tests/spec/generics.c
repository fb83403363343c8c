/* Every C11 generic name of the specification, called with every type its table lists (spec_index.h), each
 * with and without a context where the specification has a ctx form; each call's result is checked, so a
 * generic name that selects the wrong typed routine fails as surely as one that does not compile. */
#include <shmem.h>
#include <string.h>
#include "check.h"
#include "spec_index.h"

static int me, npes, right, left;
static uint64_t rma_sig;
static long rma_signals; /* put-with-signal calls each PE made to its right neighbour */

/* RMA: put, get, put_nbi, get_nbi, p, g, iput, iget, ibput, ibget, put_signal, put_signal_nbi. */
#define GEN_RMA(TYPE, N)                                                                                    \
  {                                                                                                         \
    static TYPE d[12], s[12], g[12];                                                                        \
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                                    \
    for (int i = 0; i < 12; i++) s[i] = (TYPE)(me + i + 1);                                                 \
    memset(d, 0, sizeof d);                                                                                 \
    shmem_barrier_all();                                                                                    \
    shmem_put(d, s, 1, right);                                                                              \
    shmem_put(ctx, d + 1, s + 1, 1, right);                                                                 \
    shmem_put_nbi(d + 2, s + 2, 1, right);                                                                  \
    shmem_put_nbi(ctx, d + 3, s + 3, 1, right);                                                             \
    shmem_p(d + 4, s[4], right);                                                                            \
    shmem_p(ctx, d + 5, s[5], right);                                                                       \
    shmem_iput(d + 6, s + 6, 1, 1, 1, right);                                                               \
    shmem_iput(ctx, d + 7, s + 7, 1, 1, 1, right);                                                          \
    shmem_ibput(d + 8, s + 8, 1, 1, 1, 1, right);                                                           \
    shmem_ibput(ctx, d + 9, s + 9, 1, 1, 1, 1, right);                                                      \
    shmem_put_signal(d + 10, s + 10, 1, &rma_sig, 1, SHMEM_SIGNAL_ADD, right);                              \
    shmem_put_signal(ctx, d + 11, s + 11, 1, &rma_sig, 1, SHMEM_SIGNAL_ADD, right);                         \
    shmem_put_signal_nbi(d + 10, s + 10, 1, &rma_sig, 1, SHMEM_SIGNAL_ADD, right);                          \
    shmem_put_signal_nbi(ctx, d + 11, s + 11, 1, &rma_sig, 1, SHMEM_SIGNAL_ADD, right);                     \
    rma_signals += 4;                                                                                       \
    shmem_get(g, s, 1, right);                                                                              \
    shmem_get(ctx, g + 1, s + 1, 1, right);                                                                 \
    shmem_get_nbi(g + 2, s + 2, 1, right);                                                                  \
    shmem_get_nbi(ctx, g + 3, s + 3, 1, right);                                                             \
    g[4] = shmem_g(s + 4, right);                                                                           \
    g[5] = shmem_g(ctx, s + 5, right);                                                                      \
    shmem_iget(g + 6, s + 6, 1, 1, 1, right);                                                               \
    shmem_iget(ctx, g + 7, s + 7, 1, 1, 1, right);                                                          \
    shmem_ibget(g + 8, s + 8, 1, 1, 1, 1, right);                                                           \
    shmem_ibget(ctx, g + 9, s + 9, 1, 1, 1, 1, right);                                                      \
    shmem_quiet();                                                                                          \
    shmem_barrier_all();                                                                                    \
    for (int i = 0; i < 12; i++) CHECK(d[i] == (TYPE)(left + i + 1), #N " put %d", i);                       \
    for (int i = 0; i < 10; i++) CHECK(g[i] == (TYPE)(right + i + 1), #N " get %d", i);                      \
  }

/* Standard AMOs, applied by the left neighbour in a known order. */
#define GEN_AMO_STD(TYPE, N)                                                                                \
  {                                                                                                         \
    static TYPE v;                                                                                          \
    TYPE f[6];                                                                                              \
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                                    \
    v = 0;                                                                                                  \
    shmem_barrier_all();                                                                                    \
    shmem_atomic_add(&v, (TYPE)1, right);                   /* 1 */                                         \
    shmem_atomic_inc(ctx, &v, right);                       /* 2 */                                         \
    f[0] = shmem_atomic_fetch_add(&v, (TYPE)1, right);      /* 3 */                                         \
    f[1] = shmem_atomic_fetch_inc(ctx, &v, right);          /* 4 */                                         \
    f[2] = shmem_atomic_compare_swap(&v, (TYPE)4, (TYPE)9, right); /* 9 */                                  \
    shmem_atomic_add(ctx, &v, (TYPE)1, right);              /* 10 */                                        \
    shmem_atomic_inc(&v, right);                            /* 11 */                                        \
    shmem_atomic_compare_swap_nbi(f + 3, &v, (TYPE)11, (TYPE)20, right);  /* 20 */                         \
    shmem_atomic_fetch_inc_nbi(ctx, f + 4, &v, right);      /* 21 */                                        \
    shmem_atomic_fetch_add_nbi(f + 5, &v, (TYPE)2, right);  /* 23 */                                        \
    shmem_quiet(); /* non-blocking AMOs are ordered with later ones only by quiet */                        \
    f[1] += shmem_atomic_fetch_add(ctx, &v, (TYPE)0, right) - (TYPE)23;                                     \
    f[0] += shmem_atomic_fetch_inc(&v, right) - (TYPE)23;   /* 24 */                                        \
    TYPE c = shmem_atomic_compare_swap(ctx, &v, (TYPE)24, (TYPE)25, right); /* 25 */                        \
    shmem_quiet();                                                                                          \
    shmem_barrier_all();                                                                                    \
    CHECK(v == (TYPE)25 && c == (TYPE)24, #N " standard atomics left %lld", (long long)v);                   \
    CHECK(f[0] == (TYPE)2 && f[1] == (TYPE)3 && f[2] == (TYPE)4, #N " fetched %lld %lld %lld",             \
          (long long)f[0], (long long)f[1], (long long)f[2]);                                               \
    CHECK(f[3] == (TYPE)11 && f[4] == (TYPE)20 && f[5] == (TYPE)21, #N " fetched (nbi) %lld %lld %lld",    \
          (long long)f[3], (long long)f[4], (long long)f[5]);                                               \
  }

/* Extended AMOs: fetch, set, swap and their nbi forms. */
#define GEN_AMO_EXT(TYPE, N)                                                                                \
  {                                                                                                         \
    static TYPE v;                                                                                          \
    TYPE f[6];                                                                                              \
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                                    \
    v = (TYPE)1;                                                                                            \
    shmem_barrier_all();                                                                                    \
    f[0] = shmem_atomic_fetch(&v, right);                                                                   \
    shmem_atomic_set(&v, (TYPE)5, right);                                                                   \
    f[1] = shmem_atomic_fetch(ctx, &v, right);                                                              \
    f[2] = shmem_atomic_swap(&v, (TYPE)6, right);                                                           \
    f[3] = shmem_atomic_swap(ctx, &v, (TYPE)7, right);                                                      \
    shmem_atomic_swap_nbi(f + 4, &v, (TYPE)8, right);                                                       \
    shmem_quiet();                                                                                          \
    shmem_atomic_fetch_nbi(ctx, f + 5, &v, right);                                                          \
    shmem_quiet();                                                                                          \
    shmem_atomic_set(ctx, &v, (TYPE)9, right);                                                              \
    shmem_atomic_swap_nbi(ctx, f, &v, (TYPE)10, right);                                                     \
    shmem_quiet();                                                                                          \
    shmem_atomic_fetch_nbi(f + 1, &v, right);                                                               \
    shmem_quiet();                                                                                          \
    shmem_barrier_all();                                                                                    \
    CHECK(v == (TYPE)10, #N " extended atomics left %g", (double)v);                                        \
    CHECK(f[0] == (TYPE)9 && f[1] == (TYPE)10 && f[2] == (TYPE)5 && f[3] == (TYPE)6 && f[4] == (TYPE)7 &&    \
              f[5] == (TYPE)8,                                                                              \
          #N " fetched %g %g %g %g %g %g", (double)f[0], (double)f[1], (double)f[2], (double)f[3],         \
          (double)f[4], (double)f[5]);                                                                      \
  }

/* Bitwise AMOs. */
#define GEN_AMO_BIT(TYPE, N)                                                                                \
  {                                                                                                         \
    static TYPE v;                                                                                          \
    TYPE f[6];                                                                                              \
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;                                                                    \
    v = (TYPE)0;                                                                                            \
    shmem_barrier_all();                                                                                    \
    shmem_atomic_or(&v, (TYPE)0x0F, right);                       /* 0x0F */                                \
    shmem_atomic_and(ctx, &v, (TYPE)0x3C, right);                 /* 0x0C */                                \
    shmem_atomic_xor(&v, (TYPE)0x05, right);                      /* 0x09 */                                \
    f[0] = shmem_atomic_fetch_or(ctx, &v, (TYPE)0x30, right);     /* 0x39 */                                \
    f[1] = shmem_atomic_fetch_and(&v, (TYPE)0x1F, right);         /* 0x19 */                                \
    f[2] = shmem_atomic_fetch_xor(ctx, &v, (TYPE)0x01, right);    /* 0x18 */                                \
    shmem_atomic_fetch_or_nbi(f + 3, &v, (TYPE)0x40, right);      /* 0x58 */                                \
    shmem_quiet();                                                                                          \
    shmem_atomic_fetch_and_nbi(ctx, f + 4, &v, (TYPE)0x7F, right);/* 0x58 */                                \
    shmem_quiet();                                                                                          \
    shmem_atomic_fetch_xor_nbi(f + 5, &v, (TYPE)0x08, right);     /* 0x50 */                                \
    shmem_quiet();                                                                                          \
    shmem_atomic_and(&v, (TYPE)0xFF, right);                                                                \
    shmem_atomic_or(ctx, &v, (TYPE)0x100, right);                 /* 0x150 */                               \
    shmem_atomic_xor(ctx, &v, (TYPE)0x001, right);                /* 0x151 */                               \
    shmem_atomic_fetch_or_nbi(ctx, f, &v, (TYPE)0, right);                                                  \
    shmem_atomic_fetch_and_nbi(f + 1, &v, (TYPE)-1, right);                                                 \
    shmem_atomic_fetch_xor_nbi(ctx, f + 2, &v, (TYPE)0, right);                                             \
    shmem_quiet();                                                                                          \
    shmem_barrier_all();                                                                                    \
    CHECK(v == (TYPE)0x151, #N " bitwise atomics left %#llx", (unsigned long long)v);                        \
    CHECK(f[0] == (TYPE)0x151 && f[1] == (TYPE)0x151 && f[2] == (TYPE)0x151 && f[3] == (TYPE)0x18 &&         \
              f[4] == (TYPE)0x58 && f[5] == (TYPE)0x58,                                                     \
          #N " fetched %#llx %#llx %#llx %#llx %#llx %#llx", (unsigned long long)f[0],                       \
          (unsigned long long)f[1], (unsigned long long)f[2], (unsigned long long)f[3],                      \
          (unsigned long long)f[4], (unsigned long long)f[5]);                                              \
  }

/* Point-to-point synchronisation on local variables that already satisfy the comparisons. */
#define GEN_P2P(TYPE, N)                                                                                    \
  {                                                                                                         \
    static TYPE iv[3];                                                                                      \
    TYPE want[3] = {(TYPE)1, (TYPE)2, (TYPE)3};                                                             \
    size_t idx[3];                                                                                          \
    iv[0] = (TYPE)1;                                                                                        \
    iv[1] = (TYPE)2;                                                                                        \
    iv[2] = (TYPE)3;                                                                                        \
    shmem_wait_until(iv, SHMEM_CMP_EQ, (TYPE)1);                                                            \
    shmem_wait_until_all(iv, 3, NULL, SHMEM_CMP_GE, (TYPE)1);                                               \
    CHECK(shmem_wait_until_any(iv, 3, NULL, SHMEM_CMP_EQ, (TYPE)2) == 1, #N " wait_until_any");             \
    CHECK(shmem_wait_until_some(iv, 3, idx, NULL, SHMEM_CMP_GT, (TYPE)1) == 2 && idx[0] == 1 && idx[1] == 2,  \
          #N " wait_until_some");                                                                           \
    shmem_wait_until_all_vector(iv, 3, NULL, SHMEM_CMP_EQ, want);                                           \
    CHECK(shmem_wait_until_any_vector(iv, 3, NULL, SHMEM_CMP_EQ, want) < 3, #N " wait_until_any_vector");   \
    CHECK(shmem_wait_until_some_vector(iv, 3, idx, NULL, SHMEM_CMP_EQ, want) == 3,                          \
          #N " wait_until_some_vector");                                                                    \
    CHECK(shmem_test(iv + 2, SHMEM_CMP_EQ, (TYPE)3) == 1 && shmem_test(iv, SHMEM_CMP_NE, (TYPE)1) == 0,     \
          #N " test");                                                                                      \
    CHECK(shmem_test_all(iv, 3, NULL, SHMEM_CMP_LE, (TYPE)3) == 1, #N " test_all");                         \
    CHECK(shmem_test_any(iv, 3, NULL, SHMEM_CMP_EQ, (TYPE)3) == 2, #N " test_any");                         \
    CHECK(shmem_test_some(iv, 3, idx, NULL, SHMEM_CMP_LT, (TYPE)3) == 2, #N " test_some");                  \
    CHECK(shmem_test_all_vector(iv, 3, NULL, SHMEM_CMP_EQ, want) == 1, #N " test_all_vector");              \
    CHECK(shmem_test_any_vector(iv, 3, NULL, SHMEM_CMP_NE, want) == SIZE_MAX, #N " test_any_vector");       \
    CHECK(shmem_test_some_vector(iv, 3, idx, NULL, SHMEM_CMP_GE, want) == 3, #N " test_some_vector");       \
  }

/* Team collectives over the world. */
#define GEN_COLL(TYPE, N)                                                                                   \
  {                                                                                                         \
    static TYPE s[8], d[8];                                                                                 \
    for (int i = 0; i < 8; i++) s[i] = (TYPE)(me * 2 + i % 2 + 1);                                          \
    shmem_broadcast(SHMEM_TEAM_WORLD, d, s, 2, npes - 1);                                                   \
    CHECK(d[0] == (TYPE)(npes * 2 - 1) && d[1] == (TYPE)(npes * 2), #N " broadcast");                       \
    shmem_fcollect(SHMEM_TEAM_WORLD, d, s, 2);                                                              \
    for (int i = 0; i < 2 * npes; i++) CHECK(d[i] == (TYPE)(i + 1), #N " fcollect %d", i);                  \
    shmem_collect(SHMEM_TEAM_WORLD, d, s, 1);                                                               \
    for (int i = 0; i < npes; i++) CHECK(d[i] == (TYPE)(i * 2 + 1), #N " collect %d", i);                   \
    shmem_alltoall(SHMEM_TEAM_WORLD, d, s, 1);                                                              \
    for (int i = 0; i < npes; i++) CHECK(d[i] == (TYPE)(i * 2 + 1 + me % 2), #N " alltoall %d", i);         \
    shmem_alltoalls(SHMEM_TEAM_WORLD, d, s, 1, 1, 1);                                                       \
    for (int i = 0; i < npes; i++) CHECK(d[i] == (TYPE)(i * 2 + 1 + me % 2), #N " alltoalls %d", i);        \
  }

#define GEN_RED_BIT(TYPE, N)                                                                                \
  {                                                                                                         \
    static TYPE s[1], d[1];                                                                                 \
    s[0] = (TYPE)(1 << me);                                                                                 \
    shmem_or_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                             \
    CHECK(d[0] == (TYPE)((1 << npes) - 1), #N " or_reduce");                                                \
    shmem_xor_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)((1 << npes) - 1), #N " xor_reduce");                                               \
    shmem_and_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)(npes == 1 ? 1 : 0), #N " and_reduce");                                             \
  }
#define GEN_RED_MINMAX(TYPE, N)                                                                             \
  {                                                                                                         \
    static TYPE s[1], d[1];                                                                                 \
    s[0] = (TYPE)(me + 1);                                                                                  \
    shmem_max_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)npes, #N " max_reduce");                                                            \
    shmem_min_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)1, #N " min_reduce");                                                               \
  }
#define GEN_RED_ARITH(TYPE, N)                                                                              \
  {                                                                                                         \
    static TYPE s[1], d[1];                                                                                 \
    s[0] = (TYPE)(me + 1);                                                                                  \
    shmem_sum_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)(npes * (npes + 1) / 2), #N " sum_reduce");                                         \
    shmem_prod_reduce(SHMEM_TEAM_WORLD, d, s, 1);                                                           \
    int fact = 1;                                                                                           \
    for (int p = 2; p <= npes; p++) fact *= p;                                                              \
    CHECK(d[0] == (TYPE)fact, #N " prod_reduce");                                                           \
  }
#define GEN_SCAN(TYPE, N)                                                                                   \
  {                                                                                                         \
    static TYPE s[1], d[1];                                                                                 \
    s[0] = (TYPE)(me + 1);                                                                                  \
    shmem_sum_inscan(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    CHECK(d[0] == (TYPE)((me + 1) * (me + 2) / 2), #N " sum_inscan");                                       \
    shmem_sum_exscan(SHMEM_TEAM_WORLD, d, s, 1);                                                            \
    if (me > 0) CHECK(d[0] == (TYPE)(me * (me + 1) / 2), #N " sum_exscan");                                 \
  }

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  right = (me + 1) % npes;
  left = (me + npes - 1) % npes;
  SPEC_RMA_TYPES(GEN_RMA)
  shmem_signal_wait_until(&rma_sig, SHMEM_CMP_EQ, (uint64_t)rma_signals);
  SPEC_AMO_STD_TYPES(GEN_AMO_STD)
  SPEC_AMO_EXT_TYPES(GEN_AMO_EXT)
  SPEC_AMO_BIT_TYPES(GEN_AMO_BIT)
  SPEC_P2P_TYPES(GEN_P2P)
  SPEC_RMA_TYPES(GEN_COLL)
  SPEC_RED_BIT_TYPES(GEN_RED_BIT)
  SPEC_RED_MINMAX_TYPES(GEN_RED_MINMAX)
  SPEC_RED_ARITH_TYPES(GEN_RED_ARITH)
  SPEC_RED_MINMAX_TYPES(GEN_SCAN)
  shmem_finalize();
  return spec_errors != 0;
}
