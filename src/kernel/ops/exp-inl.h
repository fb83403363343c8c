// exp(x) for x <= 0, the only range softmax needs (x - max(row)). Per Highway target (include toggle).
//
// Contract: x finite and <= 0, or -inf. Relative error <= 2.6 ulp for x >= -10, <= 3.7 ulp for x >= -43,
// <= 5.1 ulp for x >= -86 (the reduction's error grows with n, see below; the measured maxima are in
// docs/kernel.md; unit.kernel Prims.ExpStaysWithinItsUlpBounds); results below exp(-86) (~4e-38,
// where f32 turns subnormal) are flushed to 0, and -inf gives 0. NaN inputs are the caller's to
// handle (the operators check the row maximum first). About 12 vector ops, half of Highway's Exp, which
// also handles the overflow range that softmax never reaches; on AVX-512, VSCALEFPS applies 2^n and the
// flush in one masked instruction.
// kFlush = false: the caller guarantees x >= -86 (softmax knows it from the row's minimum), and the
// compare and mask of the flush are left out: 2 of ~15 operations per vector, which on AVX2 share the two
// FMA pipes with the polynomial, so leaving them out speeds up the exp loop and softmax (docs/kernel.md).
// Outside that range the result is garbage.
#if defined(TESSERA_KERNEL_OPS_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_KERNEL_OPS_EXP_INL_H_
#undef TESSERA_KERNEL_OPS_EXP_INL_H_
#else
#define TESSERA_KERNEL_OPS_EXP_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// 2^n * p in one instruction (VSCALEFPS), lanes where `keep` is false set to 0.
HWY_INLINE hwy::HWY_NAMESPACE::Vec512<float> ScaleByPow2(hwy::HWY_NAMESPACE::Mask512<float> keep,
                                                         hwy::HWY_NAMESPACE::Vec512<float> p,
                                                         hwy::HWY_NAMESPACE::Vec512<float> n) {
  return hwy::HWY_NAMESPACE::Vec512<float>{_mm512_maskz_scalef_ps(keep.raw, p.raw, n.raw)};
}
HWY_INLINE hwy::HWY_NAMESPACE::Vec256<float> ScaleByPow2(hwy::HWY_NAMESPACE::Mask256<float> keep,
                                                         hwy::HWY_NAMESPACE::Vec256<float> p,
                                                         hwy::HWY_NAMESPACE::Vec256<float> n) {
  return hwy::HWY_NAMESPACE::Vec256<float>{_mm256_maskz_scalef_ps(keep.raw, p.raw, n.raw)};
}
HWY_INLINE hwy::HWY_NAMESPACE::Vec512<float> ScaleByPow2(hwy::HWY_NAMESPACE::Vec512<float> p,
                                                         hwy::HWY_NAMESPACE::Vec512<float> n) {
  return hwy::HWY_NAMESPACE::Vec512<float>{_mm512_scalef_ps(p.raw, n.raw)};
}
HWY_INLINE hwy::HWY_NAMESPACE::Vec256<float> ScaleByPow2(hwy::HWY_NAMESPACE::Vec256<float> p,
                                                         hwy::HWY_NAMESPACE::Vec256<float> n) {
  return hwy::HWY_NAMESPACE::Vec256<float>{_mm256_scalef_ps(p.raw, n.raw)};
}
#undef TESSERA_EXP_SCALEF
#define TESSERA_EXP_SCALEF 1
#else
#undef TESSERA_EXP_SCALEF
#define TESSERA_EXP_SCALEF 0
#endif

// The same for one element (row tails), with the same flush.
template <bool kFlush = true>
HWY_INLINE float ExpNonPositive1(float x) {
  return (kFlush && !(x >= -86.0f)) ? 0.0f : std::exp(x);
}

template <bool kFlush = true, class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  // Range reduction: x = n ln2 + r, |r| <= ln2/2, with ln2 rounded to f32 (one FMA; ln2 - fl(ln2) =
  // -1.9e-9, so r is off by up to |n| * 1.9e-9: 0.5 ulp at n = -29 (x = -20), 2 ulp at n = -124). Cody-Waite's
  // two-part ln2 kept the error at 2.4 ulp everywhere, for one more FMA of the ~9 that share the two FMA pipes;
  // with one the exp loop and softmax in cache run measurably faster (docs/kernel.md).
  // Terms below exp(-10) weigh under 5e-5 of a softmax row's sum, so the larger error there does not show.
  // exp(r) ~ 1 + c0 r + c1 r^2 + ... + c4 r^5: a relative-error minimax on [-ln2/2, ln2/2] (max 9e-8, <= 3
  // ulp evaluated in f32), evaluated in Estrin's form, (1 + c0 r) + r^2 ((c1 + c2 r) + r^2 (c3 + c4 r)):
  // a dependency chain of three steps instead of Horner's six, so more lanes are in flight (softmax is
  // bound by this function, and by its latency more than by its operation count).
  const V c0 = hn::Set(d, 9.999997071857704e-1f), c1 = hn::Set(d, 4.999914952335432e-1f);
  const V c2 = hn::Set(d, 1.6667636201992234e-1f), c3 = hn::Set(d, 4.189793026105677e-2f);
  const V c4 = hn::Set(d, 8.290314642148027e-3f);
#if TESSERA_EXP_SCALEF
  const V n = hn::Round(hn::Mul(x, hn::Set(d, 1.44269504088896341f)));
#else
  // n is rounded by adding 1.5 * 2^23, which leaves n in the low mantissa bits of t, so (bits(t) << 23)
  // is n << 23 exactly.
  const V kMagic = hn::Set(d, 12582912.0f);
  const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), kMagic);
  const V n = hn::Sub(t, kMagic);
#endif
#if HWY_NATIVE_FMA
  const V r = hn::MulAdd(n, hn::Set(d, -0.6931471805599453f), x);
#else
  // Without FMA, n * ln2 is rounded before the add: ln2 in two parts, n * ln2_hi exact (Cody-Waite).
  V r = hn::MulAdd(n, hn::Set(d, -0.693359375f), x);
  r = hn::MulAdd(n, hn::Set(d, 2.12194440e-4f), r);
#endif
  const V rr = hn::Mul(r, r);
  const V lo = hn::MulAdd(c0, r, hn::Set(d, 1.0f));
  const V mid = hn::MulAdd(c2, r, c1);
  const V hi = hn::MulAdd(c4, r, c3);
  const V e = hn::MulAdd(hn::MulAdd(hi, rr, mid), rr, lo);
#if TESSERA_EXP_SCALEF
  // Lanes below -86 (and -inf, whose reduction above gave NaN) are zeroed by the mask.
  if constexpr (!kFlush) return ScaleByPow2(e, n);
  else return ScaleByPow2(hn::Ge(x, hn::Set(d, -86.0f)), e, n);
#else
  // Scale by 2^n with an integer add on the exponent field.
  const hn::RebindToSigned<D> di;
  const auto scaled = hn::BitCast(d, hn::Add(hn::BitCast(di, e), hn::ShiftLeft<23>(hn::BitCast(di, t))));
  if constexpr (!kFlush) return scaled;
  else return hn::IfThenElseZero(hn::Ge(x, hn::Set(d, -86.0f)), scaled);  // below: 0 (also -inf, NaN)
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernel::ops
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
