#include <shmem.h>
#include <stdio.h>
int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long* x = (long*)shmem_malloc(sizeof(long));       /* symmetric: the same block on every PE */
  shmem_long_p(x, me, (me + 1) % n);                   /* write my PE number into my right neighbour's x */
  shmem_barrier_all();                                 /* completes the put and synchronises */
  int ok = *x == (me + n - 1) % n;
  printf("PE %d of %d got %ld from its left neighbour: %s\n", me, n, *x, ok ? "ok" : "WRONG");
  shmem_free(x);
  shmem_finalize();
  return ok ? 0 : 1;
}
