// `tessera-run --agent`: the launcher's hand on one host of a multi-host job (tessera-run --hosts), started
// there through the remote shell ($TESSERA_RSH HOST /path/to/tessera-run --agent) with its control channel
// on stdin and stdout (agent_wire.h).
//
// Lifecycle: hello -> the job description -> (first host: probe a free port for the rendezvous) -> start
// this host's PEs when told, each in a process group of its own, stdin /dev/null, stdout and stderr to
// pipes whose lines go to the launcher -> report each PE's end -> once every PE ended, remove the job's
// objects from this host's /dev/shm, say done, exit.
//
// Ending: the launcher's kEnd gives the PEs kSelfEndSeconds to end on the job's abort, then SIGTERM, then
// SIGKILL after kGraceSeconds (proc.h). The end of stdin (the launcher died, even by SIGKILL, or its host
// went away), and SIGTERM/SIGINT/SIGHUP to the agent, send SIGTERM at once and SIGKILL after the grace.
// Every signal goes to the PE's whole process group, so what a PE started ends with it; once the PEs have
// ended, what is left in their groups is killed (at once when the job is ending, after a short drain of its
// output otherwise). A PE also gets SIGKILL when the agent itself dies (PR_SET_PDEATHSIG).
#pragma once

namespace tessera::run {

// Runs the agent; returns its exit status (0 once it said done, 1 when the channel was unusable).
int run_agent();

}  // namespace tessera::run
