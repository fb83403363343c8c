#include "base/dtype.h"

#include <iterator>
#include <string>

namespace tessera {
namespace {
#define TS_NAME(e, name, ...) name,
#define TS_ABBR(e, name, abbr, ...) abbr,
#define TS_TENSOR_NAME(e, name, tensor_name) tensor_name,
constexpr const char* kDTypeNames[] = {TESSERA_DTYPES(TS_NAME)};
constexpr const char* kDTypeAbbrs[] = {TESSERA_DTYPES(TS_ABBR)};
constexpr const char* kOpNames[] = {TESSERA_REDOPS(TS_NAME)};
constexpr const char* kOpTensorNames[] = {TESSERA_REDOPS(TS_TENSOR_NAME)};
#undef TS_NAME
#undef TS_ABBR
#undef TS_TENSOR_NAME
// Further spellings parse_dtype accepts (C's and nccl-tests'), per type in the order of the list.
constexpr const char* kDTypeAliases[][3] = {
    {"char"}, {}, {"int"}, {}, {"long"}, {}, {"half", "fp16"}, {}, {"float", "fp32"}, {"double", "fp64"},
    {"short"}, {}, {"long_double"}, {"complexf"}, {"complexd"},
};
static_assert(std::size(kDTypeAliases) == kNumDTypes, "an alias row per element type");
std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}
}  // namespace

const char* dtype_name(DType t) { return valid(t) ? kDTypeNames[static_cast<int>(t)] : "?"; }
const char* dtype_abbr(DType t) { return valid(t) ? kDTypeAbbrs[static_cast<int>(t)] : "?"; }
const char* op_name(ReduceOp o) { return valid(o) ? kOpNames[static_cast<int>(o)] : "?"; }
const char* op_tensor_name(ReduceOp o) {
  if (!valid(o)) return "?";
  const char* t = kOpTensorNames[static_cast<int>(o)];
  return *t ? t : kOpNames[static_cast<int>(o)];
}

std::optional<DType> parse_dtype(std::string_view s) {
  const std::string l = lower(s);
  for (int i = 0; i < kNumDTypes; ++i) {
    if (l == kDTypeNames[i] || l == kDTypeAbbrs[i]) return static_cast<DType>(i);
    for (const char* a : kDTypeAliases[i])
      if (a && l == a) return static_cast<DType>(i);
  }
  return std::nullopt;
}
std::optional<ReduceOp> parse_op(std::string_view s) {
  const std::string l = lower(s);
  for (int i = 0; i < kNumReduceOps; ++i)
    if (l == kOpNames[i] || (*kOpTensorNames[i] && l == kOpTensorNames[i])) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

}  // namespace tessera
