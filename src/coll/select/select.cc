#include "coll/select/select.h"

#include <mutex>

#include "base/config.h"
#include "base/log.h"

namespace tessera::coll {
namespace {
const config::Var<std::string> kAlgo{
    "TESSERA_ALGO", "",
    "Algorithm per collective, overriding the cost model: 'allreduce=ring,allgather=bruck' (names: "
    "tessera-info --coll <collective>)"};
const config::Var<bool> kDeterministic{
    "TESSERA_DETERMINISTIC", false,
    "Reduce every element in rank order in one pass (bitwise identical results on every rank, every run, "
    "whatever the algorithm or chunk size): only canonical algorithms are used"};
const config::Var<int64_t> kCheck{
    "TESSERA_CHECK", 0,
    "Collective consistency check: 0 compares each call's kind/count/type/op/root across ranks (cheap, "
    "always on); 1 also compares a hash of replicated results (allreduce, allgather, broadcast)"};

const Algorithm* g_override[kNumKinds] = {};

void parse_overrides() {
  const std::string& spec = kAlgo.get();
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    auto kind = eq == std::string::npos ? std::nullopt : parse_kind(item.substr(0, eq));
    if (!kind)
      log::fatal("TESSERA_ALGO={}: '{}' is not <collective>=<algorithm> with a known collective (allreduce, "
                 "reduce_scatter, allgather, broadcast, reduce, gather, scatter, alltoall, barrier, ...)",
                 spec, item);
    std::string name = item.substr(eq + 1);
    const Algorithm* a = find_algorithm(*kind, name.c_str());
    if (!a) {
      std::string names;
      for (const Algorithm& x : algorithms())
        if (x.kind == *kind) names += std::string(names.empty() ? "" : ", ") + x.name;
      log::fatal("TESSERA_ALGO={}: {} has no algorithm '{}' (it has: {})", spec, kind_name(*kind), name, names);
    }
    g_override[static_cast<int>(*kind)] = a;
  }
}
std::once_flag g_once;
}  // namespace

bool deterministic_mode() { return kDeterministic.get(); }
int check_level() { return static_cast<int>(kCheck.get()); }

const Algorithm* override_for(Kind k) {
  std::call_once(g_once, parse_overrides);
  return g_override[static_cast<int>(k)];
}

namespace {
// A stepped algorithm publishes at least one step, also where its formula counts none (a member alone:
// log2(1) rounds, n - 1 peers). Without that floor a communicator of one member priced `dbtree` at nothing
// and took it for an 8-byte allreduce, which the LL protocol does in a fraction of the time (docs/coll.md).
double priced(const Algorithm& a, const Shape& s, const ModelParams& m) {
  const double c = a.cost(s, m);
  const bool stepless = a.ll || (s.bytes == 0 && s.kind != Kind::kBarrier);  // count 0: returns at once
  return stepless ? c : std::max(c, alpha_of(s, m));
}

// Staging against reading in place. With symmetric buffers (the OpenSHMEM collectives) up to a staging slot,
// a row that stages copies every piece into staging before its readers may copy it out, where an in-place
// row reads it from the member's buffer: the same copies less one, and no reader waits for a copy-in. The
// staged rows' costs leave that copy out (it is common to them all), so the model would keep them; the
// in-place rows measured faster at every size from 1 KiB to a slot, at 2 and 4 PEs, in every collective that
// has one (docs/openshmem.md). Above a slot the staged `direct` rows read in place themselves (zcopy.cc)
// and compete on cost. LL rows stay: their costs count their copies, and below 1 KiB they win.
bool staged_loses(const Algorithm& a, const Shape& s) {
  if (!s.symmetric || s.bytes > s.slot_bytes || a.ll || a.in_place) return false;
  for (const Algorithm& b : algorithms())
    if (b.kind == s.kind && b.in_place && fits(b, s)) return true;
  return false;
}
bool usable(const Algorithm& a, const Shape& s) { return fits(a, s) && !staged_loses(a, s); }
}  // namespace

std::vector<Candidate> candidates(const Shape& s, const ModelParams& m, bool deterministic) {
  std::vector<Candidate> out;
  for (const Algorithm& a : algorithms()) {
    if (a.kind != s.kind || (a.compose != nullptr) != (s.net != nullptr)) continue;  // the other scope's rows
    out.push_back({&a, priced(a, s, m), usable(a, s), !deterministic || a.canonical});
  }
  return out;
}

Choice select(const Shape& s, const ModelParams& m, bool deterministic) {
  Choice c;
  double best = 0;
  for (const Algorithm& a : algorithms()) {
    if (a.kind != s.kind || !usable(a, s) || (deterministic && !a.canonical)) continue;
    double cost = priced(a, s, m);
    if (!c.algo || cost < best) {
      c.algo = &a;
      best = cost;
    }
  }
  c.why = "lowest modelled cost";
  if (const Algorithm* o = override_for(s.kind)) {
    if (!fits(*o, s)) {
      c.why = fmt::format("TESSERA_ALGO asks for {} which does not support this size; lowest modelled cost", o->name);
    } else if (deterministic && !o->canonical) {
      c.why = fmt::format("TESSERA_ALGO asks for {} but TESSERA_DETERMINISTIC=1 needs a canonical-order "
                          "algorithm; lowest modelled cost", o->name);
    } else {
      c.algo = o;
      c.why = "TESSERA_ALGO";
    }
  }
  return c;
}

double estimate(const Algorithm& a, const Shape& s, const ModelParams& m) { return priced(a, s, m); }

}  // namespace tessera::coll
