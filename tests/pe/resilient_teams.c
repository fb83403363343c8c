/* Driven by tests/scripts/resilience_test.sh under tessera-run --on-failure continue (docs/resilience.md):
 * OpenSHMEM teams after a failure.
 *
 * resilient_teams VICTIM: every PE runs sum reductions on a team of all PEs (split from the world); at call
 * DIE_AT the PE VICTIM kills itself (-1: nobody). Each survivor's reduction must return SHMEMX_PEER_FAILED at
 * that very call, with tesseraGetLastError naming the victim; the broken team's later calls and a sync of
 * the world must fail too. The survivors shrink the team (shmemx_team_shrink) and check the new team:
 * its size and numbering (translated to the world), reduction, broadcast, fcollect, alltoall and sync on it,
 * puts on a context of it with team-relative PE numbers, a split of it, and a shrink of the world giving
 * the same members. They destroy the teams and finalize; each prints one "resilient_teams: ok" line. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>
#include <shmemx.h>
#include <tessera/coll.h>

#define REQUIRE_PROGRAM "resilient_teams"
#include "require.h"

#define DIE_AT 12
#define CALLS 24
#define MAXPES 64

static int me;
/* Symmetric buffers, all static: shmem_malloc is collective over the world, which has a failed member. */
static long red_src[4], red_dst[4];
static long bsrc[8], bcast[8], fcoll[MAXPES * 2], a2a_src[MAXPES], a2a_dst[MAXPES], from_left = -1;

