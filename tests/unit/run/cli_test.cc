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
