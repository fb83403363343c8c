/* Registered buffers against the symmetric heap and against plain user buffers: a float32 sum allreduce of
 * SIZE bytes with send and receive buffers (1) from shmem_malloc, started from a plan (which sees them
 * symmetric), (2) page-aligned whole pages registered with tesseraCommRegister, (3) from malloc, not registered; the
 * three alternated round by round in one run, through the public C API.
 *   tessera-cc -O2 bench/register_cost.c -o register_cost
 *   tessera-run -n 2 --env SHMEM_SYMMETRIC_SIZE=512M ./register_cost [bytes] [iterations] [rounds]
 * Prints the median over rounds of the slowest PE's time per call and the ratios registered / heap and
 * unregistered / registered. bench/register_compare.sh runs it at 2 and 4 PEs. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <tessera/coll.h>

#include "coll_capi_bench.h"

enum { kHeap, kRegistered, kPlain, kForms };
static const char* const kNames[kForms] = {"symmetric heap", "registered", "unregistered"};

int main(int argc, char** argv) {
  shmem_init();
  const size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)64 << 20;
  const int iters = argc > 2 ? atoi(argv[2]) : 10, rounds = argc > 3 ? atoi(argv[3]) : 7;
  if (bytes < 4 || iters < 1 || rounds < 1 || rounds > 99) {
    fprintf(stderr, "register_cost: bytes %zu (at least 4), iterations %d (at least 1), rounds %d (1..99)\n", bytes,
            iters, rounds);
    return 2;
  }
  const size_t count = bytes / sizeof(float);
  tesseraComm_t comm;
  CHECK(tesseraCommInitAll(&comm));
  float* hs = shmem_malloc(bytes);
  float* hr = shmem_malloc(bytes);
  /* Registered buffers are shared in place when they are whole pages (coll.h). */
  float *rs = NULL, *rr = NULL;
  if (posix_memalign((void**)&rs, 4096, bytes) != 0 || posix_memalign((void**)&rr, 4096, bytes) != 0) rs = rr = NULL;
  float* ps = malloc(bytes);
  float* pr = malloc(bytes);
  if (!hs || !hr || !rs || !rr || !ps || !pr) {
    fprintf(stderr, "register_cost: %zu bytes: out of memory (SHMEM_SYMMETRIC_SIZE?)\n", bytes);
    return 1;
  }
  for (size_t i = 0; i < count; i++) hs[i] = rs[i] = ps[i] = (float)(shmem_my_pe() + 1);
  void *h1, *h2;
  CHECK(tesseraCommRegister(comm, rs, bytes, &h1));
  CHECK(tesseraCommRegister(comm, rr, bytes, &h2));
  tesseraPlan_t heap_plan;
  CHECK(tesseraAllReduceInit(hs, hr, count, tesseraFloat32, tesseraSum, comm, &heap_plan));
  double t[kForms][99];
  for (int round = 0; round < rounds; round++)
    for (int form = 0; form < kForms; form++) {
      shmem_barrier_all();
      const double t0 = shmemx_wtime();
      for (int i = 0; i < iters; i++) {
        if (form == kHeap) CHECK(tesseraStart(heap_plan, NULL));
        else if (form == kRegistered) CHECK(tesseraAllReduce(rs, rr, count, tesseraFloat32, tesseraSum, comm));
        else CHECK(tesseraAllReduce(ps, pr, count, tesseraFloat32, tesseraSum, comm));
      }
      t[form][round] = max_over_pes((shmemx_wtime() - t0) * 1e6 / iters);
    }
  const float want = (float)(shmem_n_pes() * (shmem_n_pes() + 1) / 2);
  if (hr[count - 1] != want || rr[count - 1] != want || pr[count - 1] != want) {
    fprintf(stderr, "register_cost: PE %d: results %g %g %g, expected %g\n", shmem_my_pe(), hr[count - 1],
            rr[count - 1], pr[count - 1], want);
    return 1;
  }
  const char* row;
  CHECK(tesseraPlanAlgorithm(heap_plan, &row));
  CHECK(tesseraPlanFree(heap_plan));
  CHECK(tesseraCommDeregister(comm, h1));
  CHECK(tesseraCommDeregister(comm, h2));
  if (shmem_my_pe() == 0) {
    double med[kForms];
    for (int f = 0; f < kForms; f++) med[f] = median_of(t[f], rounds);
    printf("allreduce %zu B, %d PEs (heap plan's row: %s): %s %.1f us, %s %.1f us, %s %.1f us; registered/heap time "
           "%.2f, unregistered/registered time %.2f\n", bytes, shmem_n_pes(), row, kNames[0], med[0], kNames[1], med[1],
           kNames[2], med[2], med[1] / med[0], med[2] / med[1]);
  }
  CHECK(tesseraCommDestroy(comm));
  shmem_free(hs);
  shmem_free(hr);
  free(rs);
  free(rr);
  free(ps);
  free(pr);
  shmem_finalize();
  return 0;
}
