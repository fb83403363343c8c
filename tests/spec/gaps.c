/* Behaviours programs written for other implementations rely on: fence and quiet on SHMEM_CTX_INVALID do
 * nothing, shmem_align honours large alignments, test_any hands out every ready index in turn, teams split
 * with a negative stride, the sized put-with-signal routines, and the C11 generic bitwise atomics and
 * reductions on signed types. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static uint64_t sig;
static int64_t amo64;
static int32_t amo32;

static void invalid_context(void) {
  shmem_ctx_fence(SHMEM_CTX_INVALID);
  shmem_ctx_quiet(SHMEM_CTX_INVALID);
  shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, NULL, 0);
}

static void large_alignments(void) {
  static const size_t aligns[] = {64, 4096, (size_t)2 << 20, (size_t)8 << 20, (size_t)64 << 20};
  for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
    char* p = shmem_align(aligns[k], 100);
    CHECK(p != NULL, "shmem_align(%zu) returned null", aligns[k]);
    if (!p) continue;
    CHECK((uintptr_t)p % aligns[k] == 0, "shmem_align(%zu) returned %p", aligns[k], (void*)p);
    /* The block is symmetric: the right neighbour writes into it at the same address. */
    shmem_char_p(p + 99, (char)(shmem_my_pe() + 1), (shmem_my_pe() + 1) % shmem_n_pes());
    shmem_barrier_all();
    int left = (shmem_my_pe() + shmem_n_pes() - 1) % shmem_n_pes();
    CHECK(p[99] == (char)(left + 1), "aligned block written by PE %d holds %d", left, p[99]);
    shmem_free(p);
  }
}

/* A program collecting ready indices with test_any must see each of them, not the first one forever. */
static void test_any_turns(void) {
  static long ivars[6];
  for (int i = 0; i < 6; i++) ivars[i] = (i % 2 == 0) ? 1 : 0; /* indices 0, 2, 4 are ready */
  int seen[6] = {0};
  for (int round = 0; round < 6; round++) {
    size_t i = shmem_long_test_any(ivars, 6, NULL, SHMEM_CMP_EQ, 1);
    CHECK(i < 6 && i % 2 == 0, "test_any returned %zu", i);
    if (i < 6) seen[i]++;
  }
  CHECK(seen[0] == 2 && seen[2] == 2 && seen[4] == 2, "test_any handed out 0/2/4 %d/%d/%d times of 6", seen[0],
        seen[2], seen[4]);
  /* The generic name and wait_until_any rotate alike. */
  size_t a = shmem_test_any(ivars, 6, NULL, SHMEM_CMP_EQ, 1);
  size_t b = shmem_long_wait_until_any(ivars, 6, NULL, SHMEM_CMP_EQ, 1);
  size_t c = shmem_wait_until_any(ivars, 6, NULL, SHMEM_CMP_EQ, 1);
  CHECK(a != b && b != c && a != c, "test_any / wait_until_any returned %zu, %zu, %zu", a, b, c);
  /* The status array still excludes indices, and nothing ready still gives SIZE_MAX. */
  int status[6] = {1, 0, 1, 0, 0, 0};
  for (int round = 0; round < 3; round++) {
    size_t i = shmem_long_test_any(ivars, 6, status, SHMEM_CMP_EQ, 1);
    CHECK(i == 4, "test_any with 0 and 2 excluded returned %zu", i);
  }
  CHECK(shmem_long_test_any(ivars, 6, NULL, SHMEM_CMP_EQ, 7) == SIZE_MAX, "test_any found a 7");
}

