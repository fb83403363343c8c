// What a PE does when it finds that a peer process of its job no longer exists (a system call on the peer's
// pid, such as process_vm_readv, failed with ESRCH).
#pragma once
#include <string>

namespace tessera::sync {

// The peer died, and the job is ending for that reason: the launcher, which reaps the dead PE, is the one to
// say which PE it was and why, and to end the others. Reporting a failure here instead would race with it
// (the launcher names the first PE it reaps, and this PE's exit may be reaped first), so this waits for the
// job's abort word and then exits as every waiter does when the job ends (wait.h). Without a job control
// segment (no launcher watches the job), or if the job has not ended by the TESSERA_TIMEOUT deadline, it
// ends the job itself with `what`, which names the peer and the call that failed. Never returns.
[[noreturn]] void peer_vanished(const std::string& what);

}  // namespace tessera::sync
