#include "bootstrap/bootstrap.h"

namespace tessera::bootstrap {

namespace {
const Backend* const kBackends[] = {&kLauncherBackend, &kPmixBackend, &kSingleBackend};
}

const Backend& select() {
  for (const Backend* b : kBackends)
    if (b->detect()) return *b;
  return kSingleBackend;
}

}  // namespace tessera::bootstrap
