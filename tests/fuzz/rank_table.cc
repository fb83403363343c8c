// The rank table (base/rank_table.h, TESSERA_RANK_TABLE): any text is a table or an error, never an end of
// the process. Properties of an accepted table, checked against the JSON read on its own: version 1 when
// given, host names of 1 to 100 characters listed once, every PE in 0..2^24 under exactly one host (and
// host_of finds it there), link figures finite and positive when given.
#include <cmath>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/rank_table.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tessera::Result<tessera::RankTable> r = tessera::parse_rank_table(text, "fuzz.json");
  if (!r.is_ok()) {
    FUZZ_CHECK(r.status().message().find("fuzz.json") != std::string::npos);
    return 0;
  }
  const tessera::RankTable& t = r.value();
  const nlohmann::json j = nlohmann::json::parse(text);  // it parsed once, so it parses again
  if (j.contains("version")) FUZZ_CHECK(j["version"] == 1);
  FUZZ_CHECK(!t.hosts.empty() && t.hosts.size() == j["hosts"].size());
  std::set<std::string> names;
  std::set<int> pes;
  for (const auto& h : t.hosts) {
    FUZZ_CHECK(!h.name.empty() && h.name.size() <= 100);
    FUZZ_CHECK(names.insert(h.name).second);
    for (int pe : h.pes) {
      FUZZ_CHECK(pe >= 0 && pe <= (1 << 24));
      FUZZ_CHECK(pes.insert(pe).second);
      FUZZ_CHECK(t.host_of(pe) == &h);
    }
    for (const auto& nic : h.nics) FUZZ_CHECK(!nic.empty());
  }
  for (double v : {t.link_latency_us, t.link_gbps, t.link_oneway_gbps, t.link_host_gbps, t.link_burst_gbps,
                   t.link_wake_us}) FUZZ_CHECK(std::isfinite(v) && v >= 0);
  return 0;
}
