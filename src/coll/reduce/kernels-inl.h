// Reduction kernels, compiled once per instruction set (kernels_avx2.cc, kernels_base.cc) inside the
// namespace TESSERA_KERNEL_NS. Included only by those files. See reduce.h for the arithmetic contract.
#include <cstdint>
#include <type_traits>

#include "base/half.h"
#include "coll/types.h"

namespace tessera::coll::TESSERA_KERNEL_NS {

using ReduceFn = void (*)(void*, const void* const*, int, size_t, int op, int divide);

struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };

// The scalar conversions of base/half.h: the same bits as every other layer's.
inline float to_acc(F16 h) { return f16_bits_to_f32(h.bits); }
inline F16 from_acc(float v, F16*) { return F16{f32_to_f16_bits(v)}; }
inline float to_acc(BF16 h) { return bf16_bits_to_f32(h.bits); }
inline BF16 from_acc(float v, BF16*) { return BF16{f32_to_bf16_bits(v)}; }
template <typename T> inline T to_acc(T v) { return v; }
template <typename T> inline T from_acc(T v, T*) { return v; }

template <typename T> struct AccOf { using type = T; };
template <> struct AccOf<F16> { using type = float; };
template <> struct AccOf<BF16> { using type = float; };

// Integers fold in the unsigned type of the same width: wrap-around without undefined behaviour.
template <typename A> struct Arith { using type = A; };
template <> struct Arith<int8_t> { using type = uint8_t; };
template <> struct Arith<int32_t> { using type = uint32_t; };
template <> struct Arith<int64_t> { using type = uint64_t; };

template <int kOp, typename A>
inline A apply(A a, A b) {
  using U = typename Arith<A>::type;
  if constexpr (kOp == static_cast<int>(Op::kSum) || kOp == static_cast<int>(Op::kAvg)) {
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else if constexpr (kOp == static_cast<int>(Op::kProd)) {
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    else
      return a * b;
  } else if constexpr (kOp == static_cast<int>(Op::kMin)) {
    return b < a ? b : a;
  } else {
    return a < b ? b : a;
  }
}

constexpr size_t kTile = 512;

template <typename T, int kOp>
void reduce_t(void* dst_v, const void* const* srcs, int nsrc, size_t count, int divide) {
  using A = typename AccOf<T>::type;
  T* dst = static_cast<T*>(dst_v);
  constexpr bool kSame = std::is_same_v<A, T>;
  if (kSame && nsrc == 2 && divide <= 0) {
    // The common case (two sources, native arithmetic): one pass, vectorised by the compiler.
    const T* a = static_cast<const T*>(srcs[0]);
    const T* b = static_cast<const T*>(srcs[1]);
    for (size_t i = 0; i < count; ++i) dst[i] = from_acc(apply<kOp, A>(to_acc(a[i]), to_acc(b[i])), (T*)nullptr);
    return;
  }
  alignas(64) A acc[kTile];
  for (size_t base = 0; base < count; base += kTile) {
    const size_t n = count - base < kTile ? count - base : kTile;
    const T* s0 = static_cast<const T*>(srcs[0]) + base;
    for (size_t i = 0; i < n; ++i) acc[i] = to_acc(s0[i]);
    for (int k = 1; k < nsrc; ++k) {
      const T* s = static_cast<const T*>(srcs[k]) + base;
      for (size_t i = 0; i < n; ++i) acc[i] = apply<kOp, A>(acc[i], to_acc(s[i]));
    }
    if (kOp == static_cast<int>(Op::kAvg) && divide > 0) {
      const A d = static_cast<A>(divide);
      for (size_t i = 0; i < n; ++i) acc[i] = acc[i] / d;
    }
    T* o = dst + base;
    for (size_t i = 0; i < n; ++i) o[i] = from_acc(acc[i], (T*)nullptr);
  }
}

template <typename T>
void reduce_any(void* dst, const void* const* srcs, int nsrc, size_t count, int op, int divide) {
  switch (static_cast<Op>(op)) {
    case Op::kSum: return reduce_t<T, 0>(dst, srcs, nsrc, count, 0);
    case Op::kProd: return reduce_t<T, 1>(dst, srcs, nsrc, count, 0);
    case Op::kMin: return reduce_t<T, 2>(dst, srcs, nsrc, count, 0);
    case Op::kMax: return reduce_t<T, 3>(dst, srcs, nsrc, count, 0);
    case Op::kAvg: return reduce_t<T, 4>(dst, srcs, nsrc, count, divide);
  }
}

inline const ReduceFn kTable[kNumDTypes] = {
    &reduce_any<int8_t>,  &reduce_any<uint8_t>,  &reduce_any<int32_t>, &reduce_any<uint32_t>,
    &reduce_any<int64_t>, &reduce_any<uint64_t>, &reduce_any<F16>,     &reduce_any<BF16>,
    &reduce_any<float>,   &reduce_any<double>,
};

}  // namespace tessera::coll::TESSERA_KERNEL_NS
