#include "coll/types.h"

#include <string>

namespace tessera::coll {
namespace {
#define TS_NAME(e, name, ...) name,
constexpr const char* kKinds[] = {TESSERA_COLL_KINDS(TS_NAME)};
#undef TS_NAME
std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}
}  // namespace

const char* kind_name(Kind k) { return static_cast<int>(k) < kNumKinds ? kKinds[static_cast<int>(k)] : "?"; }

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
