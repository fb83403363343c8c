/* The C form of compute streams (tessera/kernel.h) at 1-4 PEs and across hosts (kernel_dist.cmake), compiled
 * as C: kernels and operators blocking and on a stream, joined to a comm stream by events both ways; a
 * captured schedule of a kernel and a collective replayed; the errors found at the call and the ones that
 * fail a stream's item. Exits 1 naming the first failed check. */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/coll.h>
#include <tessera/kernel.h>
#include <time.h>

static int me;

#include "c_checks.h"

static void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

/* Blocking launch: every block writes its index, syncs, block 0 sums through the workspace. */
struct sum_arg {
  int total;
  int blocks_seen;
};
static void sum_kernel(tesseraBlock_t b, void* p) {
  struct sum_arg* a = p;
  size_t ws = 0;
  int* slots = tesseraBlockWorkspace(b, &ws);
  size_t scratch = 0;
  CHECK(tesseraBlockScratch(b, &scratch) != NULL && scratch > 0, "no scratch");
  CHECK(ws >= (size_t)tesseraBlockNum(b) * sizeof(int), "workspace of %zu bytes", ws);
  slots[tesseraBlockIdx(b)] = tesseraBlockIdx(b) + 1;
  tesseraBlockSync(b);
  if (tesseraBlockIdx(b) == 0) {
    a->total = 0;
    for (int i = 0; i < tesseraBlockNum(b); ++i) a->total += slots[i];
    a->blocks_seen = tesseraBlockNum(b);
  }
}

static void test_blocking_launch(void) {
  struct sum_arg a = {0, 0};
  tesseraLaunchOptions_t o = {3, 64 * sizeof(int), "sum"};
  OK(tesseraKernelLaunch(sum_kernel, &a, &o, NULL));
  CHECK(a.blocks_seen == 3 && a.total == 6, "blocks %d total %d", a.blocks_seen, a.total);
}

/* Both directions, no host thread between them (compute_stream_test.cc's C++ test, in C). */
enum { kCount = 1 << 14 };
struct round_arg {
  float* x;
  const float* y;
  float* z;
  int round, rank;
};
static void write_x(tesseraBlock_t b, void* p) {
  struct round_arg* a = p;
  sleep_ms(2); /* late: an allreduce that did not wait would read the last round's x */
  const size_t per = kCount / (size_t)tesseraBlockNum(b), lo = (size_t)tesseraBlockIdx(b) * per;
  for (size_t i = lo; i < lo + per; ++i) a->x[i] = (float)((a->rank + 1) * (a->round + 1)) + (float)(i % 17);
}
static void read_y(tesseraBlock_t b, void* p) {
  struct round_arg* a = p;
  const size_t per = kCount / (size_t)tesseraBlockNum(b), lo = (size_t)tesseraBlockIdx(b) * per;
  for (size_t i = lo; i < lo + per; ++i) a->z[i] = a->y[i] * 2.0f;
}

static void test_events_both_ways(tesseraComm_t comm, int n) {
  tesseraStream_t compute, comm_stream;
  tesseraEvent_t written, reduced;
  OK(tesseraStreamCreate(&compute));
  OK(tesseraStreamCreate(&comm_stream));
  OK(tesseraEventCreate(&written));
  OK(tesseraEventCreate(&reduced));
  float* x = calloc(kCount, sizeof(float));
  float* y = calloc(kCount, sizeof(float));
  float* z = calloc(kCount, sizeof(float));
  struct round_arg args[20];
  tesseraLaunchOptions_t o = {2, 0, "write x"}, r = {2, 0, "read y"};
  for (int round = 0; round < 20; ++round) {
    args[round] = (struct round_arg){x, y, z, round, me};
    OK(tesseraKernelLaunch(write_x, &args[round], &o, compute));
    OK(tesseraEventRecord(written, compute));
    OK(tesseraStreamWaitEvent(comm_stream, written));
    OK(tesseraAllReduceAsync(x, (void*)y, kCount, tesseraFloat32, tesseraSum, comm, comm_stream));
    OK(tesseraEventRecord(reduced, comm_stream));
    OK(tesseraStreamWaitEvent(compute, reduced));
    OK(tesseraKernelLaunch(read_y, &args[round], &r, compute));
    OK(tesseraStreamSynchronize(compute));
    const float ranks = (float)(n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; i += 97) {
      const float want = 2.0f * (ranks * (float)(round + 1) + (float)n * (float)(i % 17));
      CHECK(z[i] == want, "round %d z[%zu] = %g, want %g", round, i, z[i], want);
    }
  }
  OK(tesseraStreamSynchronize(comm_stream));
  OK(tesseraEventDestroy(written));
  OK(tesseraEventDestroy(reduced));
  OK(tesseraStreamDestroy(compute));
  OK(tesseraStreamDestroy(comm_stream));
  free(x);
  free(y);
  free(z);
}

