// Helpers for the kernel operator tests: typed buffers, random fill, double-precision views.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernel.hpp"

namespace tessera::kernel::testing {

// A tensor's storage in any dtype, with element access as double (exactly the stored value).
struct Buf {
  DType dt;
  Shape shape;
  std::vector<uint8_t> bytes;
  Buf(DType t, Shape s) : dt(t), shape(s), bytes(static_cast<size_t>(s.numel()) * dtype_size(t) + 64) {}
  size_t size() const { return static_cast<size_t>(shape.numel()); }
  double get(size_t i) const {
    if (dt == DType::kF32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return dt == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
  }
  void set(size_t i, double v) {
    const float f = static_cast<float>(v);
    if (dt == DType::kF32) {
      std::memcpy(bytes.data() + 4 * i, &f, 4);
      return;
    }
    const uint16_t h = dt == DType::kBF16 ? f32_to_bf16(f) : f32_to_f16(f);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  void fill_uniform(uint64_t seed, double lo, double hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    for (size_t i = 0; i < size(); ++i) set(i, u(rng));
  }
  Tensor t() { return Tensor{bytes.data(), dt, shape}; }
  ConstTensor ct() const { return ConstTensor{bytes.data(), dt, shape}; }
};

// Relative precision of one rounding to the dtype (half an ulp at 1.0).
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::kF32: return 0x1p-24;
    case DType::kF16: return 0x1p-11;
    case DType::kBF16: return 0x1p-8;
  }
  return 1;
}

inline const char* name_of(DType t) { return dtype_name(t); }

inline std::vector<DType> all_dtypes() { return {DType::kF32, DType::kF16, DType::kBF16}; }

}  // namespace tessera::kernel::testing
