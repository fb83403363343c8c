// The trace merger and summary (tools/run/trace_merge.h) on files no PE wrote: names in any bytes, events of
// the wrong types, PE numbers out of range.
#include "trace_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera::run {
namespace {

class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-trace-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  std::string read(const std::string& name) {
    std::stringstream ss;
    ss << std::ifstream(dir_ + "/" + name).rdbuf();
    return ss.str();
  }
  std::string summary_error(const std::string& json) {
    write("t.json", json);
    std::FILE* devnull = std::fopen("/dev/null", "w");
    const Status st = print_trace_summary(dir_ + "/t.json", devnull);
    std::fclose(devnull);
    return st.is_ok() ? "" : st.message();
  }
  std::string dir_;
};

TEST_F(TraceFiles, NamesThatAreNotUtf8StillMakeJson) {
  // a thread named in Latin-1 and a kernel name with a lone continuation byte and a 0xFF
  write("pe0.trace", "tessera-trace\t1\t0\t42\t0\nT\t42\tk\xe9rnel\nE\t42\tX\tkernel\t100\t5\tblock\tn\xc3\xa9\x80\xff\tblock\t3\t-\t0\n");
  std::string summary;
  ASSERT_TRUE(merge_traces(dir_, {}, &summary).is_ok());
  const nlohmann::json j = nlohmann::json::parse(read("trace.json"), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << read("trace.json");
  bool thread = false, event = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread = e["args"]["name"] == "k\xef\xbf\xbdrnel";
    // well-formed UTF-8 (é) passes through; each stray byte becomes one U+FFFD
    if (e["ph"] == "X") event = e["args"]["detail"] == "n\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd" && e["args"]["block"] == 3;
  }
  EXPECT_TRUE(thread && event) << read("trace.json");
}

TEST_F(TraceFiles, AHeaderWithAPeOutOfRangeIsRefused) {
  write("pe0.trace", "tessera-trace\t1\t4294967296\t42\t0\n");
  std::string summary;
  const Status st = merge_traces(dir_, {}, &summary);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("PE below 2^24"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/trace.json"));
}

TEST_F(TraceFiles, SummaryOfEventsOfTheWrongTypesNamesTheEvent) {
  EXPECT_EQ(summary_error(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2,"pid":0}]})"), "");
  const std::string e1 = summary_error(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2},{"ph":"X","ts":"late"}]})");
  EXPECT_NE(e1.find("traceEvents[1]"), std::string::npos) << e1;
  EXPECT_NE(e1.find("t.json"), std::string::npos) << e1;
  EXPECT_NE(summary_error(R"([{"ph":7}])").find("traceEvents[0]"), std::string::npos);
  EXPECT_NE(summary_error(R"([{"ph":"X","cat":"wait","name":"w","args":{"detail":5}}])").find("traceEvents[0]"),
            std::string::npos);
  EXPECT_NE(summary_error("{\"traceEvents\": 5}").find("no traceEvents array"), std::string::npos);
}

}  // namespace
}  // namespace tessera::run
