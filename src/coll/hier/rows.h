// The registry rows of communicators whose members span hosts (hier/rows.cc); algorithms() lists them after
// the shared-memory engine's rows (algos/registry.cc).
#pragma once
#include <span>

#include "coll/algo.h"

namespace tessera::coll {

std::span<const Algorithm> hier_algorithms();

}  // namespace tessera::coll
