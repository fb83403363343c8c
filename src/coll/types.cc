#include "coll/types.h"

#include <iterator>
#include <string>

namespace tessera::coll {
namespace {
#define TS_NAME(e, name, ...) name,
constexpr const char* kDTypes[] = {TESSERA_COLL_DTYPES(TS_NAME)};
constexpr const char* kOps[] = {TESSERA_COLL_OPS(TS_NAME)};
constexpr const char* kKinds[] = {TESSERA_COLL_KINDS(TS_NAME)};
#undef TS_NAME
// Other names parse_dtype accepts (nccl-tests' and C's), per type in the order of the list.
constexpr const char* kDTypeAliases[][4] = {
    {"char", "i8"}, {"u8"}, {"int", "i32"}, {"u32"}, {"i64", "long"}, {"u64"}, {"half", "f16", "fp16"}, {"bf16"},
    {"float", "f32", "fp32"}, {"double", "f64", "fp64"}, {"short", "i16"}, {"u16"}, {"long_double"},
    {"complexf", "c64"}, {"complexd", "c128"},
};
static_assert(std::size(kDTypeAliases) == kNumDTypes, "an alias row per element type");
std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}
}  // namespace

const char* dtype_name(DType t) { return valid(t) ? kDTypes[static_cast<int>(t)] : "?"; }
const char* op_name(Op o) { return valid(o) ? kOps[static_cast<int>(o)] : "?"; }
const char* kind_name(Kind k) { return static_cast<int>(k) < kNumKinds ? kKinds[static_cast<int>(k)] : "?"; }

std::optional<DType> parse_dtype(std::string_view s) {
  std::string l = lower(s);
  for (int i = 0; i < kNumDTypes; ++i) {
    if (l == kDTypes[i]) return static_cast<DType>(i);
    for (const char* a : kDTypeAliases[i])
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
