/* Fault trials of resilient mode (tests/scripts/resilience_test.sh, bench/resilience_trials.sh): a loop of
 * mixed collectives (allreduces of 8 B and 64 KiB, a 256 KiB broadcast, a 4 KiB-per-rank allgather), every
 * result checked, during which the driving script kills one PE at a random moment.
 *
 * resilient_mix SECONDS READY_FILE: each PE writes "PE pid" to READY_FILE.PE once set up, then loops for
 * SECONDS. A call that fails must fail with tesseraPeerFailed; the survivors then shrink, agree on the call
 * to go on from (the smallest one any of them had not completed: a call that some completed and others saw
 * fail is redone by all), and go on to the end on the shrunk communicator. Every call that returns success
 * must hold the exact result of its members. Each survivor prints
 *   mix: ok PE p calls N failures F detect_ns D recover_ns R
 * D and R: CLOCK_REALTIME when it saw the failure and when its first call on the survivors succeeded (0
 * without a failure), which the script compares with the time of its kill. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>
#include <tessera/coll.h>

#define REQUIRE_PROGRAM "mix"

static int me;
#include "resilient_mix.h"

static float fbuf[SMALL_FLOATS], fout[SMALL_FLOATS];
static unsigned char bbuf[BCAST_BYTES];
static unsigned char gin[GATHER_BYTES], gout[GATHER_BYTES * MAX_PES];

/* Call i on `comm` (members: world PEs `pes`, my rank `rank`); its result checked when it succeeds. */
static tesseraResult_t run_call(long i, tesseraComm_t comm, const int* pes, int n, int rank) {
  tesseraResult_t rc;
  switch (i % 4) {
    case 0: {
      double v = mix_scalar(me, i), sum = 0, want = 0;
      for (int m = 0; m < n; ++m) want += mix_scalar(pes[m], i);
      rc = tesseraAllReduce(&v, &sum, 1, tesseraFloat64, tesseraSum, comm);
      if (rc == tesseraSuccess) REQUIRE(sum == want, "call %ld: allreduce 8 B gave %g, expected %g", i, sum, want);
      return rc;
    }
    case 1: {
      for (int k = 0; k < SMALL_FLOATS; ++k) fbuf[k] = mix_float(me, k, i);
      rc = tesseraAllReduce(fbuf, fout, SMALL_FLOATS, tesseraFloat32, tesseraSum, comm);
      if (rc == tesseraSuccess)
        for (int k = 0; k < SMALL_FLOATS; ++k) {
          float want = 0;
          for (int m = 0; m < n; ++m) want += mix_float(pes[m], k, i);
          REQUIRE(fout[k] == want, "call %ld: allreduce 64 KiB element %d gave %g, expected %g", i, k, fout[k], want);
        }
      return rc;
    }
    case 2: {
      const int root = (int)(i % n);
      for (int k = 0; k < BCAST_BYTES; ++k) bbuf[k] = rank == root ? mix_bcast_byte(pes[root], k, i) : 0;
      rc = tesseraBroadcast(bbuf, bbuf, BCAST_BYTES, tesseraUint8, root, comm);
      if (rc == tesseraSuccess)
        for (int k = 0; k < BCAST_BYTES; ++k)
          REQUIRE(bbuf[k] == mix_bcast_byte(pes[root], k, i), "call %ld: broadcast byte %d", i, k);
      return rc;
    }
    default: {
      for (int k = 0; k < GATHER_BYTES; ++k) gin[k] = mix_gather_byte(me, k, i);
      rc = tesseraAllGather(gin, gout, GATHER_BYTES, tesseraUint8, comm);
      if (rc == tesseraSuccess)
        for (int m = 0; m < n; ++m)
          for (int k = 0; k < GATHER_BYTES; ++k)
            REQUIRE(gout[m * GATHER_BYTES + k] == mix_gather_byte(pes[m], k, i),
                    "call %ld: allgather block %d byte %d", i, m, k);
      return rc;
    }
  }
}

int main(int argc, char** argv) {
  REQUIRE(argc == 3, "usage: resilient_mix SECONDS READY_FILE");
  const double seconds = atof(argv[1]);
  shmem_init();
  me = shmem_my_pe();
  int n = shmem_n_pes();
  REQUIRE(n <= MAX_PES, "at most %d PEs", MAX_PES);
  tesseraComm_t comm;
  REQUIRE(tesseraCommInitAll(&comm) == tesseraSuccess, "%s", tesseraGetLastError());
  int pes[MAX_PES];
  for (int i = 0; i < n; ++i) pes[i] = i;
  int rank = me;
  /* Everyone set up before anyone may be killed (a death inside shmem_init is not what this tests). */
  tesseraBarrier(comm);
  mix_ready(argv[2]);

  const long long end = clock_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
  long i = 0;
  int failures = 0;
  long long detect = 0, recover = 0;
  /* The loop's end is agreed too: a PE that stopped at its own clock while others call again would leave
   * them waiting; the survivors stop when rank 0 says so (a broadcast of the decision every 16 calls). */
  for (;;) {
    if (i % 16 == 0) {
      int go = rank == 0 ? clock_ns(CLOCK_MONOTONIC) < end : 0;
      tesseraResult_t rc = tesseraBroadcast(&go, &go, 1, tesseraInt32, 0, comm);
      if (rc != tesseraSuccess) goto failed;
      if (failures && !recover) recover = clock_ns(CLOCK_REALTIME);
      if (!go) break;
    }
    {
      tesseraResult_t rc = run_call(i, comm, pes, n, rank);
      if (rc == tesseraSuccess) {
        ++i;
        if (failures && !recover) recover = clock_ns(CLOCK_REALTIME);
        continue;
      }
    }
  failed:
    REQUIRE(tesseraGetLastError() && strstr(tesseraGetLastError(), "failed"), "call %ld: %s", i, tesseraGetLastError());
    if (!detect) detect = clock_ns(CLOCK_REALTIME);
    ++failures;
    {
      tesseraComm_t shrunk;
      tesseraResult_t rc = tesseraCommShrink(comm, &shrunk);
      if (rc != tesseraSuccess) continue; /* another PE failed during the shrink: the next call fails, shrink again */
      tesseraCommDestroy(comm);
      comm = shrunk;
    }
    tesseraCommCount(comm, &n);
    tesseraCommUserRank(comm, &rank);
    {
      /* The members, by world PE: an allgather of every rank's PE number. */
      int mine = me;
      if (tesseraAllGather(&mine, pes, 1, tesseraInt32, comm) != tesseraSuccess) goto failed;
      REQUIRE(pes[rank] == me, "the shrunk communicator's rank %d is PE %d, not this PE", rank, pes[rank]);
      /* Go on from the smallest call not completed by every survivor; round to the loop's decision points. */
      long from = i;
      if (tesseraAllReduce(&i, &from, 1, tesseraInt64, tesseraMin, comm) != tesseraSuccess) goto failed;
      i = from - from % 16;
    }
  }
  tesseraCommDestroy(comm);
  shmem_finalize();
  printf("mix: ok PE %d calls %ld failures %d detect_ns %lld recover_ns %lld\n", me, i, failures, detect, recover);
  return 0;
}
