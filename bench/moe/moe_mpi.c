/* Open MPI side of the MoE benchmark: the routing of tessera::moe::Dispatcher (include/tessera/moe.hpp)
 * done the way an MPI user must, since MPI has no way to put a row into a slot the receiver has not sized.
 * usage: mpirun -np N moe_mpi T H K E dtype iters [gemm]   (dtype: f32 or bf16; bf16 is stored as uint16)
 * gemm (built with -DMOE_GEMM and OpenBLAS): each expert also multiplies its rows (as f32) by an H x H matrix,
 * as bench/moe/moe_tessera.cc's gemm does, and "us" is the whole step (dispatch + experts + combine) with the
 * experts' own time in "compute_us".
 * One JSON line (rank 0):
 *   {"impl":"mpi","ranks":2,"tokens":16,"hidden":64,"dtype":"bf16","top_k":2,"experts":8,"us":18.2}
 * Semantics (moe.hpp's): E experts in contiguous blocks, rank p owns [p*E/n, (p+1)*E/n); T tokens of H
 * elements per rank, top-K expert ids and weights per token; out[t] = sum_k w[t][k] * expert(t,k)'s row,
 * arithmetic in f32, bf16 rounded once at the end. Routing, the same in bench/moe/moe_gloo.py:
 *   expert(p, t, k) = (p*31 + t*17 + k) % E  (distinct over k; needs K <= E),  w[t][k] = (k+1)/8,
 *   token element h of token t on rank p = ((p*5 + t*3 + h) % 9) - 4,  expert e scales its rows by 1 << (e % 4).
 * One iteration, all buffers allocated beforehand for the worst case (every row to one rank):
 *   dispatch: count rows per destination rank; MPI_Alltoall of the counts; pack rows by destination (ordered
 *     by (t, k) within a destination); MPI_Alltoallv of the rows and a second MPI_Alltoallv of a 2 x int32
 *     header per row (expert id, origin t*K+k); the receiver groups its rows per local expert (a stable
 *     counting sort into one buffer, expert-contiguous, as moe.hpp's expert_tokens gives them).
 *   expert: rows of local expert e multiplied by 1 << (e % 4), in place; NOT timed.
 *   combine: rows copied back to arrival order, MPI_Alltoallv back along the reverse plan (the counts swapped),
 *     then out[t] = sum_k w[t][k] * row(t,k) in f32 (rounded to bf16 once).
 * Timing: MPI_Wtime around dispatch and around combine (their sum is the iteration's time), after an
 * MPI_Barrier; iters/4+1 warm-up iterations; each timed iteration's time is the max over ranks
 * (MPI_Allreduce MAX, outside the timed region); "us" is the median of those over the iterations.
 * Check: after the last iteration every token of every rank is compared with the expected value
 * (x[t] * sum_k w_k * scale(e_k), rounded to the dtype); exit 1 on any mismatch. */
#include <mpi.h>
#ifdef MOE_GEMM
#include <cblas.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int T, H, K, E, np, me, bf16;
static size_t esz;

static float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f2bf(float f) {  // round to nearest even (no NaN in this benchmark)
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static int expert_of(int p, int t, int k) { return (int)(((long)p * 31 + (long)t * 17 + k) % E); }
static float weight_of(int k) { return (float)(k + 1) / 8.0f; }
static float elem_of(int p, int t, int h) { return (float)((int)(((long)p * 5 + (long)t * 3 + h) % 9) - 4); }
static int first_of(int p) { return (int)((long)p * E / np); }
static int owner_of(int e) {  // p with first_of(p) <= e < first_of(p+1)
  int p = (int)((long)e * np / E);
  while (p + 1 < np && first_of(p + 1) <= e) ++p;
  while (first_of(p) > e) --p;
  return p;
}
static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "moe_mpi: out of memory (%zu bytes)\n", n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}
static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int gemm = argc == 8 && !strcmp(argv[7], "gemm");
#ifndef MOE_GEMM
  if (gemm) {
    if (me == 0) fprintf(stderr, "moe_mpi: built without -DMOE_GEMM, so no gemm\n");
    MPI_Finalize();
    return 2;
  }
