// SIMD primitives (see prims.h), compiled once per Highway target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel/ops/prims.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernel/ops/exp-inl.h"
#include "kernel/ops/simd-inl.h"
#include "kernel/ops/softmax-inl.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/scalar.h"

namespace tessera::kernel::ops {
extern bool g_stream_prefetch;  // set before the first dispatch (TESSERA_KERNEL_PREFETCH)
}

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- contiguous reductions
// Sum streams with 256-bit vectors even where 512-bit ones exist: on the AVX-512 development hosts
// (Zen 4, which splits 512-bit loads in two) a 512-bit load loop reads memory more slowly than the same
// loop with 256-bit loads (docs/kernel.md), which matches the machine's streaming-read kernel. Eight
// accumulators of 8 lanes keep the documented 32 terms per lane over a kSumRun run.
// Streaming loops prefetch kStreamAhead bytes ahead (two lines per 256 bytes; the adjacent-line prefetcher
// fetches the pair): an Intel core's read bandwidth is bound by the misses it keeps in flight, and the
// hardware prefetchers alone left a sum well short of the machine's read bound there. On AMD the same
// prefetches cost read bandwidth instead, and sums and extremes reach the read bound only without them
// (docs/kernel.md). TESSERA_KERNEL_PREFETCH (g_stream_prefetch) chooses; by default they are issued on
// every vendor but AMD.
constexpr size_t kStreamAhead = 4096;
template <typename T>
HWY_INLINE void PrefetchAhead(const T* p) {
  if (!g_stream_prefetch) return;
  hwy::Prefetch(reinterpret_cast<const char*>(p) + kStreamAhead);
  hwy::Prefetch(reinterpret_cast<const char*>(p) + kStreamAhead + 128);
}
template <typename T>
double Sum(const void* xv, size_t n) {
  const T* x = static_cast<const T*>(xv);
  const DS d;
  const size_t N = hn::Lanes(d);
  double total = 0.0;
  for (size_t i = 0; i < n;) {
    const size_t end = std::min(n, i + kSumRun);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    auto a4 = hn::Zero(d), a5 = hn::Zero(d), a6 = hn::Zero(d), a7 = hn::Zero(d);
    for (; i + 8 * N <= end; i += 8 * N) {
      if (((i * sizeof(T)) & 255) == 0) PrefetchAhead(x + i);
      a0 = hn::Add(a0, LoadF(d, x + i));
      a1 = hn::Add(a1, LoadF(d, x + i + N));
      a2 = hn::Add(a2, LoadF(d, x + i + 2 * N));
      a3 = hn::Add(a3, LoadF(d, x + i + 3 * N));
      a4 = hn::Add(a4, LoadF(d, x + i + 4 * N));
      a5 = hn::Add(a5, LoadF(d, x + i + 5 * N));
      a6 = hn::Add(a6, LoadF(d, x + i + 6 * N));
      a7 = hn::Add(a7, LoadF(d, x + i + 7 * N));
    }
    for (; i + N <= end; i += N) a0 = hn::Add(a0, LoadF(d, x + i));
    float tail = 0.f;
    for (; i < end; ++i) tail += ld(x + i);
    const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, s))) + tail;
  }
  return total;
}

