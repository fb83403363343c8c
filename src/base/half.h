// Scalar conversions between float and the 16-bit storage types bfloat16 and float16 (as raw bits).
// Round to nearest even; a NaN stays a (quiet) NaN. The one definition: the collective reduction kernels,
// the kernel operators' scalar tails and the public API all call these (SIMD loops keep their own vector
// conversions, tested bit for bit against these).
//
// Always inlined: coll/reduce/kernels_avx2.cc includes this header compiled with -mf16c, and an out-of-line
// copy emitted there could be the one the linker keeps for every caller, running F16C instructions on a
// CPU without them.
#pragma once
#include <cstdint>
#include <cstring>

namespace tessera {

[[gnu::always_inline]] inline float bf16_bits_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A select rather than a branch, so that loops calling it (the reduction kernels) still vectorise.
[[gnu::always_inline]] inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

[[gnu::always_inline]] inline float f16_bits_to_f32(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

[[gnu::always_inline]] inline uint16_t f32_to_f16_bits(float f) {
  _Float16 v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
}

}  // namespace tessera
