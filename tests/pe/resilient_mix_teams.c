/* Fault trials of resilient mode through OpenSHMEM teams (bench/resilience_trials.sh with API=shmem, a few
 * in tests/scripts/resilience_test.sh): resilient_mix.c's loop of mixed collectives as team calls (sum
 * reductions of 8 B and 64 KiB, a 256 KiB broadcast, a 4 KiB-per-member fcollect), every result checked,
 * during which the driving script kills one PE at a random moment.
 *
 * resilient_mix_teams SECONDS READY_FILE: as resilient_mix. A call that fails must return SHMEMX_PEER_FAILED;
 * the survivors then shrink the team (shmemx_team_shrink), destroy the old one, agree on the call to go on
 * from (a min reduction on the new team) and go on to the end. Each survivor prints
 *   mix: ok PE p calls N failures F detect_ns D recover_ns R */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>
#include <shmemx.h>
#include <tessera/coll.h>

#define REQUIRE_PROGRAM "mix"

static int me;
#include "resilient_mix.h"

/* Symmetric (static): shmem_malloc is collective over the world, which has a failed member. */
static double dsrc, ddst;
static float fbuf[SMALL_FLOATS], fout[SMALL_FLOATS];
static unsigned char bsrc[BCAST_BYTES], bdst[BCAST_BYTES];
static unsigned char gin[GATHER_BYTES], gout[GATHER_BYTES * MAX_PES];
static int go_src, go_dst;
static long at_src, at_dst;

/* Call i on `team` (members: world PEs `pes`, my number `rank`); its result checked when it succeeds. */
static int run_call(long i, shmem_team_t team, const int* pes, int n, int rank) {
  int rc;
  switch (i % 4) {
    case 0: {
      double want = 0;
      dsrc = mix_scalar(me, i);
      for (int m = 0; m < n; ++m) want += mix_scalar(pes[m], i);
      rc = shmem_double_sum_reduce(team, &ddst, &dsrc, 1);
      if (rc == 0) REQUIRE(ddst == want, "call %ld: reduce 8 B gave %g, expected %g", i, ddst, want);
      return rc;
    }
    case 1: {
      for (int k = 0; k < SMALL_FLOATS; ++k) fbuf[k] = mix_float(me, k, i);
      rc = shmem_float_sum_reduce(team, fout, fbuf, SMALL_FLOATS);
      if (rc == 0)
        for (int k = 0; k < SMALL_FLOATS; ++k) {
          float want = 0;
          for (int m = 0; m < n; ++m) want += mix_float(pes[m], k, i);
          REQUIRE(fout[k] == want, "call %ld: reduce 64 KiB element %d gave %g, expected %g", i, k, fout[k], want);
        }
      return rc;
    }
    case 2: {
      const int root = (int)(i % n);
      for (int k = 0; k < BCAST_BYTES; ++k) {
        bsrc[k] = rank == root ? mix_bcast_byte(pes[root], k, i) : 0;
        bdst[k] = 0;
      }
      rc = shmem_broadcastmem(team, bdst, bsrc, BCAST_BYTES, root);
      if (rc == 0)
        for (int k = 0; k < BCAST_BYTES; ++k)
          REQUIRE(bdst[k] == mix_bcast_byte(pes[root], k, i), "call %ld: broadcast byte %d", i, k);
      return rc;
    }
    default: {
      for (int k = 0; k < GATHER_BYTES; ++k) gin[k] = mix_gather_byte(me, k, i);
      rc = shmem_fcollectmem(team, gout, gin, GATHER_BYTES);
      if (rc == 0)
        for (int m = 0; m < n; ++m)
          for (int k = 0; k < GATHER_BYTES; ++k)
            REQUIRE(gout[m * GATHER_BYTES + k] == mix_gather_byte(pes[m], k, i),
                    "call %ld: fcollect block %d byte %d", i, m, k);
      return rc;
    }
  }
}

/* The team's members as world PEs, and this PE's number in it. */
static int members(shmem_team_t team, int* pes, int* rank) {
  const int n = shmem_team_n_pes(team);
  for (int m = 0; m < n; ++m) pes[m] = shmem_team_translate_pe(team, m, SHMEM_TEAM_WORLD);
  *rank = shmem_team_my_pe(team);
  REQUIRE(*rank >= 0 && pes[*rank] == me, "member %d of the team is PE %d, not this PE", *rank, pes[*rank]);
  return n;
}

int main(int argc, char** argv) {
  REQUIRE(argc == 3, "usage: resilient_mix_teams SECONDS READY_FILE");
  const double seconds = atof(argv[1]);
  shmem_init();
  me = shmem_my_pe();
  REQUIRE(shmem_n_pes() <= MAX_PES, "at most %d PEs", MAX_PES);
  shmem_team_t team;
  REQUIRE(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0, &team) == 0, "split");
  int pes[MAX_PES], rank;
  int n = members(team, pes, &rank);
  /* Everyone set up before anyone may be killed (a death inside shmem_init is not what this tests). */
  REQUIRE(shmem_team_sync(team) == 0, "the first sync");
  mix_ready(argv[2]);

  const long long end = clock_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
  long i = 0;
  int failures = 0;
  long long detect = 0, recover = 0;
  /* The loop's end is agreed: the survivors stop when member 0 says so (a broadcast every 16 calls). */
  for (;;) {
    if (i % 16 == 0) {
      go_src = rank == 0 ? clock_ns(CLOCK_MONOTONIC) < end : 0;
      if (shmem_int_broadcast(team, &go_dst, &go_src, 1, 0) != 0) goto failed;
      if (failures && !recover) recover = clock_ns(CLOCK_REALTIME);
      if (!go_dst) break;
    }
    {
      int rc = run_call(i, team, pes, n, rank);
      if (rc == 0) {
        ++i;
        if (failures && !recover) recover = clock_ns(CLOCK_REALTIME);
        continue;
      }
      REQUIRE(rc == SHMEMX_PEER_FAILED, "call %ld returned %d: %s", i, rc, tesseraGetLastError());
    }
  failed:
    REQUIRE(strstr(tesseraGetLastError(), "failed"), "call %ld: %s", i, tesseraGetLastError());
    if (!detect) detect = clock_ns(CLOCK_REALTIME);
    ++failures;
    {
      shmem_team_t shrunk;
      if (shmemx_team_shrink(team, &shrunk) != 0) continue; /* a failure during the shrink: shrink again */
      shmem_team_destroy(team);
      team = shrunk;
    }
    n = members(team, pes, &rank);
    /* Go on from the smallest call not completed by every survivor; round to the loop's decision points. */
    at_src = i;
    if (shmem_long_min_reduce(team, &at_dst, &at_src, 1) != 0) goto failed;
    i = at_dst - at_dst % 16;
  }
  shmem_team_destroy(team);
  shmem_finalize();
  printf("mix: ok PE %d calls %ld failures %d detect_ns %lld recover_ns %lld\n", me, i, failures, detect, recover);
  return 0;
}
