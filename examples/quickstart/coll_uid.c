/* Under your own launcher (a script, a scheduler): no tessera-run. Each process gets TESSERA_RANK and
 * TESSERA_SIZE from it; rank 0 makes the rendezvous id with tessera_bootstrap_uid (as ncclGetUniqueId) and
 * hands it to the others, here through the file named by argv[1] (MPI_Bcast, a key-value store, ...). */
#define _POSIX_C_SOURCE 200809L                        /* setenv, nanosleep under -std=c11 */
#include <shmem.h>
#include <tessera/coll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: TESSERA_RANK=r TESSERA_SIZE=n %s ID_FILE\n", argv[0]); return 2; }
  char id[TESSERA_BOOTSTRAP_UID_SIZE] = {0}, tmp[4096];
  if (atoi(getenv("TESSERA_RANK") ? getenv("TESSERA_RANK") : "0") == 0) {
    if (tessera_bootstrap_uid(id, sizeof id, NULL) != 0) return 1;   /* listens on this machine's name */
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE* f = fopen(tmp, "w");
    if (!f || fputs(id, f) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0) return 1;  /* whole or absent */
  } else {
    for (int i = 0; i < 3000 && !id[0]; ++i) {         /* wait up to 30 s for rank 0's id */
      FILE* f = fopen(argv[1], "r");
      if (f) { if (!fgets(id, sizeof id, f)) id[0] = 0; fclose(f); }
      if (!id[0]) nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    if (!id[0]) { fprintf(stderr, "no id in %s\n", argv[1]); return 1; }
  }
  setenv("TESSERA_BOOTSTRAP", id, 1);                  /* before shmem_init */
  shmem_init();
  tesseraComm_t comm;
  tesseraCommInitAll(&comm);
  int rank, size;
  tesseraCommUserRank(comm, &rank);
  tesseraCommCount(comm, &size);
  double x = rank + 1;
  tesseraAllReduce(&x, &x, 1, tesseraFloat64, tesseraSum, comm);
  int ok = x == size * (size + 1) / 2.0;
  printf("rank %d of %d: sum %g %s\n", rank, size, x, ok ? "ok" : "WRONG");
  tesseraCommDestroy(comm);
  shmem_finalize();
  return ok ? 0 : 1;
}
