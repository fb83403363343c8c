/* Open MPI side of bench/coll_compare.sh: times MPI collectives with the same size conventions as
 * tessera-perf (nccl-tests): size = bytes of the largest per-rank buffer. One JSON line per measurement:
 *   {"lib":"openmpi","coll":"allreduce","np":2,"bytes":8,"time_us":0.71}
 * usage: mpirun -np N coll_mpi <coll> <bytes>... (coll: allreduce reduce_scatter allgather alltoall broadcast
 * barrier sendrecv). sendrecv is tessera-perf sendrecv's ring exchange: every rank sends <bytes> to its right
 * neighbour and receives as many from its left one, in one MPI_Sendrecv.
 * COLL_MPI_ITERS=N in the environment replaces the iteration count of every size (warm-up: N/4+1), for runs
 * that pass the same -n to tessera-perf (bench/shared_cpus.sh QUICK=1); unset, the counts are the ones below. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(size_t bytes) { return bytes >= (16u << 20) ? 8 : bytes >= (1u << 20) ? 30 : bytes >= 65536 ? 200 : bytes >= 4096 ? 2000 : 20000; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int np, me;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const char* coll = argv[1];
  const char* fixed = getenv("COLL_MPI_ITERS");
  const int right = (me + 1) % np, left = (me + np - 1) % np;
  for (int a = 2; a < argc; ++a) {
    size_t bytes = strtoull(argv[a], NULL, 10);
    size_t count = bytes / 4, per = count / (size_t)np;
    float* s = malloc(bytes + 64);
    float* r = malloc(bytes + 64);
    for (size_t i = 0; i < count; ++i) s[i] = (float)(i % 7);
    memset(r, 0, bytes);
    int iters = fixed && atoi(fixed) > 0 ? atoi(fixed) : iters_for(bytes), warm = iters / 4 + 1;
    double t = 0;
    for (int k = 0; k < warm + iters; ++k) {
      if (k == warm) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
      }
      if (!strcmp(coll, "allreduce")) MPI_Allreduce(s, r, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (!strcmp(coll, "reduce_scatter")) MPI_Reduce_scatter_block(s, r, (int)per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (!strcmp(coll, "allgather")) MPI_Allgather(s, (int)per, MPI_FLOAT, r, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      else if (!strcmp(coll, "alltoall")) MPI_Alltoall(s, (int)per, MPI_FLOAT, r, (int)per, MPI_FLOAT, MPI_COMM_WORLD);
      else if (!strcmp(coll, "broadcast")) MPI_Bcast(s, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      else if (!strcmp(coll, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
      else if (!strcmp(coll, "sendrecv"))
        MPI_Sendrecv(s, (int)count, MPI_FLOAT, right, 0, r, (int)count, MPI_FLOAT, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double us = (MPI_Wtime() - t) * 1e6 / iters, mx;
    MPI_Reduce(&us, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0) printf("{\"lib\":\"openmpi\",\"coll\":\"%s\",\"np\":%d,\"bytes\":%zu,\"time_us\":%.3f}\n", coll, np, bytes, mx);
    fflush(stdout);
    free(s);
    free(r);
  }
  MPI_Finalize();
  return 0;
}