template <typename T, bool kDev>
double SqDevImpl(const T* x, size_t n, float shift, double* dev) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, shift);
  double total = 0.0, dtotal = 0.0;
  for (size_t i = 0; i < n;) {
    const size_t end = std::min(n, i + kSumRun);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    for (; i + 4 * N <= end; i += 4 * N) {
      const auto t0 = hn::Sub(LoadF(d, x + i), vs), t1 = hn::Sub(LoadF(d, x + i + N), vs);
      const auto t2 = hn::Sub(LoadF(d, x + i + 2 * N), vs), t3 = hn::Sub(LoadF(d, x + i + 3 * N), vs);
      a0 = hn::MulAdd(t0, t0, a0);
      a1 = hn::MulAdd(t1, t1, a1);
      a2 = hn::MulAdd(t2, t2, a2);
      a3 = hn::MulAdd(t3, t3, a3);
      if (kDev) {
        s0 = hn::Add(s0, hn::Add(t0, t1));
        s1 = hn::Add(s1, hn::Add(t2, t3));
      }
    }
    for (; i + N <= end; i += N) {
      const auto t = hn::Sub(LoadF(d, x + i), vs);
      a0 = hn::MulAdd(t, t, a0);
      if (kDev) s0 = hn::Add(s0, t);
    }
    float tail = 0.f, dtail = 0.f;
    for (; i < end; ++i) {
      const float t = ld(x + i) - shift;
      tail += t * t;
      dtail += t;
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))))) + tail;
    if (kDev) dtotal += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)))) + dtail;
  }
  if (kDev) *dev = dtotal;
  return total;
}

template <typename T>
double SqDev(const void* x, size_t n, float shift, double* dev) {
  return dev ? SqDevImpl<T, true>(static_cast<const T*>(x), n, shift, dev)
             : SqDevImpl<T, false>(static_cast<const T*>(x), n, shift, nullptr);
}

// kLo (with kMax): also the minimum into *lo, in the same pass (softmax: whether its exponentials need the
// underflow flush, see ExpNonPositive); one more operation per 4 vectors of a memory-bound loop.
template <typename T, bool kMax, bool kLo>
float ExtremeImpl(const void* xv, size_t n, float* lo) {
  const T* x = static_cast<const T*>(xv);
  const DF d;
  const size_t N = hn::Lanes(d);
  const float init = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto pick = [](auto a, auto b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  // Four independent accumulators and the NaN lanes kept as a mask (on AVX-512 a mask register: no
  // conversion to a vector per step) keep the loop off the latency of one accumulator's chain, which
  // matters to softmax, whose first pass over each row this is (docs/kernel.md).
  auto m0 = hn::Set(d, init), m1 = m0, m2 = m0, m3 = m0;
  auto l0 = hn::Set(d, std::numeric_limits<float>::infinity());
  auto nan = hn::FirstN(d, 0);  // lanes that saw a NaN
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    if (((i * sizeof(T)) & 255) == 0) PrefetchAhead(x + i);
    hn::Vec<DF> v0, v1, v2, v3;  // order-free: bf16 splits even and odd elements (LoadF2)
    LoadF2(d, x + i, v0, v1);
    LoadF2(d, x + i + 2 * N, v2, v3);
    m0 = pick(m0, v0);
    m1 = pick(m1, v1);
    m2 = pick(m2, v2);
    m3 = pick(m3, v3);
    if (kLo) l0 = hn::Min(l0, hn::Min(hn::Min(v0, v1), hn::Min(v2, v3)));
    nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
  }
  for (; i + N <= n; i += N) {
    const auto v = LoadF(d, x + i);
    m0 = pick(m0, v);
    if (kLo) l0 = hn::Min(l0, v);
    nan = hn::Or(nan, hn::IsNaN(v));
  }
  const auto m = pick(pick(m0, m1), pick(m2, m3));
  float r = hn::GetLane(kMax ? hn::MaxOfLanes(d, m) : hn::MinOfLanes(d, m));
  float l = hn::GetLane(hn::MinOfLanes(d, l0));
  bool any_nan = !hn::AllFalse(d, nan);
  for (; i < n; ++i) {
    const float v = ld(x + i);
    if (std::isnan(v)) any_nan = true;
    r = kMax ? std::max(r, v) : std::min(r, v);
    l = std::min(l, v);
  }
  if (kLo) *lo = l;
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : r;
}
template <typename T, bool kMax>
float Extreme(const void* x, size_t n) {
  return ExtremeImpl<T, kMax, false>(x, n, nullptr);
}
template <typename T>
float Range(const void* x, size_t n, float* lo) {
  return ExtremeImpl<T, true, true>(x, n, lo);
}

