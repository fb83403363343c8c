// Tessera fused compute + communication: the row-parallel linear layer of tensor parallelism,
// C = sum over PEs of A_p * B_p, with the reduction pipelined into the matrix product.
//
//   tessera::fused::MatMulAllReduce op(/*max_m=*/4096, /*n=*/8192);   // collective
//   op.run(A, B, C, m, k);          // A: m x k, B: k x n (this PE's shard), C: m x n, row-major f32
//
// How: the product is computed in tiles of columns (OpenBLAS sgemm) into symmetric memory; as soon as tile
// i+1 is done, every PE reduces its own share of the rows of tile i from every PE's partial tile, read in
// place, while the tile is still recent in cache; at the end each PE copies the other PEs' reduced rows
// into C. One PE sums each element, in PE order, so C is bitwise identical on every PE and run to run.
//
// Contracts
// - Constructor, destructor and run() are collective over all PEs, which must share one host (the partial
//   tiles are read through the shared mapping); the constructor throws tessera::Error otherwise.
// - run(): m <= max_m on every PE and the same m everywhere; k may differ per PE (k = 0 contributes zeros).
//   C may not alias A or B. Arithmetic in f32.
// - Bad arguments throw tessera::Error naming the value and the limit.
#pragma once
#include <tessera/error.hpp>
#include <memory>

namespace tessera::fused {

using Error = tessera::Error;

class MatMulAllReduce {
 public:
  // tile_cols 0: chosen per call: n/m slabs (each slab's GEMM reads all of A again, so fewer slabs when A is
  // large), 2 to 8 of them, at least 64 columns each.
  MatMulAllReduce(int max_m, int n, int tile_cols = 0);
  ~MatMulAllReduce();
  MatMulAllReduce(const MatMulAllReduce&) = delete;
  MatMulAllReduce& operator=(const MatMulAllReduce&) = delete;

  void run(const float* A, const float* B, float* C, int m, int k);
  int tile_cols(int m) const;  // columns per slab for a call of m rows

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace tessera::fused
