// A tensor-parallel row-parallel linear layer with Tessera's fused MatMul + AllReduce: every PE holds a slice
// of the inner dimension of X (tokens x hidden) and of W (hidden x out); the product's slabs are reduced
// across the PEs while the next slab is computed. Checks C against GEMM-then-sum and prints both times.
//   build/bin/tessera-run -n 4 build/bin/fused_matmul [tokens] [hidden]
#include <shmem.h>
#include <tessera/fused.hpp>

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 256, h = argc > 2 ? std::atoi(argv[2]) : 1024;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes(), k = h / n;
  std::vector<float> x(static_cast<size_t>(m) * k), w(static_cast<size_t>(k) * h), c(static_cast<size_t>(m) * h);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.001f * static_cast<float>(i + me));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.002f * static_cast<float>(i) + me);
  tessera::fused::MatMulAllReduce op(m, h);
  op.run(x.data(), w.data(), c.data(), m, k);  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  op.run(x.data(), w.data(), c.data(), m, k);
  const double fused_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // The reference: my partial product, summed over the PEs through the symmetric heap.
  float* part = static_cast<float*>(shmem_malloc(sizeof(float) * c.size()));
  float* sum = static_cast<float*>(shmem_malloc(sizeof(float) * c.size()));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, h, k, 1.0f, x.data(), k, w.data(), h, 0.0f, part, h);
  shmem_float_sum_reduce(SHMEM_TEAM_WORLD, sum, part, c.size());
  long bad = 0;
  for (size_t i = 0; i < c.size(); ++i)
    if (std::fabs(c[i] - sum[i]) > 1e-3f * (1.0f + std::fabs(sum[i]))) ++bad;
  std::printf("PE %d: %d x %d layer (inner %d per PE): fused MatMul+AllReduce %.2f ms; %s\n", me, m, h, k, fused_ms,
              bad ? "WRONG result" : "matches GEMM then sum");
  shmem_free(sum);
  shmem_free(part);
  shmem_finalize();
  return bad ? 1 : 0;
}