template <typename T>
double Prod(const void* xv, size_t n) {
  const T* x = static_cast<const T*>(xv);
  double p = 1.0;
  for (size_t i = 0; i < n; ++i) p *= ld(x + i);
  return p;
}

// ---- column reductions
template <typename T>
void ColSum(const void* xv, size_t rows, size_t cols, size_t ldx, double* acc, float* tmp) {
  const T* x = static_cast<const T*>(xv);
  const DF d;
  const size_t N = hn::Lanes(d);
  for (size_t j0 = 0; j0 < cols; j0 += kColTile) {
    const size_t w = std::min(kColTile, cols - j0), wv = w / N * N;
    for (size_t i0 = 0; i0 < rows; i0 += kColRun) {
      const size_t i1 = std::min(rows, i0 + kColRun);
      std::fill(tmp, tmp + w, 0.f);
      size_t i = i0;
      // Eight rows per sweep: one read-modify-write of tmp per eight loads (measured faster than 4 or 2 on
      // the 2-core CI machines: fewer tmp round trips, and 8 streams keep the prefetchers busy).
      for (; i + 8 <= i1; i += 8) {
        const T* r0 = x + i * ldx + j0;
        size_t j = 0;
        for (; j < wv; j += N) {
          const auto s01 = hn::Add(LoadF(d, r0 + j), LoadF(d, r0 + ldx + j));
          const auto s23 = hn::Add(LoadF(d, r0 + 2 * ldx + j), LoadF(d, r0 + 3 * ldx + j));
          const auto s45 = hn::Add(LoadF(d, r0 + 4 * ldx + j), LoadF(d, r0 + 5 * ldx + j));
          const auto s67 = hn::Add(LoadF(d, r0 + 6 * ldx + j), LoadF(d, r0 + 7 * ldx + j));
          const auto s = hn::Add(hn::Add(s01, s23), hn::Add(s45, s67));
          hn::StoreU(hn::Add(hn::LoadU(d, tmp + j), s), d, tmp + j);
        }
        for (; j < w; ++j) {
          float t = 0.f;
          for (size_t k = 0; k < 8; ++k) t += ld(r0 + k * ldx + j);
          tmp[j] += t;
        }
      }
      for (; i < i1; ++i) {
        const T* r0 = x + i * ldx + j0;
        size_t j = 0;
        for (; j < wv; j += N) hn::StoreU(hn::Add(hn::LoadU(d, tmp + j), LoadF(d, r0 + j)), d, tmp + j);
        for (; j < w; ++j) tmp[j] += ld(r0 + j);
      }
      for (size_t j = 0; j < w; ++j) acc[j0 + j] += tmp[j];
    }
  }
}

template <typename T, bool kMax>
void ColExtreme(const void* xv, size_t rows, size_t cols, size_t ldx, float* acc, float* tmp) {
  const T* x = static_cast<const T*>(xv);
  const DF d;
  const size_t N = hn::Lanes(d);
  auto pick = [](auto a, auto b) { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  for (size_t j0 = 0; j0 < cols; j0 += kColTile) {
    const size_t w = std::min(kColTile, cols - j0), wv = w / N * N;
    float* a = acc + j0;
    float* nan = tmp;  // per column: all-ones bits once a NaN was seen
    std::fill(nan, nan + w, 0.f);
    for (size_t i = 0; i < rows; ++i) {
      const T* r = x + i * ldx + j0;
      size_t j = 0;
      for (; j < wv; j += N) {
        const auto v = LoadF(d, r + j);
        hn::StoreU(pick(hn::LoadU(d, a + j), v), d, a + j);
        hn::StoreU(hn::Or(hn::LoadU(d, nan + j), hn::VecFromMask(d, hn::IsNaN(v))), d, nan + j);
      }
      for (; j < w; ++j) {
        const float v = ld(r + j);
        if (std::isnan(v)) nan[j] = std::numeric_limits<float>::quiet_NaN();
        a[j] = kMax ? std::max(a[j], v) : std::min(a[j], v);
      }
    }
    for (size_t j = 0; j < w; ++j) {
      uint32_t bits;
      std::memcpy(&bits, nan + j, 4);
      if (bits != 0) a[j] = std::numeric_limits<float>::quiet_NaN();
    }
  }
}

template <typename T>
void ColProd(const void* xv, size_t rows, size_t cols, size_t ldx, double* acc) {
  const T* x = static_cast<const T*>(xv);
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) acc[j] *= ld(x + i * ldx + j);
}

