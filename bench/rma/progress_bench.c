/* Progress while the target computes (bench/hosts_compare.sh): PE 1 spends SECONDS in a loop that makes no
 * OpenSHMEM call, while PE 0 times 8-byte gets and fetch-adds on PE 1's memory. Across hosts over TCP, UCX
 * serves gets and atomics in the target's progress: with Tessera's progress thread they are answered while
 * PE 1 computes; without it (TESSERA_UCX_PROGRESS_THREAD=off) each waits until PE 1 calls the library again.
 * Prints {"get_us": median, "fadd_us": median, "ops": n} from PE 0.
 *   progress_bench [SECONDS] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  shmem_init();
  long* word = shmem_calloc(1, sizeof(long));
  shmem_barrier_all();
  enum { kMax = 4000 };
  static double get_t[kMax], fadd_t[kMax];
  int n = 0;
  if (shmem_my_pe() == 1) {
    volatile double x = 1;
    const double end = now() + seconds;
    while (now() < end) x = x * 1.0000001 + 1e-9;  /* computes; no library call */
  } else if (shmem_my_pe() == 0) {
    const double end = now() + seconds * 0.9;
    while (n < kMax && now() < end) {
      double t0 = now();
      (void)shmem_long_g(word, 1);
      double t1 = now();
      (void)shmem_long_atomic_fetch_add(word, 1, 1);
      double t2 = now();
      get_t[n] = (t1 - t0) * 1e6;
      fadd_t[n] = (t2 - t1) * 1e6;
      ++n;
    }
  }
  shmem_barrier_all();
  if (shmem_my_pe() == 0) {
    qsort(get_t, (size_t)n, sizeof(double), cmp);
    qsort(fadd_t, (size_t)n, sizeof(double), cmp);
    printf("{\"get_us\": %.2f, \"fadd_us\": %.2f, \"ops\": %d, \"seconds\": %.2f}\n", n ? get_t[n / 2] : 0,
           n ? fadd_t[n / 2] : 0, n, seconds);
  }
  shmem_finalize();
  return 0;
}
