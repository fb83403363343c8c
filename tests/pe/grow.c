/* Driven by tests/scripts/grow_test.sh under tessera-run --on-failure continue --restarts N
 * (docs/resilience.md, "Growing back").
 *
 * grow VICTIM KILLS [mismatch]: every PE allocates a symmetric model and the job's history, then runs STEPS
 * training steps: an allreduce of a gradient that depends on the step and the PE, added to the model. The
 * PE VICTIM kills itself at the step die_at(k) in its incarnations k < KILLS. The survivors' allreduce fails
 * (tesseraPeerFailed); they shrink, run SHRUNK steps, then grow. The replacement (tesseraIncarnation > 0)
 * repeats the start-up allocations, joins (tesseraCommGrow with NULL), pulls the model, the history and the
 * next step from a survivor by one-sided gets, and trains on. At the end every PE checks its rank in the last
 * communicator (its world PE: the replaced PE gets its rank back), the history (which steps ran on 3 PEs),
 * and the model against the sum the history gives, to the bit. Each PE prints one "grow: ok" line; a
 * survivor's also gives the time from each death to its first good call on the grown communicator.
 * With `mismatch`, the replacement allocates one block more than its predecessor before it joins: its join
 * and the survivors' grow must fail, naming the cause; then every PE finalizes. A grow that fails because a
 * member died in it (TESSERA_TEST_DIE_IN_GROW) fails on every member: the survivors shrink and grow again,
 * and the replacements join again. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>
#include <tessera/coll.h>

#define REQUIRE_PROGRAM "grow"
#include "require.h"

#define STEPS 40
#define SHRUNK 5
#define ELEMS 4096

static long long died_ns[4]; /* symmetric: the victim's clock at each death, put to every PE */

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int die_at(int k) { return 8 + 12 * k; }

static int me, victim, kills, inc;
static double* model;   /* symmetric: ELEMS values */
static long* hist;      /* symmetric: per step, the sum of (pe + 1) over its members, and their count */
static long* next_step; /* symmetric: the next step to run */

/* One step on `comm`: the members' gradients summed into the model. */
static tesseraResult_t step(tesseraComm_t comm, int s, double* grad, double* sum) {
  if (me == victim && inc < kills && s == die_at(inc)) {
    const long long t = now_ns();
    for (int pe = 0; pe < shmem_n_pes(); ++pe)
      if (pe != me) shmem_longlong_p(&died_ns[inc], t, pe);
    shmem_quiet();
    raise(SIGKILL);
  }
  for (int i = 0; i < ELEMS; ++i) grad[i] = (double)(me + 1) * (s + 1) + i;
  tesseraResult_t rc = tesseraAllReduce(grad, sum, ELEMS, tesseraFloat64, tesseraSum, comm);
  if (rc != tesseraSuccess) return rc;
  long members[2] = {me + 1, 1}, total[2];
  rc = tesseraAllReduce(members, total, 2, tesseraInt64, tesseraSum, comm);
  if (rc != tesseraSuccess) return rc;
  for (int i = 0; i < ELEMS; ++i) model[i] += sum[i];
  hist[2 * s] = total[0];
  hist[2 * s + 1] = total[1];
  *next_step = s + 1;
  return tesseraSuccess;
}

