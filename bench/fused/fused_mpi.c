/* The unfused row-parallel linear layer with Open MPI: OpenBLAS sgemm of this rank's product, then
 * MPI_Allreduce (in place, float sum) of C; the same matrices as bench/fused/fused_tessera.cc. Timed per
 * call after an MPI_Barrier: the GEMM and the allreduce; the median over iterations of the slowest rank's
 * times. One JSON line from rank 0.  usage: mpirun -np N fused_mpi M H ITERS */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 4) {
    fprintf(stderr, "usage: %s M H ITERS\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int M = atoi(argv[1]), H = atoi(argv[2]), iters = atoi(argv[3]);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int K = H / n;
  float* A = malloc(sizeof(float) * (size_t)M * K);
  float* B = malloc(sizeof(float) * (size_t)K * H);
  float* C = malloc(sizeof(float) * (size_t)M * H);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) A[(size_t)i * K + j] = (float)((me * 5 + i * 3 + j) % 7 - 3) / 4;
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < H; ++j) B[(size_t)i * H + j] = (float)((me * 2 + i + j * 5) % 5 - 2) / 4;
  const int warm = iters / 4 + 1;
  double* tot = malloc(sizeof(double) * iters);
  double* gem = malloc(sizeof(double) * iters);
  double* red = malloc(sizeof(double) * iters);
  for (int it = 0; it < warm + iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, H, K, 1.0f, A, K, B, H, 0.0f, C, H);
    double t1 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, C, M * H, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine[2] = {t1 - t0, MPI_Wtime() - t1}, worst[2];
    MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= warm) {
      gem[it - warm] = worst[0];
      red[it - warm] = worst[1];
      tot[it - warm] = worst[0] + worst[1];
    }
  }
  if (me == 0)
    printf("{\"impl\":\"mpi\",\"ranks\":%d,\"m\":%d,\"h\":%d,\"us\":%.1f,\"gemm_us\":%.1f,\"allreduce_us\":%.1f}\n", n, M, H,
           median(tot, iters) * 1e6, median(gem, iters) * 1e6, median(red, iters) * 1e6);
  MPI_Finalize();
  return 0;
}
