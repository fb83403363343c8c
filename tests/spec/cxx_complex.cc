// C++ programs written against other implementations' headers pass the C complex types (float _Complex,
// double _Complex) to the complex reductions; Tessera's std::complex routines take them too.
#include <shmem.h>

#include <complex>
#include <cstdio>

int main() {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  int errors = 0;
  static float _Complex fs[2], fd[2];
  static double _Complex ds[2], dd[2], wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 2];
  static long psync[SHMEM_REDUCE_SYNC_SIZE];
  for (long& w : psync) w = SHMEM_SYNC_VALUE;
  __real__ fs[0] = static_cast<float>(me + 1);
  __imag__ fs[0] = 1.0f;
  fs[1] = fs[0];
  __real__ ds[0] = 1.0;
  __imag__ ds[0] = (me % 2) ? 1.0 : 0.0;  // products of 1 and i
  ds[1] = ds[0];
  shmem_barrier_all();
  shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, fd, fs, 2);
  shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, dd, ds, 2);
  std::complex<double> want_prod = 1.0;
  for (int p = 0; p < n; ++p) want_prod *= std::complex<double>(1.0, (p % 2) ? 1.0 : 0.0);
  for (int i = 0; i < 2; ++i) {
    if (__real__ fd[i] != n * (n + 1) / 2.0f || __imag__ fd[i] != static_cast<float>(n)) {
      std::fprintf(stderr, "PE %d: complexf sum [%d] = (%g, %g)\n", me, i, __real__ fd[i], __imag__ fd[i]);
      ++errors;
    }
    if (__real__ dd[i] != want_prod.real() || __imag__ dd[i] != want_prod.imag()) {
      std::fprintf(stderr, "PE %d: complexd prod [%d] = (%g, %g)\n", me, i, __real__ dd[i], __imag__ dd[i]);
      ++errors;
    }
  }
  // The deprecated active-set form over the whole job.
  shmem_complexd_sum_to_all(dd, ds, 2, 0, 0, n, wrk, psync);
  double want_imag = 0;
  for (int p = 0; p < n; ++p) want_imag += (p % 2) ? 1.0 : 0.0;
  if (__real__ dd[0] != n || __imag__ dd[0] != want_imag) {
    std::fprintf(stderr, "PE %d: complexd sum_to_all = (%g, %g)\n", me, __real__ dd[0], __imag__ dd[0]);
    ++errors;
  }
  // std::complex still selects the routines themselves.
  static std::complex<float> cs[1], cd[1];
  cs[0] = {1.0f, static_cast<float>(me)};
  shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1);
  if (cd[0] != std::complex<float>(static_cast<float>(n), n * (n - 1) / 2.0f)) {
    std::fprintf(stderr, "PE %d: std::complex sum = (%g, %g)\n", me, cd[0].real(), cd[0].imag());
    ++errors;
  }
  shmem_finalize();
  return errors != 0;
}
