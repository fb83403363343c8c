/* Helpers of the C benchmarks on the collective C API (plan_cost.c, register_cost.c). */
#ifndef TESSERA_BENCH_COLL_CAPI_BENCH_H
#define TESSERA_BENCH_COLL_CAPI_BENCH_H
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <tessera/coll.h>

/* A failed call ends the benchmark with the call and the library's message. */
#define CHECK(call)                                                                     \
  do {                                                                                  \
    tesseraResult_t r_ = (call);                                                        \
    if (r_ != tesseraSuccess) {                                                         \
      fprintf(stderr, "%s failed: %s\n", #call, tesseraGetLastError());                 \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static inline int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The slowest PE's value (every PE passes its own; all get the maximum). */
static inline double max_over_pes(double v) {
  static double src, dst;
  src = v;
  shmem_double_max_reduce(SHMEM_TEAM_WORLD, &dst, &src, 1);
  return dst;
}

/* The median of n values (sorts them). */
static inline double median_of(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return v[n / 2];
}
#endif
