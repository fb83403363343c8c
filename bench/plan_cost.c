/* What a persistent plan saves: the same collective as a one-shot call (tesseraAllReduce, tesseraBroadcast)
 * and as tesseraStart of its plan, alternated round by round in one run, through the public C API.
 *   tessera-cc -O2 bench/plan_cost.c -o plan_cost
 *   tessera-run -n 2 ./plan_cost [iterations] [rounds]
 * Prints, per collective and size, the median over rounds of the slowest PE's microseconds per call, one-shot
 * and plan, and their ratio (plan / one-shot). For the 8 B allreduce it also times, in the same rounds, one
 * flag from every PE to every PE (a shmem_p each, then a wait for the others' flags, no library call): every
 * PE must hear from every other, so with one PE per CPU no allreduce can take less. bench/plan_compare.sh runs it at 2 and 4 PEs and counts the
 * instructions of each form at 1 PE under callgrind (PLAN_COST_ONLY=oneshot|plan selects one form for that,
 * PLAN_COST_BYTES one size, PLAN_COST_COLL=allreduce|broadcast one collective). */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/coll.h>

#include "coll_capi_bench.h"

enum { kOneShot, kPlan, kFloor, kForms };

/* One round of flags: `seq` from every PE to every other PE, then this PE waits for the others' flags.
 * flags: symmetric, one slot per PE. */
static void flag_round(long* flags, long seq) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int pe = 0; pe < n; pe++)
    if (pe != me) shmem_long_p(flags + me, seq, pe);
  for (int pe = 0; pe < n; pe++)
    if (pe != me) shmem_long_wait_until(flags + pe, SHMEM_CMP_GE, seq);
}

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
  long* flags = shmem_calloc((size_t)shmem_n_pes(), sizeof(long));
  long seq = 0;
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
          if ((form == kFloor && (sizes[s] != 8 || coll != 0 || only)) ||
              (only && strcmp(only, form == kPlan ? "plan" : "oneshot") != 0)) {
            t[form][round] = 0;
            continue;
          }
          shmem_barrier_all();
          const double t0 = shmemx_wtime();
          for (int i = 0; i < iters; i++) {
            if (form == kFloor)
              flag_round(flags, ++seq);
            else if (form == kPlan)
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
      printf("%-9s %6zu B %d PEs (%s): one-shot %8.3f us  plan %8.3f us  plan/one-shot %.2f",
             coll == 0 ? "allreduce" : "broadcast", sizes[s], shmem_n_pes(), row, one, pl, one > 0 ? pl / one : 0);
      const double fl = median_of(t[kFloor], rounds);
      if (sizes[s] == 8 && coll == 0 && !only && fl > 0)
        printf("  flags only %8.3f us: one-shot/flags %.2f plan/flags %.2f (0.70x the one-shot would be %.2fx "
               "the flags)", fl, one / fl, pl / fl, 0.7 * one / fl);
      printf("\n");
    }
  }
  shmem_free(flags);
  CHECK(tesseraCommDestroy(comm));
  shmem_finalize();
  return 0;
}
