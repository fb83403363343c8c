/* Spec examples for shmem_alltoall and shmem_alltoalls (int64_t): PE i sends block j to PE j; the strided
 * form uses dst = sst = 2 (every other element). */
#include <inttypes.h>
#include <shmem.h>
#include "check.h"

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  const int count = 2;
  int64_t* dest = shmem_malloc((size_t)(count * npes * 2) * sizeof(int64_t));
  int64_t* source = shmem_malloc((size_t)(count * npes * 2) * sizeof(int64_t));
  for (int pe = 0; pe < npes; pe++)
    for (int i = 0; i < count; i++) {
      source[pe * count + i] = me + pe;
      dest[pe * count + i] = 9999;
    }
  shmem_alltoall(SHMEM_TEAM_WORLD, dest, source, count);
  for (int pe = 0; pe < npes; pe++)
    for (int i = 0; i < count; i++)
      CHECK(dest[pe * count + i] == pe + me, "alltoall dest[%d] = %" PRId64, pe * count + i, dest[pe * count + i]);

  for (int i = 0; i < count * npes * 2; i++) source[i] = i % 2 ? -1 : me * 100 + i / 2, dest[i] = 9999;
  shmem_alltoalls(SHMEM_TEAM_WORLD, dest, source, 2, 2, count);
  for (int pe = 0; pe < npes; pe++)
    for (int i = 0; i < count; i++) {
      int64_t want = pe * 100 + me * count + i;
      CHECK(dest[2 * (pe * count + i)] == want, "alltoalls from PE %d element %d", pe, i);
      CHECK(dest[2 * (pe * count + i) + 1] == 9999, "alltoalls wrote a gap");
    }
  shmem_free(dest);
  shmem_free(source);
  shmem_finalize();
  return spec_errors != 0;
}
