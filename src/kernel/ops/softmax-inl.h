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
#include <limits>
#include <type_traits>

#include "kernel/ops/exp-inl.h"
#include "kernel/ops/prims.h"
#include "kernel/ops/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- softmax pieces
// Sum of exp(x - m) over x[0, n) (stored into e when kStore). With kNext, the same loop also takes the
// maximum of the next row (n elements at `next`): its loads stream from memory while this row's exp work
// runs from L1, so the two overlap instead of alternating (the row-at-a-time form left memory idle half
// the time). Four independent vectors per step: the exp is a chain of ~10 dependent operations, and two
// vectors per step left an AVX-512 core waiting on it (docs/kernel.md).
// kFlush: see ExpNonPositive (false when every x - m >= -86). With kNext, the next row's minimum too
// (*next_lo), from which the caller decides kFlush for that row.
template <typename T, bool kStore, bool kNext, bool kFlush>
double ExpSumImpl(const T* x, size_t n, float m, float* e, const T* next, float* next_max, float* next_lo) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto vm = hn::Set(d, m);
  auto nm0 = hn::Set(d, -std::numeric_limits<float>::infinity()), nm1 = nm0;
  auto nl = hn::Set(d, std::numeric_limits<float>::infinity());
  auto nan = hn::Zero(d);
  float nm_tail = -std::numeric_limits<float>::infinity(), nl_tail = std::numeric_limits<float>::infinity();
  bool nan_tail = false;
  double total = 0.0;
  for (size_t i = 0; i < n;) {
    const size_t end = std::min(n, i + kSumRun);
    auto a0 = hn::Zero(d), a1 = hn::Zero(d);
    for (; i + 4 * N <= end; i += 4 * N) {
      if (kNext) {
        hn::Vec<DF> w0, w1, w2, w3;  // order-free (LoadF2)
        LoadF2(d, next + i, w0, w1);
        LoadF2(d, next + i + 2 * N, w2, w3);
        nm0 = hn::Max(nm0, hn::Max(w0, w2));
        nm1 = hn::Max(nm1, hn::Max(w1, w3));
        nl = hn::Min(nl, hn::Min(hn::Min(w0, w2), hn::Min(w1, w3)));
        nan = hn::Or(nan, hn::VecFromMask(d, hn::Or(hn::Or(hn::IsNaN(w0), hn::IsNaN(w1)), hn::Or(hn::IsNaN(w2), hn::IsNaN(w3)))));
      }
      // Without kStore only the sum is kept, so the order is free (LoadF2); the exponentials e keep it.
      hn::Vec<DF> x0, x1, x2, x3;
      if (kStore) {
        x0 = LoadF(d, x + i), x1 = LoadF(d, x + i + N), x2 = LoadF(d, x + i + 2 * N), x3 = LoadF(d, x + i + 3 * N);
      } else {
        LoadF2(d, x + i, x0, x1);
        LoadF2(d, x + i + 2 * N, x2, x3);
      }
      const auto v0 = ExpNonPositive<kFlush>(d, hn::Sub(x0, vm));
      const auto v1 = ExpNonPositive<kFlush>(d, hn::Sub(x1, vm));
      const auto v2 = ExpNonPositive<kFlush>(d, hn::Sub(x2, vm));
      const auto v3 = ExpNonPositive<kFlush>(d, hn::Sub(x3, vm));
      if (kStore) {
        hn::StoreU(v0, d, e + i);
        hn::StoreU(v1, d, e + i + N);
        hn::StoreU(v2, d, e + i + 2 * N);
        hn::StoreU(v3, d, e + i + 3 * N);
      }
      a0 = hn::Add(a0, hn::Add(v0, v2));
      a1 = hn::Add(a1, hn::Add(v1, v3));
    }
    for (; i + N <= end; i += N) {
      if (kNext) {
        const auto w0 = LoadF(d, next + i);
        nm0 = hn::Max(nm0, w0);
        nl = hn::Min(nl, w0);
        nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(w0)));
      }
      const auto v0 = ExpNonPositive<kFlush>(d, hn::Sub(LoadF(d, x + i), vm));
      if (kStore) hn::StoreU(v0, d, e + i);
      a0 = hn::Add(a0, v0);
    }
    float tail = 0.f;
    for (; i < end; ++i) {
      if (kNext) {
        const float w = ld(next + i);
        nan_tail |= std::isnan(w);
        nm_tail = std::max(nm_tail, w);
        nl_tail = std::min(nl_tail, w);
      }
      const float v = ExpNonPositive1<kFlush>(ld(x + i) - m);
      if (kStore) e[i] = v;
      tail += v;
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)))) + tail;
  }
  if (kNext) {
    const float vmax = hn::GetLane(hn::MaxOfLanes(d, hn::Max(nm0, nm1)));
    const bool any_nan = nan_tail || !hn::AllFalse(d, hn::MaskFromVec(nan));
    *next_max = any_nan ? std::numeric_limits<float>::quiet_NaN() : std::max(vmax, nm_tail);
    *next_lo = std::min(hn::GetLane(hn::MinOfLanes(d, nl)), nl_tail);
  }
  return total;
}

