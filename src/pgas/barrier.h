// Barriers over all PEs, used by the runtime itself (allocation, init, finalize).
#pragma once

namespace tessera::pgas {
// quiet + sync over the world team.
void barrier_all_internal();
}  // namespace tessera::pgas
