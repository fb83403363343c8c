#include "bootstrap/bootstrap.h"

#include <atomic>

#include "base/log.h"

namespace tessera::bootstrap {

namespace {
const Backend* const kBackends[] = {&kLauncherBackend, &kPmixBackend, &kTcpBackend, &kSingleBackend};
std::atomic<AbortHook> g_abort_hook{nullptr};
}  // namespace

void set_abort_hook(AbortHook hook) { g_abort_hook.store(hook); }
AbortHook abort_hook() { return g_abort_hook.load(); }

const Backend& select() {
  for (const Backend* b : kBackends) {
    if (!b->detect()) continue;
    if (b != &kTcpBackend && kTcpBackend.detect())
      log::warn("TESSERA_BOOTSTRAP is set but ignored: this job is wired by its launcher (bootstrap {})", b->name);
    return *b;
  }
  return kSingleBackend;
}

}  // namespace tessera::bootstrap
