// tessera-run's command line (tools/run/cli.h): what it starts, and the usage errors it answers with.
#include "cli.h"

#include <gtest/gtest.h>

namespace tessera::run {
namespace {

Launch parse(std::vector<std::string> args) { return parse_command_line(args); }

TEST(Cli, LocalJob) {
  Launch l = parse({"-np", "3", "--tag-output", "--timeout", "30", "-x", "A=1", "prog", "-v"});
  ASSERT_EQ(l.kind, Launch::Kind::kLocal) << l.err;
  EXPECT_EQ(l.opt.n_pes, 3);
  EXPECT_TRUE(l.opt.tag_output);
  EXPECT_EQ(l.opt.timeout_s, 30);
  EXPECT_EQ(l.opt.env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(l.opt.argv, (std::vector<std::string>{"prog", "-v"}));
}

TEST(Cli, HostsJob) {
  Launch l = parse({"--hosts", "h1:2,h2:2", "-n", "3", "prog"});
  ASSERT_EQ(l.kind, Launch::Kind::kHosts) << l.err;
  ASSERT_EQ(l.placed.size(), 2u);
  EXPECT_EQ(l.placed[1].first, 2);
  EXPECT_EQ(l.placed[1].count, 1);
}

TEST(Cli, UsageErrorsExitTwoWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"prog"}, {"-n", "2"}, {"-n", "2", "--bogus", "prog"}, {"-n", "0", "prog"}, {"--agent", "x"}}) {
    Launch l = parse(args);
    EXPECT_EQ(l.kind, Launch::Kind::kExit) << args.size();
    EXPECT_EQ(l.exit_code, 2);
    EXPECT_FALSE(l.err.empty());
  }
  EXPECT_EQ(parse({"--version"}).exit_code, 0);
}

// A PE count that is not one says so in a PE count's terms, naming the word and the limits, for each spelling.
TEST(Cli, PeCountErrorsNameTheWord) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-n", "abc", "prog"}, "tessera-run: -n: 'abc' is not a number of PEs (1 to 4096)\n"},
      {{"-np", "2.5", "prog"}, "tessera-run: -n: '2.5' is not a number of PEs (1 to 4096)\n"},
      {{"--np=4097", "prog"}, "tessera-run: -n: '4097' is not a number of PEs (1 to 4096)\n"},
      {{"-n", "-1", "prog"}, "tessera-run: -n: '-1' is not a number of PEs (1 to 4096)\n"},
      {{"-N", "x", "prog"}, "tessera-run: -N: 'x' is not a number of PEs per host (1 to 4096)\n"},
      {{"--hosts", "h1:2", "-n", "two", "prog"}, "tessera-run: -n: 'two' is not a number of PEs (1 to 4096)\n"},
  };
  for (const auto& [args, err] : cases) {
    Launch l = parse(args);
    EXPECT_EQ(l.kind, Launch::Kind::kExit) << args[1];
    EXPECT_EQ(l.exit_code, 2) << args[1];
    EXPECT_EQ(l.err, err);
  }
  EXPECT_EQ(parse({"-n", "4096", "prog"}).opt.n_pes, 4096);
  EXPECT_EQ(parse({"-N", "1", "prog"}).opt.n_pes, 1);
}

// --help: one usage (the second form continues it), ours; not CLI11's generic "Usage: [OPTIONS]" as well.
TEST(Cli, HelpHasOneUsage) {
  Launch l = parse({"--help"});
  ASSERT_EQ(l.exit_code, 0);
  size_t usages = 0;
  for (size_t at = 0; (at = l.out.find("sage:", at)) != std::string::npos; ++at) ++usages;
  EXPECT_EQ(usages, 1u) << l.out;
  EXPECT_NE(l.out.find("\nusage: tessera-run -n N [options] program [args...]\n"
                       "       tessera-run --hosts h1:2,h2:2 [-n N] [options] program [args...]\n"),
            std::string::npos)
      << l.out;
}

// A timeout that is not a number, or whose nanoseconds overflow the job's 64-bit deadline (which then lay
// in the past: the job "timed out" at once), is a usage error. Found by tests/fuzz/run_cli's property.
TEST(Cli, TimeoutIsBounded) {
  for (const char* t : {"nan", "1e300", "1e10"}) {
    Launch l = parse({"-n", "1", "--timeout", t, "prog"});
    EXPECT_EQ(l.kind, Launch::Kind::kExit) << t;
    EXPECT_EQ(l.exit_code, 2) << t;
    EXPECT_NE(l.err.find("--timeout"), std::string::npos) << l.err;
  }
  EXPECT_EQ(parse({"-n", "1", "--timeout", "1e9", "prog"}).kind, Launch::Kind::kLocal);
}

}  // namespace
}  // namespace tessera::run
