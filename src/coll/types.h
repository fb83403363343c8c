// Collective kinds of the collective layer, with their names and what each takes; and the element types and
// reduction operators it uses, which are the one list's (base/dtype.h, from tessera/dtypes.h). Pure data: no
// runtime state. The public enums (include/tessera/coll.h and coll.hpp) use the list's numbering, so
// conversion is a cast checked by range.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/dtype.h"

namespace tessera::coll {

// The element types and operators are the library's (base/dtype.h), named here as the collective code always
// has; the public enums (coll.h, coll.hpp) are pinned to them value by value (static_asserts in
// capi/coll_api.cc).
using ::tessera::DType;
using ::tessera::kNumDTypes;
using Op = ::tessera::ReduceOp;
inline constexpr int kNumOps = ::tessera::kNumReduceOps;
using ::tessera::dtype_name;
using ::tessera::dtype_size;
using ::tessera::is_complex;
using ::tessera::is_float;
using ::tessera::is_integer;
using ::tessera::op_applies;
using ::tessera::op_name;
using ::tessera::parse_dtype;
using ::tessera::parse_op;
using ::tessera::valid;

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
enum class Kind : uint8_t { TESSERA_COLL_KINDS(TESSERA_LIST_ENUMERATOR) };
inline constexpr int kNumKinds = 0 TESSERA_COLL_KINDS(TESSERA_LIST_ONE);

#define TESSERA_COLL_FLAGS(e, name, flags) static_cast<uint8_t>(flags),
inline constexpr uint8_t kKindFlags[] = {TESSERA_COLL_KINDS(TESSERA_COLL_FLAGS)};
#undef TESSERA_COLL_FLAGS
constexpr uint8_t kind_flags(Kind k) { return kKindFlags[static_cast<int>(k)]; }
const char* kind_name(Kind k);     // "allreduce", ...
std::optional<Kind> parse_kind(std::string_view s);

}  // namespace tessera::coll
