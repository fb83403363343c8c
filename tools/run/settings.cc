// What a local job's launcher takes from its options and from the environment its PEs will see (settings.h).
#include "settings.h"

#include <cstdlib>

#include "base/config.h"

namespace tessera::run {

std::string pe_setting(const Options& opt, const std::string& var) {
  std::string v;
  for (const auto& kv : opt.env)
    if (kv.size() > var.size() && kv.compare(0, var.size(), var) == 0 && kv[var.size()] == '=') v = kv.substr(var.size() + 1);
  if (v.empty())
    if (const char* e = std::getenv(var.c_str())) v = e;
  return v;
}

Status resolve_bind_mode(const Options& opt, BindMode* mode) {
  std::string v = opt.bind_to, from = "--bind-to";
  if (v.empty()) v = pe_setting(opt, "TESSERA_BIND"), from = "TESSERA_BIND";
  if (v.empty()) v = "auto";
  if (!parse_bind_mode(v, mode)) return invalid_arg("{}={:?}: expected auto, core or none", from, v);
  return Status::ok();
}

Status resolve_on_failure(const Options& opt, bool* resilient) {
  if (!opt.on_failure.empty()) {
    *resilient = opt.on_failure == "continue";
    return Status::ok();
  }
  const std::string v = pe_setting(opt, "TESSERA_RESILIENT");
  Result<bool> b = config::parse_bool("TESSERA_RESILIENT", v.empty() ? "0" : v);
  if (!b.is_ok()) return b.status();
  *resilient = b.value();
  return Status::ok();
}

uint64_t stop_limit_ns(const Options& opt) {
  double timeout_s = 300;
  const std::string v = pe_setting(opt, "TESSERA_TIMEOUT");
  char* end = nullptr;
  if (const double t = std::strtod(v.c_str(), &end); !v.empty() && *end == '\0' && t > 0) timeout_s = t;
  return static_cast<uint64_t>(timeout_s / 2 * 1e9);
}

}  // namespace tessera::run
