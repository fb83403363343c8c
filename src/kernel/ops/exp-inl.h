// exp(x) for x <= 0, the only range softmax needs (x - max(row)). Per Highway target (include toggle).
//
// Contract: x finite and <= 0, or -inf. Relative error <= 4 ulp for x >= -86; results below exp(-86)
// (~4e-38, where f32 turns subnormal) are flushed to 0, and -inf gives 0. NaN inputs are the caller's to
// handle (the operators check the row maximum first). About 12 vector ops, half of Highway's Exp, which
// also handles the overflow range that softmax never reaches.
#if defined(TESSERA_KERNEL_OPS_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_KERNEL_OPS_EXP_INL_H_
#undef TESSERA_KERNEL_OPS_EXP_INL_H_
#else
#define TESSERA_KERNEL_OPS_EXP_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tessera::kernel::ops {
namespace HWY_NAMESPACE {

template <class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToSigned<D> di;
  // Range reduction: x = n ln2 + r, |r| <= ln2/2. n is rounded by adding 1.5 * 2^23, which leaves n in
  // the low mantissa bits of t, so (bits(t) << 23) is n << 23 exactly.
  const V kMagic = hn::Set(d, 12582912.0f);
  const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), kMagic);
  const V n = hn::Sub(t, kMagic);
  V r = hn::MulAdd(n, hn::Set(d, -0.693359375f), x);
  r = hn::MulAdd(n, hn::Set(d, 2.12194440e-4f), r);
  // exp(r) ~ 1 + r * P(r), P of degree 4: relative-error minimax on [-ln2/2, ln2/2] (max 9e-8, <= 3 ulp
  // evaluated in f32). Five FMAs instead of Cephes' eight: softmax is bound by this polynomial.
  V p = hn::Set(d, 8.290314642148027e-3f);
  p = hn::MulAdd(p, r, hn::Set(d, 4.189793026105677e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6667636201992234e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.999914952335432e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 9.999997071857704e-1f));
  const V e = hn::MulAdd(p, r, hn::Set(d, 1.0f));
  // Scale by 2^n with an integer add on the exponent field.
  const auto scaled = hn::Add(hn::BitCast(di, e), hn::ShiftLeft<23>(hn::BitCast(di, t)));
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -86.0f)), hn::BitCast(d, scaled));
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernel::ops
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