static void negative_stride(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_team_t rev = SHMEM_TEAM_INVALID;
  int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev);
  CHECK(rc == 0 && rev != SHMEM_TEAM_INVALID, "split with stride -1 returned %d", rc);
  if (rev == SHMEM_TEAM_INVALID) return;
  CHECK(shmem_team_my_pe(rev) == n - 1 - me, "team PE %d, want %d", shmem_team_my_pe(rev), n - 1 - me);
  CHECK(shmem_team_n_pes(rev) == n, "team of %d PEs", shmem_team_n_pes(rev));
  for (int i = 0; i < n; i++) {
    int w = shmem_team_translate_pe(rev, i, SHMEM_TEAM_WORLD);
    CHECK(w == n - 1 - i, "team PE %d is world PE %d", i, w);
  }
  /* A collective over the reversed team: the root is team PE 0, world PE n-1. */
  static long src[2], dst[2];
  src[0] = me * 10;
  src[1] = me * 10 + 1;
  shmem_long_broadcast(rev, dst, src, 2, 0);
  CHECK(dst[0] == (n - 1) * 10 && dst[1] == (n - 1) * 10 + 1, "broadcast from team PE 0: %ld %ld", dst[0], dst[1]);
  static long psrc[2], pdst[2];
  psrc[0] = me + 1;
  psrc[1] = 1;
  shmem_long_sum_inscan(rev, pdst, psrc, 1);
  long want = 0; /* team PEs 0..i are world PEs n-1 .. n-1-i */
  for (int w = n - 1; w >= me; w--) want += w + 1;
  CHECK(pdst[0] == want, "inscan over the reversed team %ld, want %ld", pdst[0], want);
  /* A split of the reversed team with a negative stride again runs in world order. */
  shmem_team_t fwd = SHMEM_TEAM_INVALID;
  rc = shmem_team_split_strided(rev, n - 1, -1, n, NULL, 0, &fwd);
  CHECK(rc == 0 && fwd != SHMEM_TEAM_INVALID && shmem_team_my_pe(fwd) == me, "double reversal: rc %d, PE %d", rc,
        fwd == SHMEM_TEAM_INVALID ? -1 : shmem_team_my_pe(fwd));
  if (fwd != SHMEM_TEAM_INVALID) shmem_team_destroy(fwd);
  shmem_team_destroy(rev);
  /* Stride 0 names one PE; larger sizes with stride 0 are refused on every PE alike. */
  shmem_team_t one = SHMEM_TEAM_INVALID;
  rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 1, NULL, 0, &one);
  CHECK(rc == 0 && (me == 0) == (one != SHMEM_TEAM_INVALID), "stride 0, size 1: rc %d", rc);
  if (one != SHMEM_TEAM_INVALID) shmem_team_destroy(one);
  if (n > 1) {
    shmem_team_t bad = SHMEM_TEAM_INVALID;
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &bad);
    CHECK(rc != 0 && bad == SHMEM_TEAM_INVALID, "stride 0, size 2 accepted");
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &bad);
    CHECK(rc != 0 && bad == SHMEM_TEAM_INVALID, "start 0, stride -1, size 2 (PE -1) accepted");
  }
}

