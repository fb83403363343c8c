// The rank table's parser: what it accepts, and that every malformed table is an error naming the file and the fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/rank_table.h"

namespace tessera {
namespace {

TEST(RankTable, ParsesHostsNicsPesAndLink) {
  Result<RankTable> parsed = parse_rank_table(R"({"version": 1,
      "hosts": [{"name": "h1", "nics": ["eth0", "ib0"], "pes": [0, 2]}, {"name": "h2", "pes": [1, 3]}],
      "link": {"latency_us": 12.5, "gbps": 1.8, "oneway_gbps": 3.5, "host_gbps": 2.4, "burst_gbps": 4.5, "wake_us": 9.5}})", "t.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  const RankTable& t = parsed.value();
  ASSERT_EQ(t.hosts.size(), 2u);
  EXPECT_EQ(t.hosts[0].name, "h1");
  EXPECT_EQ(t.hosts[0].nics, (std::vector<std::string>{"eth0", "ib0"}));
  EXPECT_TRUE(t.hosts[1].nics.empty());
  ASSERT_NE(t.host_of(2), nullptr);
  EXPECT_EQ(t.host_of(2)->name, "h1");
  EXPECT_EQ(t.host_of(3)->name, "h2");
  EXPECT_EQ(t.host_of(4), nullptr);
  EXPECT_DOUBLE_EQ(t.link_latency_us, 12.5);
  EXPECT_DOUBLE_EQ(t.link_gbps, 1.8);
  EXPECT_DOUBLE_EQ(t.link_host_gbps, 2.4);
  EXPECT_DOUBLE_EQ(t.link_oneway_gbps, 3.5);
  EXPECT_DOUBLE_EQ(t.link_burst_gbps, 4.5);
  EXPECT_DOUBLE_EQ(t.link_wake_us, 9.5);
}

// The error of parsing `text`, or "" when it parsed.
std::string error_of(const std::string& text) {
  Result<RankTable> t = parse_rank_table(text, "a.json");
  return t.is_ok() ? "" : t.status().message();
}

TEST(RankTable, MalformedTablesNameTheFault) {
  EXPECT_THAT(error_of("{"), testing::HasSubstr("TESSERA_RANK_TABLE=a.json: not JSON"));
  EXPECT_THAT(error_of("[]"), testing::HasSubstr("expected an object"));
  // A number beyond a double is nlohmann's out_of_range, not its parse_error (found by tests/fuzz/rank_table).
  EXPECT_THAT(error_of(R"({"version": 1e400, "hosts": [{"name": "h", "pes": [0]}]})"),
              testing::HasSubstr("TESSERA_RANK_TABLE=a.json: not JSON"));
  EXPECT_THAT(error_of(R"({"hosts": []})"), testing::HasSubstr("non-empty array"));
  EXPECT_THAT(error_of(R"({"version": 2, "hosts": [{"name": "h", "pes": [0]}]})"),
              testing::HasSubstr("version 2 is not supported"));
  // 2^32 + 1 is not version 1, though it is as an int (found by tests/fuzz/rank_table).
  EXPECT_THAT(error_of(R"({"version": 4294967297, "hosts": [{"name": "h", "pes": [0]}]})"),
              testing::HasSubstr("version 4294967297 is not supported"));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "", "pes": [0]}]})"), testing::HasSubstr("hosts[0]: \"name\""));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "h", "pes": [0]}, {"name": "h", "pes": [1]}]})"),
              testing::HasSubstr("listed twice"));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "h", "pes": [0]}, {"name": "g", "pes": [0]}]})"),
              testing::HasSubstr("PE 0 is listed under more than one host"));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "h", "pes": [-1]}]})"), testing::HasSubstr("PE -1 is not a number"));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "h", "pes": [0], "nics": [3]}]})"),
              testing::HasSubstr("NIC name must be a non-empty string"));
  EXPECT_THAT(error_of(R"({"hosts": [{"name": "h", "pes": [0]}], "link": {"gbps": 0}})"),
              testing::HasSubstr("link.gbps must be a positive number"));
}

}  // namespace
}  // namespace tessera
