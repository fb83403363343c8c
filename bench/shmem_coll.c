/* The OpenSHMEM 1.4 active-set collectives, each call followed by shmem_barrier_all (the pair is what is timed):
 * shmem_broadcast64, shmem_fcollect64, shmem_alltoall64 and shmem_float_sum_to_all over all PEs. Plain 1.4 C,
 * no teams, so that the same source builds with oshcc (Open MPI 4.1's OSHMEM) and tessera-cc
 * (bench/shmem_coll_compare.sh).
 *   shmem_coll [max-bytes (K/M suffix; default 64M)] [iteration scale (default 1)] [--json]
 * Sizes 8 B, 64 KiB, 1 MiB, 64 MiB up to max-bytes: the bytes each PE contributes (the broadcast array, the
 * per-PE block of fcollect and alltoall, the reduced array of sum_to_all). Each (routine, size) is checked
 * once with fresh data before it is timed; wrong data prints the PE, the element and both values and ends the
 * job with status 1. Then a warm-up, then 5 repetitions of `iters` calls (3 from 16 MiB on; fewer calls for
 * larger sizes; the iteration scale multiplies the counts, at least one call). PE 0 prints one line per
 * (routine, bytes): the median of the repetitions (time_us), the best one (best_us), both in microseconds
 * per call+barrier, and GB/s = bytes landing in each PE's dest per call / median time (the algbw of
 * nccl-tests: the size for broadcast and sum_to_all, PEs x size for fcollect and alltoall). --json prints the
 * same as one JSON object a line.
 * Symmetric heap used per PE: 2 x PEs x max-bytes + max-bytes / 8 (source, dest, pWrk), plus the pSyncs. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  int me, npes;
  uint64_t* src;  /* PEs x max-bytes: alltoall sends one block to every PE */
  uint64_t* dest; /* PEs x max-bytes: fcollect and alltoall receive one block from every PE */
  float* wrk;     /* pWrk of sum_to_all: max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) floats */
} Bufs;

typedef struct {
  const char* name;
  long sync_size; /* longs per pSync: the spec's SHMEM_*_SYNC_SIZE of the routine */
  long* psync[2]; /* consecutive calls alternate between the two, as the spec asks of active-set collectives */
  void (*call)(const Bufs* b, size_t bytes, long* pSync);
  size_t dest_per_pe; /* dest bytes per contributed byte: 1, or PEs (set at start) */
} Routine;

