/* A job that hangs, for the launcher's hang report (tests/scripts/hang_report_test.sh). After a barrier and
 * an 8-byte sum reduction (the "earlier" calls), per the mode in argv[1]:
 *   barrier | reduce | wait: PE 3 stops calling Tessera (sleeps) while every other PE waits in
 *                            shmem_barrier_all / shmem_int_sum_reduce / shmem_int_wait_until (for PE 3's put)
 *   mixed:   PE 3 sleeps; PE 0 waits in shmem_barrier_all, PE 1 in shmem_int_sum_reduce, PE 2 in
 *            shmem_int_wait_until
 *   cycle:   PE 1 waits in shmem_int_wait_until for a value PE 2 never writes; PEs 0, 2, 3 in shmem_barrier_all
 *   active_set: PE 3 sleeps; the others make their first call on the active set of all 4 PEs
 *            (shmem_broadcast64), whose set-up waits for every member
 * Needs 4 PEs; the job ends when TESSERA_TIMEOUT expires. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int flag;
static int src, dst;
static long psync[SHMEM_BCAST_SYNC_SIZE];
static long bsrc, bdst;

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "barrier";
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 4) {
    fprintf(stderr, "hang: needs 4 PEs\n");
    return 2;
  }
  src = me;
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &dst, &src, 1);
  if (strcmp(mode, "active_set") == 0) {
    if (me == 3) sleep(60);
    else shmem_broadcast64(&bdst, &bsrc, 1, 0, 0, 0, 4, psync);
  } else if (strcmp(mode, "cycle") == 0) {
    if (me == 1) shmem_int_wait_until(&flag, SHMEM_CMP_EQ, 1);
    else shmem_barrier_all();
  } else if (me == 3) {
    sleep(60);  /* computing, as far as Tessera can tell; ended by the launcher */
    shmem_int_p(&flag, 1, 0);
  } else {
    const char* m = strcmp(mode, "mixed") != 0 ? mode : me == 0 ? "barrier" : me == 1 ? "reduce" : "wait";
    if (strcmp(m, "barrier") == 0) shmem_barrier_all();
    else if (strcmp(m, "reduce") == 0) shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &dst, &src, 1);
    else shmem_int_wait_until(&flag, SHMEM_CMP_EQ, 1);
  }
  shmem_finalize();
  return 0;
}
