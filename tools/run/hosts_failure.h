// How tessera-run --hosts handles failures: the cause it names (choose_cause, declared in hosts_job.h with
// the policy), and resilient mode.
//
// Resilient mode of tessera-run --hosts (--on-failure continue; docs/resilience.md, "Across hosts"): a PE
// that dies while others run does not end the job. The launcher numbers the failures in the order it sees
// them and tells every agent (kPeFailed), which marks the PE in its host's control segment (host_control.h);
// the PEs' records between hosts go through the launcher (kPublish, relayed in arrival order).
//
// Links: the agents heartbeat each other (heartbeat.h) and report a host they stop hearing (kLinkLost). The
// first report opens a window of kFenceWindowNs in which the others arrive (every host that lost a link
// reports it); then the host named most often is fenced (kKill: its agent kills its PEs, which fail as any
// dead PE does), a tie going against the highest host index, so that of two hosts that lost each other the
// one with PE 0 stays. A host's PEs that another host cannot reach would otherwise leave the survivors
// waiting until their deadline.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent_wire.h"

namespace tessera::run {

class Continuing {
 public:
  static constexpr uint64_t kFenceWindowNs = 300'000'000;
  using Send = std::function<void(int host, AgentMsg type, const std::vector<char>& payload)>;
  Continuing() = default;
  // `hosts`: the hosts' names in index order; `send` writes to a host's agent; `token`: the heartbeats'.
  Continuing(bool on, std::vector<std::string> hosts, Send send, std::string token)
      : on_(on), hosts_(std::move(hosts)), send_(std::move(send)), token_(std::move(token)),
        ports_(hosts_.size()), accused_(hosts_.size()), fenced_(hosts_.size()) {}
  bool on() const { return on_; }
  // What an agent's job description says of this mode (JobSpec: resilient, stop limit, the token, the PEs'
  // TESSERA_RESILIENT).
  void fill(JobSpec& j, uint64_t stop_limit_ns) const;
  // The agents' messages of this mode from host `host` (kPublish, kHbPort, kLinkLost): false for others.
  bool on_frame(int host, AgentMsg type, const std::vector<char>& payload, uint64_t now);
  // The host to fence now (its window closed), or -1.
  int fence_due(uint64_t now);
  bool deciding() const { return window_end_ != 0; }
  // `rank` on `host` failed (`why`: "killed by signal 9 (SIGKILL)"), `left` PEs still running: prints the
  // launcher's line and returns the kPeFailed payload for every agent.
  std::vector<char> fail(int rank, const std::string& host, const std::string& why, int left);
  bool any() const { return !failed_.empty(); }
  // The summary line once the job ended normally otherwise.
  void summary() const;

 private:
  bool on_ = false;
  std::vector<std::string> hosts_;
  Send send_;
  std::string token_;
  std::vector<int> failed_;       // in the order marked
  std::vector<uint32_t> ports_;   // heartbeat port per host (0: not yet)
  std::vector<int> accused_;      // reports naming each host in the open window
  std::vector<bool> fenced_;
  uint64_t window_end_ = 0;
};

}  // namespace tessera::run
