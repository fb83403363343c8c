#include "coll/select/model_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace tessera::coll {
namespace {

struct Key {
  const char* name;
  double ModelParams::*field;
};
constexpr Key kKeys[] = {{"alpha", &ModelParams::alpha},
                         {"beta", &ModelParams::beta},
                         {"gamma", &ModelParams::gamma},
                         {"oversub_alpha", &ModelParams::oversub_alpha},
                         {"cma_beta", &ModelParams::cma_beta},
                         {"cma_beta_mem", &ModelParams::cma_beta_mem},
                         {"cache_bytes", &ModelParams::cache_bytes},
                         {"beta_mem", &ModelParams::beta_mem},
                         {"gamma_mem", &ModelParams::gamma_mem}};
constexpr size_t kNumKeys = sizeof kKeys / sizeof kKeys[0];
// Positions in kKeys: the first kRequired are required; from kCmaBeta on, the cache must carry them.
constexpr size_t kRequired = 3, kCmaBeta = 4, kCmaBetaMem = 5, kCacheBytes = 6, kBetaMem = 7, kGammaMem = 8;
static_assert(kGammaMem + 1 == kNumKeys);
// Bounds that keep every price the model computes finite (a step, or a byte, of at most a second; a cache
// of at most 10^18 bytes, the default "no limit"), so that no algorithm costs infinity or NaN.
constexpr double kMaxSeconds = 1.0;
constexpr double kMaxCacheBytes = 1e18;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

Status parse_model(std::string_view text, std::string_view where, bool need_cma, ModelParams* m) {
  ModelParams out = *m;
  bool seen[kNumKeys] = {};
  for (size_t i = 0; i < text.size();) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    size_t e = i;
    while (e < text.size() && !is_space(text[e]) && text[e] != '#') ++e;
    const std::string tok(text.substr(i, e - i));
    i = e;
    const size_t eq = tok.find('=');
    if (eq == std::string::npos)
      return invalid_arg("{}: {:?} is not key=value (keys: alpha beta gamma oversub_alpha cma_beta cma_beta_mem "
                         "cache_bytes beta_mem gamma_mem)", where, tok);
    const std::string key = tok.substr(0, eq), val = tok.substr(eq + 1);
    size_t k = 0;
    while (k < kNumKeys && key != kKeys[k].name) ++k;
    if (k == kNumKeys)
      return invalid_arg("{}: unknown key {:?} (keys: alpha beta gamma oversub_alpha cma_beta cma_beta_mem "
                         "cache_bytes beta_mem gamma_mem)", where, key);
    if (seen[k]) return invalid_arg("{}: {} is given twice", where, key);
    seen[k] = true;
    char* end = nullptr;
    errno = 0;
    const double v = val.empty() ? 0 : std::strtod(val.c_str(), &end);
    const double limit = k == kCacheBytes ? kMaxCacheBytes : kMaxSeconds;
    if (val.empty() || end != val.c_str() + val.size() || errno == ERANGE || !(v > 0) || !(v <= limit))
      return invalid_arg("{}: {}={:?}: the value must be a number above 0 and at most {:g}", where, key, val, limit);
    out.*kKeys[k].field = v;
  }
  for (size_t k = 0; k < kRequired; ++k)
    if (!seen[k]) return invalid_arg("{}: {} is missing (alpha, beta and gamma are required)", where, kKeys[k].name);
  if (need_cma)
    for (size_t k = kCmaBeta; k < kNumKeys; ++k)
      if (!seen[k]) return invalid_arg("{}: {} is missing (a cache written before it was measured)", where, kKeys[k].name);
  if (!seen[kCmaBeta]) out.cma_beta = std::min(3 * out.beta, kMaxSeconds);  // within the bounds a file may give
  if (!seen[kCmaBetaMem]) out.cma_beta_mem = out.cma_beta;
  if (!seen[kCacheBytes]) out.cache_bytes = ModelParams{}.cache_bytes;
  if (!seen[kBetaMem]) out.beta_mem = out.beta;
  if (!seen[kGammaMem]) out.gamma_mem = out.gamma;
  *m = out;
  return Status::ok();
}

std::string format_model(const ModelParams& m) {
  std::string s;
  for (const Key& k : kKeys) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k.name, m.*k.field);
  return s + "\n";
}

}  // namespace tessera::coll
