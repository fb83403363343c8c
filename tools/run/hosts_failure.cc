#include "hosts_failure.h"

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent_wire.h"
#include "hosts_job.h"

namespace tessera::run {

const Failure& choose_cause(const std::vector<Failure>& failures) {
  const Failure* best = &failures.front();
  for (const Failure& f : failures)
    if (f.kind < best->kind) best = &f;  // strictly: the earliest of a kind stays
  return *best;
}

std::vector<char> Continuing::fail(int rank, const std::string& host, const std::string& why, int left) {
  const uint32_t index = static_cast<uint32_t>(failed_.size());
  failed_.push_back(rank);
  std::fprintf(stderr, "tessera-run: PE %d on host %s %s; the job continues on %d PE%s (--on-failure continue)\n",
               rank, host.c_str(), why.c_str(), left, left == 1 ? "" : "s");
  return Writer().u32(static_cast<uint32_t>(rank)).u32(index).bytes();
}

void Continuing::fill(JobSpec& j, uint64_t stop_limit_ns) const {
  j.resilient = on_;
  if (!on_) return;
  j.stop_limit_ms = static_cast<uint32_t>(stop_limit_ns / 1'000'000);
  j.hb_token = token_;
  j.env.push_back("TESSERA_RESILIENT=1");
}

bool Continuing::on_frame(int host, AgentMsg type, const std::vector<char>& payload, uint64_t now) {
  if (!on_ || host < 0 || static_cast<size_t>(host) >= hosts_.size()) return false;
  switch (type) {
    case AgentMsg::kPublish:  // a PE's records, to every other host in arrival order
      for (size_t h = 0; h < hosts_.size(); ++h)
        if (static_cast<int>(h) != host) send_(static_cast<int>(h), AgentMsg::kPublish, payload);
      return true;
    case AgentMsg::kHbPort: {
      Reader r(payload);
      const uint32_t port = r.u32();
      if (!r.ok_and_done() || port == 0 || port > 65535) return false;
      ports_[static_cast<size_t>(host)] = port;
      for (uint32_t p : ports_)
        if (p == 0) return true;
      Writer w;
      w.u32(static_cast<uint32_t>(hosts_.size()));
      for (size_t h = 0; h < hosts_.size(); ++h) w.u32(static_cast<uint32_t>(h)).str(hosts_[h]).u32(ports_[h]);
      for (size_t h = 0; h < hosts_.size(); ++h) send_(static_cast<int>(h), AgentMsg::kPeers, w.bytes());
      return true;
    }
    case AgentMsg::kLinkLost: {
      Reader r(payload);
      const uint32_t about = r.u32();
      if (!r.ok_and_done() || about >= hosts_.size()) return false;
      if (fenced_[about] || fenced_[static_cast<size_t>(host)]) return true;
      ++accused_[about];
      if (!window_end_) window_end_ = now + kFenceWindowNs;
      return true;
    }
    default: return false;
  }
}

int Continuing::fence_due(uint64_t now) {
  if (!window_end_ || now < window_end_) return -1;
  window_end_ = 0;
  int worst = -1;
  for (size_t h = 0; h < hosts_.size(); ++h)
    if (!fenced_[h] && accused_[h] > 0 && (worst < 0 || accused_[h] >= accused_[static_cast<size_t>(worst)]))
      worst = static_cast<int>(h);
  accused_.assign(accused_.size(), 0);
  if (worst < 0) return -1;
  fenced_[static_cast<size_t>(worst)] = true;
  std::fprintf(stderr, "tessera-run: host %s lost its link to the other hosts (no heartbeat): fencing it "
               "(--on-failure continue)\n", hosts_[static_cast<size_t>(worst)].c_str());
  send_(worst, AgentMsg::kKill, {});
  return worst;
}

void Continuing::summary() const {
  if (failed_.empty()) return;
  std::fprintf(stderr, "tessera-run: the job went on without PE%s %s, and its other PEs ended normally\n",
               failed_.size() > 1 ? "s" : "", fmt::format("{}", fmt::join(failed_, ", ")).c_str());
}

}  // namespace tessera::run
