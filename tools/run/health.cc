#include "health.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sync/where.h"
#include "where_read.h"

namespace tessera::run {

bool stopped_too_long(pid_t pid, uint64_t* since, uint64_t now, uint64_t limit_ns) {
  const char st = process_state(pid);
  if (st != 'T' && st != 't') {
    *since = 0;
    return false;
  }
  if (*since == 0) *since = now;
  return now - *since >= limit_ns;
}

char process_state(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // "pid (comm) S ...": the comm may hold spaces and parentheses, so the state follows the last ')'.
  const char* close = nullptr;
  for (const char* p = buf; *p; ++p)
    if (*p == ')') close = p;
  return close && close[1] == ' ' ? close[2] : 0;
}

namespace {

const char* library_state(uint32_t s) {
  switch (s) {
    case pgas::JobControl::kNotStarted: return "not started";
    case pgas::JobControl::kInitialized: return "initialized";
    case pgas::JobControl::kFinalized: return "finalized";
    case pgas::JobControl::kFailed: return "failed (the job went on without it)";
    case pgas::JobControl::kRestarting: return "restarting (a replacement is starting)";
    case pgas::JobControl::kJoining: return "joining (a replacement waits for a grow)";
    default: return "unknown";
  }
}

}  // namespace

Health health_report(pgas::JobControl* ctl, const std::string& job_id, const std::vector<PeProcess>& procs,
                     uint64_t now, uint64_t overdue_ns) {
  using namespace where;
  const int n = static_cast<int>(ctl->n_pes);
  std::vector<Snap> all;
  for (int pe = 0; pe < n; ++pe) all.push_back(read_pe(ctl, pe));
  for (int pe = 0; pe < n; ++pe) all[pe].awaited = awaited_by(all, pe, &all[pe].peer_unknown);

  Health h;
  nlohmann::json pes = nlohmann::json::array();
  std::vector<int> overdue, stopped, lost;
  std::string lines;
  for (int pe = 0; pe < n; ++pe) {
    const Snap& s = all[static_cast<size_t>(pe)];
    const PeProcess p = pe < static_cast<int>(procs.size()) ? procs[static_cast<size_t>(pe)] : PeProcess{};
    const char st = p.running ? process_state(p.pid) : 0;
    const bool is_stopped = st == 'T' || st == 't';
    const char* process = !p.running ? "exited" : is_stopped ? "stopped" : "running";
    const uint64_t in_call_ns = s.in_call && now > s.calls[0].start_ns ? now - s.calls[0].start_ns : 0;
    const bool late = s.in_call && in_call_ns >= overdue_ns;
    if (late) overdue.push_back(pe);
    if (is_stopped) stopped.push_back(pe);
    // A PE that ended without finalizing is lost to the job (the launcher ends it then, unless it is ending).
    if (!p.running && s.state != pgas::JobControl::kFinalized) lost.push_back(pe);
    std::string line = fmt::format("  PE {} (pid {}, {}): {}", pe, p.pid, process, state_text(s, n, now));
    if (late) line += " OVERDUE";
    if (!s.awaited.empty()) line += "; waits for " + pe_list(s.awaited);
    else if (s.peer_unknown) line += std::string("; waits ") + unnamed_text(s);
    if (!s.calls.empty() && !s.in_call) line += fmt::format("; latest call began {} ago", ago(s.calls[0].start_ns, now));
    lines += line + "\n";
    nlohmann::json j = {{"pe", pe},
                        {"pid", p.pid},
                        {"process", process},
                        {"library", library_state(s.state)},
                        {"in_call", s.in_call},
                        {"overdue", late},
                        {"waits_for", s.awaited}};
    if (!s.calls.empty()) {
      j["call"] = sync::call_name(s.calls[0].call);
      j["call_text"] = call_text(s.calls[0], n);
      j["seq"] = s.calls[0].seq;
      j["since_latest_call_s"] = static_cast<double>(now > s.calls[0].start_ns ? now - s.calls[0].start_ns : 0) / 1e9;
    }
    if (s.in_call) j["in_call_s"] = static_cast<double>(in_call_ns) / 1e9;
    pes.push_back(std::move(j));
  }
  h.healthy = overdue.empty() && stopped.empty() && lost.empty();
  std::string summary;
  if (h.healthy) {
    summary = fmt::format("healthy: every PE runs and no call has lasted {:.1f} s", static_cast<double>(overdue_ns) / 1e9);
  } else {
    std::vector<std::string> parts;
    if (!stopped.empty()) parts.push_back(pe_list(stopped) + (stopped.size() == 1 ? " is stopped" : " are stopped"));
    if (!lost.empty()) parts.push_back(pe_list(lost) + " ended without finalizing");
    if (!overdue.empty()) {
      std::vector<int> awaited;
      for (int pe : overdue)
        for (int q : all[static_cast<size_t>(pe)].awaited)
          if (std::find(awaited.begin(), awaited.end(), q) == awaited.end()) awaited.push_back(q);
      std::sort(awaited.begin(), awaited.end());
      parts.push_back(pe_list(overdue) + " overdue (in one call for more than " +
                      fmt::format("{:.1f} s)", static_cast<double>(overdue_ns) / 1e9) +
                      (awaited.empty() ? "" : ", waiting for " + pe_list(awaited)));
    }
    summary = "NOT HEALTHY: ";
    for (size_t i = 0; i < parts.size(); ++i) summary += (i ? "; " : "") + parts[i];
  }
  h.text = fmt::format("tessera-run: health of job {} ({} PEs)\n", job_id, n) + lines + "  summary: " + summary + "\n";
  h.json = nlohmann::json{{"job", job_id},
                          {"pes", n},
                          {"healthy", h.healthy},
                          {"overdue_after_s", static_cast<double>(overdue_ns) / 1e9},
                          {"overdue", overdue},
                          {"stopped", stopped},
                          {"ended_unfinalized", lost},
                          {"summary", summary},
                          {"pe", pes}}
               .dump();
  return h;
}

}  // namespace tessera::run
