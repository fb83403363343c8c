// Element types, reduction operators and collective kinds of the collective layer, with their names and
// sizes. Pure data: no runtime state. The public enums (include/tessera/coll.h and coll.hpp) use the same
// numbering, so conversion is a cast checked by range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::coll {

enum class DType : uint8_t { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kBFloat16, kFloat32,
                             kFloat64 };
inline constexpr int kNumDTypes = 10;
enum class Op : uint8_t { kSum, kProd, kMin, kMax, kAvg };
inline constexpr int kNumOps = 5;

// Every collective the layer runs (the flight recorder and the consistency check name them).
enum class Kind : uint8_t { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kReduce, kGather, kScatter,
                            kAlltoall, kAlltoallv, kAllgatherv, kReduceScatterv, kGatherv, kScatterv, kBarrier,
                            kSendRecv };
inline constexpr int kNumKinds = 15;

constexpr bool valid(DType t) { return static_cast<unsigned>(t) < kNumDTypes; }
constexpr bool valid(Op o) { return static_cast<unsigned>(o) < kNumOps; }
// Bytes per element; 0 for an invalid type. Inline: every call asks it several times. The table is at
// namespace scope: as a local array of a constexpr function, GCC built it on the stack on every call.
inline constexpr uint8_t kDTypeSizes[kNumDTypes] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
constexpr size_t dtype_size(DType t) { return valid(t) ? kDTypeSizes[static_cast<int>(t)] : 0; }
const char* dtype_name(DType t);   // "float32", ...
const char* op_name(Op o);         // "sum", ...
const char* kind_name(Kind k);     // "allreduce", ...
std::optional<DType> parse_dtype(std::string_view s);  // accepts nccl-tests names too (float, half, bf16...)
std::optional<Op> parse_op(std::string_view s);
std::optional<Kind> parse_kind(std::string_view s);
bool is_float(DType t);

}  // namespace tessera::coll