static tesseraTensor_t f32_2d(float* p, int64_t rows, int64_t cols) {
  tesseraTensor_t t = {p, tesseraFloat32, 2, {rows, cols}};
  return t;
}

/* Operators: on a stream equal to blocking bitwise, and close to a double-precision reference. */
static void test_operators(void) {
  enum { kRows = 32, kCols = 777 };
  float* x = malloc(sizeof(float) * kRows * kCols);
  float* a = malloc(sizeof(float) * kRows * kCols);
  float* b = malloc(sizeof(float) * kRows * kCols);
  float* na = malloc(sizeof(float) * kRows * kCols);
  float* nb = malloc(sizeof(float) * kRows * kCols);
  float sa[kRows], sb[kRows];
  for (int i = 0; i < kRows * kCols; ++i) x[i] = (float)((i * 37 + me) % 101) / 7.0f - 5.0f;
  tesseraTensor_t tx = f32_2d(x, kRows, kCols), ta = f32_2d(a, kRows, kCols), tb = f32_2d(b, kRows, kCols);
  tesseraTensor_t tna = f32_2d(na, kRows, kCols), tnb = f32_2d(nb, kRows, kCols);
  tesseraTensor_t tsa = {sa, tesseraFloat32, 1, {kRows}}, tsb = {sb, tesseraFloat32, 1, {kRows}};
  tesseraOpOptions_t o = {2};
  tesseraStream_t s;
  OK(tesseraStreamCreate(&s));
  OK(tesseraSoftmax(&tx, &ta, &o, NULL));
  OK(tesseraSoftmax(&tx, &tb, &o, s));
  OK(tesseraTensorReduce(tesseraSum, &tx, &tsa, 1, &o, NULL));
  OK(tesseraTensorReduce(tesseraSum, &tx, &tsb, 1, &o, s));
  OK(tesseraRMSNorm(&tx, &tna, NULL, NULL, 1e-5f, &o, NULL));
  OK(tesseraRMSNorm(&tx, &tnb, NULL, NULL, 1e-5f, &o, s));
  OK(tesseraStreamSynchronize(s));
  CHECK(memcmp(a, b, sizeof(float) * kRows * kCols) == 0, "softmax on a stream differs from blocking");
  CHECK(memcmp(sa, sb, sizeof sa) == 0, "reduce on a stream differs from blocking");
  CHECK(memcmp(na, nb, sizeof(float) * kRows * kCols) == 0, "rms_norm on a stream differs from blocking");
  for (int r = 0; r < kRows; ++r) {
    const float* xr = x + r * kCols;
    double mx = xr[0], sum = 0, rowsum = 0, sq = 0;
    for (int c = 1; c < kCols; ++c) mx = xr[c] > mx ? xr[c] : mx;
    for (int c = 0; c < kCols; ++c) sum += exp(xr[c] - mx), rowsum += xr[c], sq += (double)xr[c] * xr[c];
    const double rms = sqrt(sq / kCols + 1e-5);
    for (int c = 0; c < kCols; c += 13) {
      const double want = exp(xr[c] - mx) / sum;
      CHECK(fabs(a[r * kCols + c] - want) <= 1e-6 + 1e-5 * want, "softmax[%d][%d] = %g, want %g", r, c,
            a[r * kCols + c], want);
      CHECK(fabs(na[r * kCols + c] - xr[c] / rms) <= 1e-5, "rms_norm[%d][%d] = %g, want %g", r, c,
            na[r * kCols + c], xr[c] / rms);
    }
    CHECK(fabs(sa[r] - rowsum) <= 1e-4 * (1 + fabs(rowsum)), "sum[%d] = %g, want %g", r, sa[r], rowsum);
  }
  OK(tesseraStreamDestroy(s));
  free(x), free(a), free(b), free(na), free(nb);
}

