#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "perf/perf.h"
#include "tessera/version.h"

namespace tessera::perf {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace tessera::perf

int main(int argc, char** argv) {
  auto& cmds = tessera::perf::commands();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  if (argc >= 2 && !std::strcmp(argv[1], "--version")) {
    std::printf("tessera-perf (Tessera) %s\n", TESSERA_VERSION_STRING);
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::printf("usage: tessera-run -n N tessera-perf <benchmark> [options]   (<benchmark> --help for its options)\n\n");
    for (auto& c : cmds) std::printf("  %-16s %s\n", c.name.c_str(), c.help.c_str());
    return argc < 2 ? 2 : 0;
  }
  for (auto& c : cmds) {
    if (c.name == argv[1]) {
      std::string prog = std::string("tessera-perf ") + argv[1];
      argv[1] = prog.data();
      return c.run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "tessera-perf: unknown benchmark '%s' (run tessera-perf --help for the list)\n", argv[1]);
  return 2;
}
