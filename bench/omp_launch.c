/* OpenMP side of the empty-kernel launch row of bench/shared_cpus.sh: the cost of entering and leaving an
 * empty `#pragma omp parallel num_threads(N)` region, timed the way tessera-perf ops times its launch of an
 * empty kernel of N blocks: one warm-up batch (thread pool start), then BATCHES timed batches of REPS
 * regions; per region, the best and the median batch. libgomp runs with its defaults (no OMP_WAIT_POLICY,
 * GOMP_SPINCOUNT, OMP_PROC_BIND), the setting a careful user gets without tuning for a shared machine.
 *   cc -O2 -fopenmp -o omp_launch bench/omp_launch.c
 *   omp_launch [-n REPS] [-i BATCHES] N...      one JSON line per N:
 *   {"lib":"openmp","row":"launch","blocks":4,"reps":2000,"batches":5,"best_us":1.23,"median_us":1.45} */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* GCC deletes a parallel region whose body is empty (no GOMP_parallel call is left), so the body is an empty
 * asm statement: no instruction, but a region the compiler must keep; a batch times the fork and join alone. */
static double batch(int threads, int reps) {
  double t0 = now_s();
  for (int r = 0; r < reps; ++r) {
#pragma omp parallel num_threads(threads)
    { __asm__ volatile("" ::: "memory"); }
  }
  return now_s() - t0;
}

int main(int argc, char** argv) {
  int reps = 2000, batches = 5, first = 1;  /* 2000 x 5: the counts tessera-perf ops uses for its launch rows */
  for (; first < argc && argv[first][0] == '-'; first += 2) {
    if (first + 1 >= argc) break;
    if (!strcmp(argv[first], "-n")) reps = atoi(argv[first + 1]);
    else if (!strcmp(argv[first], "-i")) batches = atoi(argv[first + 1]);
    else break;
  }
  if (first >= argc || reps < 1 || batches < 1) {
    fprintf(stderr, "usage: %s [-n REPS] [-i BATCHES] THREADS...\n", argv[0]);
    return 2;
  }
  for (int a = first; a < argc; ++a) {
    int n = atoi(argv[a]);
    if (n < 1) {
      fprintf(stderr, "%s: thread count must be >= 1 (got '%s')\n", argv[0], argv[a]);
      return 2;
    }
    double* t = malloc(sizeof(double) * (size_t)batches);
    if (!t) return 1;
    (void)batch(n, reps);  /* warm-up: the pool grows to n threads here, not in a timed batch */
    for (int i = 0; i < batches; ++i) t[i] = batch(n, reps);
    qsort(t, (size_t)batches, sizeof(double), cmp_double);
    printf("{\"lib\":\"openmp\",\"row\":\"launch\",\"blocks\":%d,\"reps\":%d,\"batches\":%d,\"best_us\":%.3f,"
           "\"median_us\":%.3f}\n", n, reps, batches, t[0] / reps * 1e6, t[batches / 2] / reps * 1e6);
    fflush(stdout);
    free(t);
  }
  return 0;
}