/* shmem_putN_signal(_nbi) and the ctx forms: data visible before the signal, element size N bits. */
static void sized_signal(void) {
  static unsigned char dst[5][64];
  static unsigned char src[64];
  int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  for (int i = 0; i < 64; i++) src[i] = (unsigned char)(me * 64 + i);
  sig = 0;
  shmem_barrier_all();
  shmem_put8_signal(dst[0], src, 8, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put16_signal_nbi(dst[1], src, 4, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_put32_signal(SHMEM_CTX_DEFAULT, dst[2], src, 4, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_put64_signal_nbi(SHMEM_CTX_DEFAULT, dst[3], src, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put128_signal(dst[4], src, 4, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put64_signal(dst[4] + 32, src + 32, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_put8_signal_nbi(SHMEM_CTX_DEFAULT, dst[4] + 48, src + 48, 16, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_put16_signal(SHMEM_CTX_DEFAULT, dst[0] + 8, src + 8, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put32_signal_nbi(dst[1] + 8, src + 8, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_put128_signal_nbi(SHMEM_CTX_DEFAULT, dst[2] + 16, src + 16, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_quiet();
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 10);
  static const size_t want_bytes[5] = {10, 12, 32, 8, 64};
  for (int r = 0; r < 5; r++)
    for (size_t i = 0; i < want_bytes[r]; i++)
      CHECK(dst[r][i] == (unsigned char)(left * 64 + i), "row %d byte %zu: %d", r, i, dst[r][i]);
  CHECK(dst[0][10] == 0 && dst[3][8] == 0, "bytes past the puts were written");
  shmem_barrier_all();
}

/* Table 8 lists int32_t and int64_t for the bitwise atomics; Table 10 int8_t..int64_t for the bitwise
 * reductions: the generic names take them. */
static void signed_bitwise_generics(void) {
  int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
  amo32 = -1;
  amo64 = -1;
  shmem_barrier_all();
  shmem_atomic_and(&amo32, (int32_t)0x0ff0, right);
  shmem_atomic_or(&amo64, (int64_t)0, right);
  int32_t f32 = shmem_atomic_fetch_xor(&amo32, (int32_t)0x00f0, right);
  int64_t f64 = shmem_atomic_fetch_and(SHMEM_CTX_DEFAULT, &amo64, (int64_t)-16, right);
  CHECK(f32 == 0x0ff0, "fetch_xor fetched %d", f32);
  CHECK(f64 == -1, "fetch_and fetched %lld", (long long)f64);
  int32_t nb32 = 0;
  shmem_atomic_fetch_or_nbi(&nb32, &amo32, (int32_t)1, right);
  shmem_atomic_xor(SHMEM_CTX_DEFAULT, &amo64, (int64_t)3, right);
  shmem_quiet();
  CHECK(nb32 == 0x0f00, "fetch_or_nbi fetched %d", nb32);
  shmem_barrier_all();
  CHECK(amo32 == 0x0f01, "int32 bitwise atomics left %d", amo32);
  CHECK(amo64 == (-16 ^ 3), "int64 bitwise atomics left %lld", (long long)amo64);

  static int8_t s8[2], d8[2];
  static int16_t s16[2], d16[2];
  static int32_t s32[2], d32[2];
  static int64_t s64[2], d64[2];
  s8[0] = (int8_t)(-1 ^ (1 << (me % 7)));
  s8[1] = (int8_t)(1 << (me % 7));
  s16[0] = s8[0];
  s16[1] = s8[1];
  s32[0] = s8[0];
  s32[1] = s8[1];
  s64[0] = s8[0];
  s64[1] = s8[1];
  int8_t want_and = -1, want_or = 0, want_xor = 0;
  for (int p = 0; p < n; p++) {
    want_and &= (int8_t)(-1 ^ (1 << (p % 7)));
    want_or |= (int8_t)(1 << (p % 7));
    want_xor ^= (int8_t)(1 << (p % 7));
  }
  shmem_and_reduce(SHMEM_TEAM_WORLD, d8, s8, 1);
  shmem_or_reduce(SHMEM_TEAM_WORLD, d16, s16 + 1, 1);
  shmem_xor_reduce(SHMEM_TEAM_WORLD, d32, s32 + 1, 1);
  shmem_and_reduce(SHMEM_TEAM_WORLD, d64, s64, 1);
  CHECK(d8[0] == want_and, "int8 and %d, want %d", d8[0], want_and);
  CHECK(d16[0] == want_or, "int16 or %d, want %d", d16[0], want_or);
  CHECK(d32[0] == want_xor, "int32 xor %d, want %d", d32[0], want_xor);
  CHECK(d64[0] == want_and, "int64 and %lld, want %d", (long long)d64[0], want_and);
}

int main(void) {
  shmem_init();
  invalid_context();
  large_alignments();
  test_any_turns();
  negative_stride();
  sized_signal();
  signed_bitwise_generics();
  shmem_finalize();
  return spec_errors != 0;
}
