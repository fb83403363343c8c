/* Spec examples for shmem_barrier (active set over the even PEs, static pSync), shmem_sync (team) and
 * shmem_sync_all: PEs put to a neighbour, synchronise, and read what arrived. */
#include <shmem.h>
#include "check.h"

static long pSync[SHMEM_BARRIER_SYNC_SIZE];
static int x = 10101;

int main(void) {
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int evens = (npes + 1) / 2;
  shmem_barrier_all();
  if (me % 2 == 0) {
    /* PE 2k puts its number into the next even PE (wrapping within the even PEs). */
    int to = (me + 2) % (2 * evens);
    shmem_p(&x, me, to);
    shmem_barrier(0, 1, evens, pSync);
    int from = (me - 2 + 2 * evens) % (2 * evens);
    CHECK(x == from, "x = %d, want %d", x, from);
  }
  shmem_barrier_all();
  static int y;
  y = -1;
  shmem_sync_all();
  shmem_int_p(&y, me, (me + 1) % npes);
  shmem_quiet();
  shmem_sync(SHMEM_TEAM_WORLD);
  CHECK(y == (me + npes - 1) % npes, "y = %d", y);
  shmem_finalize();
  return spec_errors != 0;
}
