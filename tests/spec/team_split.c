/* Spec examples for shmem_team_split_strided and shmem_team_split_2d: a team of the even PEs runs a
 * reduction and a broadcast with team-relative PE numbers; a 2-D split of the world into rows of 2. */
#include <shmem.h>
#include "check.h"

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  shmem_team_t even;
  int evens = (npes + 1) / 2;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, evens, NULL, 0, &even);
  static long v, sum;
  v = me;
  if (even != SHMEM_TEAM_INVALID) {
    CHECK(shmem_team_my_pe(even) == me / 2, "team PE %d", shmem_team_my_pe(even));
    CHECK(shmem_team_translate_pe(even, shmem_team_my_pe(even), SHMEM_TEAM_WORLD) == me, "translate");
    shmem_sum_reduce(even, &sum, &v, 1);
    CHECK(sum == 2L * evens * (evens - 1) / 2, "sum over even PEs %ld", sum);
    static int b;
    b = me * 7;
    shmem_broadcast(even, &b, &b, 1, evens - 1);
    CHECK(b == 2 * (evens - 1) * 7, "broadcast in even team %d", b);
    shmem_team_destroy(even);
  } else {
    CHECK(me % 2 == 1, "odd PE %d got a team", me);
  }

  shmem_team_t row, col;
  shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col);
  int rsize = shmem_team_n_pes(row), csize = shmem_team_n_pes(col);
  CHECK(rsize == (me / 2 * 2 + 2 <= npes ? 2 : 1), "row size %d", rsize);
  static int mine, rowsum, colmax;
  mine = me;
  shmem_sum_reduce(row, &rowsum, &mine, 1);
  shmem_max_reduce(col, &colmax, &mine, 1);
  int first = me / 2 * 2;
  CHECK(rowsum == (rsize == 2 ? 2 * first + 1 : first), "row sum %d", rowsum);
  CHECK(colmax == me % 2 + 2 * (csize - 1), "column max %d", colmax);
  shmem_team_destroy(row);
  shmem_team_destroy(col);
  shmem_finalize();
  return spec_errors != 0;
}
