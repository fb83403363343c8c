/* A program in the style of OpenSHMEM 1.0 / Cray SHMEM: start_pes, _my_pe, shmalloc, the old atomic names
 * and generics (shmem_finc, shmem_swap), the cache no-ops and active-set collectives. */
#include <mpp/shmem.h> /* the SGI header location */
#include "check.h"

static long pSync[_SHMEM_COLLECT_SYNC_SIZE];

int main(void) {
  for (int i = 0; i < _SHMEM_COLLECT_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
  start_pes(0);
  int me = _my_pe(), npes = _num_pes();
  long* counter = (long*)shmalloc(sizeof(long));
  *counter = 0;
  shmem_barrier_all();
  long t = shmem_long_finc(counter, 0);
  CHECK(t >= 0 && t < npes, "finc %ld", t);
  shmem_barrier_all();
  long prev = shmem_swap(counter, 100L + me, 0);
  CHECK(prev == npes || (prev >= 100 && prev < 100 + npes), "swap returned %ld", prev);
  shmem_clear_cache_inv();
  shmem_udcflush();
  int* src = (int*)shmalloc(sizeof(int));
  int* all = (int*)shmalloc((size_t)npes * sizeof(int));
  *src = me * 3;
  shmem_barrier_all();
  shmem_sync(0, 0, npes, pSync); /* deprecated active-set sync through the C11 shmem_sync name */
  shmem_fcollect32(all, src, 1, 0, 0, npes, pSync);
  for (int i = 0; i < npes; i++) CHECK(all[i] == i * 3, "fcollect32 all[%d] = %d", i, all[i]);
  shmem_barrier_all();
  shfree(all);
  shfree(src);
  shfree(counter);
  return spec_errors != 0;
}
