// The trace merger and summary (tools/run/trace_merge.h): a PE's trace file with any content is merged or
// refused with an error naming the file, never an end of the process, and what it writes is JSON that the
// summary reads (a name with any bytes in it included). The input is one PE's file, or two when it holds a
// form feed (the second part is PE 1's file).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz.h"
#include "trace_merge.h"

namespace {

const std::string& work_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/tessera-fuzz-trace-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    return std::string(tmpl);
  }();
  return dir;
}

void write_file(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string& dir = work_dir();
  const size_t ff = in.find('\f');
  std::remove((dir + "/pe1.trace").c_str());
  std::remove((dir + "/trace.json").c_str());
  write_file(dir + "/pe0.trace", in.substr(0, ff));
  if (ff != std::string_view::npos) write_file(dir + "/pe1.trace", in.substr(ff + 1));
  std::string summary;
  const tessera::Status st = tessera::run::merge_traces(dir, {}, &summary);
  if (!st.is_ok()) {
    FUZZ_CHECK(st.message().find(dir) != std::string::npos);
    FUZZ_CHECK(access((dir + "/trace.json").c_str(), F_OK) != 0);  // nothing half-written is left as the trace
    return 0;
  }
  std::ifstream merged(dir + "/trace.json");
  std::stringstream ss;
  ss << merged.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  FUZZ_CHECK(!j.is_discarded());  // the merged file is JSON
  FUZZ_CHECK(j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array());
  std::FILE* devnull = std::fopen("/dev/null", "w");
  FUZZ_CHECK(devnull != nullptr);
  const tessera::Status sum = tessera::run::print_trace_summary(dir + "/trace.json", devnull);
  std::fclose(devnull);
  FUZZ_CHECK(sum.is_ok());
  // And the summary of any text is a table or an error (a user's file from another tool).
  write_file(dir + "/other.json", in);
  devnull = std::fopen("/dev/null", "w");
  (void)tessera::run::print_trace_summary(dir + "/other.json", devnull);
  std::fclose(devnull);
  return 0;
}