/* A kernel and an allreduce captured once and replayed with new inputs. */
struct cap_arg {
  float* v;
  int* step;
};
static void fill_kernel(tesseraBlock_t b, void* p) {
  struct cap_arg* a = p;
  if (tesseraBlockIdx(b) == 0)
    for (int i = 0; i < 1000; ++i) a->v[i] = (float)(*a->step * (me + 1) + i);
}
static void test_capture(tesseraComm_t comm, int n) {
  tesseraStream_t s;
  tesseraGraph_t g;
  OK(tesseraStreamCreate(&s));
  float v[1000], out[1000];
  int step = 0;
  struct cap_arg a = {v, &step};
  tesseraLaunchOptions_t o = {1, 0, "fill"};
  OK(tesseraStreamBeginCapture(s));
  OK(tesseraKernelLaunch(fill_kernel, &a, &o, s));
  OK(tesseraAllReduceAsync(v, out, 1000, tesseraFloat32, tesseraSum, comm, s));
  OK(tesseraStreamEndCapture(s, &g));
  for (step = 1; step <= 4; ++step) {
    OK(tesseraGraphLaunch(g, s));
    OK(tesseraStreamSynchronize(s));
    for (int i = 0; i < 1000; i += 111) {
      const float want = (float)(step * n * (n + 1) / 2 + n * i);
      CHECK(out[i] == want, "replay %d out[%d] = %g, want %g", step, i, out[i], want);
    }
  }
  OK(tesseraGraphDestroy(g));
  OK(tesseraStreamDestroy(s));
}

static void nothing(tesseraBlock_t b, void* p) {
  (void)b;
  (void)p;
}

static void mark(tesseraBlock_t b, void* p) {
  (void)b;
  *(int*)p = 1;
}

static void test_errors(void) {
  float x[16], y[8];
  tesseraTensor_t tx = f32_2d(x, 4, 4), ty = f32_2d(y, 2, 4);
  expect_error(tesseraKernelLaunch(NULL, NULL, NULL, NULL), tesseraInvalidArgument,
               "tesseraKernelLaunch: the kernel function is null");
  tesseraLaunchOptions_t zero = {0, 0, "zero blocks"};
  expect_error(tesseraKernelLaunch(nothing, NULL, &zero, NULL), tesseraInvalidArgument, "tesseraKernelLaunch");
  tesseraTensor_t ti = tx;
  ti.dtype = tesseraInt32;
  expect_error(tesseraSoftmax(&ti, &ty, NULL, NULL), tesseraInvalidArgument,
               "x.dtype=2 is not tesseraFloat32, tesseraFloat16 or tesseraBfloat16");
  tesseraTensor_t t9 = tx;
  t9.rank = 9;
  expect_error(tesseraSoftmax(&tx, &t9, NULL, NULL), tesseraInvalidArgument, "y.rank=9 must be in 0..8");
  expect_error(tesseraSoftmax(NULL, &ty, NULL, NULL), tesseraInvalidArgument, "the descriptor of x is null");
  expect_error(tesseraTensorReduce(tesseraBand, &tx, &ty, 0, NULL, NULL), tesseraInvalidArgument, "op=5");
  expect_error(tesseraSoftmax(&tx, &ty, NULL, NULL), tesseraInvalidArgument, "tesseraSoftmax: softmax");
  /* On a stream the operator's own checks fail the item, and the stream's error is sticky. */
  tesseraStream_t s;
  OK(tesseraStreamCreate(&s));
  OK(tesseraSoftmax(&tx, &ty, NULL, s));
  int ran = 0;
  tesseraLaunchOptions_t one = {1, 0, "after the failure"};
  OK(tesseraKernelLaunch(mark, &ran, &one, s));
  expect_error(tesseraStreamSynchronize(s), tesseraStreamError, "softmax");
  CHECK(ran == 0, "a kernel after the stream's failure ran");
  expect_error(tesseraStreamSynchronize(s), tesseraStreamError, "softmax");
  OK(tesseraStreamDestroy(s));
  OK(tesseraStreamCreate(&s));
  OK(tesseraKernelLaunch(nothing, NULL, &zero, s));
  expect_error(tesseraStreamSynchronize(s), tesseraStreamError, "zero blocks");
  OK(tesseraStreamDestroy(s));
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  tesseraComm_t comm;
  OK(tesseraCommInitAll(&comm));
  int n = 0;
  OK(tesseraCommCount(comm, &n));
  test_blocking_launch();
  test_events_both_ways(comm, n);
  test_operators();
  test_capture(comm, n);
  test_errors();
  OK(tesseraCommDestroy(comm));
  if (me == 0) printf("compute streams from C: %d PEs ok\n", n);
  shmem_finalize();
  return 0;
}
