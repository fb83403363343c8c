/* Sessions (OpenSHMEM 1.6's shmem_session_start): N small puts to the next PE and one quiet, timed with and
 * without a session around them, the two alternated round by round in one run. Across hosts a session's
 * small puts travel in batches (transport/ucx/rma.cc); on one host a put is a store either way.
 *   tessera-cc -O2 bench/session_cost.c -o session_cost
 *   tessera-run --hosts h1:1,h2:1 ./session_cost [put-bytes] [puts] [rounds]
 * Prints, for PE 0, the median over rounds of the time per put with and without the session, and the ratio. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  shmem_init();
  const size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
  const int puts = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 9;
  if (bytes < 1 || bytes > 4096 || puts < 1 || rounds < 1 || rounds > 99) {
    fprintf(stderr, "session_cost: put bytes %zu (1..4096), puts %d (at least 1), rounds %d (1..99)\n", bytes, puts,
            rounds);
    return 2;
  }
  char* dst = shmem_malloc(bytes * (size_t)puts);
  char* src = malloc(bytes * (size_t)puts);
  if (!dst || !src) return 1;
  memset(src, shmem_my_pe() + 1, bytes * (size_t)puts);
  const int to = (shmem_my_pe() + 1) % shmem_n_pes();
  double t[2][99];
  for (int r = 0; r < rounds; ++r)
    for (int form = 0; form < 2; ++form) {
      shmem_barrier_all();
      const double t0 = now();
      if (form) shmem_session_start(SHMEM_CTX_DEFAULT, SHMEM_SESSION_BATCH, NULL, 0);
      for (int i = 0; i < puts; ++i) shmem_putmem(dst + (size_t)i * bytes, src + (size_t)i * bytes, bytes, to);
      shmem_quiet();
      if (form) shmem_session_stop(SHMEM_CTX_DEFAULT);
      t[form][r] = (now() - t0) / puts;
    }
  if (shmem_my_pe() == 0) {
    qsort(t[0], (size_t)rounds, sizeof(double), cmp);
    qsort(t[1], (size_t)rounds, sizeof(double), cmp);
    const double plain = t[0][rounds / 2], session = t[1][rounds / 2];
    printf("%d PEs, %d puts of %zu B then a quiet: %.3f us per put without a session, %.3f us in one; "
           "session speed / plain %.2fx\n", shmem_n_pes(), puts, bytes, 1e6 * plain, 1e6 * session, plain / session);
  }
  shmem_barrier_all();
  shmem_free(dst);
  free(src);
  shmem_finalize();
  return 0;
}
