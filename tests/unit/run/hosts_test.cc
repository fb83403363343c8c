// tessera-run --hosts / --hostfile (tools/run/hosts.h): the syntax, its errors, and block placement.
#include "hosts.h"
#include "hosts_job.h"

#include <gtest/gtest.h>

namespace tessera::run {
namespace {

std::string names(const std::vector<HostSlots>& hs) {
  std::string s;
  for (auto& h : hs) s += (s.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return s;
}

std::string error_of(const Result<std::vector<HostSlots>>& r) { return r.is_ok() ? "(ok)" : r.status().message(); }

TEST(Hosts, ParsesHostsAndSlots) {
  auto r = parse_hosts("h1:2,h2,node-3.example.org:16");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(names(r.value()), "h1:2,h2:1,node-3.example.org:16");
  EXPECT_EQ(names(parse_hosts(" h1 : 2 , h2 ").value()), "h1:2,h2:1") << "spaces around items are trimmed";
}

TEST(Hosts, RefusesBadHostsWithTheReason) {
  EXPECT_NE(error_of(parse_hosts("")).find("no host given"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1,,h2")).find("an empty entry"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1:0")).find("0 slots: expected 1 to 4096"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1:5000")).find("5000 slots: expected 1 to 4096"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1:x")).find("slots \"x\": expected a number"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1:")).find("slots \"\": expected a number"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h1:2,h1:3")).find("host h1 is named twice"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("user@h1")).find("\"@\" is not allowed"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts("h;rm")).find("\";\" is not allowed"), std::string::npos);
  EXPECT_NE(error_of(parse_hosts(std::string(254, 'a'))).find("254 characters (at most 253)"), std::string::npos);
}

TEST(Hosts, ParsesAHostfile) {
  auto r = parse_hostfile("# the cluster\n"
                          "h1 slots=2   # the first\n"
                          "\n"
                          "  h2\n"
                          "h3\tslots=4\r\n",
                          "F");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(names(r.value()), "h1:2,h2:1,h3:4");
  auto last = parse_hostfile("h1 slots=3", "F");  // no newline at the end
  ASSERT_TRUE(last.is_ok());
  EXPECT_EQ(names(last.value()), "h1:3");
}

TEST(Hosts, HostfileErrorsNameTheLine) {
  EXPECT_EQ(error_of(parse_hostfile("h1\nh2 slots=x\n", "F")),
            "F, line 2: host h2: slots \"x\": expected a number, 1 to 4096");
  EXPECT_EQ(error_of(parse_hostfile("h1\n\n# c\nh2 cpus=2\n", "F")),
            "F, line 4: \"h2 cpus=2\": expected 'host [slots=N]'");
  EXPECT_EQ(error_of(parse_hostfile("h1 slots=1 slots=2\n", "F")), "F, line 1: slots given twice for host h1");
  EXPECT_EQ(error_of(parse_hostfile("h1\nh1\n", "F")),
            "F, line 2: host h1 is named twice (give it once, with all its slots: h1:N)");
  EXPECT_EQ(error_of(parse_hostfile("h/1\n", "F")),
            "F, line 1: host name \"h/1\": \"/\" is not allowed (letters, digits, '.', '-' and '_')");
  EXPECT_EQ(error_of(parse_hostfile("# nothing\n\n", "F")), "F: no host in the file (expected lines 'host [slots=N]')");
  EXPECT_NE(error_of(read_hostfile("/nonexistent/hostfile")).find("--hostfile /nonexistent/hostfile: cannot open it"),
            std::string::npos);
}

TEST(Hosts, BlockPlacementFillsHostsInOrder) {
  std::vector<HostSlots> hs{{"a", 2}, {"b", 2}, {"c", 1}};
  auto all = place_block(hs, 0);
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all.value().size(), 3u);
  EXPECT_EQ(all.value()[0].first, 0);
  EXPECT_EQ(all.value()[0].count, 2);
  EXPECT_EQ(all.value()[1].first, 2);
  EXPECT_EQ(all.value()[1].count, 2);
  EXPECT_EQ(all.value()[2].first, 4);
  EXPECT_EQ(all.value()[2].ranks(), "PE 4");
  EXPECT_EQ(all.value()[1].ranks(), "PEs 2-3");
  // Fewer PEs than slots: the last hosts get fewer, or none.
  auto three = place_block(hs, 3);
  ASSERT_TRUE(three.is_ok());
  ASSERT_EQ(three.value().size(), 2u);
  EXPECT_EQ(three.value()[1].name, "b");
  EXPECT_EQ(three.value()[1].count, 1);
  for (int n = 1; n <= 5; ++n) {
    int total = 0;
    auto placed = place_block(hs, n);  // held: a range-for over a temporary's value() would dangle
    ASSERT_TRUE(placed.is_ok());
    for (auto& h : placed.value()) {
      EXPECT_EQ(h.first, total);
      total += h.count;
    }
    EXPECT_EQ(total, n);
  }
}

TEST(Hosts, MorePesThanSlotsIsRefused) {
  std::vector<HostSlots> hs{{"a", 2}, {"b", 2}};
  auto r = place_block(hs, 5);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "-n 5: the hosts offer only 4 slots (2 hosts)");
  std::vector<HostSlots> big{{"a", 4096}, {"b", 1}};
  EXPECT_NE(place_block(big, 0).status().message().find("4097 slots; a job has at most 4096 PEs"), std::string::npos);
  EXPECT_TRUE(place_block(big, 4096).is_ok());
}

}  // namespace
}  // namespace tessera::run

namespace tessera::run {
namespace {

// The PEs that the rendezvous's abort ended exit with status 1 and may be reported before the PE that died:
// the line names the signal, then a lost host, then a status, the first of a kind.
TEST(HostsBlame, PrefersASignalThenALostHostThenAStatus) {
  using F = Failure;
  std::vector<F> seen{{F::kPeStatus, "PE 0 exited with status 1", 1},
                      {F::kPeStatus, "PE 1 exited with status 1", 1},
                      {F::kPeSignal, "PE 2 killed by signal 9", 137},
                      {F::kPeSignal, "PE 3 killed by signal 15", 143}};
  EXPECT_EQ(choose_cause(seen).text, "PE 2 killed by signal 9");
  seen[2].kind = seen[3].kind = F::kPeStatus;
  EXPECT_EQ(choose_cause(seen).text, "PE 0 exited with status 1") << "the earliest of a kind";
  seen.push_back({F::kHostLost, "host h2 disappeared", 1});
  EXPECT_EQ(choose_cause(seen).text, "host h2 disappeared");
  EXPECT_EQ(choose_cause({{F::kHostLost, "a", 1}, {F::kHostLost, "b", 1}}).text, "a");
}

}  // namespace
}  // namespace tessera::run
