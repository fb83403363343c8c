// tessera-run --hosts / --hostfile: a job whose PEs run on several hosts, one agent per host (agent.h)
// started through the remote shell $TESSERA_RSH (default ssh) by the launcher's own absolute path, which
// must exist on every host (as mpirun assumes). The PEs find each other through the TCP rendezvous
// (src/bootstrap/tcp.h) at the first host; the launcher draws the job's secret and id, and the first host's
// agent a free port.
//
// Failure policy: a PE that dies (a signal, or a non-zero status) or a host whose agent's channel closes
// before it said done ends the job everywhere: kEnd to every agent, and one line naming the PE and its
// host or the host (`tessera-run: PE 3 on host h2 killed by signal 9 (SIGKILL); ending the job`). The
// rendezvous makes the job's other PEs exit with status 1 as soon as one dies, and those reports can reach
// the launcher first; so the line is chosen among the failures seen within kBlameSeconds of the first: a
// PE's signal before a lost host before a non-zero status, the earliest within a kind. Ends the agents
// caused themselves (they signalled the PE) are not failures. The launcher exits with the chosen PE's
// status (128 + the signal), 1 for a host, 0 when every PE exited 0.
// When the launcher itself dies, the agents see their stdin close and end their PEs (agent.h).
// Resilient mode (--on-failure continue; hosts_failure.h): a PE that dies or stays stopped, or a host that
// is lost, while other PEs run is marked failed on every host instead, and the job goes on; the launcher
// then exits with the survivors' status.
#pragma once
#include <string>
#include <vector>

#include "hosts.h"
#include "job.h"

namespace tessera::run {

// Runs opt's program as the PEs `hosts` lists; returns the launcher's exit status.
int run_hosts_job(const Options& opt, const std::vector<HostPes>& hosts);

// A failure the launcher saw, in the order it saw them.
struct Failure {
  // The kinds, in the order the launcher's line prefers them.
  enum Kind { kPeSignal = 0, kHostLost = 1, kPeStatus = 2 };
  Kind kind;
  std::string text;  // the line, without "tessera-run: " and "; ending the job"
  int result;        // the launcher's exit status if this is the cause
};
// The cause among the failures of the blame window (non-empty, in arrival order): the first of the
// preferred kind.
const Failure& choose_cause(const std::vector<Failure>& failures);

}  // namespace tessera::run
