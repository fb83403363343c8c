/* Spec (1.6): shmem_query_initialized / shmem_query_finalized around nested shmem_init/shmem_finalize pairs
 * (only the last finalize ends the library), and a session (shmem_session_start/stop, and the drafts' names
 * shmem_ctx_session_*) around a context's puts and atomics, whose results are those without the session. */
#include <shmem.h>
#include "check.h"

#define N 256

int main(void) {
  int flag = -1;
  CHECK(shmem_query_initialized(&flag) == 0 && flag == 0, "initialized before shmem_init: %d", flag);
  CHECK(shmem_query_finalized(&flag) == 0 && flag == 0, "finalized before shmem_init: %d", flag);
  shmem_init();
  int provided = -1;
  shmem_init_thread(SHMEM_THREAD_SINGLE, &provided); /* a nested pair */
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  CHECK(shmem_query_initialized(&flag) == 0 && flag == 1, "initialized after shmem_init: %d", flag);
  const int me = shmem_my_pe(), npes = shmem_n_pes(), next = (me + 1) % npes;
  static long dst[N], counter;
  long src[N];
  for (int i = 0; i < N; i++) src[i] = me * 1000 + i;
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
  shmem_session_config_t config = {.total_ops = N + 1};
  shmem_session_start(ctx, SHMEM_SESSION_BATCH, &config, SHMEM_SESSION_TOTAL_OPS);
  for (int i = 0; i < N; i++) shmem_ctx_long_p(ctx, &dst[i], src[i], next);
  shmem_ctx_long_atomic_add(ctx, &counter, me + 1, 0);
  shmem_session_stop(ctx);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  const int prev = (me + npes - 1) % npes;
  for (int i = 0; i < N; i++) CHECK(dst[i] == prev * 1000 + i, "dst[%d] = %ld from PE %d", i, dst[i], prev);
  if (me == 0) CHECK(counter == (long)npes * (npes + 1) / 2, "counter %ld", counter);
  shmem_barrier_all(); /* PE 0 has read the counter before anyone adds again */
  shmem_ctx_session_start(ctx, SHMEM_CTX_SESSION_SAME_AMO, NULL, 0); /* the drafts' names, no configuration */
  shmem_ctx_long_atomic_inc(ctx, &counter, 0);
  shmem_ctx_session_stop(ctx);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  if (me == 0) CHECK(counter == (long)npes * (npes + 1) / 2 + npes, "counter %ld after the second session", counter);
  shmem_ctx_destroy(ctx);
  shmem_finalize(); /* the inner pair: still initialized */
  CHECK(shmem_query_initialized(&flag) == 0 && flag == 1, "initialized after the inner finalize: %d", flag);
  CHECK(shmem_query_finalized(&flag) == 0 && flag == 0, "finalized after the inner finalize: %d", flag);
  CHECK(shmem_my_pe() == me, "my PE after the inner finalize: %d", shmem_my_pe());
  shmem_barrier_all();
  const int errors = spec_errors;
  shmem_finalize();
  CHECK(shmem_query_initialized(&flag) == 0 && flag == 0, "initialized after the last finalize: %d", flag);
  CHECK(shmem_query_finalized(&flag) == 0 && flag == 1, "finalized after the last finalize: %d", flag);
  return errors != 0 || spec_errors != 0;
}