static void bcast(const Bufs* b, size_t bytes, long* ps) {
  shmem_broadcast64(b->dest, b->src, bytes / 8, 0, 0, 0, b->npes, ps);
}
static void fcollect(const Bufs* b, size_t bytes, long* ps) {
  shmem_fcollect64(b->dest, b->src, bytes / 8, 0, 0, b->npes, ps);
}
static void alltoall(const Bufs* b, size_t bytes, long* ps) {
  shmem_alltoall64(b->dest, b->src, bytes / 8, 0, 0, b->npes, ps);
}
static void sum(const Bufs* b, size_t bytes, long* ps) {
  shmem_float_sum_to_all((float*)b->dest, (const float*)b->src, (int)(bytes / 4), 0, 0, b->npes, b->wrk, ps);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Element i of the block PE `from` sends to PE `to`, for the check of size number `tag`: every field
 * differs between blocks, PEs and sizes, so a misplaced block or a stale one from the last size shows. */
static uint64_t word(int from, int to, size_t i, int tag) {
  return (uint64_t)tag << 56 | (uint64_t)from << 44 | (uint64_t)to << 32 | (uint64_t)i;
}
/* Small integers, so that the float sum is exact whatever order the PEs' values are added in. */
static float term(int pe, size_t i, int tag) { return (float)((i + (size_t)tag) % 1021 + (size_t)pe); }

/* Ends the job: the message names the routine, the size, the PE, the element and both values. */
static void wrong(const Routine* r, size_t bytes, const Bufs* b, size_t i, const char* got, const char* want) {
  fprintf(stderr, "shmem_coll: %s of %zu B on %d PEs: PE %d dest[%zu] = %s, expected %s\n", r->name, bytes,
          b->npes, b->me, i, got, want);
  shmem_global_exit(1);
}

/* One call on fresh data (source from the pattern, dest poisoned), then every element of the local dest. */
static void verify(const Routine* r, const Bufs* b, size_t bytes, int tag, long* ps) {
  size_t n = bytes / 8, nf = bytes / 4, i;
  char got[32], wants[32];
  int p;
  memset(b->dest, 0xa5, bytes * r->dest_per_pe);
  if (r->call == sum) {
    for (i = 0; i < nf; ++i) ((float*)b->src)[i] = term(b->me, i, tag);
  } else {
    for (p = 0; p < (r->call == alltoall ? b->npes : 1); ++p)
      for (i = 0; i < n; ++i) b->src[p * n + i] = word(b->me, p, i, tag);
  }
  shmem_barrier_all(); /* every source is written before any PE reads one */
  r->call(b, bytes, ps);
  shmem_barrier_all();
  if (r->call == sum) {
    for (i = 0; i < nf; ++i) {
      float want = (float)(b->npes * ((i + (size_t)tag) % 1021)) + (float)(b->npes * (b->npes - 1) / 2);
      if (((float*)b->dest)[i] == want) continue;
      snprintf(got, sizeof got, "%.9g", ((float*)b->dest)[i]);
      snprintf(wants, sizeof wants, "%.9g", want);
      wrong(r, bytes, b, i, got, wants);
    }
    return;
  }
  if (r->call == bcast && b->me == 0) return; /* 1.4: dest on the root is not written */
  for (p = 0; p < (r->call == bcast ? 1 : b->npes); ++p)
    for (i = 0; i < n; ++i) {
      uint64_t want = r->call == bcast ? word(0, 0, i, tag) : r->call == fcollect ? word(p, 0, i, tag)
                                                                                : word(p, b->me, i, tag);
      if (b->dest[p * n + i] == want) continue;
      snprintf(got, sizeof got, "%#llx", (unsigned long long)b->dest[p * n + i]);
      snprintf(wants, sizeof wants, "%#llx", (unsigned long long)want);
      wrong(r, bytes, b, p * n + i, got, wants);
    }
}

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024, ++end;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024, ++end;
  return *end || v < 8 ? 0 : (size_t)v;
}

