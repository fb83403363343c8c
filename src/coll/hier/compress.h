// Compression of the phase between hosts (tesseraCommSetCompression, TESSERA_COMPRESS): float32 values coded
// as bfloat16, fp8 (e4m3) or int8 for the wire, with error feedback. The host-local phases stay float32.
//
// Codes: bf16 rounds each value to nearest even (2 bytes); fp8 and int8 scale each block of kCompressBlock
// values by its largest magnitude (a float32 scale per block, ahead of the codes) and code each value in one
// byte: e4m3 (4 exponent bits, 3 mantissa bits, largest 448, rounding to nearest even) or a signed integer
// of -127..127 (rounding to nearest). Error feedback: a residual kept per buffer is added to the values
// before coding, and what the code loses is kept as the next residual (e = x + r; r = e - decode(code(e))),
// so over repeated calls on one buffer the errors do not add up: the sum of the decoded values over k calls
// differs from the sum of the inputs by the last residual only.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera::coll {

enum class Compress : uint8_t { kNone = 0, kBf16 = 1, kFp8 = 2, kInt8 = 3 };
inline constexpr size_t kCompressBlock = 256;
inline constexpr int kNumCompress = 4;
const char* compress_name(Compress c);  // "none", "bf16", "fp8", "int8"

// Values per piece of the coded allreduce's pipeline (net_allreduce_compressed): TESSERA_COMPRESS_PIECE,
// rounded up to a whole number of blocks; the same on every PE.
size_t compress_piece();
// Bytes of the code of n values.
size_t encoded_bytes(Compress c, size_t n);
// Codes x + r (r may be null: no feedback) into out (encoded_bytes(c, n)); with r, r becomes what the code
// lost. x may alias nothing that out overlaps.
void encode(Compress c, const float* x, float* r, size_t n, char* out);
// y = the decoded values, or y += them when `add`.
void decode(Compress c, const char* in, size_t n, float* y, bool add);

}  // namespace tessera::coll
