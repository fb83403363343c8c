// Team collectives that move data: broadcast, collect, fcollect, alltoall, alltoalls (typed and mem), over
// every team shape: world, a strided team, 2-d split axes (sizes 1..n, stride 2), teams of one PE.
#include <cstring>
#include <string>
#include <vector>

#include "pe_main.h"

namespace {
int npes() { return shmem_n_pes(); }

struct TeamCase {
  std::string name;
  shmem_team_t team;
};

// Teams made collectively by every PE; PEs outside a team get SHMEM_TEAM_INVALID and skip it.
class Teams {
 public:
  Teams() {
    add("world", SHMEM_TEAM_WORLD, false);
    shmem_team_t t;
    int start = npes() > 1 ? 1 : 0;
    EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, (npes() - start + 1) / 2, nullptr, 0, &t), 0);
    add("odd", t, true);
    shmem_team_t x, y;
    EXPECT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, nullptr, 0, &x, nullptr, 0, &y), 0);
    add("x2", x, true);
    add("y2", y, true);
    EXPECT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, nullptr, 0, &x, nullptr, 0, &y), 0);
    add("solo", x, true);
    add("y1", y, true);
  }
  ~Teams() {
    for (shmem_team_t t : owned_) shmem_team_destroy(t);
  }
  const std::vector<TeamCase>& cases() const { return cases_; }

 private:
  void add(const char* name, shmem_team_t t, bool owned) {
    if (t == SHMEM_TEAM_INVALID) return;
    cases_.push_back({name, t});
    if (owned) owned_.push_back(t);
  }
  std::vector<TeamCase> cases_;
  std::vector<shmem_team_t> owned_;
};

constexpr size_t kCounts[] = {0, 1, 7, 1500};
constexpr size_t kMax = 1500 + 2;  // largest per-PE count (collect adds idx % 3)
long val(int idx, size_t i) { return idx * 100000L + static_cast<long>(i); }

template <typename T>
T* sym(size_t n) {
  return static_cast<T*>(shmem_malloc(n * sizeof(T)));
}

TEST(Coll, Broadcast) {
  Teams teams;
  const size_t cap = kMax * static_cast<size_t>(npes());
  long* src = sym<long>(cap);
  long* dst = sym<long>(cap);
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (int root : {0, n - 1}) {
      for (size_t cnt : kCounts) {
        for (size_t i = 0; i < cnt; ++i) src[i] = val(idx, i), dst[i] = -1;
        ASSERT_EQ(shmem_long_broadcast(c.team, dst, src, cnt, root), 0);
        for (size_t i = 0; i < cnt; ++i)
          ASSERT_EQ(dst[i], val(root, i)) << c.name << " root " << root << " count " << cnt << " i " << i;
      }
    }
  }
  shmem_free(src);
  shmem_free(dst);
}

TEST(Coll, BroadcastTypesAndMem) {
  Teams teams;
  double* d = sym<double>(16);
  long double* ld = sym<long double>(16);
  char* bytes = sym<char>(64);
  for (const TeamCase& c : teams.cases()) {
    const int idx = shmem_team_my_pe(c.team), root = shmem_team_n_pes(c.team) / 2;
    for (int i = 0; i < 8; ++i) d[i] = idx + 0.5 * i, ld[i] = idx * 3.0L + i, bytes[i] = static_cast<char>('a' + idx);
    ASSERT_EQ(shmem_double_broadcast(c.team, d + 8, d, 8, root), 0);
    ASSERT_EQ(shmem_longdouble_broadcast(c.team, ld + 8, ld, 8, root), 0);
    ASSERT_EQ(shmem_broadcastmem(c.team, bytes + 32, bytes, 8, root), 0);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(d[8 + i], root + 0.5 * i) << c.name;
      ASSERT_EQ(ld[8 + i], root * 3.0L + i) << c.name;
      ASSERT_EQ(bytes[32 + i], 'a' + root) << c.name;
    }
  }
  shmem_free(d);
  shmem_free(ld);
  shmem_free(bytes);
}

