// Element access for the SIMD primitives, per Highway target: every storage type (f32, f16, bf16) is loaded
// as and stored from f32 lanes; bf16 stores round to nearest even; Stream* are the non-temporal variants.
#if defined(TESSERA_KERNEL_OPS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_KERNEL_OPS_SIMD_INL_H_
#undef TESSERA_KERNEL_OPS_SIMD_INL_H_
#else
#define TESSERA_KERNEL_OPS_SIMD_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel/ops/scalar.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using BF16 = hwy::bfloat16_t;
using F16 = hwy::float16_t;

// ---- scalar element access (tails)
HWY_INLINE float ld(const float* p) { return *p; }
HWY_INLINE float ld(const BF16* p) { uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_f32(h); }
HWY_INLINE float ld(const F16* p) { uint16_t h; std::memcpy(&h, p, 2); return f16_bits_to_f32(h); }
HWY_INLINE void st(float* p, float v) { *p = v; }
HWY_INLINE void st(BF16* p, float v) { uint16_t h = f32_to_bf16_bits(v); std::memcpy(p, &h, 2); }
HWY_INLINE void st(F16* p, float v) { uint16_t h = f32_to_f16_bits(v); std::memcpy(p, &h, 2); }

// ---- vector access: every type is loaded as and stored from f32 lanes
template <class D>
HWY_INLINE hn::Vec<D> LoadF(D d, const float* p) { return hn::LoadU(d, p); }
template <class D>
HWY_INLINE hn::Vec<D> LoadF(D d, const BF16* p) { return hn::PromoteTo(d, hn::LoadU(hn::Rebind<BF16, D>(), p)); }
#if HWY_TARGET >= HWY_SSE4
// Without F16C, Highway 1.0 emulates the f16 conversions without infinities or NaN and with a truncating
// demotion: these targets convert lane by lane with the scalar routines (exact; round to nearest even).
#define TESSERA_F16_BY_LANE 1
template <class D>
HWY_INLINE hn::Vec<D> LoadF(D d, const F16* p) {
  HWY_ALIGN float tmp[16];
  for (size_t i = 0; i < hn::Lanes(d); ++i) tmp[i] = ld(p + i);
  return hn::Load(d, tmp);
}
#else
template <class D>
HWY_INLINE hn::Vec<D> LoadF(D d, const F16* p) { return hn::PromoteTo(d, hn::LoadU(hn::Rebind<F16, D>(), p)); }
#endif

// Loads 2 * Lanes(d) elements at p as two f32 vectors, for loops whose result does not depend on the order
// of the elements (max, min, sums of exp(x - m) over a row, whose order is then fixed per n anyway). bf16:
// one load of 32-bit lanes, the even elements by a shift and the odd ones by a mask (2 operations for
// 2 vectors, against 2 widening loads and 2 shifts); other types: the two halves in order.
template <class D, typename T>
HWY_INLINE void LoadF2(D d, const T* p, hn::Vec<D>& a, hn::Vec<D>& b) {
  if constexpr (std::is_same_v<T, BF16>) {
    const hn::RebindToUnsigned<D> du;
    const auto raw = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    a = hn::BitCast(d, hn::ShiftLeft<16>(raw));
    b = hn::BitCast(d, hn::And(raw, hn::Set(du, 0xffff0000u)));
  } else {
    a = LoadF(d, p);
    b = LoadF(d, p + hn::Lanes(d));
  }
}

// kNoNaN (bf16 only): the caller knows no lane is NaN, and the rounding skips the NaN case (3 of its 8
// operations per vector; softmax outputs, whose rows with a NaN take another path).
template <bool kNoNaN = false, class D>
HWY_INLINE void StoreF(D d, hn::Vec<D> v, float* p) { hn::StoreU(v, d, p); }
template <bool kNoNaN = false, class D>
HWY_INLINE void StoreF(D d, hn::Vec<D> v, F16* p) {
#ifdef TESSERA_F16_BY_LANE
  HWY_ALIGN float tmp[16];
  hn::Store(v, d, tmp);
  for (size_t i = 0; i < hn::Lanes(d); ++i) st(p + i, tmp[i]);
#else
  const hn::Rebind<F16, D> dh;
  hn::StoreU(hn::DemoteTo(dh, v), dh, p);
#endif
}
// The f32 bits of each lane rounded to nearest even at bit 16: the bf16 bits are the high half (NaN not
// handled).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> BF16Round(D, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto u = hn::BitCast(du, v);
  return hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u))));
}
// The bf16 bits of each f32 lane, in the low half of a 32-bit lane: round to nearest even (Highway 1.0's
// DemoteTo truncates); NaN stays a quiet NaN (kNoNaN: no lane is NaN).
template <bool kNoNaN = false, class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> BF16Bits(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto r = hn::ShiftRight<16>(BF16Round(d, v));
  if constexpr (kNoNaN) {
    return hn::BitCast(di, r);
  } else {
    const auto hi = hn::ShiftRight<16>(hn::BitCast(du, v));  // NaN: its own high half, made quiet
    return hn::BitCast(di, hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Or(hi, hn::Set(du, 0x40u)), r));
  }
}
template <bool kNoNaN = false, class D>
HWY_INLINE void StoreF(D d, hn::Vec<D> v, BF16* p) {
  const hn::Rebind<uint16_t, D> du16;
  hn::StoreU(hn::DemoteTo(du16, BF16Bits<kNoNaN>(d, v)), du16, reinterpret_cast<uint16_t*>(p));
}

