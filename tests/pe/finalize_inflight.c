/* A job that ends with traffic in flight: every PE issues non-blocking puts (small and 1 MiB), non-fetching
 * atomics and non-blocking fetch-adds to the next PE, then calls shmem_finalize with no quiet or barrier
 * before it. finalize must complete them all (OpenSHMEM 1.5, 9.1.3): it returns, the fetch-adds' results have
 * landed in this PE's private memory (the values 0..K-1, each once: K adds to a word only this PE adds to),
 * and the job exits 0. Run by tests/pe/pgas.cmake on one host and across as_hosts.sh hosts, and 50 times
 * over slowed namespace hosts by tests/hosts/slow_link_test.sh. Prints "finalize_inflight: ok" from PE 0. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSmall = 64, kSmallPuts = 100, kLarge = 1 << 20, kLargePuts = 4, kFetches = 64 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes(), to = (me + 1) % n;
  char* small = shmem_malloc((size_t)kSmall * kSmallPuts);
  char* large = shmem_malloc((size_t)kLarge * kLargePuts);
  long* words = shmem_calloc((size_t)n, sizeof(long)); /* words[m]: what PE m adds to on this PE */
  long* counts = shmem_calloc((size_t)n, sizeof(long));
  char* src = malloc(kLarge);
  long fetched[kFetches];
  if (!small || !large || !words || !counts || !src) {
    fprintf(stderr, "finalize_inflight: PE %d: allocation failed\n", me);
    return 1;
  }
  memset(src, 'a' + me % 26, kLarge);
  for (int i = 0; i < kFetches; ++i) fetched[i] = -1;
  shmem_barrier_all(); /* every PE's heap is ready; from here nothing waits for the puts */
  for (int i = 0; i < kSmallPuts; ++i) shmem_putmem_nbi(small + (size_t)i * kSmall, src, kSmall, to);
  for (int i = 0; i < kLargePuts; ++i) shmem_putmem_nbi(large + (size_t)i * kLarge, src, kLarge, to);
  for (int i = 0; i < kFetches; ++i) {
    shmem_long_atomic_fetch_add_nbi(&fetched[i], &words[me], 1, to);
    shmem_long_atomic_add(&counts[me], 1, to);
  }
  shmem_finalize();
  /* After finalize: every fetch-add has returned its value, 0..kFetches-1 each once. */
  int seen[kFetches] = {0};
  for (int i = 0; i < kFetches; ++i) {
    if (fetched[i] < 0 || fetched[i] >= kFetches || seen[fetched[i]]++) {
      fprintf(stderr, "finalize_inflight: PE %d: fetch-add %d returned %ld after finalize (want each of 0..%d once)\n",
              me, i, fetched[i], kFetches - 1);
      return 1;
    }
  }
  free(src);
  if (me == 0) printf("finalize_inflight: ok (%d PEs)\n", n);
  return 0;
}
