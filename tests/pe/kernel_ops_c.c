/* The C form of BatchNorm and the PE-sharded softmax (tessera/kernel.h) at 1-4 PEs, compiled as C: results
 * against a double-precision reference, on a stream equal to blocking bit for bit, the same row statistics
 * on every PE, the running statistics' update, and the errors. Exits 1 naming the first failed check. */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/coll.h>
#include <tessera/kernel.h>

static int me, npes;

#include "c_checks.h"

/* x = [N, C, H, W]; element (n, c, s) at (n * C + c) * HW + s. */
enum { kN = 3, kC = 5, kHW = 4 * 7 };
static float bn_x(int n, int c, int s) { return (float)((n * 31 + c * 17 + s * 7 + me * 3) % 23) / 4.0f - 2.5f + c; }

static void test_batch_norm(void) {
  static float x[kN * kC * kHW], y[kN * kC * kHW], ys[kN * kC * kHW], yi[kN * kC * kHW];
  float mean[kC], var[kC], save_mean[kC], save_var[kC], w[kC], b[kC];
  float rm[kC], rv[kC], rm_s[kC], rv_s[kC];
  double ref_mean[kC], ref_var[kC];
  for (int n = 0; n < kN; ++n)
    for (int c = 0; c < kC; ++c)
      for (int s = 0; s < kHW; ++s) x[(n * kC + c) * kHW + s] = bn_x(n, c, s);
  for (int c = 0; c < kC; ++c) {
    double sum = 0, sq = 0;
    for (int n = 0; n < kN; ++n)
      for (int s = 0; s < kHW; ++s) sum += x[(n * kC + c) * kHW + s];
    ref_mean[c] = sum / (kN * kHW);
    for (int n = 0; n < kN; ++n)
      for (int s = 0; s < kHW; ++s) {
        const double d = x[(n * kC + c) * kHW + s] - ref_mean[c];
        sq += d * d;
      }
    ref_var[c] = sq / (kN * kHW);
    w[c] = 0.5f + 0.25f * c, b[c] = 0.125f * c - 0.25f;
    rm[c] = rm_s[c] = 1.0f, rv[c] = rv_s[c] = 2.0f;
  }
  tesseraTensor_t tx = {x, tesseraFloat32, 4, {kN, kC, 4, 7}}, ty = tx, tys = tx, tyi = tx;
  ty.data = y, tys.data = ys, tyi.data = yi;
  tesseraOpOptions_t o = {2};

  OK(tesseraBatchNormStats(&tx, mean, var, &o, NULL));
  for (int c = 0; c < kC; ++c) {
    CHECK(fabs(mean[c] - ref_mean[c]) <= 1e-5 * (1 + fabs(ref_mean[c])), "mean[%d] = %g, want %g", c, mean[c],
          ref_mean[c]);
    CHECK(fabs(var[c] - ref_var[c]) <= 1e-5 * (1 + ref_var[c]), "var[%d] = %g, want %g", c, var[c], ref_var[c]);
  }

  tesseraBatchNormParams_t p = TESSERA_BATCH_NORM_PARAMS_INIT;
  p.weight = w, p.bias = b, p.running_mean = rm, p.running_var = rv;
  OK(tesseraBatchNormTrain(&tx, &ty, &p, save_mean, save_var, &o, NULL));
  tesseraStream_t s;
  OK(tesseraStreamCreate(&s));
  tesseraBatchNormParams_t ps = p;
  ps.running_mean = rm_s, ps.running_var = rv_s;
  OK(tesseraBatchNormTrain(&tx, &tys, &ps, NULL, NULL, &o, s));
  OK(tesseraStreamSynchronize(s));
  CHECK(memcmp(y, ys, sizeof y) == 0, "batch norm training on a stream differs from blocking");
  CHECK(memcmp(rm, rm_s, sizeof rm) == 0 && memcmp(rv, rv_s, sizeof rv) == 0,
        "running statistics on a stream differ from blocking");
  const double cnt = kN * kHW;
  for (int c = 0; c < kC; ++c) {
    CHECK(save_mean[c] == mean[c] && save_var[c] == var[c], "saved statistics of channel %d differ from Stats", c);
    const double want_rm = 0.9 * 1.0 + 0.1 * ref_mean[c], want_rv = 0.9 * 2.0 + 0.1 * ref_var[c] * cnt / (cnt - 1);
    CHECK(fabs(rm[c] - want_rm) <= 1e-5 * (1 + fabs(want_rm)), "running_mean[%d] = %g, want %g", c, rm[c], want_rm);
    CHECK(fabs(rv[c] - want_rv) <= 1e-5 * (1 + want_rv), "running_var[%d] = %g, want %g (unbiased)", c, rv[c],
          want_rv);
    for (int n = 0; n < kN; ++n)
      for (int i = 0; i < kHW; ++i) {
        const int at = (n * kC + c) * kHW + i;
        const double want = (x[at] - ref_mean[c]) / sqrt(ref_var[c] + 1e-5) * w[c] + b[c];
        CHECK(fabs(y[at] - want) <= 1e-4 * (1 + fabs(want)), "train y[%d] = %g, want %g", at, y[at], want);
      }
  }

  /* Inference with the updated running statistics; in place on a stream. */
  OK(tesseraBatchNormInfer(&tx, &tyi, &p, &o, NULL));
  for (int c = 0; c < kC; ++c)
    for (int n = 0; n < kN; ++n)
      for (int i = 0; i < kHW; ++i) {
        const int at = (n * kC + c) * kHW + i;
        const double want = (x[at] - rm[c]) / sqrt((double)rv[c] + 1e-5) * w[c] + b[c];
        CHECK(fabs(yi[at] - want) <= 1e-4 * (1 + fabs(want)), "infer y[%d] = %g, want %g", at, yi[at], want);
      }
  memcpy(ys, x, sizeof x);
  OK(tesseraBatchNormInfer(&tys, &tys, &p, &o, s));
  OK(tesseraStreamSynchronize(s));
  CHECK(memcmp(ys, yi, sizeof yi) == 0, "in-place inference on a stream differs from blocking");

  /* Errors at the call, and the operator's own checks. */
  expect_error(tesseraBatchNormTrain(&tx, &ty, NULL, NULL, NULL, NULL, NULL), tesseraInvalidArgument,
               "tesseraBatchNormTrain: params is null");
  tesseraBatchNormParams_t none = TESSERA_BATCH_NORM_PARAMS_INIT;
  expect_error(tesseraBatchNormInfer(&tx, &ty, &none, NULL, NULL), tesseraInvalidArgument,
               "inference needs running_mean and running_var (got null and null)");
  tesseraTensor_t t1 = {x, tesseraFloat32, 1, {kN}};
  expect_error(tesseraBatchNormStats(&t1, mean, var, NULL, NULL), tesseraInvalidArgument, "must be [N, C, ...]");
  tesseraTensor_t ti = tx;
  ti.dtype = tesseraInt64;
  expect_error(tesseraBatchNormStats(&ti, mean, var, NULL, NULL), tesseraInvalidArgument,
               "tesseraBatchNormStats: x.dtype=4 is not");
  OK(tesseraStreamDestroy(s));
}

