// Scalar reference of reduce() for tests and `tessera-perf -c`: element access by type through double,
// and the expected result of a collective reduction of exactly representable inputs, written independently
// of the kernels (plain scalar code, same documented arithmetic). Header-only, no state.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "coll/types.h"

namespace tessera::coll::ref {

inline float bf16_to_float(uint16_t b) { return bf16_bits_to_f32(b); }
inline uint16_t float_to_bf16(float f) { return f32_to_bf16_bits(f); }
inline float f16_to_float(uint16_t h) { return f16_bits_to_f32(h); }
inline uint16_t float_to_f16(float f) { return f32_to_f16_bits(f); }

inline double load(const void* p, size_t i, DType t) {
  switch (t) {
    case DType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DType::kUint8: return static_cast<const uint8_t*>(p)[i];
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kUint32: return static_cast<const uint32_t*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::kFloat16: return f16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DType::kUint16: return static_cast<const uint16_t*>(p)[i];
    case DType::kLongDouble: return static_cast<double>(static_cast<const long double*>(p)[i]);
    // Complex elements: the real part (test inputs have a zero imaginary part; store() writes one).
    case DType::kComplex64: return static_cast<const std::complex<float>*>(p)[i].real();
    case DType::kComplex128: return static_cast<const std::complex<double>*>(p)[i].real();
  }
  return 0;
}

// Integers narrower than 64 bits go through int64: a result out of their range wraps, as the kernels'
// integer arithmetic does (a double converted straight to a narrower integer out of range is undefined).
inline void store(void* p, size_t i, DType t, double v) {
  switch (t) {
    case DType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case DType::kUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case DType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); break;
    case DType::kUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(static_cast<int64_t>(v)); break;
    case DType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::kUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DType::kFloat16: static_cast<uint16_t*>(p)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::kBFloat16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(static_cast<int64_t>(v)); break;
    case DType::kUint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(static_cast<int64_t>(v)); break;
    case DType::kLongDouble: static_cast<long double*>(p)[i] = v; break;
    case DType::kComplex64: static_cast<std::complex<float>*>(p)[i] = {static_cast<float>(v), 0.0f}; break;
    case DType::kComplex128: static_cast<std::complex<double>*>(p)[i] = {v, 0.0}; break;
  }
}

// Inputs whose reductions are exact in every type for up to 16 members, and that tell members apart and
// elements apart, so that a reduction combining the wrong members' data (one member's input twice, its own
// input n times, min for max, or for xor) gives a wrong result somewhere. Each value derives from a residue
// h = (a*rank + f(i) + seed) mod m, m prime and a not a multiple of m: at every element any m consecutive
// members hold m different residues (no period in rank below m), and f(i) = 5i + 3(i/m) + 7(i/m^2) steps by
// 5, 8 or 15, never 0, from one element to the next and repeats only after m^3 elements (reduce_scatter's
// blocks of equal counts carry different data).
//   sum, avg: m = 17; signed and floating types h - 8 (-8..8), unsigned h (0..16). Sums of up to 17
//     different values stay within -36..36 and 0..136: exact in int8, uint8 and bfloat16 (8 significant
//     bits: integers to 256). Any 17 consecutive signed members sum to 0, so signed sums stay exact at any
//     count; unsigned ones beyond 17 members wrap (store() wraps like the kernels).
//   min, max: m = 251; signed h - 125, unsigned h: exact in every type (bfloat16: integers to 256). With
//     a = 97 the members' residues spread over the range, and the member holding the extreme changes from
//     element to element, so the result depends on which members take part.
//   prod: from the residue mod 17: 2 for h 0..3, -1 for h 4..6 (1 in unsigned and complex types: a product
//     of two negative reals has a -0 imaginary part), else 1. Any 17 consecutive members feed 4 twos and 3
//     minus ones at each element: |product| <= 16 up to 17 members, exact in every type.
//   band, bor, bxor: 8-bit patterns (signed types: as int8, so bit 7 makes them negative and sign-extends):
//     bits 0-4 the residue mod 17 (different per member; bit 4 only at h = 16, which one member holds: or
//     and xor see it), bit 5 everywhere but h = 1 (one member clears it: and sees it), bits 6-7 the
//     element's (i + seed) mod 4 in every member (and is non-zero at 3 elements of 4 at every member
//     count; or differs from xor there when the count is even).
namespace detail {
inline unsigned residue(int rank, size_t i, unsigned seed, uint64_t m, uint64_t a) {
  const uint64_t e = i, f = 5 * e + 3 * (e / m) + 7 * (e / (m * m));
  return static_cast<unsigned>((a * static_cast<uint64_t>(rank) + f + seed) % m);
}
}  // namespace detail

inline double input_value(int rank, size_t i, DType t, Op op, unsigned seed = 0) {
  const bool is_signed =
      t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 || is_float(t);
  switch (op) {
    case Op::kSum: case Op::kAvg: {
      const unsigned h = detail::residue(rank, i, seed, 17, 7);
      return is_signed ? static_cast<double>(h) - 8 : static_cast<double>(h);
    }
    case Op::kMin: case Op::kMax: {
      const unsigned h = detail::residue(rank, i, seed, 251, 97);
      return is_signed ? static_cast<double>(h) - 125 : static_cast<double>(h);
    }
    case Op::kProd: {
      const unsigned h = detail::residue(rank, i, seed, 17, 7);
      if (h <= 3) return 2;
      return h <= 6 && is_signed && !is_complex(t) ? -1 : 1;
    }
    case Op::kBand: case Op::kBor: case Op::kBxor: {
      const unsigned h = detail::residue(rank, i, seed, 17, 7);
      const unsigned p = h | (h != 1 ? 0x20u : 0u) | static_cast<unsigned>((i + seed) % 4) << 6;
      return is_signed && p >= 0x80 ? static_cast<double>(p) - 256 : static_cast<double>(p);
    }
  }
  return 0;
}

// Expected result of reducing input_value(0..n-1, i) (exact for these inputs up to 16 members), stored as
// type t at dst[0].
inline void expected(void* dst, size_t i, DType t, Op op, int n, unsigned seed = 0) {
  double acc = input_value(0, i, t, op, seed);
  for (int r = 1; r < n; ++r) {
    double v = input_value(r, i, t, op, seed);
    switch (op) {
      case Op::kSum: case Op::kAvg: acc += v; break;
      case Op::kProd: acc *= v; break;
      case Op::kMin: acc = std::min(acc, v); break;
      case Op::kMax: acc = std::max(acc, v); break;
      // Two's complement operands (inputs are small integers, exact as int64).
      case Op::kBand: acc = static_cast<double>(static_cast<int64_t>(acc) & static_cast<int64_t>(v)); break;
      case Op::kBor: acc = static_cast<double>(static_cast<int64_t>(acc) | static_cast<int64_t>(v)); break;
      case Op::kBxor: acc = static_cast<double>(static_cast<int64_t>(acc) ^ static_cast<int64_t>(v)); break;
    }
  }
  if (op == Op::kAvg && t == DType::kLongDouble) {  // divided in long double, as the kernel does
    static_cast<long double*>(dst)[0] = static_cast<long double>(acc) / n;
    return;
  }
  if (op == Op::kAvg) {
    if (t == DType::kFloat64 || t == DType::kComplex128) acc = acc / n;
    else if (is_float(t)) acc = static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
    else acc = std::trunc(acc / n);
  }
  store(dst, 0, t, acc);
}

}  // namespace tessera::coll::ref
