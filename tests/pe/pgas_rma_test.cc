#include <cstring>
#include <numeric>
#include <vector>

#include "pe_main.h"

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }
long pattern(int pe, size_t i, int salt) { return static_cast<long>(pe) * 1000003L + static_cast<long>(i) * 7 + salt; }

// Every PE puts to every PE (itself included) a block of `n` longs; the receiver checks each source's block.
void all_to_all_put(size_t n, int salt) {
  long* dst = static_cast<long*>(shmem_malloc(n * npes() * sizeof(long) + 1));
  ASSERT_NE(dst, nullptr);
  std::vector<long> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = pattern(me(), i, salt);
  for (int pe = 0; pe < npes(); ++pe) shmem_long_put(dst + static_cast<size_t>(me()) * n, src.data(), n, pe);
  shmem_barrier_all();
  size_t wrong = 0;
  for (int from = 0; from < npes(); ++from)
    for (size_t i = 0; i < n; ++i) wrong += dst[static_cast<size_t>(from) * n + i] != pattern(from, i, salt);
  EXPECT_EQ(wrong, 0u) << "n=" << n;
  // And get every peer's block back.
  std::vector<long> back(n);
  for (int pe = 0; pe < npes(); ++pe) {
    shmem_long_get(back.data(), dst + static_cast<size_t>(me()) * n, n, pe);
    for (size_t i = 0; i < n; ++i) wrong += back[i] != pattern(me(), i, salt);
  }
  EXPECT_EQ(wrong, 0u);
  shmem_free(dst);
}

TEST(Rma, PutGetSizes) {
  int salt = 0;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{(1 << 17) + 3}}) all_to_all_put(n, ++salt);
}

TEST(Rma, LargeStreamingPut) {
  // 12 MiB: above the streaming-store threshold; an odd offset exercises the unaligned head and tail.
  size_t bytes = (12u << 20) + 5;
  char* dst = static_cast<char*>(shmem_malloc(bytes + 64));
  std::vector<char> src(bytes);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<char>((i * 131 + static_cast<size_t>(me())) & 0xff);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  shmem_putmem(dst + 3, src.data(), bytes, to);
  shmem_barrier_all();
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += dst[3 + i] != static_cast<char>((i * 131 + static_cast<size_t>(from)) & 0xff);
  EXPECT_EQ(wrong, 0u);
  shmem_free(dst);
}

template <typename T>
void typed_roundtrip(void (*put)(T*, const T*, size_t, int), void (*get)(T*, const T*, size_t, int),
                     void (*pp)(T*, T, int), T (*gg)(const T*, int)) {
  const size_t n = 33;
  T* buf = static_cast<T*>(shmem_malloc((n + 1) * sizeof(T)));
  T src[n];
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<T>(me() * 3 + static_cast<int>(i));
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  put(buf, src, n, to);
  pp(buf + n, static_cast<T>(me() + 1), to);
  shmem_barrier_all();
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(buf[i], static_cast<T>(from * 3 + static_cast<int>(i)));
  EXPECT_EQ(buf[n], static_cast<T>(from + 1));
  T back[n];
  get(back, buf, n, to);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], static_cast<T>(me() * 3 + static_cast<int>(i)));
  EXPECT_EQ(gg(buf + n, to), static_cast<T>(me() + 1));
  shmem_barrier_all();
  shmem_free(buf);
}

TEST(Rma, TypedForms) {
  typed_roundtrip<int>(shmem_int_put, shmem_int_get, shmem_int_p, shmem_int_g);
  typed_roundtrip<double>(shmem_double_put, shmem_double_get, shmem_double_p, shmem_double_g);
  typed_roundtrip<char>(shmem_char_put, shmem_char_get, shmem_char_p, shmem_char_g);
  typed_roundtrip<uint16_t>(shmem_uint16_put, shmem_uint16_get, shmem_uint16_p, shmem_uint16_g);
  typed_roundtrip<long double>(shmem_longdouble_put, shmem_longdouble_get, shmem_longdouble_p, shmem_longdouble_g);
}

TEST(Rma, SizedAndNbi) {
  uint32_t* a = static_cast<uint32_t*>(shmem_calloc(64, 4));
  uint64_t* b = static_cast<uint64_t*>(shmem_calloc(64, 8));
  uint32_t sa[64];
  uint64_t sb[64];
  for (int i = 0; i < 64; ++i) sa[i] = static_cast<uint32_t>(me() * 100 + i), sb[i] = static_cast<uint64_t>(me()) << 40 | static_cast<uint64_t>(i);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  shmem_put32(a, sa, 32, to);
  shmem_put32_nbi(a + 32, sa + 32, 32, to);
  shmem_put64_nbi(b, sb, 64, to);
  shmem_quiet();
  shmem_barrier_all();
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(a[i], static_cast<uint32_t>(from * 100 + i));
    EXPECT_EQ(b[i], static_cast<uint64_t>(from) << 40 | static_cast<uint64_t>(i));
  }
  uint64_t g[64];
  shmem_get64_nbi(g, b, 64, to);
  shmem_quiet();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(g[i], static_cast<uint64_t>(me()) << 40 | static_cast<uint64_t>(i));
  shmem_barrier_all();
  shmem_free(a);
  shmem_free(b);
}

