// Softmax primitives, per Highway target (contracts in prims.h).
#if defined(TESSERA_KERNEL_OPS_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_KERNEL_OPS_SOFTMAX_INL_H_
#undef TESSERA_KERNEL_OPS_SOFTMAX_INL_H_
#else
#define TESSERA_KERNEL_OPS_SOFTMAX_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "kernel/ops/exp-inl.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- softmax pieces
template <typename T, bool kStore>
double ExpSumImpl(const T* x, size_t n, float m, float* e) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto vm = hn::Set(d, m);
  double total = 0.0;
  for (size_t i = 0; i < n;) {
    const size_t end = std::min(n, i + kSumRun);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d);
    for (; i + 2 * N <= end; i += 2 * N) {
      const auto v0 = ExpNonPositive(d, hn::Sub(LoadF(d, x + i), vm));
      const auto v1 = ExpNonPositive(d, hn::Sub(LoadF(d, x + i + N), vm));
      if (kStore) {
        hn::StoreU(v0, d, e + i);
        hn::StoreU(v1, d, e + i + N);
      }
      a0 = hn::Add(a0, v0);
      a1 = hn::Add(a1, v1);
    }
    for (; i + N <= end; i += N) {
      const auto v = ExpNonPositive(d, hn::Sub(LoadF(d, x + i), vm));
      if (kStore) hn::StoreU(v, d, e + i);
      a0 = hn::Add(a0, v);
    }
    float tail = 0.f;
    for (; i < end; ++i) {
      const float v = std::exp(ld(x + i) - m);
      if (kStore) e[i] = v;
      tail += v;
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)))) + tail;
  }
  return total;
}

template <typename T>
double ExpSum(const void* x, size_t n, float m, float* e) {
  return e ? ExpSumImpl<T, true>(static_cast<const T*>(x), n, m, e)
           : ExpSumImpl<T, false>(static_cast<const T*>(x), n, m, nullptr);
}

template <typename T, bool kS>
void ScaleF32Impl(const float* e, T* y, size_t n, float s) {
  const DF d;
  const auto vs = hn::Set(d, s);
  MapOut<kS>(y, n, [&](size_t i) { return hn::Mul(hn::LoadU(d, e + i), vs); }, [&](size_t i) { return e[i] * s; });
}
template <typename T>
void ScaleF32(const float* e, void* y, size_t n, float s, bool stream) {
  if (stream) ScaleF32Impl<T, true>(e, static_cast<T*>(y), n, s);
  else ScaleF32Impl<T, false>(e, static_cast<T*>(y), n, s);
}

template <typename T, bool kS>
void ExpScaleImpl(const T* x, T* y, size_t n, float m, float s) {
  const DF d;
  const auto vm = hn::Set(d, m), vs = hn::Set(d, s);
  MapOut<kS>(
      y, n, [&](size_t i) { return hn::Mul(ExpNonPositive(d, hn::Sub(LoadF(d, x + i), vm)), vs); },
      [&](size_t i) { return std::exp(ld(x + i) - m) * s; });
}
template <typename T>
void ExpScale(const void* x, void* y, size_t n, float m, float s, bool stream) {
  if (stream) ExpScaleImpl<T, true>(static_cast<const T*>(x), static_cast<T*>(y), n, m, s);
  else ExpScaleImpl<T, false>(static_cast<const T*>(x), static_cast<T*>(y), n, m, s);
}

template <typename T, bool kS>
void AddImpl(const T* x, T* y, size_t n, float c) {
  const DF d;
  const auto vc = hn::Set(d, c);
  MapOut<kS>(y, n, [&](size_t i) { return hn::Add(LoadF(d, x + i), vc); }, [&](size_t i) { return ld(x + i) + c; });
}
template <typename T>
void AddC(const void* x, void* y, size_t n, float c, bool stream) {
  if (stream) AddImpl<T, true>(static_cast<const T*>(x), static_cast<T*>(y), n, c);
  else AddImpl<T, false>(static_cast<const T*>(x), static_cast<T*>(y), n, c);
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernel::ops
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
