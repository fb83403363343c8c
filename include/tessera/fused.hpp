// Tessera fused compute + communication for tensor parallelism: the row-parallel linear layer,
// C = sum over PEs of A_p * B_p, with the reduction pipelined into the matrix product (MatMulAllReduce, and
// MatMulReduceScatter when each PE keeps only its rows), and the column-parallel layer, Y = gather(X) * W_p,
// multiplying the other PEs' rows where they lie (AllGatherMatMul).
//
//   tessera::fused::MatMulAllReduce op(/*max_m=*/4096, /*n=*/8192);   // collective
//   op.run(A, B, C, m, k);          // A: m x k, B: k x n (this PE's shard), C: m x n, row-major f32
//
// How: the product is computed in slabs of columns (OpenBLAS sgemm) into symmetric memory; each slab is
// reduced by the collective engine (an allreduce in place; a reduce-scatter for MatMulReduceScatter) and
// copied into C's columns. Within a host, slab i is reduced as soon as slab i+1 is done, while it is still
// recent in cache; when the PEs span hosts, the reductions run on a thread of the op's own while the calling
// thread computes the next slabs, so the network phase hides behind the product. The engine's reduction
// gives every PE the same bits; under TESSERA_DETERMINISTIC=1 also run to run (docs/coll.md).
//
// Contracts
// - Constructor, destructor and run() are collective over all PEs; the op keeps a communicator of its own
//   over them. The engine chooses the path: within a host it reads and writes the PEs' slabs in place,
//   across hosts it runs its rows across hosts.
// - run(): m <= max_m on every PE and the same m everywhere; k may differ per PE (k = 0 contributes zeros).
//   C may not alias A or B. Arithmetic in f32.
// - Bad arguments throw tessera::Error naming the value and the limit.
#pragma once
#include <tessera/needs_cxx20.hpp>  // first: an older standard stops here, with one message
#include <tessera/error.hpp>
#include <memory>

namespace tessera::fused {

using Error = tessera::Error;

class MatMulAllReduce {
 public:
  // tile_cols 0: chosen per call: n/m slabs (each slab's GEMM reads all of A again, so fewer slabs when A is
  // large), 2 to 8 of them and no more than the PEs (beyond that the extra reads of A cost more than the
  // reduction they hide, for k = n / PEs), at least 64 columns each; 8 when the PEs span hosts (the
  // reductions then overlap the products, all but one slab's of each).
  MatMulAllReduce(int max_m, int n, int tile_cols = 0);
  ~MatMulAllReduce();
  MatMulAllReduce(const MatMulAllReduce&) = delete;
  MatMulAllReduce& operator=(const MatMulAllReduce&) = delete;

  void run(const float* A, const float* B, float* C, int m, int k);
  int tile_cols(int m) const;  // columns per slab for a call of m rows

 private:
  friend class MatMulReduceScatter;
  void run_rows(const float* A, const float* B, float* C, int m, int k, bool scatter);
  struct Impl;
  std::unique_ptr<Impl> p_;
};

/// The same product, reduce-scattered: each PE receives only its rows of C, rows [first_row(m),
/// first_row(m) + rows(m)) (PE p's share is rows [p*m/n, (p+1)*m/n)): the slabs' reductions go straight
/// into C_rows and nothing is gathered. Collective; C_rows is rows(m) x n.
class MatMulReduceScatter {
 public:
  MatMulReduceScatter(int max_m, int n, int tile_cols = 0);
  void run(const float* A, const float* B, float* C_rows, int m, int k);
  int first_row(int m) const;
  int rows(int m) const;

 private:
  MatMulAllReduce op_;
};

/// The column-parallel layer: Y = X * W, where X (m x k) is spread over the PEs by rows (PE p holds rows
/// [p*m/n, (p+1)*m/n)) and W (k x n) is this PE's column shard; Y (m x n) on every PE. Each PE's rows are
/// multiplied straight from that PE's symmetric copy, starting with its own, so no gathered X is ever built
/// (a PE on another host: its rows are fetched with one get first). Collective; the same m everywhere, n
/// per PE.
class AllGatherMatMul {
 public:
  AllGatherMatMul(int max_m, int k);
  ~AllGatherMatMul();
  AllGatherMatMul(const AllGatherMatMul&) = delete;
  AllGatherMatMul& operator=(const AllGatherMatMul&) = delete;

  void run(const float* X_rows, const float* W, float* Y, int m, int n);
  int first_row(int m) const;  // this PE's first row of X
  int rows(int m) const;       // how many it holds

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace tessera::fused
