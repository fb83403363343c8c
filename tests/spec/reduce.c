/* Spec examples for the reductions: shmem_sum_reduce / shmem_max_reduce on the world team with the generic
 * names, a complex product, and the deprecated shmem_int_sum_to_all with static pWrk/pSync. */
#include <complex.h>
#include <shmem.h>
#include "check.h"

#define N 3
static int pWrk[N / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? N / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static int src[N], dst[N];

int main(void) {
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  for (int i = 0; i < N; i++) src[i] = me + i;
  shmem_barrier_all();
  shmem_int_sum_to_all(dst, src, N, 0, 0, npes, pWrk, pSync);
  for (int i = 0; i < N; i++) CHECK(dst[i] == npes * (npes - 1) / 2 + npes * i, "sum_to_all dst[%d] = %d", i, dst[i]);

  static double x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = me * 0.5 + i;
  shmem_max_reduce(SHMEM_TEAM_WORLD, y, x, N);
  for (int i = 0; i < N; i++) CHECK(y[i] == (npes - 1) * 0.5 + i, "max_reduce y[%d] = %g", i, y[i]);
  shmem_sum_reduce(SHMEM_TEAM_WORLD, x, x, N); /* in place */
  for (int i = 0; i < N; i++) CHECK(x[i] == 0.5 * npes * (npes - 1) / 2 + npes * i, "in-place sum x[%d]", i);

  static float _Complex z, zp;
  z = 1.0f + 1.0f * I;
  shmem_prod_reduce(SHMEM_TEAM_WORLD, &zp, &z, 1);
  float _Complex want = 1.0f;
  for (int i = 0; i < npes; i++) want *= 1.0f + 1.0f * I;
  CHECK(zp == want, "complex prod (%g,%g)", crealf(zp), cimagf(zp));

  static unsigned int flags, all;
  flags = 1u << (me % 32);
  shmem_or_reduce(SHMEM_TEAM_WORLD, &all, &flags, 1);
  CHECK(all == (npes >= 32 ? ~0u : (1u << npes) - 1), "or_reduce %x", all);
  shmem_finalize();
  return spec_errors != 0;
}
