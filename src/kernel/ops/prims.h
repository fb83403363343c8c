// SIMD primitives the operators are built from: one table per element type, chosen once for the CPU
// (Highway runtime dispatch: AVX-512, AVX2, SSE4 or scalar). Blocks call them on their slices; the
// operators (reduce.cc, softmax.cc, norm.cc, batchnorm.cc) only partition work and combine partials.
//
// Element pointers are `const void*` of the table's type (float, f16 or bf16 storage). All arithmetic is
// f32; sums are accumulated in f32 SIMD lanes over short runs (kSumRun elements: at most kSumRun/lanes/4
// terms per lane) and the runs are added in f64, so the error does not grow with the length of the row:
// |error| <= ~40 * 2^-24 * sum|x| for any n. Results depend only on the inputs and n (no threads inside).
#pragma once
#include <cstddef>

#include "tessera/kernel.hpp"

namespace tessera::kernel::ops {

inline constexpr size_t kSumRun = 2048;  // elements summed in f32 before the partial goes to f64
inline constexpr size_t kColRun = 64;    // rows summed in f32 per column before the partial goes to f64
inline constexpr size_t kColTile = 4096; // columns per tile of the column kernels (tmp stays in L1)

struct Prims {
  // Contiguous reductions of x[0, n).
  double (*sum)(const void* x, size_t n);
  // sum of (x - shift)^2; also stores sum of (x - shift) into *dev if dev != null (the correction term of
  // the corrected two-pass variance: mean = shift + dev / n, var = sq / n - (dev / n)^2).
  double (*sqdev)(const void* x, size_t n, float shift, double* dev);
  float (*max)(const void* x, size_t n);                  // NaN if any x is NaN; -inf when n == 0
  float (*min)(const void* x, size_t n);                  // NaN if any x is NaN; +inf when n == 0
  float (*range)(const void* x, size_t n, float* lo);     // max (as `max`), and the minimum into *lo
  double (*prod)(const void* x, size_t n);                // in f64
  // Column reductions of the rows x[i * ld + j], i < rows, j < cols, accumulated into acc[j].
  // tmp: f32 scratch of min(cols, kColTile) elements (col_sum) or 2 * that (col_max/min).
  void (*col_sum)(const void* x, size_t rows, size_t cols, size_t ld, double* acc, float* tmp);
  void (*col_max)(const void* x, size_t rows, size_t cols, size_t ld, float* acc, float* tmp);
  void (*col_min)(const void* x, size_t rows, size_t cols, size_t ld, float* acc, float* tmp);
  void (*col_prod)(const void* x, size_t rows, size_t cols, size_t ld, double* acc);
  // Outputs: functions writing y take `stream`: true writes y with non-temporal stores (no read-for-ownership
  // of y, no eviction of the input from cache; for outputs much larger than the LLC). They are weakly
  // ordered: a block that streamed calls stream_fence() before its kernel returns (once, not per call: a
  // fence per row or per 4 KiB run waits for the write-combining buffers to drain and stalls the stream).
  // false: ordinary stores (y stays in cache for whoever reads it next).
  // Softmax pieces. exp_sum: returns sum of exp(x - m); stores the exponentials into e (f32) if e != null.
  // lo: a lower bound of x (its minimum, or -inf if unknown): when lo - m >= -86 the exponentials skip the
  // underflow flush (exp-inl.h), about 15% of their work on AVX2.
  // If next != null, also writes the maximum of next[0, n) (NaN if any is NaN) to *next_max and its
  // minimum to *next_lo, in the same loop: the next row's memory stream overlaps this row's exp work.
  double (*exp_sum)(const void* x, size_t n, float m, float lo, float* e, const void* next, float* next_max,
                    float* next_lo);
  // The three outputs of softmax take inputs without NaN (a row with a NaN has a NaN maximum and takes
  // another path): their bf16 rounding leaves out the NaN case.
  void (*scale_f32)(const float* e, void* y, size_t n, float s, bool stream);        // y = e * s
  // y = exp(x - m) * s; lo as for exp_sum
  void (*exp_scale)(const void* x, void* y, size_t n, float m, float lo, float s, bool stream);
  void (*add)(const void* x, void* y, size_t n, float c, bool stream);               // y = x + c (no NaN)
  // y = ((x - shift) - shift_lo) * scale * w + b + beta   (w, b: f32 arrays of n, or null for 1 / 0).
  // shift + shift_lo carries a mean to ~48 bits: x - shift is exact for x near the mean, so a large common
  // offset (|mean| >> std) costs no accuracy.
  void (*norm)(const void* x, void* y, size_t n, float shift, float shift_lo, float scale, const float* w,
               const float* b, float beta, bool stream);
  void (*to_f32)(const void* x, float* y, size_t n);
  void (*from_f32)(const float* x, void* y, size_t n);
  void (*axpy)(const void* x, float* acc, size_t n, float w);  // acc += w * x; fused or not by target: within half an ulp of w*x plus half an ulp of the sum
  const char* target;  // Highway target name, for tessera-perf
};

const Prims& prims(DType t);

// Whether the streaming sums and extremes issue software prefetches (TESSERA_KERNEL_PREFETCH, decided with
// the first dispatch), for tessera-perf.
bool stream_prefetch();

// Whether an operator writing `bytes` of output should stream it (non-temporal stores): from
// TESSERA_KERNEL_STREAM_MIN bytes, by default where kAuto copies stream (base/memcopy.h).
bool stream_output(size_t bytes);

// Orders this thread's streamed (non-temporal) stores before its later stores, so they are visible to
// whoever synchronises with it afterwards (launch completion, grid sync). A store fence on x86.
void stream_fence();

}  // namespace tessera::kernel::ops
