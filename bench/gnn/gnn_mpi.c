/* Open MPI side of the GNN benchmark: one GraphSAGE-mean neighbour aggregation over a partitioned graph
 * (what tessera::gnn computes) done the way an MPI user does it: a halo exchange with MPI_Alltoallv.
 * usage: mpirun -np N gnn_mpi scale edges dim iters [seed]   (seed default 1)
 * One JSON line (rank 0):
 *   {"impl":"mpi","ranks":2,"scale":10,"edges":16384,"dim":16,"us":95.1,"halo_rows":1024}
 * Problem, the same in bench/gnn/gnn_gloo.py:
 *   R-MAT graph, N = 2^scale nodes, `edges` directed edges, a=0.57 b=0.19 c=0.19 (d=0.05). For edge i and level
 *   l in [0, scale): u = (splitmix64(seed*0x100000001B3 + i*64 + l) >> 11) * 2^-53 (all mod 2^64); u < a: (0,0),
 *   u < a+b: (0,1), u < a+b+c: (1,0), else (1,1), the pair being bit (scale-1-l) of (src, dst). Self loops and
 *   duplicate edges are kept. Every rank generates the whole list (deterministic).
 *   Rank p owns nodes [p*N/n, (p+1)*N/n) and keeps the edges whose dst it owns. Node u has D = dim features,
 *   x[u][d] = ((u*7 + d*3) % 11 - 5) / 4, stored by u's owner only.
 *   out[v] = (1/indeg(v)) * sum over edges (u -> v) of x[u] (duplicates counted; 0 if indeg(v) = 0) for every
 *   owned v, accumulated in f32 in edge-list order.
 * Setup (not timed): generate; CSR of the owned dst (edges of one dst in edge-list order); the distinct remote
 *   source nodes, sorted, hence grouped by owner; MPI_Alltoall of their counts and MPI_Alltoallv of their ids
 *   (int64) to the owners, once. Features live in one buffer of nloc + nhalo rows: the owned rows, then the
 *   halo, received into place; the CSR's column of each edge is resolved in setup to a row of that buffer
 *   (owned node: u - first; remote node: nloc + its halo slot, its position in the sorted request list).
 * One iteration (one layer), all buffers allocated in setup: the owners pack the requested rows (memcpy per
 *   row), MPI_Alltoallv of the rows (the halo exchange), then for each owned v the f32 sum of its edges' rows,
 *   times 1/indeg(v).
 * Timing: MPI_Barrier, then MPI_Wtime around one iteration; iters/4+1 warm-up iterations; each timed
 * iteration's time is the max over ranks (MPI_Allreduce MAX, outside the timed region); "us" is the median of
 * those over the iterations. "halo_rows" is the total number of halo rows received, over all ranks.
 * Check: after the last iteration every owned node's row is compared with a direct computation from x's
 * formula (edges in list order, no halo): |got - want| <= 1e-4 * |want| (plus 1e-6 absolute, for results at
 * 0); exit 1 on any mismatch.
 * GNN_EDGE_CHECKSUM=K in the environment: rank 0 also prints to stderr
 *   edge_checksum K=<K> <sum over i < K of (i+1) * (src_i * N + dst_i), mod 2^64>
 * for comparing the generator with gnn_gloo.py's (K = edges compares the whole list). */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int np, me, S;
