/* ring_pass: every PE puts its buffer to the next PE with a signal, waits for the buffer from the previous
 * PE, verifies it, and repeats. The OpenSHMEM C API only: build it with any OpenSHMEM implementation.
 *   tessera-run -n 4 build/bin/ring_pass [rounds] [elements] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 1000;
  size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int next = (me + 1) % npes, prev = (me + npes - 1) % npes;

  long* inbox = shmem_malloc(n * sizeof(long));
  long* outbox = malloc(n * sizeof(long));
  uint64_t* arrived = shmem_calloc(1, sizeof(uint64_t));
  shmem_barrier_all();

  long errors = 0;
  for (long r = 1; r <= rounds; ++r) {
    for (size_t i = 0; i < n; ++i) outbox[i] = (long)me * 1000003L + r * 7L + (long)i;
    /* Data first, then the signal: the receiver that sees round r sees the data of round r. */
    shmem_long_put_signal(inbox, outbox, n, arrived, (uint64_t)r, SHMEM_SIGNAL_SET, next);
    shmem_signal_wait_until(arrived, SHMEM_CMP_GE, (uint64_t)r);
    for (size_t i = 0; i < n; ++i)
      if (inbox[i] != (long)prev * 1000003L + r * 7L + (long)i) ++errors;
    /* The previous PE may not overwrite inbox before everyone has checked it. */
    shmem_barrier_all();
  }
  if (errors) fprintf(stderr, "ring_pass: PE %d found %ld wrong elements\n", me, errors);
  if (me == 0 && !errors)
    printf("ring_pass: %d PE%s, %ld rounds of %zu longs: all data verified\n", npes, npes == 1 ? "" : "s", rounds, n);
  shmem_free(arrived);
  shmem_free(inbox);
  free(outbox);
  shmem_finalize();
  return errors ? 1 : 0;
}
