// The cost model's parameters as text: the file a user names in TESSERA_COLL_MODEL and the per-host cache
// (coll/select/model.h). One line of whitespace-separated key=value tokens, values in seconds (per step, per
// byte) or bytes (cache_bytes); '#' starts a comment that runs to the end of its line.
#pragma once
#include <string>
#include <string_view>

#include "base/status.h"
#include "coll/select/model.h"

namespace tessera::coll {

// Reads `text` into *m. Every token must be key=value with a known key (alpha, beta, gamma, oversub_alpha,
// cma_beta, cma_beta_mem, cache_bytes), given at most once, and a value above 0 and at most 1 (seconds) or 10^18 (cache_bytes); alpha, beta and gamma
// are required, and with need_cma (the cache: older ones are measured again) cma_beta, cma_beta_mem and
// cache_bytes too. A file may leave those out: cma_beta defaults to 3 beta, cma_beta_mem to cma_beta,
// cache_bytes to no limit. On error *m is unchanged and the message names `where`, the token and the rule.
Status parse_model(std::string_view text, std::string_view where, bool need_cma, ModelParams* m);

// The text parse_model reads back as exactly the same values (shortest round-trip form of each double).
std::string format_model(const ModelParams& m);

}  // namespace tessera::coll
