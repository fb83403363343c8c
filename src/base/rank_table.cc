#include "base/rank_table.h"

#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/config.h"
#include "base/log.h"

namespace tessera {
namespace {
const config::Var<std::string> kRankTable{
    "TESSERA_RANK_TABLE", "",
    "A JSON file naming the job's hosts, their NICs and PEs, and the link between hosts (base/rank_table.h)"};

Status bad(const std::string& path, const std::string& what) {
  return invalid_arg("TESSERA_RANK_TABLE={}: {}", path, what);
}
}  // namespace

const RankTable::Host* RankTable::host_of(int pe) const {
  for (const Host& h : hosts)
    for (int p : h.pes)
      if (p == pe) return &h;
  return nullptr;
}

Result<RankTable> parse_rank_table(const std::string& text, const std::string& path) {
  RankTable t;
  t.path = path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return bad(path, fmt::format("not JSON: {}", e.what()));
  }
  if (!j.is_object()) return bad(path, "expected an object with \"hosts\"");
  // Compared as JSON numbers: get<int>() would cut 4294967297 down to 1.
  if (j.contains("version") && !(j["version"].is_number_integer() && j["version"] == 1))
    return bad(path, fmt::format("version {} is not supported (expected 1)", j["version"].dump()));
  if (!j.contains("hosts") || !j["hosts"].is_array() || j["hosts"].empty())
    return bad(path, "\"hosts\" must be a non-empty array");
  std::set<int> seen;
  std::set<std::string> names;
  for (size_t i = 0; i < j["hosts"].size(); ++i) {
    const auto& h = j["hosts"][i];
    RankTable::Host host;
    if (!h.is_object() || !h.contains("name") || !h["name"].is_string() || h["name"].get<std::string>().empty() ||
        h["name"].get<std::string>().size() > 100)
      return bad(path, fmt::format("hosts[{}]: \"name\" must be a string of 1 to 100 characters", i));
    host.name = h["name"].get<std::string>();
    if (!names.insert(host.name).second) return bad(path, fmt::format("hosts[{}]: host {:?} is listed twice", i, host.name));
    if (h.contains("nics")) {
      if (!h["nics"].is_array()) return bad(path, fmt::format("hosts[{}] ({}): \"nics\" must be an array of names", i, host.name));
      for (const auto& n : h["nics"]) {
        if (!n.is_string() || n.get<std::string>().empty())
          return bad(path, fmt::format("hosts[{}] ({}): a NIC name must be a non-empty string", i, host.name));
        host.nics.push_back(n.get<std::string>());
      }
    }
    if (!h.contains("pes") || !h["pes"].is_array())
      return bad(path, fmt::format("hosts[{}] ({}): \"pes\" must be an array of PE numbers", i, host.name));
    for (const auto& p : h["pes"]) {
      if (!p.is_number_integer() || p.get<long long>() < 0 || p.get<long long>() > (1 << 24))
        return bad(path, fmt::format("hosts[{}] ({}): PE {} is not a number from 0 to {}", i, host.name, p.dump(), 1 << 24));
      const int pe = static_cast<int>(p.get<long long>());
      if (!seen.insert(pe).second) return bad(path, fmt::format("PE {} is listed under more than one host", pe));
      host.pes.push_back(pe);
    }
    t.hosts.push_back(std::move(host));
  }
  if (j.contains("link")) {
    const auto& l = j["link"];
    auto num = [&](const char* k, double* out) -> Status {
      if (!l.contains(k)) return Status::ok();
      if (!l[k].is_number() || l[k].get<double>() <= 0) return bad(path, fmt::format("link.{} must be a positive number", k));
      *out = l[k].get<double>();
      return Status::ok();
    };
    if (!l.is_object()) return bad(path, "\"link\" must be an object");
    TS_RETURN_IF_ERROR(num("latency_us", &t.link_latency_us));
    TS_RETURN_IF_ERROR(num("gbps", &t.link_gbps));
    TS_RETURN_IF_ERROR(num("oneway_gbps", &t.link_oneway_gbps));
    TS_RETURN_IF_ERROR(num("host_gbps", &t.link_host_gbps));
    TS_RETURN_IF_ERROR(num("burst_gbps", &t.link_burst_gbps));
    TS_RETURN_IF_ERROR(num("wake_us", &t.link_wake_us));
  }
  return t;
}

const RankTable* rank_table() {
  static std::once_flag once;
  static RankTable* table = nullptr;
  std::call_once(once, [] {
    if (!kRankTable.is_set() || kRankTable.get().empty()) return;
    const std::string& path = kRankTable.get();
    std::ifstream f(path);
    if (!f) log::fatal("{}", bad(path, "cannot be read").message());
    std::stringstream ss;
    ss << f.rdbuf();
    Result<RankTable> t = parse_rank_table(ss.str(), path);
    if (!t.is_ok()) log::fatal("{}", t.status().message());
    table = new RankTable(std::move(t).value());
  });
  return table;
}

}  // namespace tessera
