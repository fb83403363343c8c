// Deprecated active-set collectives: barrier, sync, broadcast/collect/fcollect/alltoall(s) 32/64 and the
// *_to_all reductions over several active sets, with the same pSync reused back to back and checked to be
// restored to SHMEM_SYNC_VALUE after every call.
#include <vector>

#include "pe_main.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// pSync arrays in the symmetric data segment, as old programs declare them.
long pSync[SHMEM_REDUCE_SYNC_SIZE];
long pSync2[SHMEM_BCAST_SYNC_SIZE];
long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];

struct ASet {
  int start, log_stride, size;
  bool has(int pe) const {
    int d = pe - start, s = 1 << log_stride;
    return d >= 0 && d % s == 0 && d / s < size;
  }
  int index(int pe) const { return (pe - start) >> log_stride; }
};

std::vector<ASet> sets() {
  const int n = npes();
  std::vector<ASet> v{{0, 0, n}, {0, 1, (n + 1) / 2}, {n - 1, 0, 1}};
  if (n > 1) v.push_back({1, 0, n - 1});
  if (n > 2) v.push_back({1, 1, n / 2});
  return v;
}

void reset(long* ps, int n) {
  for (int i = 0; i < n; ++i) ps[i] = SHMEM_SYNC_VALUE;
}
// Only meaningful once every member has left its last call: a peer may already have entered the next call
// on the same pSync (allowed back to back), so tests check after shmem_barrier_all.
void expect_restored(const long* ps, int n) {
  for (int i = 0; i < n; ++i) ASSERT_EQ(ps[i], SHMEM_SYNC_VALUE) << "pSync[" << i << "] not restored";
}

class Active : public testing::Test {
 protected:
  void SetUp() override {
    reset(pSync, SHMEM_REDUCE_SYNC_SIZE);
    reset(pSync2, SHMEM_BCAST_SYNC_SIZE);
    shmem_barrier_all();
  }
  void TearDown() override {
    shmem_barrier_all();
    expect_restored(pSync, SHMEM_REDUCE_SYNC_SIZE);
    expect_restored(pSync2, SHMEM_BCAST_SYNC_SIZE);
  }
};

TEST_F(Active, BarrierAndSyncBackToBack) {
  int* counter = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  for (const ASet& s : sets()) {
    if (!s.has(me())) continue;
    int root = s.start;
    for (int round = 1; round <= 30; ++round) {
      shmem_int_atomic_inc(counter, root);
      shmem_barrier(s.start, s.log_stride, s.size, pSync);
      // Everyone's increment of this round is visible at the root once the barrier returns.
      if (me() == root) {
        ASSERT_GE(*counter, round * s.size);
      }
      shmem_sync(s.start, s.log_stride, s.size, pSync);
    }
    shmem_sync(s.start, s.log_stride, s.size, pSync);
    if (me() == root) *counter = 0;
    shmem_barrier(s.start, s.log_stride, s.size, pSync);
  }
  shmem_barrier_all();
  shmem_free(counter);
}

