// What a local job's launcher (job.cc) takes from its command line and from the environment its PEs will
// see: the binding policy, resilient mode, and the deadline a stopped PE gets in resilient mode.
#pragma once
#include <cstdint>
#include <string>

#include "base/status.h"
#include "options.h"
#include "placement.h"

namespace tessera::run {

// A variable as the PEs will see it: the last VAR=VALUE given with -x/--env, else the launcher's own; ""
// when neither sets it.
std::string pe_setting(const Options& opt, const std::string& var);
// The binding policy: --bind-to, else TESSERA_BIND as the PEs see it, else auto.
Status resolve_bind_mode(const Options& opt, BindMode* mode);
// Resilient mode: --on-failure, else TESSERA_RESILIENT as the PEs see it, else off.
Status resolve_on_failure(const Options& opt, bool* resilient);
// Resilient mode: how long a PE may stay stopped before the launcher kills it: half of the PEs'
// TESSERA_TIMEOUT (the library's default when unset or unreadable here, which the PEs then report).
uint64_t stop_limit_ns(const Options& opt);

}  // namespace tessera::run
