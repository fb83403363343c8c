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

inline void store(void* p, size_t i, DType t, double v) {
  switch (t) {
    case DType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::kUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::kUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::kUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DType::kFloat16: static_cast<uint16_t*>(p)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::kBFloat16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DType::kUint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DType::kLongDouble: static_cast<long double*>(p)[i] = v; break;
    case DType::kComplex64: static_cast<std::complex<float>*>(p)[i] = {static_cast<float>(v), 0.0f}; break;
    case DType::kComplex128: static_cast<std::complex<double>*>(p)[i] = {v, 0.0}; break;
  }
}

// Inputs whose reductions are exact in every type for up to 8 members, and that differ from member to
// member and from element to element, so that a reduction combining the wrong members' data (one member's
// input twice, its own input n times, min for max) gives a wrong result somewhere:
//   sum, avg, min, max: small integers, (3*rank + 5*i + seed) mod 7; 3 is invertible mod 7, so any 7
//     consecutive ranks feed 7 different values at each element (signed types: -3..3, unsigned: 0..6; sums of
//     8 stay within int8 and are exact in bfloat16);
//   prod: 2 where (rank + i + seed) mod 3 == 0, else 1: at most 3 twos among 8 members (product <= 8), and
//     each member's twos sit at other elements than its neighbours'.
inline double input_value(int rank, size_t i, DType t, Op op, unsigned seed = 0) {
  const unsigned r = static_cast<unsigned>(rank), e = static_cast<unsigned>(i % 100003);
  if (op == Op::kProd) return (r + e + seed) % 3 == 0 ? 2 : 1;
  const unsigned h = (3u * r + 5u * e + seed) % 7;
  const bool is_signed =
      t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 || is_float(t);
  return is_signed ? static_cast<double>(h) - 3 : static_cast<double>(h);
}

// Expected result of reducing input_value(0..n-1, i) (exact for these inputs), stored as type t at dst[0].
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