int main(int argc, char** argv) {
  static const size_t sizes[] = {8, 64 << 10, 1 << 20, 64 << 20};
  size_t max = 64 << 20;
  double scale = 1;
  int json = 0, pos = 0, a, k, s;
  for (a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--json")) {
      json = 1;
    } else if (pos++ == 0) {
      max = parse_size(argv[a]);
    } else if (pos == 2) {
      char* end;
      scale = strtod(argv[a], &end);
      if (*end) scale = 0;
    } else {
      max = 0; /* a third positional argument: usage */
    }
  }
  if (max < 8 || max > (size_t)1 << 30 || !(scale > 0 && scale <= 1000)) {
    fprintf(stderr, "usage: shmem_coll [max-bytes 8..1G, K/M suffix] [iteration scale (0,1000]] [--json]"
                    " (max-bytes %zu, scale %g)\n", max, scale);
    return 2;
  }

  shmem_init();
  Bufs b = {.me = shmem_my_pe(), .npes = shmem_n_pes()};
  size_t total = (size_t)b.npes * max;
  b.src = shmem_malloc(total);
  b.dest = shmem_malloc(total);
  size_t nwrk = max / 8 + 1; /* nreduce / 2 + 1 for nreduce = max / 4 floats */
  if (nwrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE) nwrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
  b.wrk = shmem_malloc(sizeof(float) * nwrk);
  Routine rs[] = {
      {.name = "broadcast64", .sync_size = SHMEM_BCAST_SYNC_SIZE, .call = bcast, .dest_per_pe = 1},
      {.name = "fcollect64", .sync_size = SHMEM_COLLECT_SYNC_SIZE, .call = fcollect, .dest_per_pe = (size_t)b.npes},
      {.name = "alltoall64", .sync_size = SHMEM_ALLTOALL_SYNC_SIZE, .call = alltoall, .dest_per_pe = (size_t)b.npes},
      {.name = "float_sum_to_all", .sync_size = SHMEM_REDUCE_SYNC_SIZE, .call = sum, .dest_per_pe = 1},
  };
  int nr = (int)(sizeof rs / sizeof rs[0]), bad = !b.src || !b.dest || !b.wrk;
  for (k = 0; k < nr; ++k)
    for (s = 0; s < 2; ++s) {
      long* ps = rs[k].psync[s] = shmem_malloc(sizeof(long) * (size_t)rs[k].sync_size);
      if (!ps) { bad = 1; continue; }
      for (a = 0; a < rs[k].sync_size; ++a) ps[a] = SHMEM_SYNC_VALUE;
    }
  if (bad) {
    fprintf(stderr, "shmem_coll: PE %d: shmem_malloc of 2 x %zu B failed (raise SHMEM_SYMMETRIC_SIZE)\n", b.me,
            total);
    shmem_global_exit(1);
  }
  shmem_barrier_all(); /* every pSync holds SHMEM_SYNC_VALUE before its first use */

  if (b.me == 0 && !json) {
    printf("# shmem_coll: %d PEs; time: median of the repetitions of iters x (call + shmem_barrier_all), us per "
           "call; GB/s: dest bytes per PE / time\n", b.npes);
    printf("# %-16s %10s %7s %5s %12s %12s %9s\n", "routine", "bytes", "iters", "reps", "time_us", "best_us",
           "GB/s");
  }
  for (k = 0; k < nr; ++k) {
    const Routine* r = &rs[k];
    long call = 0; /* this routine's calls so far: call & 1 picks its pSync */
    for (s = 0; s < (int)(sizeof sizes / sizeof sizes[0]) && sizes[s] <= max; ++s) {
      size_t bytes = sizes[s];
      /* Sub-microsecond calls need thousands of iterations to outlast the jitter of a job's first calls; a
       * 64 MiB alltoall moves PEs x 64 MiB per PE, so a few calls of it already last long enough. */
      long base = bytes >= 16 << 20 ? 4 : bytes >= 1 << 20 ? 40 : bytes >= 64 << 10 ? 400 : 4000;
      long iters = (long)(base * scale) > 0 ? (long)(base * scale) : 1, warm = iters / 4 + 1, i;
      int reps = bytes >= 16 << 20 ? 3 : 5, rep;
      double t[5];
      verify(r, &b, bytes, s + 1, r->psync[call++ & 1]);
      for (i = 0; i < warm; ++i) {
        r->call(&b, bytes, r->psync[call++ & 1]);
        shmem_barrier_all();
      }
      for (rep = 0; rep < reps; ++rep) {
        shmem_barrier_all();
        double t0 = now_us();
        for (i = 0; i < iters; ++i) {
          r->call(&b, bytes, r->psync[call++ & 1]);
          shmem_barrier_all();
        }
        t[rep] = (now_us() - t0) / iters;
      }
      qsort(t, (size_t)reps, sizeof t[0], cmp);
      double med = t[reps / 2], gbps = (double)(bytes * r->dest_per_pe) / med / 1e3;
      if (b.me != 0) continue;
      if (json)
        printf("{\"routine\": \"%s\", \"npes\": %d, \"bytes\": %zu, \"iters\": %ld, \"reps\": %d, \"time_us\": %.4f, "
               "\"best_us\": %.4f, \"GBps\": %.6g}\n", r->name, b.npes, bytes, iters, reps, med, t[0], gbps);
      else
        printf("  %-16s %10zu %7ld %5d %12.3f %12.3f %9.4g\n", r->name, bytes, iters, reps, med, t[0], gbps);
      fflush(stdout);
    }
  }

  for (k = 0; k < nr; ++k) shmem_free(rs[k].psync[0]), shmem_free(rs[k].psync[1]);
  shmem_free(b.wrk);
  shmem_free(b.dest);
  shmem_free(b.src);
  shmem_finalize();
  return 0;
}