TEST(Coll, CollectVariableCounts) {
  Teams teams;
  const size_t cap = kMax * static_cast<size_t>(npes());
  long* src = sym<long>(kMax);
  long* dst = sym<long>(cap);
  int* isrc = sym<int>(kMax);
  int* idst = sym<int>(cap);
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t base : kCounts) {
      auto count = [&](int j) { return base + static_cast<size_t>(j % 3); };
      for (size_t i = 0; i < count(idx); ++i) src[i] = val(idx, i), isrc[i] = static_cast<int>(val(idx, i));
      ASSERT_EQ(shmem_long_collect(c.team, dst, src, count(idx)), 0);
      ASSERT_EQ(shmem_collectmem(c.team, idst, isrc, count(idx) * sizeof(int)), 0);
      size_t off = 0;
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < count(j); ++i, ++off) {
          ASSERT_EQ(dst[off], val(j, i)) << c.name << " base " << base << " from " << j << " i " << i;
          ASSERT_EQ(idst[off], static_cast<int>(val(j, i))) << c.name;
        }
    }
  }
  shmem_free(src);
  shmem_free(dst);
  shmem_free(isrc);
  shmem_free(idst);
}

TEST(Coll, Fcollect) {
  Teams teams;
  const size_t cap = kMax * static_cast<size_t>(npes());
  long* src = sym<long>(kMax);
  long* dst = sym<long>(cap);
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t cnt : kCounts) {
      for (size_t i = 0; i < cnt; ++i) src[i] = val(idx, i);
      ASSERT_EQ(shmem_long_fcollect(c.team, dst, src, cnt), 0);
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < cnt; ++i) ASSERT_EQ(dst[j * cnt + i], val(j, i)) << c.name << " count " << cnt;
      ASSERT_EQ(shmem_fcollectmem(c.team, dst, src, cnt * sizeof(long)), 0);
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < cnt; ++i) ASSERT_EQ(dst[j * cnt + i], val(j, i)) << c.name << " mem count " << cnt;
    }
  }
  shmem_free(src);
  shmem_free(dst);
}

TEST(Coll, Alltoall) {
  Teams teams;
  const size_t cap = 600 * static_cast<size_t>(npes());
  long* src = sym<long>(cap);
  long* dst = sym<long>(cap);
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t cnt : {size_t{0}, size_t{1}, size_t{5}, size_t{600}}) {
      // Block j of my source goes to member j: value names sender, receiver and element.
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < cnt; ++i) src[j * cnt + i] = idx * 1000000L + j * 1000L + static_cast<long>(i);
      ASSERT_EQ(shmem_long_alltoall(c.team, dst, src, cnt), 0);
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < cnt; ++i)
          ASSERT_EQ(dst[j * cnt + i], j * 1000000L + idx * 1000L + static_cast<long>(i)) << c.name << " " << cnt;
      ASSERT_EQ(shmem_alltoallmem(c.team, dst, src, cnt * sizeof(long)), 0);
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < cnt; ++i)
          ASSERT_EQ(dst[j * cnt + i], j * 1000000L + idx * 1000L + static_cast<long>(i)) << c.name << " mem";
    }
  }
  shmem_free(src);
  shmem_free(dst);
}

