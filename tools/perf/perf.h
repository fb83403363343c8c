// tessera-perf: one binary, one subcommand per benchmark family (rma, allreduce..., ops).
// A family registers itself from its own file:
//   static const tessera::perf::Registrar kReg{"rma", "one-sided latency and bandwidth", &run_rma};
// run() receives the arguments after the subcommand name (argv[0] is "tessera-perf <name>").
#pragma once
#include <string>
#include <vector>

namespace tessera::perf {

struct Command {
  std::string name;
  std::string help;
  int (*run)(int argc, char** argv);
};

std::vector<Command>& commands();

struct Registrar {
  Registrar(std::string name, std::string help, int (*run)(int, char**)) {
    commands().push_back({std::move(name), std::move(help), run});
  }
};

}  // namespace tessera::perf
