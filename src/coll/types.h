// Element types, reduction operators and collective kinds of the collective layer, with their names and
// sizes. Pure data: no runtime state. The public enums (include/tessera/coll.h and coll.hpp) use the same
// numbering, so conversion is a cast checked by range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::coll {

// Each enum below is defined once, by its list: enumerators in order with their names and properties; the
// enum, its count and its tables are generated from the list. The public enums (coll.h, coll.hpp) are
// pinned to these value by value (static_asserts in capi/coll_api.cc).
//
// Element types: X(enumerator, name, bytes, class), class 'i' integer, 'f' real floating point, 'c' complex.
// The first ten are NCCL's; int16/uint16, long double and the complex types come from the OpenSHMEM
// reduction tables (long double is the platform's, 16 bytes of storage; complex64 is two float32).
#define TESSERA_COLL_DTYPES(X)                                                                              \
  X(kInt8, "int8", 1, 'i') X(kUint8, "uint8", 1, 'i') X(kInt32, "int32", 4, 'i') X(kUint32, "uint32", 4, 'i') \
  X(kInt64, "int64", 8, 'i') X(kUint64, "uint64", 8, 'i') X(kFloat16, "float16", 2, 'f')                     \
  X(kBFloat16, "bfloat16", 2, 'f') X(kFloat32, "float32", 4, 'f') X(kFloat64, "float64", 8, 'f')             \
  X(kInt16, "int16", 2, 'i') X(kUint16, "uint16", 2, 'i') X(kLongDouble, "longdouble", 16, 'f')              \
  X(kComplex64, "complex64", 8, 'c') X(kComplex128, "complex128", 16, 'c')
// Reduction operators: X(enumerator, name). The bitwise ones apply to integer types only; min and max not
// to complex ones (op_applies).
#define TESSERA_COLL_OPS(X) \
  X(kSum, "sum") X(kProd, "prod") X(kMin, "min") X(kMax, "max") X(kAvg, "avg") X(kBand, "band") X(kBor, "bor") X(kBxor, "bxor")
// Every collective the layer runs (the flight recorder and the consistency check name them):
// X(enumerator, name, what the call takes: KindFlags).
#define TESSERA_COLL_KINDS(X)                                                                               \
  X(kAllreduce, "allreduce", kReducing | kReplicated)                                                       \
  X(kReduceScatter, "reduce_scatter", kReducing)                                                            \
  X(kAllgather, "allgather", kReplicated)                                                                   \
  X(kBroadcast, "broadcast", kRooted | kReplicated | kSendAtRoot)                                           \
  X(kReduce, "reduce", kRooted | kReducing | kRecvAtRoot)                                                   \
  X(kGather, "gather", kRooted | kRecvAtRoot)                                                               \
  X(kScatter, "scatter", kRooted | kSendAtRoot)                                                             \
  X(kAlltoall, "alltoall", 0)                                                                               \
  X(kAlltoallv, "alltoallv", kVCounts | kUnshared)                                                          \
  X(kAllgatherv, "allgatherv", kVCounts | kReplicated)                                                      \
  X(kReduceScatterv, "reduce_scatterv", kVCounts | kReducing)                                               \
  X(kGatherv, "gatherv", kRooted | kUnshared)                                                               \
  X(kScatterv, "scatterv", kRooted | kUnshared)                                                             \
  X(kBarrier, "barrier", 0)                                                                                 \
  X(kSendRecv, "sendrecv", 0)                                                                               \
  X(kInscan, "inscan", kReducing)                                                                           \
  X(kExscan, "exscan", kReducing)

#define TESSERA_COLL_ENUMERATOR(e, ...) e,
#define TESSERA_COLL_ONE(...) +1
enum class DType : uint8_t { TESSERA_COLL_DTYPES(TESSERA_COLL_ENUMERATOR) };
inline constexpr int kNumDTypes = 0 TESSERA_COLL_DTYPES(TESSERA_COLL_ONE);
enum class Op : uint8_t { TESSERA_COLL_OPS(TESSERA_COLL_ENUMERATOR) };
inline constexpr int kNumOps = 0 TESSERA_COLL_OPS(TESSERA_COLL_ONE);

// What each collective takes (one table lookup per call: the checks run on every call).
enum KindFlags : uint8_t {
  kRooted = 1,       // has a root
  kReducing = 2,     // takes a reduction op
  kVCounts = 4,      // per-member count arrays (allgatherv, reduce_scatterv, alltoallv)
  kUnshared = 8,     // counts differ per rank or only the root knows them (dispatch.cc: counts_unshared)
  kReplicated = 16,  // every member ends with the same result (TESSERA_CHECK=1 compares it)
  kSendAtRoot = 32,  // only the root's send buffer is read
  kRecvAtRoot = 64,  // only the root's receive buffer is written
};
enum class Kind : uint8_t { TESSERA_COLL_KINDS(TESSERA_COLL_ENUMERATOR) };
inline constexpr int kNumKinds = 0 TESSERA_COLL_KINDS(TESSERA_COLL_ONE);

constexpr bool valid(DType t) { return static_cast<unsigned>(t) < kNumDTypes; }
constexpr bool valid(Op o) { return static_cast<unsigned>(o) < kNumOps; }
// Bytes per element; 0 for an invalid type. Inline: every call asks it several times. The table is at
// namespace scope: as a local array of a constexpr function, GCC built it on the stack on every call.
#define TESSERA_COLL_SIZE(e, name, bytes, cls) bytes,
#define TESSERA_COLL_CLASS(e, name, bytes, cls) cls,
#define TESSERA_COLL_FLAGS(e, name, flags) static_cast<uint8_t>(flags),
inline constexpr uint8_t kDTypeSizes[] = {TESSERA_COLL_DTYPES(TESSERA_COLL_SIZE)};
inline constexpr char kDTypeClasses[] = {TESSERA_COLL_DTYPES(TESSERA_COLL_CLASS)};
inline constexpr uint8_t kKindFlags[] = {TESSERA_COLL_KINDS(TESSERA_COLL_FLAGS)};
#undef TESSERA_COLL_SIZE
#undef TESSERA_COLL_CLASS
#undef TESSERA_COLL_FLAGS
constexpr size_t dtype_size(DType t) { return valid(t) ? kDTypeSizes[static_cast<int>(t)] : 0; }
constexpr bool is_integer(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] == 'i'; }
constexpr bool is_complex(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] == 'c'; }
constexpr bool is_float(DType t) { return valid(t) && kDTypeClasses[static_cast<int>(t)] != 'i'; }  // real or complex
constexpr uint8_t kind_flags(Kind k) { return kKindFlags[static_cast<int>(k)]; }
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

}  // namespace tessera::coll
