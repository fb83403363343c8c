// Tensor-parallel row-parallel linear layer, C = sum over PEs of A_p (m x h/n) * B_p (h/n x h): Tessera's fused
// MatMul+AllReduce (tessera/fused.hpp) against the unfused way with the same libraries, OpenBLAS sgemm of the
// whole product then Tessera's allreduce (tessera::coll::Comm). bench/fused/fused_compare.sh runs this beside
// the same layer with MPI_Allreduce (fused_mpi.c) and with torch.matmul + gloo (fused_gloo.py).
// Entries A = ((p*5 + i*3 + j) % 7 - 3) / 4, B = ((p*2 + i + j*5) % 5 - 2) / 4; OPENBLAS_NUM_THREADS=1 (one
// thread per PE, as many PEs as the driver starts). Timed per call: the median over iterations of the slowest
// PE's time; the unfused figure is split into its GEMM and allreduce parts. Both results are compared with
// each other on every element.  usage: tessera-run -n N bench_fused_tessera M H ITERS [COLUMNS_PER_SLAB]
#include <shmem.h>
#include <tessera/coll.hpp>
#include <tessera/fused.hpp>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M H ITERS\n", argv[0]);
    return 2;
  }
  const int M = std::atoi(argv[1]), H = std::atoi(argv[2]), iters = std::atoi(argv[3]);
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int K = H / n;
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * H), C1(static_cast<size_t>(M) * H),
      C2(C1.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) A[static_cast<size_t>(i) * K + j] = static_cast<float>((me * 5 + i * 3 + j) % 7 - 3) / 4;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < H; ++j) B[static_cast<size_t>(i) * H + j] = static_cast<float>((me * 2 + i + j * 5) % 5 - 2) / 4;
  tessera::fused::MatMulAllReduce op(M, H, argc > 4 ? std::atoi(argv[4]) : 0);  // optional: columns per slab
  tessera::coll::Comm comm = tessera::coll::Comm::world();
  double* t = static_cast<double*>(shmem_calloc(6, sizeof(double)));
  std::vector<double> fused, gemm, ar, unfused;
  const int warm = iters / 4 + 1;
  for (int it = 0; it < warm + iters; ++it) {
    shmem_barrier_all();
    double t0 = now();
    op.run(A.data(), B.data(), C1.data(), M, K);
    t[0] = now() - t0;
    shmem_barrier_all();
    t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, H, K, 1.0f, A.data(), K, B.data(), H, 0.0f, C2.data(), H);
    const double t1 = now();
    comm.allreduce(C2.data(), C2.data(), C2.size(), tessera::coll::DataType::kFloat32, tessera::coll::RedOp::kSum);
    t[1] = t1 - t0;
    t[2] = now() - t1;
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, t + 3, t, 3);
    if (it >= warm) {
      fused.push_back(t[3]);
      gemm.push_back(t[4]);
      ar.push_back(t[5]);
      unfused.push_back(t[4] + t[5]);
    }
  }
  long bad = 0;
  for (size_t i = 0; i < C1.size(); ++i)
    if (std::fabs(C1[i] - C2[i]) > 1e-3f * (1.0f + std::fabs(C2[i]))) ++bad;
  if (bad) std::fprintf(stderr, "PE %d: fused and unfused differ in %ld elements\n", me, bad);
  if (me == 0)
    std::printf("{\"impl\":\"tessera\",\"ranks\":%d,\"m\":%d,\"h\":%d,\"fused_us\":%.1f,\"us\":%.1f,\"gemm_us\":%.1f,"
                "\"allreduce_us\":%.1f}\n",
                n, M, H, median(fused) * 1e6, median(unfused) * 1e6, median(gemm) * 1e6, median(ar) * 1e6);
  shmem_free(t);
  comm.destroy();
  shmem_finalize();
  return bad ? 1 : 0;
}