#endif
  if ((argc != 7 && !gemm) || (strcmp(argv[5], "f32") && strcmp(argv[5], "bf16"))) {
    if (me == 0) fprintf(stderr, "usage: moe_mpi T H K E f32|bf16 iters [gemm]\n");
    MPI_Finalize();
    return 2;
  }
  T = atoi(argv[1]), H = atoi(argv[2]), K = atoi(argv[3]), E = atoi(argv[4]);
  bf16 = !strcmp(argv[5], "bf16");
  int iters = atoi(argv[6]), warm = iters / 4 + 1;
  if (T < 0 || H < 1 || K < 1 || K > 8 || E < K || iters < 1) {
    if (me == 0) fprintf(stderr, "moe_mpi: need T >= 0, H >= 1, 1 <= K <= 8, K <= E, iters >= 1\n");
    MPI_Finalize();
    return 2;
  }
  esz = bf16 ? 2 : 4;
  MPI_Datatype dt = bf16 ? MPI_UINT16_T : MPI_FLOAT;
  const size_t row = (size_t)H * esz, nsend = (size_t)T * K, nrecv_max = nsend * (size_t)np;
  if (nrecv_max * (size_t)H > (size_t)0x7fffffff) {
    if (me == 0) fprintf(stderr, "moe_mpi: T*K*H*ranks beyond MPI's int counts\n");
    MPI_Finalize();
    return 2;
  }
  const int first = first_of(me), nloc = first_of(me + 1) - first;

  // This rank's tokens, routing and weights (the inputs; not timed).
  char* x = xmalloc((size_t)T * row);
  int32_t* eid = xmalloc(nsend * sizeof(int32_t));
  float* w = xmalloc(nsend * sizeof(float));
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      float v = elem_of(me, t, h);
      if (bf16) ((uint16_t*)x)[(size_t)t * H + h] = f2bf(v);
      else ((float*)x)[(size_t)t * H + h] = v;
    }
    for (int k = 0; k < K; ++k) eid[(size_t)t * K + k] = expert_of(me, t, k), w[(size_t)t * K + k] = weight_of(k);
  }
  char* out = xmalloc((size_t)T * row);
  float* acc = xmalloc((size_t)H * sizeof(float));
  int* owner = xmalloc((size_t)E * sizeof(int));
  for (int e = 0; e < E; ++e) owner[e] = owner_of(e);

  // Buffers sized for the worst case, once.
  int *scnt = xmalloc(np * sizeof(int)), *rcnt = xmalloc(np * sizeof(int));
  int *sdis = xmalloc(np * sizeof(int)), *rdis = xmalloc(np * sizeof(int));
  int *secnt = xmalloc(np * sizeof(int)), *sedis = xmalloc(np * sizeof(int));
  int *recnt = xmalloc(np * sizeof(int)), *redis = xmalloc(np * sizeof(int));
  int *shcnt = xmalloc(np * sizeof(int)), *shdis = xmalloc(np * sizeof(int));
  int *rhcnt = xmalloc(np * sizeof(int)), *rhdis = xmalloc(np * sizeof(int));
  int* fill = xmalloc(np * sizeof(int));
  size_t* pos = xmalloc((nsend ? nsend : 1) * sizeof(size_t));  // send slot of (t, k)
  char* sbuf = xmalloc(nsend * row);
  int32_t* shdr = xmalloc(nsend * 2 * sizeof(int32_t));
  char* rbuf = xmalloc(nrecv_max * row);
  int32_t* rhdr = xmalloc(nrecv_max * 2 * sizeof(int32_t));
  char* ebuf = xmalloc(nrecv_max * row);  // rows grouped per local expert
  size_t* gpos = xmalloc((nrecv_max ? nrecv_max : 1) * sizeof(size_t));  // arrival slot -> grouped slot
  int *ecnt = xmalloc((nloc + 1) * sizeof(int)), *eoff = xmalloc((nloc + 1) * sizeof(int));
  char* bbuf = xmalloc(nsend * row);  // rows back, in send order

  double* times = xmalloc((size_t)iters * sizeof(double));
  double* ctimes = xmalloc((size_t)iters * sizeof(double));
#ifdef MOE_GEMM
  float *wgt = NULL, *ga = NULL, *gc = NULL;
  if (gemm) {
    wgt = xmalloc((size_t)H * H * sizeof(float));
    ga = xmalloc((nrecv_max ? nrecv_max : 1) * (size_t)H * sizeof(float));
    gc = xmalloc((nrecv_max ? nrecv_max : 1) * (size_t)H * sizeof(float));
    for (size_t i = 0; i < (size_t)H * H; ++i) wgt[i] = (float)((int)(i % 7) - 3) / 64.0f;
  }
