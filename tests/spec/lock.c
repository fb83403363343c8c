/* Spec example for shmem_set_lock / shmem_clear_lock: every PE increments a counter on PE 0 under a global
 * lock, reading and writing it with shmem_g / shmem_p. Then shmem_test_lock. */
#include <shmem.h>
#include "check.h"

static long lock = 0;
static int count = 0;

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  for (int round = 0; round < 10; round++) {
    shmem_set_lock(&lock);
    int val = shmem_g(&count, 0);
    shmem_p(&count, val + 1, 0);
    shmem_quiet();
    shmem_clear_lock(&lock);
  }
  shmem_barrier_all();
  CHECK(shmem_g(&count, 0) == 10 * npes, "count %d", shmem_g(&count, 0));
  shmem_barrier_all();
  while (shmem_test_lock(&lock)) {
  }
  shmem_atomic_inc(&count, 0);
  shmem_clear_lock(&lock);
  shmem_barrier_all();
  if (me == 0) CHECK(count == 11 * npes, "count after test_lock %d", count);
  shmem_finalize();
  return spec_errors != 0;
}
