#include "coll/select/link.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "base/rank_table.h"

namespace tessera::coll {
namespace {
const config::Var<std::string> kLink{
    "TESSERA_LINK", "",
    "The link between hosts for the two-level collectives' cost model: "
    "us=LATENCY,gbps=ONE_STREAM[,oneway_gbps=ONE_WAY][,host_gbps=ALL][,burst_gbps=FIRST_MIB][,wake_us=WAKE] "
    "(GB/s = 1e9 bytes/s; gbps with traffic both ways, oneway_gbps without, host_gbps every stream of a host "
    "together, burst_gbps a transfer's first MiB, wake_us what a transfer of 64 KiB or more pays beyond its "
    "latency and bytes, 0 if not given); default: the rank table's, else measured when the first communicator "
    "that spans hosts is made"};

// An item's value: a finite number above 0, or from 0 where `zero_ok`.
double number(const std::string& what, const std::string& v, bool zero_ok = false) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || !(zero_ok ? x >= 0 : x > 0))
    log::fatal("TESSERA_LINK: {}={:?} is not {}", what, v, zero_ok ? "a number from 0" : "a positive number");
  return x;
}
}  // namespace

LinkParams configured_link() {
  LinkParams l;
  if (kLink.is_set() && !kLink.get().empty()) {
    bool host_set = false, oneway_set = false, burst_set = false;
    std::string s = kLink.get();
    size_t at = 0;
    while (at <= s.size()) {
      size_t comma = s.find(',', at);
      if (comma == std::string::npos) comma = s.size();
      const std::string item = s.substr(at, comma - at);
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key == "us") l.alpha = number(key, val) * 1e-6;
      else if (key == "gbps") l.stream_bw = number(key, val) * 1e9;
      else if (key == "oneway_gbps") l.oneway_bw = number(key, val) * 1e9, oneway_set = true;
      else if (key == "host_gbps") l.host_bw = number(key, val) * 1e9, host_set = true;
      else if (key == "burst_gbps") l.burst_bw = number(key, val) * 1e9, burst_set = true;
      else if (key == "wake_us") l.wake = number(key, val, true) * 1e-6;
      else log::fatal("TESSERA_LINK={:?}: unknown item {:?} (expected us=, gbps=, oneway_gbps=, host_gbps=, burst_gbps=, "
                      "wake_us=)",
                      s, item);
      at = comma + 1;
    }
    if (!host_set) l.host_bw = l.stream_bw;
    if (!oneway_set) l.oneway_bw = l.stream_bw;
    if (!burst_set) l.burst_bw = l.stream_bw;
    std::snprintf(l.source, sizeof l.source, "TESSERA_LINK");
    return l;
  }
  if (const RankTable* t = rank_table(); t && t->link_gbps > 0) {
    l.alpha = t->link_latency_us > 0 ? t->link_latency_us * 1e-6 : l.alpha;
    l.stream_bw = t->link_gbps * 1e9;
    l.host_bw = t->link_host_gbps > 0 ? t->link_host_gbps * 1e9 : l.stream_bw;
    l.oneway_bw = t->link_oneway_gbps > 0 ? t->link_oneway_gbps * 1e9 : l.stream_bw;
    l.burst_bw = t->link_burst_gbps > 0 ? t->link_burst_gbps * 1e9 : l.stream_bw;
    l.wake = t->link_wake_us * 1e-6;
    std::snprintf(l.source, sizeof l.source, "rank table");
  }
  return l;
}

std::string describe(const LinkParams& l) {
  return fmt::format("latency {:.1f} us, one stream {:.2f} GB/s (one way alone {:.2f}; the first MiB {:.2f}), a "
                     "host's streams together {:.2f} GB/s, a wake-up {:.1f} us ({})", l.alpha * 1e6, l.stream_bw / 1e9,
                     l.oneway_bw / 1e9, l.burst_bw / 1e9, l.host_bw / 1e9, l.wake * 1e6, l.source);
}

double transfer_seconds(const LinkParams& l, double bytes, double bw) {
  const double burst = std::min(bytes, LinkParams::kBurstBytes);
  return l.alpha + l.wake * std::min(1.0, bytes / LinkParams::kWakeBytes) + burst / l.burst_bw + (bytes - burst) / bw;
}

double net_ring_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local) {
  if (hosts <= 1) return 0;
  const double h = hosts, b = static_cast<double>(bytes);
  return 2 * (h - 1) * transfer_seconds(link, b / h, bw) + (h - 1) * b / h * local.gamma;
}

double net_doubling_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local) {
  if (hosts <= 1) return 0;
  const double b = static_cast<double>(bytes);
  return std::log2(static_cast<double>(hosts)) * (transfer_seconds(link, b, bw) + b * local.gamma);
}

}  // namespace tessera::coll