TEST(Coll, AlltoallsStrided) {
  Teams teams;
  const ptrdiff_t dst_stride = 2, src_stride = 3;
  const size_t cnt = 9, cap = cnt * 3 * static_cast<size_t>(npes());
  int* src = sym<int>(cap);
  int* dst = sym<int>(cap);
  for (const TeamCase& c : teams.cases()) {
    const int n = shmem_team_n_pes(c.team), idx = shmem_team_my_pe(c.team);
    for (size_t k = 0; k < cap; ++k) src[k] = -7, dst[k] = -1;
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < cnt; ++i) src[(j * cnt + i) * src_stride] = idx * 10000 + j * 100 + static_cast<int>(i);
    ASSERT_EQ(shmem_int_alltoalls(c.team, dst, src, dst_stride, src_stride, cnt), 0);
    for (int j = 0; j < n; ++j)
      for (size_t i = 0; i < cnt; ++i) {
        ASSERT_EQ(dst[(j * cnt + i) * dst_stride], j * 10000 + idx * 100 + static_cast<int>(i)) << c.name;
        ASSERT_EQ(dst[(j * cnt + i) * dst_stride + 1], -1) << c.name << ": gap written";
      }
    ASSERT_EQ(shmem_alltoallsmem(c.team, dst, src, 1, 1, 4), 0);  // bytes, contiguous
    // Block j (one int) of dest is element idx of member j's source.
    auto src_on = [&](int j, size_t k) {
      if (k % src_stride) return -7;
      size_t e = k / src_stride;
      return j * 10000 + static_cast<int>(e / cnt) * 100 + static_cast<int>(e % cnt);
    };
    for (int j = 0; j < n; ++j) ASSERT_EQ(dst[j], src_on(j, static_cast<size_t>(idx))) << c.name << " mem";
  }
  shmem_free(src);
  shmem_free(dst);
}

TEST(Coll, ManyTeamsCreatedAndDestroyed) {
  // Slots are reused: collectives on a fresh team must not see a destroyed team's state.
  long* src = sym<long>(4);
  long* dst = sym<long>(4 * static_cast<size_t>(npes()));
  for (int round = 0; round < 80; ++round) {
    shmem_team_t t;
    int size = 1 + round % npes();
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, nullptr, 0, &t), 0);
    if (t != SHMEM_TEAM_INVALID) {
      src[0] = round * 10 + shmem_team_my_pe(t);
      ASSERT_EQ(shmem_long_collect(t, dst, src, 1), 0);
      for (int j = 0; j < size; ++j) ASSERT_EQ(dst[j], round * 10 + j);
      shmem_team_destroy(t);
    }
  }
  shmem_free(src);
  shmem_free(dst);
}

// A context's team (shmem_ctx_get_team) is the team the context was made on: collectives on it run on that
// team's communicator, interleaved with collectives on the world team.
TEST(Coll, OnTheTeamOfAContext) {
  shmem_team_t t;
  const int start = npes() > 1 ? 1 : 0;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, npes() - start, nullptr, 0, &t), 0);
  long* src = sym<long>(8);
  long* dst = sym<long>(8 * static_cast<size_t>(npes()));
  if (t != SHMEM_TEAM_INVALID) {
    shmem_ctx_t ctx;
    ASSERT_EQ(shmem_team_create_ctx(t, 0, &ctx), 0);
    shmem_team_t of_ctx = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_ctx_get_team(ctx, &of_ctx), 0);
    const int n = shmem_team_n_pes(of_ctx), me = shmem_team_my_pe(of_ctx);
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 8; ++i) src[i] = val(me, static_cast<size_t>(i)) + round;
      ASSERT_EQ(shmem_long_fcollect(of_ctx, dst, src, 8), 0);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < 8; ++i) ASSERT_EQ(dst[j * 8 + i], val(j, static_cast<size_t>(i)) + round) << j << " " << i;
      ASSERT_EQ(shmem_long_sum_reduce(of_ctx, dst, src, 8), 0);
      long want = 0;
      for (int j = 0; j < n; ++j) want += val(j, 3) + round;
      ASSERT_EQ(dst[3], want);
    }
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(t);
  }
  src[0] = shmem_my_pe();
  ASSERT_EQ(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1), 0);
  EXPECT_EQ(dst[0], static_cast<long>(npes()) * (npes() - 1) / 2);
  shmem_free(src);
  shmem_free(dst);
}

TEST(Coll, InvalidTeamReturnsNonzero) {
  long* a = sym<long>(2);
  EXPECT_NE(shmem_long_broadcast(SHMEM_TEAM_INVALID, a, a + 1, 1, 0), 0);
  EXPECT_NE(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, a, a + 1, 1), 0);
  shmem_free(a);
}

}  // namespace
