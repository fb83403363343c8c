/* What a persistent plan saves: the same collective as a one-shot call (tesseraAllReduce, tesseraBroadcast)
 * and as tesseraStart of its plan, alternated round by round in one run, through the public C API.
 *   tessera-cc -O2 bench/plan_cost.c -o plan_cost
 *   tessera-run -n 2 ./plan_cost [iterations] [rounds]
 * Prints, per collective and size, the median over rounds of the slowest PE's microseconds per call, one-shot
 * and plan, and their ratio (plan / one-shot). bench/plan_compare.sh runs it at 2 and 4 PEs and counts the
 * instructions of each form at 1 PE under callgrind (PLAN_COST_ONLY=oneshot|plan selects one form for that,
 * PLAN_COST_BYTES one size, PLAN_COST_COLL=allreduce|broadcast one collective). */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/coll.h>

#include "coll_capi_bench.h"

enum { kOneShot, kPlan, kForms };

int main(int argc, char** argv) {
  shmem_init();
  const int iters = argc > 1 ? atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 7;
  const char* only = getenv("PLAN_COST_ONLY"); /* "oneshot" or "plan": that form alone (callgrind) */
  const char* one_size = getenv("PLAN_COST_BYTES");
  const char* one_coll = getenv("PLAN_COST_COLL");
  if (iters < 1 || rounds < 1 || rounds > 99) {
    fprintf(stderr, "plan_cost: iterations (%d) must be at least 1 and rounds (%d) 1..99\n", iters, rounds);
    return 2;
  }
  tesseraComm_t comm;
  CHECK(tesseraCommInitAll(&comm));
  const size_t sizes[] = {8, 65536};
  static char send[65536], recv[65536];
  for (int coll = 0; coll < 2; coll++) {
    if (one_coll && strcmp(one_coll, coll == 0 ? "allreduce" : "broadcast") != 0) continue;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      if (one_size && strtoull(one_size, NULL, 10) != sizes[s]) continue;
      const size_t count = sizes[s] / sizeof(double);
      tesseraPlan_t plan;
      if (coll == 0)
        CHECK(tesseraAllReduceInit(send, recv, count, tesseraFloat64, tesseraSum, comm, &plan));
      else
        CHECK(tesseraBroadcastInit(send, recv, count, tesseraFloat64, 0, comm, &plan));
      double t[kForms][99];
      for (int round = 0; round < rounds; round++) {
        for (int form = 0; form < kForms; form++) {
          if (only && strcmp(only, form == kPlan ? "plan" : "oneshot") != 0) {
            t[form][round] = 0;
            continue;
          }
          shmem_barrier_all();
          const double t0 = shmemx_wtime();
          for (int i = 0; i < iters; i++) {
            if (form == kPlan)
              CHECK(tesseraStart(plan, NULL));
            else if (coll == 0)
              CHECK(tesseraAllReduce(send, recv, count, tesseraFloat64, tesseraSum, comm));
            else
              CHECK(tesseraBroadcast(send, recv, count, tesseraFloat64, 0, comm));
          }
          t[form][round] = max_over_pes((shmemx_wtime() - t0) * 1e6 / iters);
        }
      }
      const char* row;
      CHECK(tesseraPlanAlgorithm(plan, &row));
      CHECK(tesseraPlanFree(plan));
      if (shmem_my_pe() != 0) continue;
      const double one = median_of(t[kOneShot], rounds), pl = median_of(t[kPlan], rounds);
      printf("%-9s %6zu B %d PEs (%s): one-shot %8.3f us  plan %8.3f us  plan/one-shot %.2f\n",
             coll == 0 ? "allreduce" : "broadcast", sizes[s], shmem_n_pes(), row, one, pl, one > 0 ? pl / one : 0);
    }
  }
  CHECK(tesseraCommDestroy(comm));
  shmem_finalize();
  return 0;
}
