// Codes for the phase between hosts (compress.h).
#include "coll/hier/compress.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "base/config.h"
#include "base/half.h"

namespace tessera::coll {
namespace {

const config::Var<uint64_t> kPiece{
    "TESSERA_COMPRESS_PIECE", uint64_t{256} << 10,
    "Values per piece of a coded allreduce between hosts (TESSERA_COMPRESS): each piece is coded and sent on "
    "at once and decoded as soon as it is in, so coding overlaps the wire; rounded up to a multiple of 256 "
    "(the codes' block). The same on every PE"};

// e4m3 (the "fn" variant: no infinities, 0x7f the only NaN code per sign) of a value already scaled into
// [-448, 448], rounding to nearest even; larger magnitudes saturate at 448. Branch-free, so that the coding
// loops vectorize: the normal code is monotonic in the input's bits, so saturation is a minimum, and values
// below 2^-6 take the subnormal code (steps of 2^-9; 8 of them reach 2^-6) by a select.
inline uint8_t f32_to_e4m3(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);  // copy-ok: one word
  const uint32_t sign = (b >> 24) & 0x80u;
  b &= 0x7fffffffu;
  const uint32_t r = (b + 0x7ffffu + ((b >> 20) & 1u)) & 0xfff00000u;  // 3 mantissa bits, to nearest even
  // Signed 32-bit lanes from here: baseline x86-64 has their compares, not unsigned ones.
  int32_t normal = (static_cast<int32_t>(r >> 23) - 120) << 3 | static_cast<int32_t>((r >> 20) & 7u);
  normal = normal < 0x7e ? normal : 0x7e;
  float a;
  std::memcpy(&a, &b, 4);  // copy-ok: one word
  constexpr float kMagic = 12582912.0f;  // round to nearest even (round_even below)
  const auto sub = static_cast<int32_t>((a * 512.0f + kMagic) - kMagic);
  const int32_t is_sub = -static_cast<int32_t>(static_cast<int32_t>(b) < 0x3c800000);  // all ones or none
  return static_cast<uint8_t>(sign | static_cast<uint32_t>((sub & is_sub) | (normal & ~is_sub)));
}
inline float e4m3_to_f32(uint8_t x) {
  const uint32_t e = (x >> 3) & 15u, m = x & 7u;
  const uint32_t bits = (e + 120u) << 23 | m << 20;
  float normal;
  std::memcpy(&normal, &bits, 4);  // copy-ok: one word
  const float v = e == 0 ? static_cast<float>(m) * (1.0f / 512.0f) : normal;
  return (x & 0x80) ? -v : v;
}

// e4m3's 256 values: decoding is then one load per code instead of a select on the exponent.
const float* e4m3_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = e4m3_to_f32(static_cast<uint8_t>(c));
    return t;
  }();
  return table.data();
}

constexpr float kFp8Max = 448.0f, kInt8Max = 127.0f;

size_t blocks(size_t n) { return (n + kCompressBlock - 1) / kCompressBlock; }

// Round to nearest even of |v| < 2^22 without a library call (the loops below then vectorize): adding and
// subtracting 1.5 * 2^23 leaves no fraction bits, in the default rounding mode.
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

template <bool kFp8>
void encode_scaled(const float* x, float* r, size_t n, char* out) {
  float* scales = reinterpret_cast<float*>(out);
  auto* codes = reinterpret_cast<uint8_t*>(out + blocks(n) * sizeof(float));
  alignas(64) float e[kCompressBlock], back[kCompressBlock];
  for (size_t b0 = 0, k = 0; b0 < n; b0 += kCompressBlock, ++k) {
    const size_t len = std::min(kCompressBlock, n - b0);
    float amax = 0;
    if (r) {
      for (size_t i = 0; i < len; ++i) e[i] = x[b0 + i] + r[b0 + i];
    } else {
      for (size_t i = 0; i < len; ++i) e[i] = x[b0 + i];
    }
    for (size_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(e[i]));
    const float scale = amax > 0 ? amax / (kFp8 ? kFp8Max : kInt8Max) : 1.0f, inv = 1.0f / scale;
    std::memcpy(scales + k, &scale, sizeof scale);  // copy-ok: one word (the code may be unaligned)
    uint8_t* c = codes + b0;
    if constexpr (kFp8) {
      const float* values = e4m3_values();
      for (size_t i = 0; i < len; ++i) c[i] = f32_to_e4m3(e[i] * inv);
      for (size_t i = 0; i < len; ++i) back[i] = values[c[i]] * scale;
    } else {
      for (size_t i = 0; i < len; ++i) {
        const float q = std::min(std::max(round_even(e[i] * inv), -kInt8Max), kInt8Max);
        c[i] = static_cast<uint8_t>(static_cast<int8_t>(q));
        back[i] = q * scale;
      }
    }
    if (r)
      for (size_t i = 0; i < len; ++i) r[b0 + i] = e[i] - back[i];
  }
}

