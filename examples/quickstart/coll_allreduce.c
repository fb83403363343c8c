#include <shmem.h>
#include <tessera/coll.h>
#include <stdio.h>
int main(void) {
  shmem_init();                                        /* first: it wires the job (tessera-run, PMIx, ...) */
  tesseraComm_t comm;
  tesseraCommInitAll(&comm);                           /* every PE, ranks in PE order */
  int rank, size;
  tesseraCommUserRank(comm, &rank);
  tesseraCommCount(comm, &size);
  float grad[1024];
  for (int i = 0; i < 1024; ++i) grad[i] = (float)rank;
  tesseraResult_t r = tesseraAllReduce(grad, grad, 1024, tesseraFloat32, tesseraSum, comm);  /* in place */
  if (r != tesseraSuccess) fprintf(stderr, "allreduce: %s\n", tesseraGetLastError());
  int ok = r == tesseraSuccess && grad[0] == size * (size - 1) / 2.0f && grad[1023] == grad[0];
  printf("rank %d of %d: sum %g %s\n", rank, size, grad[0], ok ? "ok" : "WRONG");
  tesseraCommDestroy(comm);                            /* collective, before shmem_finalize */
  shmem_finalize();
  return ok ? 0 : 1;
}
