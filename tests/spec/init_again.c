/* Spec (1.6): the library initialized again after its last shmem_finalize, three times in one process, under
 * tessera-run as in a job of one PE. Each round checks the state queries, the PE numbering, puts around a
 * ring into a static array and into shmem_malloc'd memory, an atomic, a reduction on the world team and a
 * team split, so every part that finalize tears down (heap, teams, collectives' communicators, peers'
 * mappings) is seen working again. INIT_AGAIN_PE0_DELAY_MS (a test's setting): PE 0 waits that long after each
 * finalize, so that the others' next joins arrive before it serves them. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <shmem.h>
#include <stdlib.h>
#include <time.h>
#include "check.h"

#define N 64
#define ROUNDS 3

static long ring[N], counter, sum_src, sum_dst;

int main(void) {
  int flag = -1, first_me = -1, first_npes = -1;
  for (int round = 0; round < ROUNDS; ++round) {
    shmem_init();
    CHECK(shmem_query_initialized(&flag) == 0 && flag == 1, "round %d: not initialized", round);
    CHECK(shmem_query_finalized(&flag) == 0 && flag == 0, "round %d: finalized while initialized", round);
    const int me = shmem_my_pe(), npes = shmem_n_pes(), next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    if (round == 0) {
      first_me = me;
      first_npes = npes;
    }
    CHECK(me == first_me && npes == first_npes, "round %d: PE %d of %d, first %d of %d", round, me, npes, first_me,
          first_npes);
    long* heap = shmem_malloc(N * sizeof(long));
    CHECK(heap != NULL, "round %d: shmem_malloc returned NULL", round);
    counter = 0;
    shmem_barrier_all();
    for (int i = 0; i < N; ++i) {
      shmem_long_p(&ring[i], round * 100000L + me * 1000 + i, next);
      shmem_long_p(&heap[i], -(round * 100000L + me * 1000 + i), next);
    }
    shmem_long_atomic_add(&counter, me + 1, 0);
    shmem_barrier_all();
    for (int i = 0; i < N; ++i) {
      CHECK(ring[i] == round * 100000L + prev * 1000 + i, "round %d: ring[%d] = %ld", round, i, ring[i]);
      CHECK(heap[i] == -(round * 100000L + prev * 1000 + i), "round %d: heap[%d] = %ld", round, i, heap[i]);
    }
    if (me == 0) CHECK(counter == (long)npes * (npes + 1) / 2, "round %d: counter %ld", round, counter);
    sum_src = me + round;
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum_dst, &sum_src, 1) == 0, "round %d: reduce", round);
    CHECK(sum_dst == (long)npes * (npes - 1) / 2 + (long)npes * round, "round %d: sum %ld", round, sum_dst);
    shmem_team_t evens;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens) == 0,
          "round %d: split", round);
    if (evens != SHMEM_TEAM_INVALID) {
      CHECK(shmem_team_my_pe(evens) == me / 2, "round %d: my number in the evens %d", round, shmem_team_my_pe(evens));
      CHECK(shmem_team_sync(evens) == 0, "round %d: sync of the evens", round);
      shmem_team_destroy(evens);
    }
    shmem_free(heap);
    shmem_finalize();
    CHECK(shmem_query_initialized(&flag) == 0 && flag == 0, "round %d: initialized after finalize", round);
    CHECK(shmem_query_finalized(&flag) == 0 && flag == 1, "round %d: not finalized after finalize", round);
    const char* delay = getenv("INIT_AGAIN_PE0_DELAY_MS");
    if (delay && first_me == 0) {
      const long ms = atol(delay);
      const struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  return spec_errors != 0;
}
