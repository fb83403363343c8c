/* shmem_barrier_all in a loop: the same source is built with oshcc (Open MPI's OSHMEM) and tessera-cc
 * (bench/rma_vs_oshmem.sh). Prints, from PE 0, the best and the median (the upper one for an even count)
 * of `batches` batches of `per` barriers, in microseconds per barrier, as one JSON line. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  long batches = argc > 1 ? strtol(argv[1], NULL, 10) : 11, per = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
  if (batches < 1 || batches > 1000 || per < 1 || per > 100000000) {
    fprintf(stderr, "usage: barrier_all [batches 1..1000] [barriers per batch 1..100000000]\n");
    return 2;
  }
  double* t = malloc(sizeof(double) * (size_t)batches);
  if (!t) {
    fprintf(stderr, "barrier_all: out of memory\n");
    return 1;
  }
  shmem_init();
  for (long i = 0; i < per; ++i) shmem_barrier_all(); /* warm-up */
  for (long b = 0; b < batches; ++b) {
    shmem_barrier_all();
    double t0 = now_ns();
    for (long i = 0; i < per; ++i) shmem_barrier_all();
    t[b] = (now_ns() - t0) / per;
  }
  qsort(t, (size_t)batches, sizeof(double), cmp);
  if (shmem_my_pe() == 0)
    printf("{\"npes\": %d, \"best_us\": %.4f, \"median_us\": %.4f}\n", shmem_n_pes(), t[0] / 1000, t[batches / 2] / 1000);
  free(t);
  shmem_finalize();
  return 0;
}