#endif
  for (int it = 0; it < warm + iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    // ---- dispatch
    memset(scnt, 0, np * sizeof(int));
    for (size_t i = 0; i < nsend; ++i) ++scnt[owner[eid[i]]];
    MPI_Alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, MPI_COMM_WORLD);
    int s = 0, r = 0;
    for (int p = 0; p < np; ++p) {
      sdis[p] = s, rdis[p] = r, fill[p] = s;
      secnt[p] = scnt[p] * H, sedis[p] = s * H, recnt[p] = rcnt[p] * H, redis[p] = r * H;
      shcnt[p] = scnt[p] * 2, shdis[p] = s * 2, rhcnt[p] = rcnt[p] * 2, rhdis[p] = r * 2;
      s += scnt[p], r += rcnt[p];
    }
    const int nrecv = r;
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < K; ++k) {
        size_t i = (size_t)t * K + k;
        int slot = fill[owner[eid[i]]]++;
        pos[i] = (size_t)slot;
        memcpy(sbuf + (size_t)slot * row, x + (size_t)t * row, row);
        shdr[2 * (size_t)slot] = eid[i], shdr[2 * (size_t)slot + 1] = (int32_t)i;
      }
    MPI_Alltoallv(sbuf, secnt, sedis, dt, rbuf, recnt, redis, dt, MPI_COMM_WORLD);
    MPI_Alltoallv(shdr, shcnt, shdis, MPI_INT32_T, rhdr, rhcnt, rhdis, MPI_INT32_T, MPI_COMM_WORLD);
    memset(ecnt, 0, (nloc + 1) * sizeof(int));
    for (int j = 0; j < nrecv; ++j) ++ecnt[rhdr[2 * (size_t)j] - first];
    for (int e = 0, o = 0; e < nloc; ++e) eoff[e] = o, o += ecnt[e];
    for (int j = 0; j < nrecv; ++j) {
      size_t g = (size_t)eoff[rhdr[2 * (size_t)j] - first]++;
      gpos[j] = g;
      memcpy(ebuf + g * row, rbuf + (size_t)j * row, row);
    }
    double t1 = MPI_Wtime();
    // ---- expert (not timed): local expert e's rows, ebuf[start(e) .. start(e)+ecnt[e]), times 1 << ((first+e) % 4)
    for (int e = 0, o = 0; e < nloc; ++e) {
      float sc = (float)(1 << ((first + e) % 4));
      size_t n = (size_t)ecnt[e] * H, b = (size_t)o * H;
#ifdef MOE_GEMM
      if (gemm && n) {
        for (size_t i = 0; i < n; ++i) ga[i] = bf16 ? bf2f(((uint16_t*)ebuf)[b + i]) : ((float*)ebuf)[b + i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ecnt[e], H, H, 1.0f, ga, H, wgt, H, 0.0f, gc, H);
      }
#endif
      if (bf16)
        for (size_t i = 0; i < n; ++i) ((uint16_t*)ebuf)[b + i] = f2bf(bf2f(((uint16_t*)ebuf)[b + i]) * sc);
      else
        for (size_t i = 0; i < n; ++i) ((float*)ebuf)[b + i] *= sc;
      o += ecnt[e];
    }
    double t2 = MPI_Wtime();
    // ---- combine
    for (int j = 0; j < nrecv; ++j) memcpy(rbuf + (size_t)j * row, ebuf + gpos[j] * row, row);
    MPI_Alltoallv(rbuf, recnt, redis, dt, bbuf, secnt, sedis, dt, MPI_COMM_WORLD);
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < H; ++h) acc[h] = 0.0f;
      for (int k = 0; k < K; ++k) {
        size_t i = (size_t)t * K + k;
        float wk = w[i];
        const char* src = bbuf + pos[i] * row;
        if (bf16)
          for (int h = 0; h < H; ++h) acc[h] += wk * bf2f(((const uint16_t*)src)[h]);
        else
          for (int h = 0; h < H; ++h) acc[h] += wk * ((const float*)src)[h];
      }
      if (bf16)
        for (int h = 0; h < H; ++h) ((uint16_t*)out)[(size_t)t * H + h] = f2bf(acc[h]);
      else
        memcpy(out + (size_t)t * row, acc, row);
    }
    double t3 = MPI_Wtime();
    double mine = gemm ? t3 - t0 : (t1 - t0) + (t3 - t2), mx;
    MPI_Allreduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= warm) times[it - warm] = mx, ctimes[it - warm] = t2 - t1;
  }

  // ---- check every token against x[t] * sum_k w_k * scale(e_k), rounded to the dtype
  long bad = 0;
  for (int t = 0; t < T; ++t) {
    float f = 0.0f;
    for (int k = 0; k < K; ++k) f += weight_of(k) * (float)(1 << (expert_of(me, t, k) % 4));
    for (int h = 0; h < H; ++h) {
      float want = elem_of(me, t, h) * f;
      int ok = bf16 ? ((uint16_t*)out)[(size_t)t * H + h] == f2bf(want) : ((float*)out)[(size_t)t * H + h] == want;
      if (!ok && bad++ < 5)
        fprintf(stderr, "moe_mpi: rank %d token %d element %d: got %g, want %g\n", me, t, h,
                bf16 ? bf2f(((uint16_t*)out)[(size_t)t * H + h]) : ((float*)out)[(size_t)t * H + h], want);
    }
  }
  long allbad;
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  qsort(times, iters, sizeof(double), cmp_double);
  double med = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
  qsort(ctimes, iters, sizeof(double), cmp_double);
  double cmed = iters % 2 ? ctimes[iters / 2] : (ctimes[iters / 2 - 1] + ctimes[iters / 2]) / 2;
  if (me == 0) {
    if (allbad) fprintf(stderr, "moe_mpi: %ld wrong elements over all ranks\n", allbad);
    else
      printf("{\"impl\":\"mpi\",\"ranks\":%d,\"tokens\":%d,\"hidden\":%d,\"dtype\":\"%s\","
             "\"top_k\":%d,\"experts\":%d,\"us\":%.3f,\"work\":\"%s\",\"compute_us\":%.3f}\n", np, T, H,
             bf16 ? "bf16" : "f32", K, E, med * 1e6, gemm ? "gemm" : "scale", cmed * 1e6);
    fflush(stdout);
  }
  MPI_Finalize();
  return allbad ? 1 : 0;
}