// Whether exp(x - m) needs the flush for some x >= lo (see ExpNonPositive). x - m >= lo - m in f32, as
// rounding is monotonic.
inline bool NeedsFlush(float m, float lo) { return !(lo - m >= -86.0f); }

template <typename T>
double ExpSum(const void* xv, size_t n, float m, float lo, float* e, const void* nextv, float* next_max,
              float* next_lo) {
  const T* x = static_cast<const T*>(xv);
  const T* next = static_cast<const T*>(nextv);
  const bool flush = NeedsFlush(m, lo);
#define TESSERA_EXP_SUM(kStore, kNext)                                                                       \
  return flush ? ExpSumImpl<T, kStore, kNext, true>(x, n, m, e, next, next_max, next_lo)                    \
               : ExpSumImpl<T, kStore, kNext, false>(x, n, m, e, next, next_max, next_lo)
  if (next) {
    if (e) TESSERA_EXP_SUM(true, true);
    TESSERA_EXP_SUM(false, true);
  }
  if (e) TESSERA_EXP_SUM(true, false);
  TESSERA_EXP_SUM(false, false);
#undef TESSERA_EXP_SUM
}

template <typename T, bool kS>
void ScaleF32Impl(const float* e, T* y, size_t n, float s) {
  const DF d;
  const auto vs = hn::Set(d, s);
  // e in [0, 1], s finite: no NaN (rows with a NaN never get here)
  MapOut<kS, true>(y, n, [&](size_t i) { return hn::Mul(hn::LoadU(d, e + i), vs); }, [&](size_t i) { return e[i] * s; });
}
template <typename T>
void ScaleF32(const float* e, void* y, size_t n, float s, bool stream) {
  if (stream) ScaleF32Impl<T, true>(e, static_cast<T*>(y), n, s);
  else ScaleF32Impl<T, false>(e, static_cast<T*>(y), n, s);
}

template <typename T, bool kS, bool kFlush>
void ExpScaleImpl(const T* x, T* y, size_t n, float m, float s) {
  const DF d;
  const auto vm = hn::Set(d, m), vs = hn::Set(d, s);
  MapOut<kS, true>(  // exp of x - m in [0, 1] (a row with a NaN never gets here), times a finite s
      y, n, [&](size_t i) { return hn::Mul(ExpNonPositive<kFlush>(d, hn::Sub(LoadF(d, x + i), vm)), vs); },
      [&](size_t i) { return ExpNonPositive1<kFlush>(ld(x + i) - m) * s; });
}
template <typename T>
void ExpScale(const void* xv, void* yv, size_t n, float m, float lo, float s, bool stream) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const bool flush = NeedsFlush(m, lo);
  if (stream) flush ? ExpScaleImpl<T, true, true>(x, y, n, m, s) : ExpScaleImpl<T, true, false>(x, y, n, m, s);
  else flush ? ExpScaleImpl<T, false, true>(x, y, n, m, s) : ExpScaleImpl<T, false, false>(x, y, n, m, s);
}

template <typename T, bool kS>
void AddImpl(const T* x, T* y, size_t n, float c) {
  const DF d;
  const auto vc = hn::Set(d, c);
  // log_softmax: x of a row without NaN (else the row's maximum is NaN and it takes another path), c finite
  if constexpr (std::is_same_v<T, BF16> && hn::MaxLanes(DF()) >= 2) {
    // bf16 in and out, in 32-bit lanes: the even elements are the low halves, the odd ones the high halves.
    // Each half is widened in place (a shift, a mask), added to, rounded to nearest even, and the two are
    // merged back by 16-bit lanes (OddEven): no widening loads, packs or lane permutes (15 operations per
    // 2 vectors instead of 19).
    const hn::RebindToUnsigned<DF> du;
    const hn::Repartition<uint16_t, DF> dh;
    const size_t N2 = 2 * hn::Lanes(d);  // elements per step
    const auto hi = hn::Set(du, 0xffff0000u);
    // generic: the branch stays uninstantiated on targets of one lane
    auto round = [&](auto v) { return BF16Round(d, v); };
    size_t i = 0;
    if (kS)
      for (; i < n && reinterpret_cast<uintptr_t>(y + i) % (N2 * sizeof(T)) != 0; ++i) st(y + i, ld(x + i) + c);
    for (; i + N2 <= n; i += N2) {
      const auto raw = hn::LoadU(du, reinterpret_cast<const uint32_t*>(x + i));
      const auto even = round(hn::Add(hn::BitCast(d, hn::ShiftLeft<16>(raw)), vc));
      const auto odd = round(hn::Add(hn::BitCast(d, hn::And(raw, hi)), vc));
      const auto out = hn::OddEven(hn::BitCast(dh, odd), hn::BitCast(dh, hn::ShiftRight<16>(even)));
      if (kS) hn::Stream(out, dh, reinterpret_cast<uint16_t*>(y + i));
      else hn::StoreU(out, dh, reinterpret_cast<uint16_t*>(y + i));
    }
    for (; i < n; ++i) st(y + i, ld(x + i) + c);
    return;
  }
  MapOut<kS, true>(y, n, [&](size_t i) { return hn::Add(LoadF(d, x + i), vc); }, [&](size_t i) { return ld(x + i) + c; });
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