static int64_t N;

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static void rmat_edge(uint64_t seed, uint64_t i, int64_t* src, int64_t* dst) {
  const double a = 0.57, b = 0.19, c = 0.19;
  int64_t s = 0, d = 0;
  for (int l = 0; l < S; ++l) {
    double u = (double)(splitmix64(seed * 0x100000001B3ull + i * 64 + (uint64_t)l) >> 11) * 0x1p-53;
    int bit = S - 1 - l;
    if (u < a) {
    } else if (u < a + b) {
      d |= (int64_t)1 << bit;
    } else if (u < a + b + c) {
      s |= (int64_t)1 << bit;
    } else {
      s |= (int64_t)1 << bit, d |= (int64_t)1 << bit;
    }
  }
  *src = s, *dst = d;
}
static float feat(int64_t u, int d) { return (float)((int)((u * 7 + (int64_t)d * 3) % 11) - 5) / 4.0f; }
static int64_t first_of(int p) { return (int64_t)p * N / np; }
static int owner_of(int64_t u) {  // p with first_of(p) <= u < first_of(p+1)
  int p = (int)(u * np / N);
  while (p + 1 < np && first_of(p + 1) <= u) ++p;
  while (first_of(p) > u) --p;
  return p;
}
static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "gnn_mpi: out of memory (%zu bytes)\n", n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}
static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static int cmp_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc != 5 && argc != 6) {
    if (me == 0) fprintf(stderr, "usage: gnn_mpi scale edges dim iters [seed]\n");
    MPI_Finalize();
    return 2;
  }
  S = atoi(argv[1]);
  int64_t E = atoll(argv[2]);
  int D = atoi(argv[3]), iters = atoi(argv[4]), warm = iters / 4 + 1;
  uint64_t seed = argc == 6 ? strtoull(argv[5], NULL, 0) : 1;
  if (S < 1 || S > 30 || E < 0 || D < 1 || iters < 1) {
    if (me == 0) fprintf(stderr, "gnn_mpi: need 1 <= scale <= 30, edges >= 0, dim >= 1, iters >= 1\n");
    MPI_Finalize();
    return 2;
  }
  N = (int64_t)1 << S;
  const int64_t first = first_of(me), nloc = first_of(me + 1) - first;

  // ---- setup (not timed): the whole edge list, then this rank's edges (owned dst) in list order
  int64_t* esrc = xmalloc((size_t)E * sizeof(int64_t));
  int64_t* edst = xmalloc((size_t)E * sizeof(int64_t));
  for (int64_t i = 0; i < E; ++i) rmat_edge(seed, (uint64_t)i, &esrc[i], &edst[i]);
  const char* ck = getenv("GNN_EDGE_CHECKSUM");
  if (ck && me == 0) {
    int64_t K = atoll(ck);
    if (K > E) K = E;
    uint64_t h = 0;
    for (int64_t i = 0; i < K; ++i) h += (uint64_t)(i + 1) * (uint64_t)(esrc[i] * N + edst[i]);
    fprintf(stderr, "edge_checksum K=%lld %llu\n", (long long)K, (unsigned long long)h);
  }
  int64_t m = 0;  // local edges
  for (int64_t i = 0; i < E; ++i) m += edst[i] >= first && edst[i] < first + nloc;
  int64_t* lsrc = xmalloc((size_t)m * sizeof(int64_t));
  int64_t* ldst = xmalloc((size_t)m * sizeof(int64_t));  // local index v - first
  for (int64_t i = 0, k = 0; i < E; ++i)
    if (edst[i] >= first && edst[i] < first + nloc) lsrc[k] = esrc[i], ldst[k] = edst[i] - first, ++k;
  free(esrc), free(edst);

  // distinct remote sources, sorted: grouped by owner, ascending within one
  int64_t* uniq = xmalloc((size_t)m * sizeof(int64_t));
  int64_t nhalo = 0;
  for (int64_t k = 0; k < m; ++k)
    if (lsrc[k] < first || lsrc[k] >= first + nloc) uniq[nhalo++] = lsrc[k];
  qsort(uniq, (size_t)nhalo, sizeof(int64_t), cmp_i64);
  {
    int64_t w = 0;
    for (int64_t j = 0; j < nhalo; ++j)
      if (w == 0 || uniq[w - 1] != uniq[j]) uniq[w++] = uniq[j];
    nhalo = w;
  }
  if ((nloc + nhalo) * (int64_t)D > 0x7fffffff || m > 0x7fffffff) {
    fprintf(stderr, "gnn_mpi: rank %d: rows * dim or edges beyond MPI's int counts\n", me);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // CSR by dst (a stable counting sort: list order within a dst), columns resolved to rows of xall
  int64_t* rowptr = xmalloc((size_t)(nloc + 1) * sizeof(int64_t));
  int32_t* col = xmalloc((size_t)m * sizeof(int32_t));
  memset(rowptr, 0, (size_t)(nloc + 1) * sizeof(int64_t));
  for (int64_t k = 0; k < m; ++k) ++rowptr[ldst[k] + 1];
  for (int64_t v = 0; v < nloc; ++v) rowptr[v + 1] += rowptr[v];
  {
    int64_t* fill = xmalloc((size_t)(nloc ? nloc : 1) * sizeof(int64_t));
    memcpy(fill, rowptr, (size_t)nloc * sizeof(int64_t));
    for (int64_t k = 0; k < m; ++k) {
      int64_t u = lsrc[k], r;
      if (u >= first && u < first + nloc) {
        r = u - first;
      } else {  // the node -> halo slot map: u's position in uniq
        int64_t lo = 0, hi = nhalo;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (uniq[mid] < u) lo = mid + 1;
          else hi = mid;
        }
        r = nloc + lo;
      }
      col[fill[ldst[k]]++] = (int32_t)r;
    }
    free(fill);
  }

  // request lists, exchanged once: scnt[p] rows wanted from p, rcnt[p] rows p wants from me
  int *scnt = xmalloc(np * sizeof(int)), *rcnt = xmalloc(np * sizeof(int));
  int *sdis = xmalloc(np * sizeof(int)), *rdis = xmalloc(np * sizeof(int));
  memset(scnt, 0, np * sizeof(int));
  for (int64_t j = 0; j < nhalo; ++j) ++scnt[owner_of(uniq[j])];
  MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
  int64_t nreq = 0;
  for (int p = 0, s = 0; p < np; ++p) sdis[p] = s, s += scnt[p], rdis[p] = (int)nreq, nreq += rcnt[p];
  if (nreq * (int64_t)D > 0x7fffffff) {
    fprintf(stderr, "gnn_mpi: rank %d: requested rows * dim beyond MPI's int counts\n", me);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int64_t* req = xmalloc((size_t)nreq * sizeof(int64_t));
  MPI_Alltoallv(uniq, scnt, sdis, MPI_INT64_T, req, rcnt, rdis, MPI_INT64_T, MPI_COMM_WORLD);
  int32_t* reqrow = xmalloc((size_t)nreq * sizeof(int32_t));  // owned row of each requested node
  for (int64_t j = 0; j < nreq; ++j) {
    if (req[j] < first || req[j] >= first + nloc) {
      fprintf(stderr, "gnn_mpi: rank %d was asked for node %lld, which it does not own\n", me, (long long)req[j]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    reqrow[j] = (int32_t)(req[j] - first);
  }
  // row counts and displacements of the halo exchange (in floats): send rcnt[p] rows to p, receive scnt[p]
  int *srow = xmalloc(np * sizeof(int)), *sroff = xmalloc(np * sizeof(int));
  int *rrow = xmalloc(np * sizeof(int)), *rroff = xmalloc(np * sizeof(int));
  for (int p = 0; p < np; ++p)
    srow[p] = rcnt[p] * D, sroff[p] = rdis[p] * D, rrow[p] = scnt[p] * D, rroff[p] = sdis[p] * D;

  const size_t row = (size_t)D * sizeof(float);
  float* xall = xmalloc((size_t)(nloc + nhalo) * row);  // owned rows, then the halo
  for (int64_t v = 0; v < nloc; ++v)
    for (int d = 0; d < D; ++d) xall[(size_t)v * D + d] = feat(first + v, d);
  float* halo = xall + (size_t)nloc * D;
  float* sbuf = xmalloc((size_t)nreq * row);
  float* out = xmalloc((size_t)nloc * row);
  float* acc = xmalloc(row);

  double* times = xmalloc((size_t)iters * sizeof(double));
  for (int it = 0; it < warm + iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int64_t j = 0; j < nreq; ++j) memcpy(sbuf + (size_t)j * D, xall + (size_t)reqrow[j] * D, row);
    MPI_Alltoallv(sbuf, srow, sroff, MPI_FLOAT, halo, rrow, rroff, MPI_FLOAT, MPI_COMM_WORLD);
    for (int64_t v = 0; v < nloc; ++v) {
      for (int d = 0; d < D; ++d) acc[d] = 0.0f;
      for (int64_t k = rowptr[v]; k < rowptr[v + 1]; ++k) {
        const float* r = xall + (size_t)col[k] * D;
        for (int d = 0; d < D; ++d) acc[d] += r[d];
      }
      int64_t deg = rowptr[v + 1] - rowptr[v];
      float inv = deg ? 1.0f / (float)deg : 0.0f;
      for (int d = 0; d < D; ++d) out[(size_t)v * D + d] = inv * acc[d];
    }
    double t1 = MPI_Wtime();
    double mine = t1 - t0, mx;
    MPI_Allreduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= warm) times[it - warm] = mx;
  }

  // ---- check every owned node against x's formula, edges in list order (no CSR, no halo)
  float* want = xmalloc((size_t)nloc * row);
  int64_t* deg = xmalloc((size_t)(nloc ? nloc : 1) * sizeof(int64_t));
  memset(want, 0, (size_t)nloc * row);
  memset(deg, 0, (size_t)nloc * sizeof(int64_t));
  for (int64_t k = 0; k < m; ++k) {
    ++deg[ldst[k]];
    for (int d = 0; d < D; ++d) want[(size_t)ldst[k] * D + d] += feat(lsrc[k], d);
  }
  long bad = 0;
  for (int64_t v = 0; v < nloc; ++v) {
    float inv = deg[v] ? 1.0f / (float)deg[v] : 0.0f;
    for (int d = 0; d < D; ++d) {
      float w = inv * want[(size_t)v * D + d], g = out[(size_t)v * D + d];
      if (!(fabsf(g - w) <= 1e-4f * fabsf(w) + 1e-6f) && bad++ < 5)
        fprintf(stderr, "gnn_mpi: rank %d node %lld feature %d: got %g, want %g\n", me, (long long)(first + v), d,
                g, w);
    }
  }
  long allbad, halo_rows = (long)nhalo, allhalo;
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&halo_rows, &allhalo, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  qsort(times, iters, sizeof(double), cmp_double);
  double med = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
  if (me == 0) {
    if (allbad) fprintf(stderr, "gnn_mpi: %ld wrong elements over all ranks\n", allbad);
    else
      printf("{\"impl\":\"mpi\",\"ranks\":%d,\"scale\":%d,\"edges\":%lld,\"dim\":%d,\"us\":%.3f,\"halo_rows\":%ld}\n",
             np, S, (long long)E, D, med * 1e6, allhalo);
    fflush(stdout);
  }
  MPI_Finalize();
  return allbad ? 1 : 0;
}
