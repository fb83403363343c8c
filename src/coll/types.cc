#include "coll/types.h"

#include <string>

namespace tessera::coll {
namespace {
struct DTypeInfo {
  const char* name;
  size_t size;
  const char* aliases[4];
};
constexpr DTypeInfo kDTypes[kNumDTypes] = {  // sizes as dtype_size() (types.h) has them
    {"int8", 1, {"char", "i8", nullptr}},          {"uint8", 1, {"u8", nullptr}},
    {"int32", 4, {"int", "i32", nullptr}},         {"uint32", 4, {"u32", nullptr}},
    {"int64", 8, {"i64", "long", nullptr}},        {"uint64", 8, {"u64", nullptr}},
    {"float16", 2, {"half", "f16", "fp16", nullptr}}, {"bfloat16", 2, {"bf16", nullptr}},
    {"float32", 4, {"float", "f32", "fp32", nullptr}}, {"float64", 8, {"double", "f64", "fp64", nullptr}},
    {"int16", 2, {"short", "i16", nullptr}},       {"uint16", 2, {"u16", nullptr}},
    {"longdouble", 16, {"long_double", nullptr}},  {"complex64", 8, {"complexf", "c64", nullptr}},
    {"complex128", 16, {"complexd", "c128", nullptr}},
};
static_assert([] {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kDTypes[i].size != dtype_size(static_cast<DType>(i))) return false;
  return true;
}(), "dtype_size() in types.h and the table above disagree");
constexpr const char* kOps[kNumOps] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};
constexpr const char* kKinds[kNumKinds] = {"allreduce", "reduce_scatter", "allgather",  "broadcast",
                                           "reduce",    "gather",         "scatter",    "alltoall",
                                           "alltoallv", "allgatherv",     "reduce_scatterv", "gatherv",
                                           "scatterv",  "barrier",        "sendrecv",   "inscan",
                                           "exscan"};
std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}
}  // namespace

const char* dtype_name(DType t) { return valid(t) ? kDTypes[static_cast<int>(t)].name : "?"; }
const char* op_name(Op o) { return valid(o) ? kOps[static_cast<int>(o)] : "?"; }
const char* kind_name(Kind k) { return static_cast<int>(k) < kNumKinds ? kKinds[static_cast<int>(k)] : "?"; }
bool is_float(DType t) { return (t >= DType::kFloat16 && t <= DType::kFloat64) || t >= DType::kLongDouble; }

std::optional<DType> parse_dtype(std::string_view s) {
  std::string l = lower(s);
  for (int i = 0; i < kNumDTypes; ++i) {
    if (l == kDTypes[i].name) return static_cast<DType>(i);
    for (const char* a : kDTypes[i].aliases)
      if (a && l == a) return static_cast<DType>(i);
  }
  return std::nullopt;
}
std::optional<Op> parse_op(std::string_view s) {
  std::string l = lower(s);
  for (int i = 0; i < kNumOps; ++i)
    if (l == kOps[i]) return static_cast<Op>(i);
  if (l == "mean") return Op::kAvg;
  return std::nullopt;
}
std::optional<Kind> parse_kind(std::string_view s) {
  std::string l = lower(s);
  for (char& c : l)
    if (c == '-') c = '_';
  for (int i = 0; i < kNumKinds; ++i)
    if (l == kKinds[i]) return static_cast<Kind>(i);
  if (l == "bcast") return Kind::kBroadcast;
  if (l == "reducescatter") return Kind::kReduceScatter;
  return std::nullopt;
}

}  // namespace tessera::coll