TEST_F(Active, DataMovement) {
  const size_t cap = 64 * static_cast<size_t>(npes());
  int32_t* s32 = static_cast<int32_t*>(shmem_malloc(cap * 4));
  int32_t* d32 = static_cast<int32_t*>(shmem_malloc(cap * 4));
  int64_t* s64 = static_cast<int64_t*>(shmem_malloc(cap * 8));
  int64_t* d64 = static_cast<int64_t*>(shmem_malloc(cap * 8));
  for (const ASet& s : sets()) {
    if (!s.has(me())) continue;
    const int idx = s.index(me()), n = s.size;
    for (int round = 0; round < 3; ++round) {
      // broadcast: root's data everywhere but at the root.
      const int root = round % n;
      for (int i = 0; i < 16; ++i) s64[i] = idx * 100 + i, d64[i] = -1;
      shmem_broadcast64(d64, s64, 16, root, s.start, s.log_stride, n, pSync);
      for (int i = 0; i < 16; ++i) ASSERT_EQ(d64[i], idx == root ? -1 : root * 100 + i);
      // collect with counts that differ per member.
      const int mine = 1 + (idx + round) % 3;
      for (int i = 0; i < mine; ++i) s32[i] = idx * 100 + i;
      shmem_collect32(d32, s32, static_cast<size_t>(mine), s.start, s.log_stride, n, pSync);
      int off = 0;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < 1 + (j + round) % 3; ++i, ++off) ASSERT_EQ(d32[off], j * 100 + i);
      // fcollect
      for (int i = 0; i < 5; ++i) s64[i] = idx * 10 + i;
      shmem_fcollect64(d64, s64, 5, s.start, s.log_stride, n, pSync2);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < 5; ++i) ASSERT_EQ(d64[j * 5 + i], j * 10 + i);
      // alltoall 32 and strided 64
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < 3; ++i) s32[j * 3 + i] = idx * 1000 + j * 10 + i;
      shmem_alltoall32(d32, s32, 3, s.start, s.log_stride, n, pSync);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < 3; ++i) ASSERT_EQ(d32[j * 3 + i], j * 1000 + idx * 10 + i);
      for (int j = 0; j < n; ++j) s64[2 * j] = idx * 10 + j;
      shmem_alltoalls64(d64, s64, 3, 2, 1, s.start, s.log_stride, n, pSync2);
      for (int j = 0; j < n; ++j) ASSERT_EQ(d64[3 * j], j * 10 + idx);
    }
  }
  shmem_barrier_all();
  shmem_free(s32);
  shmem_free(d32);
  shmem_free(s64);
  shmem_free(d64);
}

TEST_F(Active, ToAllReductions) {
  const int cnt = 1100;  // beyond the small path for long and double
  long* ls = static_cast<long*>(shmem_malloc(cnt * sizeof(long)));
  long* ld = static_cast<long*>(shmem_malloc(cnt * sizeof(long)));
  double* ds = static_cast<double*>(shmem_malloc(cnt * sizeof(double)));
  double* dd = static_cast<double*>(shmem_malloc(cnt * sizeof(double)));
  short* ss = static_cast<short*>(shmem_malloc(cnt * sizeof(short)));
  for (const ASet& s : sets()) {
    if (!s.has(me())) continue;
    const int idx = s.index(me()), n = s.size;
    for (int i = 0; i < cnt; ++i) ls[i] = idx + i, ds[i] = 0.25 * idx, ss[i] = static_cast<short>(1 << (idx % 15));
    shmem_long_sum_to_all(ld, ls, cnt, s.start, s.log_stride, n, pWrk, pSync);
    for (int i = 0; i < cnt; ++i) ASSERT_EQ(ld[i], n * (n - 1) / 2 + static_cast<long>(n) * i);
    shmem_long_max_to_all(ld, ls, cnt, s.start, s.log_stride, n, pWrk, pSync);
    for (int i = 0; i < cnt; ++i) ASSERT_EQ(ld[i], n - 1 + i);
    shmem_double_min_to_all(dd, ds, cnt, s.start, s.log_stride, n, reinterpret_cast<double*>(pWrk), pSync);
    for (int i = 0; i < cnt; ++i) ASSERT_EQ(dd[i], 0.0);
    shmem_double_sum_to_all(ds, ds, cnt, s.start, s.log_stride, n, reinterpret_cast<double*>(pWrk), pSync);
    for (int i = 0; i < cnt; ++i) ASSERT_EQ(ds[i], 0.25 * n * (n - 1) / 2);
    shmem_short_or_to_all(ss, ss, 3, s.start, s.log_stride, n, reinterpret_cast<short*>(pWrk), pSync);
    ASSERT_EQ(ss[0], static_cast<short>((1 << n) - 1));
  }
  shmem_barrier_all();
  shmem_free(ls);
  shmem_free(ld);
  shmem_free(ds);
  shmem_free(dd);
  shmem_free(ss);
}

}  // namespace
