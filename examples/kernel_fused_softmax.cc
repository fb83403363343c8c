// A kernel with the two-phase reduction pattern written by hand, then the ready-made operators, then the
// vocabulary-parallel softmax whose blocks exchange statistics with the other PEs themselves.
//
//   tessera-run -n 2 build/bin/kernel_fused_softmax
#include <shmem.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "tessera/kernel.hpp"

namespace tk = tessera::kernel;

int main() {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();

  // 1. Hand-written kernel: each block sums its slice (local reduction), writes a partial to the global
  //    workspace, all blocks meet at sync(), block 0 combines (inter-block reduction).
  std::vector<float> data(1 << 20, 0.5f);
  double total = 0;
  tk::launch({.block_num = 4, .workspace_bytes = 4 * sizeof(double), .name = "sum"}, [&](tk::BlockContext& b) {
    const size_t n = data.size(), lo = n * size_t(b.block_idx()) / size_t(b.block_num());
    const size_t hi = n * size_t(b.block_idx() + 1) / size_t(b.block_num());
    double s = 0;
    for (size_t i = lo; i < hi; ++i) s += data[i];
    b.workspace_as<double>()[b.block_idx()] = s;
    b.sync();
    if (b.block_idx() == 0)
      for (int k = 0; k < b.block_num(); ++k) total += b.workspace_as<double>()[k];
  });

  // 2. The operator does the same (SIMD, accurate for long rows, flat or tree combination).
  float sum = 0;
  tk::reduce(tk::ReduceOp::kSum, tk::ConstTensor{data.data(), tk::DType::kF32, tk::Shape{int64_t(data.size())}},
             tk::Tensor{&sum, tk::DType::kF32, tk::Shape{}});

  // 3. Softmax over a vocabulary of 32000 split across the PEs: each PE holds its columns of 8 rows.
  const int64_t rows = 8, vocab = 32000, c0 = vocab * me / npes, c1 = vocab * (me + 1) / npes;
  std::vector<float> logits(static_cast<size_t>(rows * (c1 - c0))), probs(logits.size()), lse(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = c0; j < c1; ++j) logits[size_t(r * (c1 - c0) + j - c0)] = std::sin(0.001f * float(j * (r + 1)));
  {
    tk::ShardedSoftmax sm(rows);
    sm.softmax(tk::ConstTensor{logits.data(), tk::DType::kF32, tk::Shape{rows, c1 - c0}},
               tk::Tensor{probs.data(), tk::DType::kF32, tk::Shape{rows, c1 - c0}}, lse.data());
  }
  double local_mass = 0;
  for (float p : probs) local_mass += p;
  std::printf("PE %d: hand-written sum %.1f, reduce %.1f, log-sum-exp of row 0 %.6f, probability mass on this PE %.4f "
              "(of %d rows)\n", me, total, double(sum), double(lse[0]), local_mass, int(rows));
  shmem_finalize();
  return 0;
}
