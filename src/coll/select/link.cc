#include "coll/select/link.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/config.h"
#include "base/log.h"
#include "base/rank_table.h"
#include "coll/select/select.h"

namespace tessera::coll {
namespace {
const config::Var<std::string> kLink{
    "TESSERA_LINK", "",
    "The link between hosts for the two-level collectives' cost model: us=LATENCY,gbps=ONE_STREAM[,host_gbps=ALL] "
    "(GB/s = 1e9 bytes/s); default: the rank table's, else measured when the first communicator that spans hosts "
    "is made"};
const config::Var<std::string> kHierAllreduce{
    "TESSERA_HIER_ALLREDUCE", "auto",
    "Allreduce across hosts: auto (the cost model), rails (every member of a host carries a slice between hosts), "
    "leaders (one member per host), ring (one ring over every member)"};

double positive(const std::string& what, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x > 0) || !std::isfinite(x))
    log::fatal("TESSERA_LINK: {}={:?} is not a positive number", what, v);
  return x;
}
}  // namespace

LinkParams configured_link() {
  LinkParams l;
  if (kLink.is_set() && !kLink.get().empty()) {
    bool host_set = false;
    std::string s = kLink.get();
    size_t at = 0;
    while (at <= s.size()) {
      size_t comma = s.find(',', at);
      if (comma == std::string::npos) comma = s.size();
      const std::string item = s.substr(at, comma - at);
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key == "us") l.alpha = positive(key, val) * 1e-6;
      else if (key == "gbps") l.stream_bw = positive(key, val) * 1e9;
      else if (key == "host_gbps") l.host_bw = positive(key, val) * 1e9, host_set = true;
      else log::fatal("TESSERA_LINK={:?}: unknown item {:?} (expected us=, gbps=, host_gbps=)", s, item);
      at = comma + 1;
    }
    if (!host_set) l.host_bw = l.stream_bw;
    std::snprintf(l.source, sizeof l.source, "TESSERA_LINK");
    return l;
  }
  if (const RankTable* t = rank_table(); t && t->link_gbps > 0) {
    l.alpha = t->link_latency_us > 0 ? t->link_latency_us * 1e-6 : l.alpha;
    l.stream_bw = t->link_gbps * 1e9;
    l.host_bw = t->link_host_gbps > 0 ? t->link_host_gbps * 1e9 : l.stream_bw;
    std::snprintf(l.source, sizeof l.source, "rank table");
  }
  return l;
}

std::string describe(const LinkParams& l) {
  return fmt::format("latency {:.1f} us, one stream {:.2f} GB/s, a host's streams together {:.2f} GB/s ({})",
                     l.alpha * 1e6, l.stream_bw / 1e9, l.host_bw / 1e9, l.source);
}

const char* hier_allreduce_name(HierAllreduce h) {
  switch (h) {
    case HierAllreduce::kRails: return "rails";
    case HierAllreduce::kLeaders: return "leaders";
    case HierAllreduce::kRing: return "ring";
  }
  return "?";
}

double local_seconds(Kind kind, const HierShape& s, size_t bytes, const ModelParams& local) {
  if (s.ppn <= 1) return 0;
  const Shape sh{.kind = kind, .n = s.ppn, .bytes = bytes, .dtype = s.dtype, .slot_bytes = s.slot_bytes,
                 .oversubscribed = s.oversubscribed};
  double best = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates(sh, local, false))
    if (c.supported && c.allowed) best = std::min(best, c.cost);
  return std::isfinite(best) ? best : 0;
}

double net_allreduce_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local,
                             bool* doubling) {
  *doubling = false;
  if (hosts <= 1) return 0;
  const double h = hosts, b = static_cast<double>(bytes);
  const double ring = 2 * (h - 1) * (link.alpha + b / h / bw) + (h - 1) * b / h * local.gamma;
  if ((hosts & (hosts - 1)) == 0) {
    const double dbl = std::log2(h) * (link.alpha + b / bw + b * local.gamma);
    if (dbl < ring) {
      *doubling = true;
      return dbl;
    }
  }
  return ring;
}

HierPlan plan_allreduce(const HierShape& s, const ModelParams& local, const LinkParams& link) {
  HierPlan p;
  const double b = static_cast<double>(s.bytes);
  const int n = s.hosts * s.ppn;
  bool dbl_rails = false, dbl_leaders = false;
  p.rails = std::numeric_limits<double>::infinity();
  if (s.equal && s.ppn > 1 && s.bytes / dtype_size(s.dtype) >= static_cast<size_t>(s.ppn)) {
    const double bw = std::min(link.stream_bw, link.host_bw / s.ppn);
    p.rails = s.contention *
              (local_seconds(Kind::kReduceScatter, s, s.bytes / static_cast<size_t>(s.ppn), local) +
               net_allreduce_seconds(s.hosts, s.bytes / static_cast<size_t>(s.ppn), bw, link, local, &dbl_rails) +
               local_seconds(Kind::kAllgather, s, s.bytes / static_cast<size_t>(s.ppn), local));
  }
  p.leaders = s.contention * local_seconds(Kind::kReduce, s, s.bytes, local) +
              net_allreduce_seconds(s.hosts, s.bytes, link.stream_bw, link, local, &dbl_leaders) +
              s.contention * local_seconds(Kind::kBroadcast, s, s.bytes, local);
  p.ring = s.contention * (2.0 * (n - 1) * (link.alpha + b / n / link.stream_bw) + (n - 1) * b / n * local.gamma);
  static const size_t forced = config::one_of(kHierAllreduce, {"auto", "rails", "leaders", "ring"});
  if (forced == 1 && std::isfinite(p.rails)) p.how = HierAllreduce::kRails;
  else if (forced == 2) p.how = HierAllreduce::kLeaders;
  else if (forced == 3) p.how = HierAllreduce::kRing;
  else if (p.rails <= p.leaders && p.rails <= p.ring) p.how = HierAllreduce::kRails;
  else if (p.leaders <= p.ring) p.how = HierAllreduce::kLeaders;
  else p.how = HierAllreduce::kRing;
  p.doubling = p.how == HierAllreduce::kRails ? dbl_rails : dbl_leaders;
  p.seconds = p.how == HierAllreduce::kRails ? p.rails : p.how == HierAllreduce::kLeaders ? p.leaders : p.ring;
  return p;
}

}  // namespace tessera::coll