TEST(Rma, Strided) {
  const size_t n = 10;
  long* dst = static_cast<long*>(shmem_calloc(3 * n, sizeof(long)));
  long src[2 * n];
  for (size_t i = 0; i < 2 * n; ++i) src[i] = pattern(me(), i, 9);
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  shmem_long_iput(dst, src, 3, 2, n, to);  // dst[3i] = src[2i]
  shmem_barrier_all();
  for (size_t i = 0; i < 3 * n; ++i) EXPECT_EQ(dst[i], i % 3 == 0 ? pattern(from, (i / 3) * 2, 9) : 0) << i;
  long got[2 * n] = {};
  shmem_long_iget(got, dst, 2, 3, n, to);  // got[2i] = to's dst[3i] = my src[2i]
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(got[2 * i], pattern(me(), 2 * i, 9));
  shmem_barrier_all();
  // Blocked strides (1.6): 3 blocks of 2 elements.
  std::memset(dst, 0, 3 * n * sizeof(long));
  shmem_barrier_all();
  shmem_long_ibput(dst, src, 4, 2, 2, 3, to);  // dst[4b + j] = src[2b + j]
  shmem_barrier_all();
  for (size_t bl = 0; bl < 3; ++bl)
    for (size_t j = 0; j < 2; ++j) EXPECT_EQ(dst[4 * bl + j], pattern(from, 2 * bl + j, 9));
  EXPECT_EQ(dst[2], 0);
  shmem_barrier_all();
  shmem_free(dst);
}

// shmem_ptr gives an address for exactly the PEs of this host (the shared team); null for a PE on another
// host, as the specification says, whose element is then written with a put.
TEST(Rma, PtrGivesDirectAccess) {
  int* x = static_cast<int*>(shmem_calloc(npes(), sizeof(int)));
  for (int pe = 0; pe < npes(); ++pe) {
    int* remote = static_cast<int*>(shmem_ptr(x, pe));
    const bool same_host = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED) >= 0;
    ASSERT_EQ(remote != nullptr, same_host) << "PE " << pe;
    if (remote) __atomic_store_n(remote + me(), me() + 10, __ATOMIC_RELEASE);
    else shmem_int_p(x + me(), me() + 10, pe);
  }
  shmem_barrier_all();
  for (int pe = 0; pe < npes(); ++pe) EXPECT_EQ(x[pe], pe + 10);
  EXPECT_EQ(shmem_ptr(x, npes()), nullptr);
  int local = 0;
  EXPECT_EQ(shmem_ptr(&local, 0), nullptr);
  EXPECT_TRUE(shmem_addr_accessible(x, npes() - 1));
  EXPECT_FALSE(shmem_addr_accessible(&local, 0));
  EXPECT_TRUE(shmem_pe_accessible(npes() - 1));
  EXPECT_FALSE(shmem_pe_accessible(npes()));
  shmem_barrier_all();
  shmem_free(x);
}

// Global and static variables are symmetric, as OpenSHMEM programs expect.
long g_global_array[16];
static int s_static_value = 5;

TEST(Rma, GlobalVariablesAreSymmetric) {
  EXPECT_EQ(s_static_value, 5);  // initialised data survived the move into shared memory
  shmem_barrier_all();
  int to = (me() + 1) % npes(), from = (me() + npes() - 1) % npes();
  long v[16];
  for (int i = 0; i < 16; ++i) v[i] = pattern(me(), static_cast<size_t>(i), 4);
  shmem_long_put(g_global_array, v, 16, to);
  shmem_int_p(&s_static_value, me() + 100, to);
  shmem_barrier_all();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(g_global_array[i], pattern(from, static_cast<size_t>(i), 4));
  EXPECT_EQ(s_static_value, from + 100);
  EXPECT_EQ(shmem_int_g(&s_static_value, to), me() + 100);
  shmem_barrier_all();
}

TEST(Rma, ContextsUseTeamRelativePes) {
  shmem_ctx_t ctx;
  ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
  long* x = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  int to = (me() + 1) % npes();
  shmem_ctx_long_p(ctx, x, me() + 1, to);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  EXPECT_EQ(*x, (me() + npes() - 1) % npes() + 1);
  shmem_team_t team;
  shmem_ctx_t tctx;
  ASSERT_EQ(shmem_ctx_get_team(ctx, &team), 0);
  EXPECT_EQ(team, SHMEM_TEAM_WORLD);
  shmem_ctx_destroy(ctx);
  // A context on a team of the odd PEs addresses them by team number.
  shmem_team_t odd = SHMEM_TEAM_INVALID;
  int nodd = npes() / 2;
  if (nodd > 0) {
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, nodd, nullptr, 0, &odd), 0);
    if (odd != SHMEM_TEAM_INVALID) {
      ASSERT_EQ(shmem_team_create_ctx(odd, 0, &tctx), 0);
      int tme = shmem_team_my_pe(odd);
      shmem_ctx_long_p(tctx, x, 1000 + tme, (tme + 1) % nodd);
      shmem_ctx_quiet(tctx);
      shmem_team_sync(odd);
      EXPECT_EQ(*x, 1000 + (tme + nodd - 1) % nodd);
      shmem_ctx_destroy(tctx);
      shmem_team_destroy(odd);
    }
  }
  shmem_barrier_all();
  shmem_free(x);
}

}  // namespace
