// The live health view of a running job (tessera-info --health; the launcher answers it on its socket): each
// PE's process (running, stopped, exited), its library state, the call it is in and for how long, the time
// since its latest call began, whom it waits for, and which PEs are overdue (in one call for longer than
// the asker's limit). The job is healthy only when every PE's process runs, none has exited before
// finalizing, and no call is overdue: a view that says healthy never hides an overdue call.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pgas/runtime.h"

namespace tessera::run {

// A PE's process as the launcher sees it.
struct PeProcess {
  pid_t pid = 0;
  bool running = false;  // not yet reaped
};

struct Health {
  bool healthy = false;
  std::string text;  // lines ending in '\n'
  std::string json;  // one object (docs/running.md, "Health")
};

Health health_report(pgas::JobControl* ctl, const std::string& job_id, const std::vector<PeProcess>& procs,
                     uint64_t now_ns, uint64_t overdue_ns);

// The state letter of /proc/<pid>/stat ('R', 'S', 'T' stopped, 't' traced, 'Z', ...); 0 when unreadable.
char process_state(pid_t pid);
// Resilient mode (the one-host launcher and the agents): whether `pid` has stayed stopped (SIGSTOP, a
// debugger) for `limit_ns` by `now`. *since: when it was first seen stopped (0: it was not), kept up to date.
bool stopped_too_long(pid_t pid, uint64_t* since, uint64_t now, uint64_t limit_ns);

}  // namespace tessera::run
