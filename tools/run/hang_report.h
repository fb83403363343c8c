// The hang report: which PE hangs, and where. When a wait passes its deadline (TESSERA_TIMEOUT; the
// expiring PE records itself in JobControl::deadline_pe) or the job passes tessera-run's --timeout, the
// launcher reads every PE's where-area (sync/where.h) from the job's control segment and prints one report:
// a line per PE with the call it is in (or that it is not in a Tessera call, with its last call), what or
// whom it waits for and its text about the wait, its earlier calls, then a summary naming the PEs the
// others wait for.
//
// Whom a PE waits for: in a call over a team or communicator whose members are start + i * stride, every
// member that is not in the same call (same kind, same members, same sequence number) or a later one. A
// point-to-point wait names no PE: any PE may write the word. The report reads the areas without locks
// (where.h says why that is enough for a diagnostic); it never writes the control segment.
//
// Single host: on a multi-host job (tools/run/hosts_job.h) each host's control segment is made by a PE of
// that host and is not mapped by the agents, so there is no report there yet.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pgas/runtime.h"

namespace tessera::run {

// Whether every PE that is in a recorded call has written its own description of the wait (or has ended):
// the report is then complete. exited[pe]: the process has ended (its area no longer changes).
bool hang_report_settled(pgas::JobControl* ctl, const std::vector<bool>& exited);

// The report, lines ending in '\n'; `why` heads it ("the wait of PE 2 passed its deadline (TESSERA_TIMEOUT=1)").
std::string hang_report(pgas::JobControl* ctl, const std::string& why, uint64_t now_ns);

}  // namespace tessera::run
