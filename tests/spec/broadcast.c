/* Spec example for shmem_broadcast: PE 0 broadcasts 4 longs to every PE of the world team (the root's dest
 * is updated too); then the deprecated shmem_broadcast64, whose root dest stays untouched. */
#include <shmem.h>
#include "check.h"

static long pSync[SHMEM_BCAST_SYNC_SIZE];

int main(void) {
  static long source[4], dest[4];
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  if (me == 0)
    for (int i = 0; i < 4; i++) source[i] = i;
  shmem_broadcast(SHMEM_TEAM_WORLD, dest, source, 4, 0);
  for (int i = 0; i < 4; i++) CHECK(dest[i] == i, "dest[%d] = %ld", i, dest[i]);

  for (int i = 0; i < 4; i++) dest[i] = -1;
  if (me == npes - 1)
    for (int i = 0; i < 4; i++) source[i] = 10 + i;
  shmem_barrier_all();
  shmem_broadcast64(dest, source, 4, npes - 1, 0, 0, npes, pSync);
  for (int i = 0; i < 4; i++)
    CHECK(dest[i] == (me == npes - 1 ? -1 : 10 + i), "broadcast64 dest[%d] = %ld", i, dest[i]);
  shmem_finalize();
  return spec_errors != 0;
}
