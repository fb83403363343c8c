/* What the default consistency checks cost: symmetric malloc+free (TESSERA_CHECK_ALLOC) and small team
 * collectives (the engine's check of each call, which has no switch: those rows are the reference).
 * Run it with TESSERA_CHECK_ALLOC set to 1 and to 0, alternated:
 *   tessera-cc -O2 bench/check_cost.c -o check_cost
 *   tessera-run -n 2 --env TESSERA_CHECK_ALLOC=0 ./check_cost [iterations] */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>

static long src[8], dst[8];

/* Best of 5 rounds, microseconds per iteration. */
#define TIME_BEST(label, body)                                                                      \
  do {                                                                                              \
    double best = 1e30;                                                                             \
    for (int round = 0; round < 5; round++) {                                                       \
      shmem_barrier_all();                                                                          \
      double t0 = shmemx_wtime();                                                                   \
      for (int i = 0; i < iters; i++) body;                                                         \
      double us = (shmemx_wtime() - t0) * 1e6 / iters;                                              \
      if (us < best) best = us;                                                                     \
    }                                                                                               \
    if (shmem_my_pe() == 0) printf("%-28s %d PEs: %8.3f us\n", label, shmem_n_pes(), best);         \
  } while (0)

int main(int argc, char** argv) {
  shmem_init();
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (iters < 1) {
    fprintf(stderr, "iterations must be at least 1, got %s\n", argv[1]);
    shmem_global_exit(2);
  }
  int bad = 0;
  TIME_BEST("malloc+free 64 B", {
    void* p = shmem_malloc(64);
    bad |= p == NULL;
    shmem_free(p);
  });
  src[0] = shmem_my_pe() + 1;
  TIME_BEST("shmem_long_broadcast 8 B", shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 1, 0));
  bad |= dst[0] != 1;
  TIME_BEST("shmem_long_sum_reduce 8 B", shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1));
  bad |= dst[0] != (long)shmem_n_pes() * (shmem_n_pes() + 1) / 2;
  TIME_BEST("shmem_barrier_all", shmem_barrier_all());
  if (bad) fprintf(stderr, "PE %d: a result was wrong\n", shmem_my_pe());
  shmem_finalize();
  return bad;
}
