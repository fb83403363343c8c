// Fused MatMul + AllReduce (tessera/fused.hpp) against the product every PE computes itself from all PEs'
// shards (integer-valued entries, so f32 sums are exact and the comparison is exact): many tiles, shards of
// different depth (one PE with none), fewer rows than PEs, no rows, calls in a row, identical results on
// every PE, bad arguments; the reduce-scattered form and the column-parallel AllGather + MatMul.
#include <tessera/fused.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pe_main.h"
#include "pgas/team.h"

namespace {
using tessera::fused::MatMulAllReduce;

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

int depth(int pe) { return pe == 1 ? 0 : 3 + pe; }  // PE 1 contributes nothing
float a_of(int pe, int i, int j) { return static_cast<float>((pe * 5 + i * 3 + j) % 7 - 3); }
float b_of(int pe, int i, int j) { return static_cast<float>((pe * 2 + i + j * 5) % 5 - 2); }

void check(MatMulAllReduce& op, int m, int n) {
  const int k = depth(me());
  std::vector<float> A(static_cast<size_t>(m) * k), B(static_cast<size_t>(k) * n), C(static_cast<size_t>(m) * n, -1.0f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) A[i * k + j] = a_of(me(), i, j);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < n; ++j) B[i * n + j] = b_of(me(), i, j);
  op.run(A.data(), B.data(), C.data(), m, k);
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < npes(); ++p)
        for (int l = 0; l < depth(p); ++l) want += static_cast<double>(a_of(p, i, l)) * b_of(p, l, j);
      ASSERT_EQ(C[i * n + j], static_cast<float>(want)) << "C[" << i << "][" << j << "] m " << m << " n " << n;
      uint32_t bits;
      std::memcpy(&bits, &C[i * n + j], 4);
      h = (h ^ bits) * 1099511628211ull;
    }
  uint64_t* s = static_cast<uint64_t*>(shmem_calloc(4, sizeof(uint64_t)));
  s[0] = h;
  s[1] = ~h;
  shmem_uint64_max_reduce(SHMEM_TEAM_WORLD, s + 2, s, 2);
  EXPECT_EQ(s[2], h) << "C differs between PEs";
  EXPECT_EQ(s[3], ~h) << "C differs between PEs";
  shmem_free(s);
}

TEST(MatMulAllReduce, ManyTilesAndCallsInARow) {
  MatMulAllReduce op(64, 29, 4);
  EXPECT_EQ(op.tile_cols(37), 4);
  check(op, 37, 29);  // 8 tiles, the last partial
  check(op, 64, 29);
  check(op, 1, 29);
  check(op, 0, 29);
  check(op, 37, 29);
}

TEST(MatMulAllReduce, FewerRowsThanPesAndAutomaticTiles) {
  MatMulAllReduce narrow(16, 3, 5);
  check(narrow, 16, 3);
  check(narrow, 2, 3);  // fewer rows than PEs: some reduce nothing
  MatMulAllReduce wide(300, 1024);
  if (tessera::pgas::team_world()->spans_hosts) {
    // Across hosts the reductions overlap the products: 8 slabs whatever the shape.
    for (int m : {100, 300, 2000}) EXPECT_EQ(wide.tile_cols(m), 128) << "m " << m;
  } else {
    // B ten times A: 8 slabs, but no more slabs than PEs (2 at least).
    const int most = std::max(2, npes());
    EXPECT_EQ(wide.tile_cols(100), (1024 + std::min(8, most) - 1) / std::min(8, most));
    EXPECT_EQ(wide.tile_cols(300), (1024 + std::min(3, most) - 1) / std::min(3, most));  // 3 slabs
    EXPECT_EQ(wide.tile_cols(2000), 512);  // at least 2
  }
  check(wide, 100, 1024);
  check(wide, 300, 1024);
}

// Each op reduces on a communicator of its own: two ops alive at once, taking turns with each other and with
// the OpenSHMEM reduction inside check(), must not mix up their calls.
TEST(MatMulAllReduce, TwoOpsTakeTurnsWithEachOtherAndOtherCollectives) {
  MatMulAllReduce small(64, 29, 4), large(300, 1024);
  check(small, 37, 29);
  check(large, 300, 1024);
  check(small, 64, 29);
  check(large, 100, 1024);
}

TEST(MatMulAllReduce, BadArgumentsThrowNamingTheValue) {
  MatMulAllReduce op(8, 4);
  std::vector<float> a(9 * 4), b(16), c(9 * 4);
  try {
    op.run(a.data(), b.data(), c.data(), 9, 4);
    ADD_FAILURE() << "m 9 accepted with max_m 8";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("m is 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MatMulAllReduce(8, 0), tessera::Error);
  EXPECT_THROW(MatMulAllReduce(0, 8), tessera::Error);
}
}  // namespace

namespace {
// The reduce-scattered product: each PE's rows of the same C, checked against its own product.
TEST(MatMulReduceScatter, EachPeGetsItsRows) {
  tessera::fused::MatMulReduceScatter op(64, 29, 4);
  for (int m : {37, 3, 64, 0}) {
    const int k = depth(me()), n = 29, r0 = op.first_row(m), rows = op.rows(m);
    EXPECT_EQ(r0, static_cast<int>(static_cast<int64_t>(m) * me() / npes()));
    std::vector<float> A(static_cast<size_t>(m) * k), B(static_cast<size_t>(k) * n), C(static_cast<size_t>(rows) * n + 1, -1.0f);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < k; ++j) A[i * k + j] = a_of(me(), i, j);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < n; ++j) B[i * n + j] = b_of(me(), i, j);
    op.run(A.data(), B.data(), C.data(), m, k);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int p = 0; p < npes(); ++p)
          for (int l = 0; l < depth(p); ++l) want += static_cast<double>(a_of(p, r0 + i, l)) * b_of(p, l, j);
        ASSERT_EQ(C[i * n + j], static_cast<float>(want)) << "row " << r0 + i << " column " << j << " m " << m;
      }
    EXPECT_EQ(C[static_cast<size_t>(rows) * n], -1.0f) << "wrote past its rows";
  }
}

// The column-parallel layer: X spread by rows, W this PE's columns; Y = X * W on every PE.
TEST(AllGatherMatMul, MultipliesEveryPesRows) {
  const int k = 6;
  tessera::fused::AllGatherMatMul op(40, k);
  for (int m : {40, 5, 1, 0}) {
    const int n = 3 + me();  // each PE its own column shard width
    const int r0 = op.first_row(m), rows = op.rows(m);
    std::vector<float> X(static_cast<size_t>(rows) * k), W(static_cast<size_t>(k) * n), Y(static_cast<size_t>(m) * n, -1.0f);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < k; ++j) X[i * k + j] = a_of(0, r0 + i, j);  // row i of the global X
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < n; ++j) W[i * n + j] = b_of(me(), i, j);
    op.run(X.data(), W.data(), Y.data(), m, n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int l = 0; l < k; ++l) want += static_cast<double>(a_of(0, i, l)) * b_of(me(), l, j);
        ASSERT_EQ(Y[i * n + j], static_cast<float>(want)) << "Y[" << i << "][" << j << "] m " << m;
      }
  }
  EXPECT_THROW(op.run(nullptr, nullptr, nullptr, 41, 1), tessera::Error);
}
}  // namespace