using DF = hn::ScalableTag<float>;
// At most 256-bit vectors: for loops bound by streaming loads (see Sum in prims.cc).
using DS = hn::CappedTag<float, 8>;

// Non-temporal variants of StoreF: p must be aligned to the stored vector's size.
template <bool kNoNaN = false, class D>
HWY_INLINE void StreamF(D d, hn::Vec<D> v, float* p) { hn::Stream(v, d, p); }
template <bool kNoNaN = false, class D>
HWY_INLINE void StreamF(D d, hn::Vec<D> v, F16* p) {
#ifdef TESSERA_F16_BY_LANE
  StoreF(d, v, p);
#else
  const hn::Rebind<F16, D> dh;
  const hn::RebindToUnsigned<decltype(dh)> du;
  if constexpr (hn::MaxLanes(du) * sizeof(uint16_t) < 16)  // a partial vector: see StreamF for bf16
    hn::StoreU(hn::BitCast(du, hn::DemoteTo(dh, v)), du, reinterpret_cast<uint16_t*>(p));
  else
    hn::Stream(hn::BitCast(du, hn::DemoteTo(dh, v)), du, reinterpret_cast<uint16_t*>(p));
#endif
}
template <bool kNoNaN = false, class D>
HWY_INLINE void StreamF(D d, hn::Vec<D> v, BF16* p) {
  const hn::Rebind<uint16_t, D> du16;
  const auto r = BF16Bits<kNoNaN>(d, v);
  // Highway 1.0 streams a whole 16-byte register even for a partial vector (4 bf16 lanes on SSE4), which
  // wrote 8 bytes past the end: partial vectors are stored normally.
  if constexpr (hn::MaxLanes(du16) * sizeof(uint16_t) < 16)
    hn::StoreU(hn::DemoteTo(du16, r), du16, reinterpret_cast<uint16_t*>(p));
  else
    hn::Stream(hn::DemoteTo(du16, r), du16, reinterpret_cast<uint16_t*>(p));
}

// y[i] = f(i) for i < n: vec(i) gives lanes [i, i + N), one(i) a single element (ends, alignment prologue).
// Streamed stores are not fenced here: the operator calls stream_fence() once after its last one.
template <bool kStream, bool kNoNaN = false, typename T, class Vec, class One>
HWY_INLINE void MapOut(T* y, size_t n, Vec&& vec, One&& one) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  if (kStream)
    for (; i < n && reinterpret_cast<uintptr_t>(y + i) % (N * sizeof(T)) != 0; ++i) st(y + i, one(i));
  for (; i + N <= n; i += N) {
    if (kStream) StreamF<kNoNaN>(d, vec(i), y + i);
    else StoreF<kNoNaN>(d, vec(i), y + i);
  }
  for (; i < n; ++i) st(y + i, one(i));
}

#if HWY_TARGET == HWY_AVX2
// bf16 outputs on AVX2, two vectors per store: StoreF's rounding, then one pack and one lane permute for 16
// elements instead of a pack, a permute and a 128-bit store for each 8 (Highway's DemoteTo). Stores or
// streams 32 bytes (streamed: p aligned to 32). AVX2 has no bf16 instructions, so these stores bound bf16
// outputs in cache and the saved shuffles show (docs/kernel.md, Zen 3 host).
template <bool kStream, bool kNoNaN>
HWY_INLINE void StoreBF16x2(hn::Vec<DF> v0, hn::Vec<DF> v1, BF16* p) {
  const DF d;
  const __m256i packed = _mm256_permute4x64_epi64(
      _mm256_packus_epi32(BF16Bits<kNoNaN>(d, v0).raw, BF16Bits<kNoNaN>(d, v1).raw), 0xD8);
  if (kStream) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), packed);
  else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
}

template <bool kStream, bool kNoNaN = false, class Vec, class One>
HWY_INLINE void MapOut(BF16* y, size_t n, Vec&& vec, One&& one) {
  const DF d;
  constexpr size_t N = 8;
  size_t i = 0;
  if (kStream)
    for (; i < n && reinterpret_cast<uintptr_t>(y + i) % 32 != 0; ++i) st(y + i, one(i));
  for (; i + 2 * N <= n; i += 2 * N) StoreBF16x2<kStream, kNoNaN>(vec(i), vec(i + N), y + i);
  for (; i + N <= n; i += N) {
    if (kStream) StreamF<kNoNaN>(d, vec(i), y + i);
    else StoreF<kNoNaN>(d, vec(i), y + i);
  }
  for (; i < n; ++i) st(y + i, one(i));
}
#endif

#undef TESSERA_F16_BY_LANE
}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernel::ops
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