template <bool kFp8>
void decode_scaled(const char* in, size_t n, float* y, bool add) {
  const auto* codes = reinterpret_cast<const uint8_t*>(in + blocks(n) * sizeof(float));
  const float* values = kFp8 ? e4m3_values() : nullptr;
  for (size_t b0 = 0, k = 0; b0 < n; b0 += kCompressBlock, ++k) {
    float scale;
    std::memcpy(&scale, in + k * sizeof(float), sizeof scale);  // copy-ok: one word
    const size_t len = std::min(kCompressBlock, n - b0);
    for (size_t i = 0; i < len; ++i) {
      const float v = kFp8 ? values[codes[b0 + i]] * scale
                           : static_cast<float>(static_cast<int8_t>(codes[b0 + i])) * scale;
      y[b0 + i] = add ? y[b0 + i] + v : v;
    }
  }
}

}  // namespace

const char* compress_name(Compress c) {
  switch (c) {
    case Compress::kNone: return "none";
    case Compress::kBf16: return "bf16";
    case Compress::kFp8: return "fp8";
    case Compress::kInt8: return "int8";
  }
  return "?";
}

size_t compress_piece() {
  static const size_t piece = std::max<size_t>(1, (kPiece.get() + kCompressBlock - 1) / kCompressBlock) * kCompressBlock;
  return piece;
}

size_t encoded_bytes(Compress c, size_t n) {
  switch (c) {
    case Compress::kNone: return n * sizeof(float);
    case Compress::kBf16: return n * sizeof(uint16_t);
    case Compress::kFp8:
    case Compress::kInt8: return blocks(n) * sizeof(float) + n;
  }
  return 0;
}

void encode(Compress c, const float* x, float* r, size_t n, char* out) {
  switch (c) {
    case Compress::kNone:
      for (size_t i = 0; i < n; ++i) {
        const float e = x[i] + (r ? r[i] : 0.0f);
        std::memcpy(out + i * sizeof(float), &e, sizeof e);  // copy-ok: one word
        if (r) r[i] = 0;
      }
      return;
    case Compress::kBf16: {
      auto* codes = reinterpret_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) {
        const float e = x[i] + (r ? r[i] : 0.0f);
        const uint16_t h = f32_to_bf16_bits(e);
        codes[i] = h;
        if (r) r[i] = e - bf16_bits_to_f32(h);
      }
      return;
    }
    case Compress::kFp8: return encode_scaled<true>(x, r, n, out);
    case Compress::kInt8: return encode_scaled<false>(x, r, n, out);
  }
}

void decode(Compress c, const char* in, size_t n, float* y, bool add) {
  switch (c) {
    case Compress::kNone:
      for (size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, in + i * sizeof(float), sizeof v);  // copy-ok: one word
        y[i] = add ? y[i] + v : v;
      }
      return;
    case Compress::kBf16: {
      const auto* codes = reinterpret_cast<const uint16_t*>(in);
      for (size_t i = 0; i < n; ++i) y[i] = add ? y[i] + bf16_bits_to_f32(codes[i]) : bf16_bits_to_f32(codes[i]);
      return;
    }
    case Compress::kFp8: return decode_scaled<true>(in, n, y, add);
    case Compress::kInt8: return decode_scaled<false>(in, n, y, add);
  }
}

}  // namespace tessera::coll