// ---- normalisation: y = ((x - shift) - lo) * scale * w + b + beta
template <typename T, bool kS, bool kW, bool kB>
void NormImpl(const T* x, T* y, size_t n, float shift, float lo, float scale, const float* w, const float* b,
              float beta) {
  const DF d;
  const auto vsh = hn::Set(d, shift), vlo = hn::Set(d, lo), vsc = hn::Set(d, scale), vbeta = hn::Set(d, beta);
  MapOut<kS>(
      y, n,
      [&](size_t i) {
        auto t = hn::Mul(hn::Sub(hn::Sub(LoadF(d, x + i), vsh), vlo), vsc);
        if (kW && kB) t = hn::MulAdd(t, hn::LoadU(d, w + i), hn::LoadU(d, b + i));
        else if (kW) t = hn::Mul(t, hn::LoadU(d, w + i));
        else if (kB) t = hn::Add(t, hn::LoadU(d, b + i));
        return hn::Add(t, vbeta);
      },
      [&](size_t i) {
        float t = ((ld(x + i) - shift) - lo) * scale;
        if (kW) t *= w[i];
        if (kB) t += b[i];
        return t + beta;
      });
}

template <typename T, bool kS>
void NormS(const T* x, T* y, size_t n, float shift, float lo, float scale, const float* w, const float* b, float beta) {
  if (w && b) NormImpl<T, kS, true, true>(x, y, n, shift, lo, scale, w, b, beta);
  else if (w) NormImpl<T, kS, true, false>(x, y, n, shift, lo, scale, w, b, beta);
  else if (b) NormImpl<T, kS, false, true>(x, y, n, shift, lo, scale, w, b, beta);
  else NormImpl<T, kS, false, false>(x, y, n, shift, lo, scale, w, b, beta);
}

template <typename T>
void Norm(const void* xv, void* yv, size_t n, float shift, float lo, float scale, const float* w, const float* b,
          float beta, bool stream) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  if (stream) NormS<T, true>(x, y, n, shift, lo, scale, w, b, beta);
  else NormS<T, false>(x, y, n, shift, lo, scale, w, b, beta);
}

template <typename T>
void ToF32(const void* xv, float* y, size_t n) {
  const T* x = static_cast<const T*>(xv);
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(LoadF(d, x + i), d, y + i);
  for (; i < n; ++i) y[i] = ld(x + i);
}

template <typename T>
void FromF32(const float* x, void* yv, size_t n) {
  T* y = static_cast<T*>(yv);
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) StoreF(d, hn::LoadU(d, x + i), y + i);
  for (; i < n; ++i) st(y + i, x[i]);
}

template <typename T>
void Axpy(const void* xv, float* acc, size_t n, float w) {
  const T* x = static_cast<const T*>(xv);
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto vw = hn::Set(d, w);
  size_t i = 0;
  // Fused where the target has FMA (the compiler contracts a separate multiply and add there anyway).
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(vw, LoadF(d, x + i), hn::LoadU(d, acc + i)), d, acc + i);
  for (; i < n; ++i) acc[i] += w * ld(x + i);
}

