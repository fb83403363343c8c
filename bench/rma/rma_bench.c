/* One-sided latency and bandwidth, OSU style, written against the OpenSHMEM C API only, so the very same
 * code measures Tessera (tessera-perf rma) and any other OpenSHMEM (bench/rma_vs_oshmem.sh builds it with
 * oshcc). PE 0 is the initiator, PE 1 the target; other PEs wait in a barrier.
 *
 *   put_lat   put of `size` bytes then quiet, per iteration
 *   pingpong  half round trip: put data, fence, put flag; the peer waits for the flag and answers alike
 *   put_bw    window of 64 non-blocking puts to the same destination, then quiet: bytes / time
 *   get_lat   blocking get of `size` bytes
 *   memcpy    a plain memcpy of `size` bytes between two private buffers (the local copy bound)
 *   fadd_lat  fetch-add of a long on PE 1 (printed once)
 *
 * Options: -b MIN -e MAX -f FACTOR (sizes, K/M/G suffixes), -p ROUNDS (ping-pong rounds of every size, instead
 * of 10000 capped by 1 GB moved: runs that must outlast the scheduler's slices, as under outside load), --json. */
#include "rma_bench.h"

#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return (size_t)v;
}

static long iters_for(size_t size, long small, double budget_bytes) {
  long n = (long)(budget_bytes / (double)(size ? size : 1));
  if (n > small) n = small;
  if (n < 3) n = 3;
  return n;
}

int rma_bench_main(int argc, char** argv) {
  size_t min = 8, max = 64u << 20;
  int factor = 2, json = 0;
  long pp_rounds = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-b") && i + 1 < argc) min = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-e") && i + 1 < argc) max = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-f") && i + 1 < argc) factor = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-p") && i + 1 < argc) pp_rounds = atol(argv[++i]);
    else if (!strcmp(argv[i], "--json")) json = 1;
    else {
      fprintf(stderr, "usage: %s [-b MIN] [-e MAX] [-f FACTOR] [-p ROUNDS] [--json]\n", argv[0]);
      return 2;
    }
  }
  if (factor < 2 || min < 1 || max < min) {
    fprintf(stderr, "%s: need -f >= 2 and 1 <= -b <= -e (got -b %zu -e %zu -f %d)\n", argv[0], min, max, factor);
    return 2;
  }
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  if (npes < 2) {
    if (me == 0) fprintf(stderr, "%s: needs at least 2 PEs\n", argv[0]);
    shmem_finalize();
    return 2;
  }
  char* dst = shmem_malloc(max);
  char* src = malloc(max);
  char* copy = malloc(max);
  long* flag = shmem_calloc(2, sizeof(long));
  long* counter = shmem_calloc(1, sizeof(long));
  if (!dst || !src || !copy || !flag || !counter) {
    fprintf(stderr, "%s: PE %d cannot allocate %zu bytes (raise SHMEM_SYMMETRIC_SIZE)\n", argv[0], me, max);
    shmem_global_exit(1);
  }
  memset(src, 1, max);
  memset(copy, 2, max);
  memset(dst, 0, max);
  shmem_barrier_all();
  if (me == 0 && !json)
    printf("# %12s %12s %12s %12s %12s %12s\n", "size(B)", "put_lat(us)", "pingpong(us)", "put_bw(GB/s)",
           "get_lat(us)", "memcpy(GB/s)");
  if (me == 0 && json) printf("{\"rma\": [\n");
  long round = 0;
  int first = 1;
  for (size_t size = min; size <= max; size *= (size_t)factor) {
    double put_lat = 0, pp = 0, bw = 0, get_lat = 0, mc = 0;
    long it = iters_for(size, 20000, 2e9);
    /* put + quiet */
    if (me == 0) {
      for (long i = 0; i < 10; ++i) { shmem_putmem(dst, src, size, 1); shmem_quiet(); }
      double t0 = now_s();
      for (long i = 0; i < it; ++i) { shmem_putmem(dst, src, size, 1); shmem_quiet(); }
      put_lat = (now_s() - t0) / (double)it * 1e6;
    }
    shmem_barrier_all();
    /* ping-pong: flag values grow monotonically across sizes */
    long pit = pp_rounds > 0 ? pp_rounds : iters_for(size, 10000, 1e9);
    if (me < 2) {
      int peer = 1 - me;
      double t0 = 0;
      for (long i = 0; i < pit + 10; ++i) {
        if (i == 10) t0 = now_s();
        ++round;
        if (me == 0) {
          shmem_putmem(dst, src, size, peer);
          shmem_fence();
          shmem_long_p(flag, round, peer);
          shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
        } else {
          shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
          shmem_putmem(dst, src, size, peer);
          shmem_fence();
          shmem_long_p(flag, round, peer);
        }
      }
      pp = (now_s() - t0) / (double)pit / 2 * 1e6;
    }
    shmem_barrier_all();
    /* bandwidth over a window of non-blocking puts */
    long bit = iters_for(size * WINDOW, 2000, 2e9);
    if (me == 0) {
      for (int w = 0; w < WINDOW; ++w) shmem_putmem_nbi(dst, src, size, 1);
      shmem_quiet();
      double t0 = now_s();
      for (long i = 0; i < bit; ++i) {
        for (int w = 0; w < WINDOW; ++w) shmem_putmem_nbi(dst, src, size, 1);
        shmem_quiet();
      }
      bw = (double)size * WINDOW * (double)bit / (now_s() - t0) / 1e9;
      /* the local copy bound, same window */
      for (int w = 0; w < WINDOW; ++w) memcpy(copy, src, size);
      t0 = now_s();
      for (long i = 0; i < bit; ++i) {
        for (int w = 0; w < WINDOW; ++w) {
          memcpy(copy, src, size);
          __asm__ __volatile__("" ::: "memory");
        }
      }
      mc = (double)size * WINDOW * (double)bit / (now_s() - t0) / 1e9;
      /* get */
      for (long i = 0; i < 10; ++i) shmem_getmem(copy, dst, size, 1);
      t0 = now_s();
      for (long i = 0; i < it; ++i) shmem_getmem(copy, dst, size, 1);
      get_lat = (now_s() - t0) / (double)it * 1e6;
      if (json)
        printf("%s  {\"size\": %zu, \"put_lat_us\": %.4f, \"pingpong_us\": %.4f, \"put_bw_GBps\": %.3f, "
               "\"get_lat_us\": %.4f, \"memcpy_GBps\": %.3f}", first ? "" : ",\n", size, put_lat, pp, bw, get_lat, mc);
      else
        printf("  %12zu %12.3f %12.3f %12.3f %12.3f %12.3f\n", size, put_lat, pp, bw, get_lat, mc);
      fflush(stdout);
      first = 0;
    }
    shmem_barrier_all();
    if (size > max / (size_t)factor) break;
  }
  /* fetch-add on the other PE */
  if (me == 0) {
    long it = 200000;
    for (long i = 0; i < 1000; ++i) shmem_long_atomic_fetch_add(counter, 1, 1);
    double t0 = now_s();
    for (long i = 0; i < it; ++i) shmem_long_atomic_fetch_add(counter, 1, 1);
    double fadd = (now_s() - t0) / (double)it * 1e6;
    if (json) printf("\n], \"fadd_lat_us\": %.4f}\n", fadd);
    else printf("# fetch-add latency on PE 1: %.4f us\n", fadd);
  }
  shmem_barrier_all();
  shmem_free(counter);
  shmem_free(flag);
  shmem_free(dst);
  free(src);
  free(copy);
  shmem_finalize();
  return 0;
}
