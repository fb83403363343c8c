// tessera-run: starts N PEs of a program on this host, or on several (--hosts h1:2,h2:2, --hostfile F).
// The command line and its rules are in cli.h; this file prints what the parse says and starts the job.
#include <cstdio>

#include "agent.h"
#include "cli.h"
#include "hosts_job.h"
#include "job.h"

int main(int argc, char** argv) {
  namespace run = tessera::run;
  const run::Launch l = run::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  switch (l.kind) {
    case run::Launch::Kind::kExit:
      std::fputs(l.out.c_str(), stdout);
      std::fputs(l.err.c_str(), stderr);
      return l.exit_code;
    case run::Launch::Kind::kAgent: return run::run_agent();
    case run::Launch::Kind::kLocal: return run::run_job(l.opt);
    case run::Launch::Kind::kHosts: return run::run_hosts_job(l.opt, l.placed);
  }
  return 2;
}