/* PE q holds kBase + 13 q columns of each row (the last PE of 3 or more holds none). */
enum { kRows = 37, kBase = 45, kMaxCols = kBase + 13 * 4 };
static int cols_of(int q) { return (npes >= 3 && q == npes - 1) ? 0 : kBase + 13 * q; }
static int first_col(int q) {
  int c = 0;
  for (int i = 0; i < q; ++i) c += cols_of(i);
  return c;
}
static float sm_x(int r, int col) { return (float)((r * 53 + col * 29) % 97) / 9.0f - 4.0f + (float)(r % 3); }

static float lse_all[4 * kRows]; /* symmetric: every PE's lse, gathered */
static float lse_mine[kRows];

static void test_sharded_softmax(void) {
  const int n = cols_of(me), c0 = first_col(me), total = first_col(npes);
  float* x = malloc(sizeof(float) * kRows * kMaxCols);
  float* y = malloc(sizeof(float) * kRows * kMaxCols);
  float* ys = malloc(sizeof(float) * kRows * kMaxCols);
  float* yl = malloc(sizeof(float) * kRows * kMaxCols);
  float lse_s[kRows], lse_l[kRows];
  for (int r = 0; r < kRows; ++r)
    for (int i = 0; i < n; ++i) x[r * n + i] = sm_x(r, c0 + i);
  tesseraTensor_t tx = {x, tesseraFloat32, 2, {kRows, n}}, ty = tx, tys = tx, tyl = tx;
  ty.data = y, tys.data = ys, tyl.data = yl;
  tesseraOpOptions_t o = {2};

  tesseraShardedSoftmax_t sm;
  OK(tesseraShardedSoftmaxCreate(kRows, &sm));
  OK(tesseraShardedSoftmax(sm, &tx, &ty, lse_mine, &o, NULL));
  tesseraStream_t s;
  OK(tesseraStreamCreate(&s));
  OK(tesseraShardedSoftmax(sm, &tx, &tys, lse_s, &o, s));
  OK(tesseraShardedLogSoftmax(sm, &tx, &tyl, lse_l, &o, s));
  OK(tesseraStreamSynchronize(s));
  CHECK(memcmp(y, ys, sizeof(float) * kRows * n) == 0, "sharded softmax on a stream differs from blocking");
  CHECK(memcmp(lse_mine, lse_s, sizeof lse_s) == 0 && memcmp(lse_mine, lse_l, sizeof lse_l) == 0,
        "log-sum-exp differs between calls");

  for (int r = 0; r < kRows; ++r) {
    double mx = sm_x(r, 0), sum = 0;
    for (int col = 1; col < total; ++col) mx = sm_x(r, col) > mx ? sm_x(r, col) : mx;
    for (int col = 0; col < total; ++col) sum += exp(sm_x(r, col) - mx);
    const double lse = mx + log(sum);
    CHECK(fabs(lse_mine[r] - lse) <= 1e-5 * (1 + fabs(lse)), "lse[%d] = %g, want %g", r, lse_mine[r], lse);
    for (int i = 0; i < n; ++i) {
      const double want = exp(sm_x(r, c0 + i) - lse);
      CHECK(fabs(y[r * n + i] - want) <= 1e-6 + 1e-5 * want, "softmax[%d][%d] = %g, want %g", r, c0 + i,
            y[r * n + i], want);
      CHECK(fabs(yl[r * n + i] - (sm_x(r, c0 + i) - lse)) <= 1e-5 * (1 + fabs(lse)), "log_softmax[%d][%d] = %g",
            r, c0 + i, yl[r * n + i]);
    }
  }
  /* Every PE's row statistics, bit for bit. */
  shmem_fcollectmem(SHMEM_TEAM_WORLD, lse_all, lse_mine, sizeof lse_mine);
  for (int q = 1; q < npes; ++q)
    CHECK(memcmp(lse_all, lse_all + q * kRows, sizeof lse_mine) == 0, "PE %d's log-sum-exp differs from PE 0's", q);

  /* Errors: at the call, and the operator's checks failing the stream's item. */
  tesseraTensor_t big = tx;
  big.dims[0] = kRows + 1;
  expect_error(tesseraShardedSoftmax(sm, &big, &big, NULL, NULL, NULL), tesseraInvalidArgument,
               "38 rows, but the object was created for max_rows=37");
  expect_error(tesseraShardedSoftmax(NULL, &tx, &ty, NULL, NULL, NULL), tesseraInvalidArgument,
               "tesseraShardedSoftmax: the sharded softmax handle is null");
  tesseraTensor_t flat = {x, tesseraFloat32, 1, {kRows}};
  OK(tesseraShardedLogSoftmax(sm, &flat, &flat, NULL, NULL, s));
  expect_error(tesseraStreamSynchronize(s), tesseraStreamError, "must be [rows, local columns]");
  OK(tesseraStreamDestroy(s));
  tesseraShardedSoftmax_t bad = sm;
  expect_error(tesseraShardedSoftmaxCreate(-1, &bad), tesseraInvalidArgument,
               "tesseraShardedSoftmaxCreate: max_rows=-1 must be >= 0");
  CHECK(bad == NULL, "a failed Create left a handle");
  expect_error(tesseraShardedSoftmaxCreate((int64_t)1 << 62, &bad), tesseraInvalidArgument, "overflows");
  expect_error(tesseraShardedSoftmaxCreate((int64_t)1 << 40, &bad), tesseraInvalidArgument,
               "SHMEM_SYMMETRIC_SIZE");
  OK(tesseraShardedSoftmaxDestroy(sm));
  expect_error(tesseraShardedSoftmaxDestroy(NULL), tesseraInvalidArgument, "handle is null");

  /* The failed Create freed what it took: a new object of the same size still fits. */
  OK(tesseraShardedSoftmaxCreate(kRows, &sm));
  OK(tesseraShardedSoftmax(sm, &tx, &tys, NULL, &o, NULL));
  CHECK(memcmp(y, ys, sizeof(float) * kRows * n) == 0, "a second object's softmax differs");
  OK(tesseraShardedSoftmaxDestroy(sm));
  free(x), free(y), free(ys), free(yl);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  CHECK(npes <= 4, "this test runs at 1-4 PEs, not %d", npes);
  test_batch_norm();
  test_sharded_softmax();
  if (me == 0) printf("BatchNorm and sharded softmax from C: %d PEs ok\n", npes);
  shmem_finalize();
  return 0;
}
