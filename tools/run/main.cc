// tessera-run: starts N PEs of a program on this host.
//   tessera-run -n 4 [--tag-output] [--timeout S] [--bind-to core|none] [--env K=V]... prog [args...]
#include <CLI/CLI.hpp>

#include "job.h"

int main(int argc, char** argv) {
  tessera::run::Options opt;
  CLI::App app{"Start N processing elements (PEs) of a program on this host.\n"
               "usage: tessera-run -n N [options] program [args...]"};
  app.add_option("-n,--np", opt.n_pes, "number of PEs")->check(CLI::Range(1, 4096))->required();
  app.add_flag("--tag-output", opt.tag_output, "prefix every output line with [PE n]");
  app.add_option("--timeout", opt.timeout_s, "end the whole job after this many seconds (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--env", opt.env, "set K=V in every PE's environment (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->each([](const std::string& kv) {
        if (kv.find('=') == std::string::npos || kv.front() == '=')
          throw CLI::ValidationError("--env", "expected K=V, got '" + kv + "'");
      });
  app.add_option("--bind-to", opt.bind_to,
                 "core: each PE stays on a CPU of its own when the PEs fit on the CPUs, PE r on CPU r mod the "
                 "count when they are a whole multiple of them (default); none: PEs run on every CPU (sets "
                 "TESSERA_BIND)")
      ->check(CLI::IsMember({"core", "none"}));
  app.prefix_command();  // everything after the program belongs to it
  try {
    app.parse(argc, argv);
    // With prefix_command, the program and its arguments arrive as remaining arguments.
    for (auto& a : app.remaining()) opt.argv.push_back(a);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (opt.argv.empty()) {
    std::fprintf(stderr, "tessera-run: no program given\n");
    return 2;
  }
  return tessera::run::run_job(opt);
}
