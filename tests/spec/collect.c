/* Spec examples for shmem_collect and shmem_fcollect: each PE contributes my_pe+1 (collect) or 2 (fcollect)
 * ints; every PE receives the concatenation in PE order. */
#include <shmem.h>
#include <stdlib.h>
#include "check.h"

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int* src = shmem_malloc((size_t)npes * sizeof(int));
  int* dst = shmem_malloc((size_t)npes * (size_t)npes * sizeof(int));
  for (int i = 0; i <= me; i++) src[i] = me;
  shmem_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1);
  int k = 0;
  for (int pe = 0; pe < npes; pe++)
    for (int i = 0; i <= pe; i++, k++) CHECK(dst[k] == pe, "collect dst[%d] = %d, want %d", k, dst[k], pe);

  src[0] = me * 10;
  src[1] = me * 10 + 1;
  shmem_fcollect(SHMEM_TEAM_WORLD, dst, src, 2);
  for (int pe = 0; pe < npes; pe++)
    CHECK(dst[2 * pe] == pe * 10 && dst[2 * pe + 1] == pe * 10 + 1, "fcollect from PE %d", pe);
  shmem_free(src);
  shmem_free(dst);
  shmem_finalize();
  return spec_errors != 0;
}
