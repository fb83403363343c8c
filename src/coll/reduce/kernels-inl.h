// Reduction kernels, compiled once per instruction set (kernels_avx2.cc, kernels_base.cc) inside the
// namespace TESSERA_KERNEL_NS. Included only by those files. See reduce.h for the arithmetic contract.
#include <complex>
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
// 16-bit products would promote to int and overflow it: fold those in 32 bits, then truncate.
template <> struct Arith<int16_t> { using type = uint32_t; };
template <> struct Arith<uint16_t> { using type = uint32_t; };

template <typename T> inline constexpr bool kComplex = false;
template <typename T> inline constexpr bool kComplex<std::complex<T>> = true;

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
  } else if constexpr (kOp == static_cast<int>(Op::kMax)) {
    return a < b ? b : a;
  } else if constexpr (kOp == static_cast<int>(Op::kBand)) {
    return static_cast<A>(a & b);
  } else if constexpr (kOp == static_cast<int>(Op::kBor)) {
    return static_cast<A>(a | b);
  } else {
    return static_cast<A>(a ^ b);
  }
}

constexpr size_t kTile = 512;

// Stores a result element. A long double fills 10 of its 16 bytes: the other six are written as zeros, so
// that equal results are equal bytes on every member (the result hash of TESSERA_CHECK=1, comparisons);
// and its destination may be 8-byte aligned, as its sources (get).
// Loads element i. Sources sit in staging slots and LL buffers at 8-byte alignment, below the 16 that
// long double asks for: its loads go through bytes (the other types need at most 8).
template <typename T>
inline T get(const T* p, size_t i) {
  if constexpr (alignof(T) > 8) {
    T v;
    std::memcpy(static_cast<void*>(&v), p + i, sizeof(T));
    return v;
  } else {
    return p[i];
  }
}

// Through bytes: a zeroing store followed by an assignment lets the compiler drop the zeros, as the
// assignment writes a whole long double object as far as it is concerned.
template <typename T>
inline void put(T* p, T v) {
  if constexpr (std::is_same_v<T, long double>) {
    unsigned char b[sizeof(T)] = {};
    std::memcpy(b, &v, 10);  // the x87 extended format's 80 bits
    std::memcpy(static_cast<void*>(p), b, sizeof(T));
  } else {
    *p = v;
  }
}

template <typename T, int kOp>
void reduce_t(void* dst_v, const void* const* srcs, int nsrc, size_t count, int divide) {
  using A = typename AccOf<T>::type;
  T* dst = static_cast<T*>(dst_v);
  constexpr bool kSame = std::is_same_v<A, T>;
  if (kSame && nsrc == 2 && divide <= 0) {
    // The common case (two sources, native arithmetic): one pass, vectorised by the compiler.
    const T* a = static_cast<const T*>(srcs[0]);
    const T* b = static_cast<const T*>(srcs[1]);
    for (size_t i = 0; i < count; ++i) put(dst + i, from_acc(apply<kOp, A>(to_acc(get(a, i)), to_acc(get(b, i))), (T*)nullptr));
    return;
  }
  alignas(64) A acc[kTile];
  for (size_t base = 0; base < count; base += kTile) {
    const size_t n = count - base < kTile ? count - base : kTile;
    const T* s0 = static_cast<const T*>(srcs[0]) + base;
    for (size_t i = 0; i < n; ++i) acc[i] = to_acc(get(s0, i));
    for (int k = 1; k < nsrc; ++k) {
      const T* s = static_cast<const T*>(srcs[k]) + base;
      for (size_t i = 0; i < n; ++i) acc[i] = apply<kOp, A>(acc[i], to_acc(get(s, i)));
    }
    if (kOp == static_cast<int>(Op::kAvg) && divide > 0) {
      const A d = static_cast<A>(divide);
      for (size_t i = 0; i < n; ++i) acc[i] = acc[i] / d;
    }
    T* o = dst + base;
    for (size_t i = 0; i < n; ++i) put(o + i, from_acc(acc[i], (T*)nullptr));
  }
}

// Operators a type does not have (op_applies in types.h) are refused before a kernel is called.
template <typename T>
void reduce_any(void* dst, const void* const* srcs, int nsrc, size_t count, int op, int divide) {
  constexpr bool kOrdered = !kComplex<T>, kBits = std::is_integral_v<T>;
  switch (static_cast<Op>(op)) {
    case Op::kSum: return reduce_t<T, 0>(dst, srcs, nsrc, count, 0);
    case Op::kProd: return reduce_t<T, 1>(dst, srcs, nsrc, count, 0);
    case Op::kMin: if constexpr (kOrdered) return reduce_t<T, 2>(dst, srcs, nsrc, count, 0); break;
    case Op::kMax: if constexpr (kOrdered) return reduce_t<T, 3>(dst, srcs, nsrc, count, 0); break;
    case Op::kAvg: return reduce_t<T, 4>(dst, srcs, nsrc, count, divide);
    case Op::kBand: if constexpr (kBits) return reduce_t<T, 5>(dst, srcs, nsrc, count, 0); break;
    case Op::kBor: if constexpr (kBits) return reduce_t<T, 6>(dst, srcs, nsrc, count, 0); break;
    case Op::kBxor: if constexpr (kBits) return reduce_t<T, 7>(dst, srcs, nsrc, count, 0); break;
  }
  __builtin_trap();
}

inline const ReduceFn kTable[kNumDTypes] = {
    &reduce_any<int8_t>,  &reduce_any<uint8_t>,  &reduce_any<int32_t>,     &reduce_any<uint32_t>,
    &reduce_any<int64_t>, &reduce_any<uint64_t>, &reduce_any<F16>,         &reduce_any<BF16>,
    &reduce_any<float>,   &reduce_any<double>,   &reduce_any<int16_t>,     &reduce_any<uint16_t>,
    &reduce_any<long double>, &reduce_any<std::complex<float>>, &reduce_any<std::complex<double>>,
};

}  // namespace tessera::coll::TESSERA_KERNEL_NS
