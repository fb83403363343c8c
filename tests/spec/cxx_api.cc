// The C API from C++ (tessera-c++): typed names, complex reductions with std::complex, teams and locks.
#include <shmem.h>

#include <complex>
#include <cstdio>

int main() {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  auto* z = static_cast<std::complex<double>*>(shmem_malloc(2 * sizeof(std::complex<double>)));
  z[0] = {1.0, static_cast<double>(me)};
  shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, z + 1, z, 1);
  int errors = 0;
  if (z[1] != std::complex<double>(npes, npes * (npes - 1) / 2.0)) {
    std::fprintf(stderr, "PE %d: complex sum (%g,%g)\n", me, z[1].real(), z[1].imag());
    errors++;
  }
  shmem_free(z);
  // Deprecated untyped long waits (C and C++ callers).
  static long flag = 0;
  shmem_long_atomic_set(&flag, 1L, (me + 1) % npes);
  shmem_wait_until(&flag, SHMEM_CMP_EQ, 1);
  shmem_wait(&flag, 0);
  shmem_finalize();
  return errors != 0;
}