int main(int argc, char** argv) {
  REQUIRE(argc >= 3, "usage: grow VICTIM KILLS [mismatch]");
  victim = atoi(argv[1]);
  kills = atoi(argv[2]);
  const int mismatch = argc > 3 && strcmp(argv[3], "mismatch") == 0;
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes();
  REQUIRE(n == 4 && victim >= 0 && victim < n, "needs 4 PEs and a victim below 4 (got %d, %d)", n, victim);
  REQUIRE(tesseraIncarnation(&inc) == tesseraSuccess, "%s", tesseraGetLastError());
  /* The start-up allocations, repeated alike by a replacement. */
  model = shmem_calloc(ELEMS, sizeof(double));
  hist = shmem_calloc(2 * STEPS, sizeof(long));
  next_step = shmem_calloc(1, sizeof(long));
  REQUIRE(model && hist && next_step, "symmetric allocation failed");
  double* grad = malloc(ELEMS * sizeof(double));
  double* sum = malloc(ELEMS * sizeof(double));
  tesseraComm_t comm;
  int s = 0, shrunk_steps = -1, grows = 0, measure = 0;
  long long grown_ms[4] = {0};
  if (inc == 0) {
    REQUIRE(tesseraCommInitAll(&comm) == tesseraSuccess, "%s", tesseraGetLastError());
  } else {
    if (mismatch) REQUIRE(shmem_malloc(64) != NULL, "the extra block");
    tesseraResult_t rc = tesseraCommGrow(NULL, &comm);
    for (int tries = 1; rc == tesseraPeerFailed && tries < 3; ++tries) {  /* a member died in the grow */
      printf("grow: PE %d incarnation %d joins again after: %s\n", me, inc, tesseraGetLastError());
      rc = tesseraCommGrow(NULL, &comm);
    }
    if (mismatch) {
      REQUIRE(rc == tesseraInvalidArgument, "join with other allocations returned %d: %s", (int)rc,
              tesseraGetLastError());
      REQUIRE(strstr(tesseraGetLastError(), "symmetric allocations differ"), "join: %s", tesseraGetLastError());
      printf("grow: ok PE %d incarnation %d refused to join: %s\n", me, inc, tesseraGetLastError());
      free(grad);
      free(sum);
      shmem_finalize();
      return 0;
    }
    REQUIRE(rc == tesseraSuccess, "join: %s", tesseraGetLastError());
    const int from = me == 0 ? 1 : 0;
    shmem_getmem(model, model, ELEMS * sizeof(double), from);
    shmem_getmem(hist, hist, 2 * STEPS * sizeof(long), from);
    shmem_getmem(next_step, next_step, sizeof(long), from);
    s = (int)*next_step;
    REQUIRE(s > 0 && s < STEPS, "pulled next step %d", s);
  }
  while (s < STEPS) {
    tesseraResult_t rc = step(comm, s, grad, sum);
    if (rc == tesseraSuccess) {
      ++s;
      if (measure) {  /* the first good step on the grown communicator */
        grown_ms[grows] = (now_ns() - died_ns[grows]) / 1000000;
        ++grows;
        measure = 0;
      }
      if (shrunk_steps >= 0 && ++shrunk_steps == SHRUNK) {
        tesseraComm_t grown;
        rc = tesseraCommGrow(comm, &grown);
        if (mismatch) {
          REQUIRE(rc == tesseraPeerFailed, "grow with a refusing replacement returned %d: %s", (int)rc,
                  tesseraGetLastError());
          REQUIRE(strstr(tesseraGetLastError(), "could not take part in the grow"), "grow: %s", tesseraGetLastError());
          printf("grow: ok PE %d saw the grow refused: %s\n", me, tesseraGetLastError());
          tesseraCommDestroy(comm);
          free(grad);
          free(sum);
          shmem_finalize();
          return 0;
        }
        for (int tries = 1; rc == tesseraPeerFailed && tries < 3; ++tries) {
          /* A member died in the grow, which failed alike on every member: shrink again, grow again. */
          printf("grow: PE %d grows again after: %s\n", me, tesseraGetLastError());
          tesseraComm_t again;
          REQUIRE(tesseraCommShrink(comm, &again) == tesseraSuccess, "shrink after a failed grow: %s",
                  tesseraGetLastError());
          tesseraCommDestroy(comm);
          comm = again;
          rc = tesseraCommGrow(comm, &grown);
        }
        REQUIRE(rc == tesseraSuccess, "grow: %s", tesseraGetLastError());
        tesseraCommDestroy(comm);
        comm = grown;
        shrunk_steps = -1;
        measure = 1;
      }
      continue;
    }
    REQUIRE(rc == tesseraPeerFailed, "step %d returned %d: %s", s, (int)rc, tesseraGetLastError());
    REQUIRE(s == die_at(grows), "step %d failed, expected the failure at step %d", s, die_at(grows));
    tesseraComm_t survivors;
    REQUIRE(tesseraCommShrink(comm, &survivors) == tesseraSuccess, "shrink: %s", tesseraGetLastError());
    tesseraCommDestroy(comm);
    comm = survivors;
    shrunk_steps = 0;
  }

  int rank = -1, size = 0;
  REQUIRE(tesseraCommUserRank(comm, &rank) == tesseraSuccess && tesseraCommCount(comm, &size) == tesseraSuccess,
          "%s", tesseraGetLastError());
  REQUIRE(rank == me && size == 4, "rank %d of %d in the last communicator, expected %d of 4", rank, size, me);
  int on_three = 0;
  for (int t = 0; t < STEPS; ++t) {
    const long want = hist[2 * t + 1] == 4 ? 10 : 10 - (victim + 1);
    REQUIRE(hist[2 * t + 1] == 3 || hist[2 * t + 1] == 4, "step %d ran on %ld PEs", t, hist[2 * t + 1]);
    REQUIRE(hist[2 * t] == want, "step %d: members' sum %ld, expected %ld", t, hist[2 * t], want);
    on_three += hist[2 * t + 1] == 3;
  }
  REQUIRE(on_three == kills * SHRUNK, "%d steps ran on 3 PEs, expected %d", on_three, kills * SHRUNK);
  for (int i = 0; i < ELEMS; ++i) {
    double want = 0;
    for (int t = 0; t < STEPS; ++t) want += (double)hist[2 * t] * (t + 1) + (double)hist[2 * t + 1] * i;
    REQUIRE(model[i] == want, "model[%d] = %.17g, expected %.17g", i, model[i], want);
  }
  if (inc > 0) {
    printf("grow: ok PE %d incarnation %d rank %d\n", me, inc, rank);
  } else {
    printf("grow: ok PE %d survivor rank %d, death to first good call on the grown communicator:", me, rank);
    for (int k = 0; k < kills; ++k) printf(" %lld ms", grown_ms[k]);
    printf("\n");
  }
  tesseraCommDestroy(comm);
  free(grad);
  free(sum);
  shmem_finalize();
  return 0;
}