int main(int argc, char** argv) {
  const int victim = argc > 1 ? atoi(argv[1]) : -1;
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes();
  REQUIRE(n >= 3 && n <= MAXPES && victim < n, "needs 3..%d PEs and a victim below %d (got %d)", MAXPES, n, victim);
  shmem_team_t all;
  REQUIRE(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all) == 0, "split of the world failed");
  int survivors[MAXPES], ns = 0;
  for (int i = 0; i < n; ++i)
    if (i != victim) survivors[ns++] = i;

  int failed_at = -1;
  for (int i = 0; i < CALLS; ++i) {
    if (me == victim && i == DIE_AT) raise(SIGKILL);
    for (int k = 0; k < 4; ++k) red_src[k] = (me + 1) * (long)(i + k + 1);
    int rc = shmem_long_sum_reduce(all, red_dst, red_src, 4);
    if (rc != 0) {
      REQUIRE(rc == SHMEMX_PEER_FAILED, "call %d: shmem_long_sum_reduce returned %d, not SHMEMX_PEER_FAILED", i, rc);
      char pe_text[32];
      snprintf(pe_text, sizeof pe_text, "PE %d ", victim);
      REQUIRE(strstr(tesseraGetLastError(), pe_text) && strstr(tesseraGetLastError(), "shmemx_team_shrink"),
              "call %d: the error does not name %sor the way on: %s", i, pe_text, tesseraGetLastError());
      failed_at = i;
      break;
    }
    for (int k = 0; k < 4; ++k)
      REQUIRE(red_dst[k] == (long)n * (n + 1) / 2 * (i + k + 1), "call %d: element %d is %ld", i, k, red_dst[k]);
  }
  if (victim < 0) {
    REQUIRE(failed_at < 0, "a call failed with no failure: %s", tesseraGetLastError());
  } else {
    REQUIRE(failed_at == DIE_AT, "the failure was seen at call %d, not at %d", failed_at, DIE_AT);
    /* The broken team fails at once; the world, with the victim a member, fails in its sync. */
    REQUIRE(shmem_long_sum_reduce(all, red_dst, red_src, 4) == SHMEMX_PEER_FAILED, "a broken team's reduction");
    REQUIRE(shmem_team_sync(all) == SHMEMX_PEER_FAILED, "a broken team's sync");
    REQUIRE(shmem_team_sync(SHMEM_TEAM_WORLD) == SHMEMX_PEER_FAILED, "a sync of the world with a failed member");
    REQUIRE(strstr(tesseraGetLastError(), "shmem_team_sync") != NULL, "the sync's error: %s", tesseraGetLastError());
  }

  shmem_team_t surv;
  int rc = shmemx_team_shrink(all, &surv);
  REQUIRE(rc == 0 && surv != SHMEM_TEAM_INVALID, "shmemx_team_shrink returned %d: %s", rc, tesseraGetLastError());
  REQUIRE(shmem_team_n_pes(surv) == ns, "the shrunk team has %d PEs, not %d", shmem_team_n_pes(surv), ns);
  int my = -1;
  for (int i = 0; i < ns; ++i) {
    REQUIRE(shmem_team_translate_pe(surv, i, SHMEM_TEAM_WORLD) == survivors[i], "member %d is world PE %d, not %d", i,
            shmem_team_translate_pe(surv, i, SHMEM_TEAM_WORLD), survivors[i]);
    if (survivors[i] == me) my = i;
  }
  REQUIRE(shmem_team_my_pe(surv) == my, "my number in the shrunk team is %d, not %d", shmem_team_my_pe(surv), my);
  if (victim >= 0)
    REQUIRE(shmem_team_translate_pe(SHMEM_TEAM_WORLD, victim, surv) == -1, "the victim translates into the new team");

  /* Collectives on the survivors. */
  for (int k = 0; k < 4; ++k) red_src[k] = (me + 1) * (long)(k + 1);
  REQUIRE(shmem_long_sum_reduce(surv, red_dst, red_src, 4) == 0, "reduce on the survivors: %s", tesseraGetLastError());
  long want = 0;
  for (int i = 0; i < ns; ++i) want += survivors[i] + 1;
  for (int k = 0; k < 4; ++k) REQUIRE(red_dst[k] == want * (k + 1), "survivors' sum %d: %ld, not %ld", k, red_dst[k], want * (k + 1));
  for (int k = 0; k < 8; ++k) {
    bsrc[k] = my == 1 ? 1000 + k : -2;
    bcast[k] = -1;
  }
  REQUIRE(shmem_long_broadcast(surv, bcast, bsrc, 8, 1) == 0, "broadcast: %s", tesseraGetLastError());
  for (int k = 0; k < 8; ++k) REQUIRE(bcast[k] == 1000 + k, "broadcast element %d: %ld", k, bcast[k]);
  long mine[2] = {me * 10L, me * 10L + 1};
  static long fsrc[2];
  fsrc[0] = mine[0];
  fsrc[1] = mine[1];
  REQUIRE(shmem_long_fcollect(surv, fcoll, fsrc, 2) == 0, "fcollect: %s", tesseraGetLastError());
  for (int i = 0; i < ns; ++i)
    REQUIRE(fcoll[2 * i] == survivors[i] * 10L && fcoll[2 * i + 1] == survivors[i] * 10L + 1, "fcollect block %d", i);
  for (int i = 0; i < ns; ++i) a2a_src[i] = me * 100L + survivors[i];
  REQUIRE(shmem_long_alltoall(surv, a2a_dst, a2a_src, 1) == 0, "alltoall: %s", tesseraGetLastError());
  for (int i = 0; i < ns; ++i)
    REQUIRE(a2a_dst[i] == survivors[i] * 100L + me, "alltoall from member %d: %ld", i, a2a_dst[i]);
  REQUIRE(shmem_team_sync(surv) == 0, "sync of the survivors: %s", tesseraGetLastError());

  /* Puts on a context of the shrunk team, with team-relative PE numbers. */
  shmem_ctx_t ctx;
  REQUIRE(shmem_team_create_ctx(surv, 0, &ctx) == 0, "context on the shrunk team");
  shmem_ctx_long_p(ctx, &from_left, survivors[my] * 7L, (my + 1) % ns);
  shmem_ctx_quiet(ctx);
  REQUIRE(shmem_team_sync(surv) == 0, "sync after the puts");
  REQUIRE(from_left == survivors[(my + ns - 1) % ns] * 7L, "the put from the left member: %ld", from_left);
  shmem_ctx_destroy(ctx);

  /* A split of the shrunk team: its members 0, 2, 4, ... */
  shmem_team_t half;
  REQUIRE(shmem_team_split_strided(surv, 0, 2, (ns + 1) / 2, NULL, 0, &half) == 0, "split of the shrunk team");
  REQUIRE((half != SHMEM_TEAM_INVALID) == (my % 2 == 0), "member %d of the split: %s", my,
          half != SHMEM_TEAM_INVALID ? "in" : "out");
  if (half != SHMEM_TEAM_INVALID) {
    red_src[0] = me + 1;
    REQUIRE(shmem_long_sum_reduce(half, red_dst, red_src, 1) == 0, "reduce on the split: %s", tesseraGetLastError());
    long w = 0;
    for (int i = 0; i < ns; i += 2) w += survivors[i] + 1;
    REQUIRE(red_dst[0] == w, "the split's sum %ld, not %ld", red_dst[0], w);
    shmem_team_destroy(half);
  }

  /* The world shrinks to the same members. */
  shmem_team_t w2;
  REQUIRE(shmemx_team_shrink(SHMEM_TEAM_WORLD, &w2) == 0, "shrink of the world: %s", tesseraGetLastError());
  REQUIRE(shmem_team_n_pes(w2) == ns && shmem_team_translate_pe(surv, my, w2) == my, "the world's shrink differs");
  red_src[0] = 1;
  REQUIRE(shmem_long_sum_reduce(w2, red_dst, red_src, 1) == 0 && red_dst[0] == ns, "reduce on the world's shrink");

  shmem_team_destroy(w2);
  shmem_team_destroy(surv);
  shmem_team_destroy(all);
  shmem_finalize();
  printf("resilient_teams: ok PE %d%s\n", me, victim < 0 ? " (no failure)" : "");
  return 0;
}