template <typename T>
Prims MakeTable() {
  return Prims{&Sum<T>,           &SqDev<T>,   &Extreme<T, true>, &Extreme<T, false>, &Range<T>, &Prod<T>,
               &ColSum<T>,        &ColExtreme<T, true>, &ColExtreme<T, false>, &ColProd<T>,
               &ExpSum<T>,        &ScaleF32<T>, &ExpScale<T>, &AddC<T>, &Norm<T>, &ToF32<T>, &FromF32<T>,
               &Axpy<T>,          hwy::TargetName(HWY_TARGET)};
}

const Prims* GetTable(int dtype) {
  static const Prims tables[3] = {MakeTable<float>(), MakeTable<F16>(), MakeTable<BF16>()};
  return &tables[dtype];
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <array>

#include "base/config.h"
#include "base/memcopy.h"

namespace tessera::kernel::ops {
HWY_EXPORT(GetTable);

bool g_stream_prefetch = true;

namespace {
const config::Var<uint64_t> kStreamMin{
    "TESSERA_KERNEL_STREAM_MIN", 0,
    "Operators write outputs of at least this many bytes with non-temporal stores (0: as large copies do, "
    "from a quarter of the last-level cache, at least 1M and at most 16M)"};
}  // namespace

// An output that will not stay in cache is best written with non-temporal stores: ordinary stores first
// read every destination line (read-for-ownership), three memory passes instead of two. Whether it stays in
// cache is the question copy() asks of kAuto copies, so the default threshold is that rule's
// (base/memcopy.h); its 16 MiB cap is what keeps a large softmax output on a virtual machine shown its host
// socket's whole L3 streamed, near the copy bound, as are the norms (docs/kernel.md, Intel host).
bool stream_output(size_t bytes) {
  static const size_t min = [] {
    const uint64_t v = kStreamMin.get();
    return v ? static_cast<size_t>(v) : copy_stream_min();
  }();
  return bytes >= min;
}

void stream_fence() { hwy::FlushStream(); }

namespace {
const config::Var<std::string> kSimd{
    "TESSERA_KERNEL_SIMD", "auto",
    "Best instruction set the kernel operators may use: auto (the best this CPU has), avx512, avx2 or sse4 (to "
    "compare hosts, or to test the narrower code paths on a wider CPU)"};

const config::Var<std::string> kPrefetch{
    "TESSERA_KERNEL_PREFETCH", "auto",
    "Software prefetch in the operators' streaming loops: on, off, or auto (on except on AMD CPUs, where it "
    "measured slower)"};

void apply_prefetch_choice() {
  switch (config::one_of(kPrefetch, {"auto", "on", "off"})) {
    case 0: g_stream_prefetch = !(__builtin_cpu_init(), __builtin_cpu_is("amd")); break;
    case 1: g_stream_prefetch = true; break;
    default: g_stream_prefetch = false; break;
  }
}

// Targets better than the one TESSERA_KERNEL_SIMD names are disabled before the first dispatch.
void apply_simd_cap() {
  // Highway targets better than the cap (lower bits are better targets)
  const int64_t better[] = {0, 0, HWY_AVX3 | HWY_AVX3_DL, HWY_AVX3 | HWY_AVX3_DL | HWY_AVX2};
  const int64_t b = better[config::one_of(kSimd, {"auto", "avx512", "avx2", "sse4"})];
  if (b != 0) hwy::DisableTargets(b);
}
}  // namespace

const Prims& prims(DType t) {
  static const std::array<const Prims*, 3> tables = [] {
    apply_simd_cap();
    apply_prefetch_choice();
    return std::array<const Prims*, 3>{HWY_DYNAMIC_DISPATCH(GetTable)(0), HWY_DYNAMIC_DISPATCH(GetTable)(1),
                                       HWY_DYNAMIC_DISPATCH(GetTable)(2)};
  }();
  return *tables[static_cast<size_t>(t)];
}

bool stream_prefetch() {
  prims(DType::kF32);
  return g_stream_prefetch;
}
}  // namespace tessera::kernel::ops
#endif
