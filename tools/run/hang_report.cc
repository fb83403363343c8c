#include "hang_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "coll/types.h"
#include "sync/where.h"
#include "where_read.h"

namespace tessera::run {
namespace where {
namespace {

Entry read_entry(const sync::WhereEntry& e) {
  Entry r;
  r.call = static_cast<Call>(e.call.load(std::memory_order_relaxed));
  r.detail = e.detail.load(std::memory_order_relaxed);
  r.start = e.team_start.load(std::memory_order_relaxed);
  r.stride = e.team_stride.load(std::memory_order_relaxed);
  r.size = e.team_size.load(std::memory_order_relaxed);
  r.seq = e.seq.load(std::memory_order_relaxed);
  r.arg = e.arg.load(std::memory_order_relaxed);
  r.start_ns = e.start_ns.load(std::memory_order_relaxed);
  return r;
}

}  // namespace

Snap read_pe(pgas::JobControl* ctl, int pe) {
  Snap s;
  s.state = ctl->state(pe)->load(std::memory_order_relaxed);
  const sync::PeWhere* w = ctl->where(pe);
  s.settled = w->settled.load(std::memory_order_acquire) != 0;
  if (s.settled) s.detail.assign(w->detail, strnlen(w->detail, sync::kDetailBytes));
  s.in_call = w->in_call.load(std::memory_order_relaxed) != 0;
  const uint64_t n = w->calls.load(std::memory_order_relaxed);
  for (uint64_t k = 0; k < std::min<uint64_t>(n, sync::kWhereCalls); ++k)
    s.calls.push_back(read_entry(w->ring[(n - 1 - k) % sync::kWhereCalls]));
  if (s.calls.empty()) s.in_call = false;
  return s;
}

std::string pe_list(const std::vector<int>& pes) {
  std::string s = pes.size() == 1 ? "PE " : "PEs ";
  for (size_t i = 0; i < pes.size(); ++i) s += fmt::format("{}{}", i ? "," : "", pes[i]);
  return s;
}

namespace {
std::string members(const Entry& e, int n_pes) {
  if (e.start == 0 && e.stride == 1 && e.size == n_pes) return "world";
  if (e.stride == 0) return fmt::format("{} PE{}", e.size, e.size == 1 ? "" : "s");
  std::vector<int> pes;
  for (int i = 0; i < e.size && i < 8; ++i) pes.push_back(e.start + i * e.stride);
  return pe_list(pes) + (e.size > 8 ? ",..." : "");
}
}  // namespace

std::string call_text(const Entry& e, int n_pes) {
  switch (e.call) {
    case Call::kCollective:
      return fmt::format("{} {} B ({}, call #{})", coll::kind_name(static_cast<coll::Kind>(e.detail)), e.arg,
                         members(e, n_pes), e.seq);
    case Call::kWaitUntil:
      return fmt::format("{} (symmetric offset {:#x})", sync::call_name(e.call), e.arg);
    case Call::kSetSetup:
      return fmt::format("{} ({})", sync::call_name(e.call), members(e, n_pes));
    default:
      return fmt::format("{} ({}, team sync {})", sync::call_name(e.call), members(e, n_pes), e.seq);
  }
}

const char* unnamed_text(const Snap& s) {
  return s.calls[0].call == Call::kWaitUntil ? "for a write (no PE named)"
                                              : "for members it cannot name (not a strided set of PEs)";
}

std::string ago(uint64_t then, uint64_t now) {
  return fmt::format("{:.1f} s", static_cast<double>(now > then ? now - then : 0) / 1e9);
}

std::vector<int> awaited_by(const std::vector<Snap>& all, int pe, bool* unknown) {
  const Snap& s = all[static_cast<size_t>(pe)];
  std::vector<int> out;
  *unknown = false;
  if (!s.in_call) return out;
  const Entry& e = s.calls[0];
  if (e.size == 0 || e.stride == 0) {
    *unknown = true;
    return out;
  }
  for (int i = 0; i < e.size; ++i) {
    const int q = e.start + i * e.stride;
    if (q == pe || q < 0 || q >= static_cast<int>(all.size())) continue;
    const Snap& o = all[static_cast<size_t>(q)];
    const bool there = !o.calls.empty() && o.calls[0].same_call(e) && o.calls[0].seq >= e.seq;
    if (!there) out.push_back(q);
  }
  return out;
}

std::string state_text(const Snap& s, int n_pes, uint64_t now) {
  if (s.state == pgas::JobControl::kNotStarted) return "has not initialized (no shmem_init yet)";
  if (s.state == pgas::JobControl::kFinalized) return "has finalized";
  if (s.state == pgas::JobControl::kFailed) {
    if (s.calls.empty()) return "failed (resilient mode: the job went on without it)";
    return fmt::format("failed (resilient mode: the job went on without it; its last call: {}, {} ago)",
                       call_text(s.calls[0], n_pes), ago(s.calls[0].start_ns, now));
  }
  if (s.in_call) return fmt::format("is in {} for {}", call_text(s.calls[0], n_pes), ago(s.calls[0].start_ns, now));
  // It described a wait, but no recorded call is open: a wait of its own (a kernel launch, a stream event).
  if (s.settled && s.calls.empty()) return "is in a Tessera wait that is not a recorded call";
  if (s.settled)
    return fmt::format("is in a Tessera wait that is not a recorded call (last call: {}, {} ago)",
                       call_text(s.calls[0], n_pes), ago(s.calls[0].start_ns, now));
  if (s.calls.empty()) return "is not in a Tessera call (no blocking call yet)";
  return fmt::format("is not in a Tessera call (last: {}, {} ago)", call_text(s.calls[0], n_pes),
                     ago(s.calls[0].start_ns, now));
}

}  // namespace where

using namespace where;

bool hang_report_settled(pgas::JobControl* ctl, const std::vector<bool>& exited) {
  for (int pe = 0; pe < static_cast<int>(ctl->n_pes); ++pe) {
    if (exited[static_cast<size_t>(pe)]) continue;
    const sync::PeWhere* w = ctl->where(pe);
    if (w->in_call.load(std::memory_order_relaxed) && !w->settled.load(std::memory_order_acquire)) return false;
  }
  return true;
}

std::string hang_report(pgas::JobControl* ctl, const std::string& why, uint64_t now) {
  const int n = static_cast<int>(ctl->n_pes);
  std::vector<Snap> all;
  for (int pe = 0; pe < n; ++pe) all.push_back(read_pe(ctl, pe));
  for (int pe = 0; pe < n; ++pe) all[pe].awaited = awaited_by(all, pe, &all[pe].peer_unknown);

  std::string out = fmt::format("tessera-run: hang report: {}\n", why);
  for (int pe = 0; pe < n; ++pe) {
    const Snap& s = all[static_cast<size_t>(pe)];
    std::string line = fmt::format("  PE {}: {}", pe, state_text(s, n, now));
    if (!s.awaited.empty()) line += "; waits for " + pe_list(s.awaited);
    else if (s.peer_unknown) line += std::string("; waits ") + unnamed_text(s);
    out += line + "\n";
    // Members of one barrier describe it alike: the text is printed once, then referred to.
    int same = -1;
    for (int q = 0; q < pe && same < 0; ++q)
      if (!s.detail.empty() && all[static_cast<size_t>(q)].detail == s.detail) same = q;
    if (!s.detail.empty())
      out += same >= 0 ? fmt::format("        waiting for: as PE {}\n", same)
                       : fmt::format("        waiting for {}\n", s.detail);
    std::string earlier;
    for (size_t k = 1; k < s.calls.size() && k < 5; ++k)
      earlier += fmt::format("{}{} {} ago", earlier.empty() ? "" : ", ", call_text(s.calls[k], n),
                             ago(s.calls[k].start_ns, now));
    if (!earlier.empty()) out += fmt::format("        earlier: {}\n", earlier);
  }

  // Summary: waiters grouped by whom they wait for (in order of their lowest PE), waiters whom nobody waits
  // for and who name no PE, then the state of every PE waited for that is not in a team call itself.
  std::map<std::vector<int>, std::vector<int>> by_awaited;
  std::vector<int> blockers;
  for (int pe = 0; pe < n; ++pe) {
    const Snap& s = all[static_cast<size_t>(pe)];
    if (!s.awaited.empty()) by_awaited[s.awaited].push_back(pe);
    for (int q : s.awaited) blockers.push_back(q);
  }
  // A wait that names no PE most likely waits for a PE outside Tessera.
  const bool any_unknown = std::any_of(all.begin(), all.end(), [](const Snap& s) { return s.peer_unknown; });
  for (int pe = 0; pe < n && any_unknown; ++pe)
    if (!all[static_cast<size_t>(pe)].in_call && all[static_cast<size_t>(pe)].state == pgas::JobControl::kInitialized)
      blockers.push_back(pe);
  std::sort(blockers.begin(), blockers.end());
  blockers.erase(std::unique(blockers.begin(), blockers.end()), blockers.end());
  const auto blocking = [&](int pe) { return std::binary_search(blockers.begin(), blockers.end(), pe); };
  std::vector<std::pair<std::vector<int>, std::vector<int>>> groups(by_awaited.begin(), by_awaited.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto verb = [](const std::vector<int>& pes) { return pes.size() == 1 ? " waits" : " wait"; };
  std::vector<std::string> parts;
  for (const auto& [awaited, waiters] : groups)
    parts.push_back(pe_list(waiters) + verb(waiters) + " for " + pe_list(awaited));
  std::map<std::string, std::vector<int>> unnamed;  // waiters that name no PE, by what they wait for
  for (int pe = 0; pe < n; ++pe)
    if (all[static_cast<size_t>(pe)].peer_unknown && !blocking(pe))
      unnamed[unnamed_text(all[static_cast<size_t>(pe)])].push_back(pe);
  for (const auto& [what, pes] : unnamed) parts.push_back(pe_list(pes) + verb(pes) + " " + what);
  for (int q : blockers) {
    const Snap& s = all[static_cast<size_t>(q)];
    if (!s.awaited.empty()) continue;  // in a team call: its group above says whom it waits for
    parts.push_back(fmt::format("PE {} {}{}{}", q, state_text(s, n, now), s.peer_unknown ? ", waiting " : "",
                                s.peer_unknown ? unnamed_text(s) : ""));
  }
  if (parts.empty()) parts.push_back("no PE is in a recorded call");
  out += "  summary: ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  out += "\n";
  return out;
}

}  // namespace tessera::run
