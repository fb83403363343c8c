// tessera-run's command line (tools/run/cli.h), parsed without starting anything. Input: the words after
// the program's name, separated by NUL bytes. --hostfile reads no file here: the path "hosts" names a
// two-host file, any other path is an unreadable one. Properties: the parse never throws or exits; a usage
// error is exit code 2 with a "tessera-run: " line; a job to start has a program, 1..kMaxSlots PEs, a
// timeout that a deadline in nanoseconds can hold, K=V environment entries, a known --bind-to, and (across
// hosts) every host with PEs numbered without a gap.
#include <cmath>
#include <string>
#include <vector>

#include "cli.h"
#include "fuzz.h"

namespace run = tessera::run;

namespace {
tessera::Result<std::vector<run::HostSlots>> fake_hostfile(const std::string& path) {
  if (path == "hosts") return run::parse_hostfile("h1 slots=2\nh2 slots=3\n", path);
  return tessera::invalid_arg("--hostfile {}: cannot open it", path);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  if (size > 0) args.push_back(word);
  if (args.size() > 64) return 0;  // a command line's length adds nothing a shorter one does not reach
  const run::Launch l = run::parse_command_line(args, fake_hostfile);
  switch (l.kind) {
    case run::Launch::Kind::kExit:
      FUZZ_CHECK(l.exit_code == 0 || l.exit_code == 2);
      if (l.exit_code == 2) FUZZ_CHECK(!l.err.empty() && l.err.back() == '\n');
      if (l.exit_code == 0) FUZZ_CHECK(!l.out.empty());  // --help or --version printed something
      break;
    case run::Launch::Kind::kAgent: FUZZ_CHECK(args.size() == 1 && args[0] == "--agent"); break;
    case run::Launch::Kind::kLocal:
    case run::Launch::Kind::kHosts: {
      FUZZ_CHECK(!l.opt.argv.empty());
      // The job turns the timeout into a deadline in nanoseconds (a uint64_t).
      FUZZ_CHECK(std::isfinite(l.opt.timeout_s) && l.opt.timeout_s >= 0 && l.opt.timeout_s <= run::kMaxTimeoutSeconds);
      FUZZ_CHECK(l.opt.bind_to.empty() || l.opt.bind_to == "auto" || l.opt.bind_to == "core" ||
                 l.opt.bind_to == "none");
      for (const auto& kv : l.opt.env) FUZZ_CHECK(kv.find('=') != std::string::npos && kv.front() != '=');
      if (l.kind == run::Launch::Kind::kLocal) {
        FUZZ_CHECK(l.opt.n_pes >= 1 && l.opt.n_pes <= run::kMaxSlots);
        FUZZ_CHECK(l.placed.empty());
      } else {
        FUZZ_CHECK(!l.placed.empty());
        int next = 0;
        for (const auto& p : l.placed) {
          FUZZ_CHECK(p.first == next && p.count >= 1);
          next += p.count;
        }
        FUZZ_CHECK(next >= 1 && next <= run::kMaxSlots);
        FUZZ_CHECK(l.opt.bind_to != "core" && !l.opt.report_bindings);
      }
      break;
    }
  }
  return 0;
}
