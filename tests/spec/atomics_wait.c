/* Spec examples for the atomics (generic names, ctx forms, non-blocking fetches) and point-to-point waits:
 * a ticket counter with shmem_atomic_fetch_inc, compare-and-swap election, and a ring of wait_until. */
#include <shmem.h>
#include "check.h"

static long ticket = 0;
static int winner = -1;
static long flag = 0;
static int vals[4];

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long t = shmem_atomic_fetch_inc(&ticket, 0);
  CHECK(t >= 0 && t < npes, "ticket %ld", t);
  int old = shmem_atomic_compare_swap(&winner, -1, me, 0);
  shmem_barrier_all();
  CHECK(ticket == (me == 0 ? npes : 0), "final ticket %ld", ticket);
  CHECK((old == -1) == (shmem_atomic_fetch(&winner, 0) == me), "election");
  shmem_barrier_all();

  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
  long f;
  shmem_atomic_fetch_add_nbi(ctx, &f, &ticket, 10, 0);
  shmem_ctx_quiet(ctx);
  CHECK(f >= npes, "fetch_add_nbi fetched %ld", f);
  shmem_put(ctx, &vals[me % 4], &me, 1, (me + 1) % npes);
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  int prev = (me + npes - 1) % npes;
  if (npes <= 4) CHECK(vals[prev % 4] == prev, "ctx put from PE %d", prev);

  /* Ring: PE 0 starts, each PE waits for its flag, then sets the next one. */
  if (me == 0) shmem_atomic_set(&flag, 1L, 1 % npes);
  if (npes > 1 || me != 0) shmem_wait_until(&flag, SHMEM_CMP_EQ, 1);
  if (me != 0) shmem_atomic_set(&flag, 1L, (me + 1) % npes);
  CHECK(shmem_test(&flag, SHMEM_CMP_NE, 0), "flag not set");
  shmem_finalize();
  return spec_errors != 0;
}
