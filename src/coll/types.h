// Element types, reduction operators and collective kinds of the collective layer, with their names and
// sizes. Pure data: no runtime state. The public enums (include/tessera/coll.h and coll.hpp) use the same
// numbering, so conversion is a cast checked by range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::coll {

// The first ten are NCCL's; int16/uint16, long double and the complex types come from the OpenSHMEM
// reduction tables (long double is the platform's, 16 bytes of storage; complex64 is two float32).
enum class DType : uint8_t { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kBFloat16, kFloat32,
                             kFloat64, kInt16, kUint16, kLongDouble, kComplex64, kComplex128 };
inline constexpr int kNumDTypes = 15;
// The bitwise operators apply to integer types only; min and max not to complex ones (op_applies).
enum class Op : uint8_t { kSum, kProd, kMin, kMax, kAvg, kBand, kBor, kBxor };
inline constexpr int kNumOps = 8;

// Every collective the layer runs (the flight recorder and the consistency check name them).
enum class Kind : uint8_t { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kReduce, kGather, kScatter,
                            kAlltoall, kAlltoallv, kAllgatherv, kReduceScatterv, kGatherv, kScatterv, kBarrier,
                            kSendRecv, kInscan, kExscan };
inline constexpr int kNumKinds = 17;

constexpr bool valid(DType t) { return static_cast<unsigned>(t) < kNumDTypes; }
constexpr bool valid(Op o) { return static_cast<unsigned>(o) < kNumOps; }
// Bytes per element; 0 for an invalid type. Inline: every call asks it several times. The table is at
// namespace scope: as a local array of a constexpr function, GCC built it on the stack on every call.
inline constexpr uint8_t kDTypeSizes[kNumDTypes] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 2, 2, 16, 8, 16};
constexpr size_t dtype_size(DType t) { return valid(t) ? kDTypeSizes[static_cast<int>(t)] : 0; }
constexpr bool is_integer(DType t) {
  return t <= DType::kUint64 || t == DType::kInt16 || t == DType::kUint16;
}
constexpr bool is_complex(DType t) { return t == DType::kComplex64 || t == DType::kComplex128; }
// Whether `o` is defined on `t`: bitwise operators on integers, min/max on every type but complex.
constexpr bool op_applies(DType t, Op o) {
  if (o >= Op::kBand) return is_integer(t);
  if (o == Op::kMin || o == Op::kMax) return !is_complex(t);
  return true;
}
const char* dtype_name(DType t);   // "float32", ...
const char* op_name(Op o);         // "sum", ...
const char* kind_name(Kind k);     // "allreduce", ...
std::optional<DType> parse_dtype(std::string_view s);  // accepts nccl-tests names too (float, half, bf16...)
std::optional<Op> parse_op(std::string_view s);
std::optional<Kind> parse_kind(std::string_view s);
bool is_float(DType t);  // floating point, real or complex

}  // namespace tessera::coll
