// Resilient mode in the runtime (docs/resilience.md): what a wait says about failed PEs, the finalize
// barrier that skips them, and growing back: tessera-run --restarts starts a replacement process under a
// failed PE's number, and a grow (coll/grow.h) takes it into a communicator with the survivors.
//
// Every PE of a resilient job under tessera-run keeps its heap and data segments open by descriptor and
// publishes them with its pid (JobControl::JoinWords): the names are removed at start-up, so a replacement
// maps its peers' segments through /proc/PID/fd (same user; the checks of shm::open_map), and the survivors
// map the replacement's the same way when it joins.
//
// A replacement's init makes no exchange with the others (they are past theirs): it maps every live peer,
// reaches a failed one that no process replaced through transport::gone(), and starts in state kJoining.
// Until a grow takes it in it meets no world routine, and its symmetric allocations are its own: it must
// repeat the calls its predecessor made (the program's start-up) so that its objects sit where the
// survivors' do; the grow compares the allocations (heap_fingerprint) and refuses a replacement whose differ.
// One host only: a replacement is refused under a rank table or TESSERA_HOST_ID.
#pragma once
#include <cstdint>
#include <string>

#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "pgas/peers.h"

namespace tessera::pgas {

struct Runtime;

// sync::WaitContext::failure_note: in resilient mode, the PEs marked failed so far, in the order they failed.
std::string failure_note();
// The finalize barrier of resilient mode: as the world barrier, but a PE the launcher marked failed is not
// waited for. Over the control segment, which every PE maps.
void leave_resilient(Runtime& r);

// This process's incarnation: 0 for a PE started with the job, k for the k-th replacement tessera-run
// started under its number (TESSERA_INCARNATION).
uint32_t incarnation();
// True from a replacement's init until a grow has taken it in (end_joining).
bool joining();
void end_joining();
// Resilient mode under tessera-run: publishes this PE's process and the descriptors it keeps its segments
// open by (closed at finalize by close_segments; without resilient mode they are closed at once).
void publish_segments(Runtime& r, int heap_fd, int data_fd);
void close_segments();
// A replacement's init (state kRestarting, set by the launcher), in place of the exchange of a PE started with the job.
Status init_replacement(Runtime& r, const bootstrap::JobInfo& info);
// Where PE `pe`'s current process keeps its segments; pid 0 when it has no live process that published them.
PeerSource published_source(const Runtime& r, int pe);

}  // namespace tessera::pgas
