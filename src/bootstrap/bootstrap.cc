#include "bootstrap/bootstrap.h"

#include <atomic>

namespace tessera::bootstrap {

namespace {
const Backend* const kBackends[] = {&kLauncherBackend, &kPmixBackend, &kSingleBackend};
std::atomic<AbortHook> g_abort_hook{nullptr};
}  // namespace

void set_abort_hook(AbortHook hook) { g_abort_hook.store(hook); }
AbortHook abort_hook() { return g_abort_hook.load(); }

const Backend& select() {
  for (const Backend* b : kBackends)
    if (b->detect()) return *b;
  return kSingleBackend;
}

}  // namespace tessera::bootstrap
