/* Spec examples for put-with-signal (1.5) with signal_add/signal_set (1.6) and the 1.6 scans. */
#include <shmem.h>
#include "check.h"

static uint64_t sig = 0;
static long data[8];

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  static long mine[8];
  for (int i = 0; i < 8; i++) mine[i] = me * 8 + i;
  shmem_put_signal(data, mine, 8, &sig, 1, SHMEM_SIGNAL_ADD, (me + 1) % npes);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
  int from = (me + npes - 1) % npes;
  for (int i = 0; i < 8; i++) CHECK(data[i] == from * 8 + i, "data[%d] = %ld", i, data[i]);
  shmem_barrier_all();
  shmem_signal_set(&sig, 5, (me + 1) % npes);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 5);
  CHECK(shmem_signal_fetch(&sig) == 5, "signal %llu", (unsigned long long)shmem_signal_fetch(&sig));

  static int x, in, ex;
  x = me + 1;
  shmem_sum_inscan(SHMEM_TEAM_WORLD, &in, &x, 1);
  shmem_sum_exscan(SHMEM_TEAM_WORLD, &ex, &x, 1);
  CHECK(in == (me + 1) * (me + 2) / 2, "inscan %d", in);
  CHECK(ex == me * (me + 1) / 2, "exscan %d", ex);
  shmem_finalize();
  return spec_errors != 0;
}
