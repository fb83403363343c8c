// tessera-run: starts N PEs of a program on this host, or on several (--hosts h1:2,h2:2, --hostfile F).
// The command line and its rules are in cli.h; this file prints what the parse says and starts the job.
#include <cstdio>

#include "agent.h"
#include "cli.h"
#include "hosts_job.h"
#include "job.h"
#include "settings.h"

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
    case run::Launch::Kind::kHosts: {
      // Resilient mode runs on one host so far. --on-failure continue is refused with the command line
      // (cli.cc); TESSERA_RESILIENT, as the PEs would see it, is refused here by name rather than left off
      // without a word. (The parser cannot: the fuzzers and unit tests link it without the settings.)
      bool resilient = false;
      tessera::Status st = run::resolve_on_failure(l.opt, &resilient);
      if (st.is_ok() && resilient)
        st = tessera::invalid_arg("TESSERA_RESILIENT={}: resilient mode runs on one host so far (tessera-run -n N)",
                                  run::pe_setting(l.opt, "TESSERA_RESILIENT"));
      if (!st.is_ok()) {
        std::fprintf(stderr, "tessera-run: %s\n", st.message().c_str());
        return 1;
      }
      return run::run_hosts_job(l.opt, l.placed);
    }
  }
  return 2;
}
