// tessera-run's command line, parsed without starting anything, so that a test or a fuzzer can give it any
// words (tests/fuzz/run_cli.cc). main.cc prints what the parse says and starts the job it describes.
//   tessera-run -n 4 [--tag-output] [--timeout S] [--bind-to auto|core|none] [--report-bindings] [--env K=V]... prog [args...]
//   tessera-run --hosts h1:2,h2:2 [-n N] [--tag-output] [--timeout S] [--env K=V]... prog [args...]
//   tessera-run --agent   (started by the launcher on each host through $TESSERA_RSH; agent.h)
// Scripts written for oshrun / mpirun work as they are: -np N, -N N (PEs per host: one host here),
// -x VAR[=VALUE], --map-by, --oversubscribe and --allow-run-as-root are accepted (see --help).
#pragma once
#include <string>
#include <vector>

#include "base/status.h"
#include "hosts.h"
#include "options.h"

namespace tessera::run {

// --timeout's limit: the job's deadline is a count of nanoseconds in 64 bits. A billion seconds is
// about 31 years.
inline constexpr double kMaxTimeoutSeconds = 1e9;

struct Launch {
  enum class Kind {
    kExit,   // print `out` and `err`, exit with `exit_code` (--help, --version: 0; a usage error: 2)
    kAgent,  // run the agent (agent.h)
    kLocal,  // run `opt` on this host (job.h): 1 <= opt.n_pes <= kMaxSlots, opt.argv not empty,
             // 0 <= opt.timeout_s <= kMaxTimeoutSeconds (also for kHosts)
    kHosts,  // run `opt` on `placed` (hosts_job.h): every host with at least one PE, opt.argv not empty
  };
  Kind kind = Kind::kExit;
  int exit_code = 0;
  std::string out, err;  // kExit: the text for stdout and stderr, whole lines
  Options opt;
  std::vector<HostPes> placed;
};

// How --hostfile's file is read: read_hostfile, or a stand-in that touches no file (the fuzzer's).
using HostfileReader = Result<std::vector<HostSlots>> (*)(const std::string& path);

// `args` are the words after the program's name. Reads the environment only for `-x VAR` across hosts
// (VAR's value is sent along) and the hostfile only through `read`. Every mistake is a kExit with code 2
// and one line naming it; nothing here exits or throws.
Launch parse_command_line(const std::vector<std::string>& args, HostfileReader read = read_hostfile);

}  // namespace tessera::run
