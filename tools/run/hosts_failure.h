// How tessera-run --hosts handles failures: the cause it names (choose_cause, declared in hosts_job.h with
// the policy), and resilient mode.
//
// Resilient mode of tessera-run --hosts (--on-failure continue; docs/resilience.md, "Across hosts"): a PE
// that dies while others run does not end the job. The launcher numbers the failures in the order it sees
// them and tells every agent (kPeFailed), which marks the PE in its host's control segment (host_control.h);
// the PEs' records between hosts go through the launcher (kPublish, relayed in arrival order).
#pragma once
#include <string>
#include <vector>

namespace tessera::run {

class Continuing {
 public:
  explicit Continuing(bool on = false) : on_(on) {}
  bool on() const { return on_; }
  // `rank` on `host` failed (`why`: "killed by signal 9 (SIGKILL)"), `left` PEs still running: prints the
  // launcher's line and returns the kPeFailed payload for every agent.
  std::vector<char> fail(int rank, const std::string& host, const std::string& why, int left);
  bool any() const { return !failed_.empty(); }
  // The summary line once the job ended normally otherwise.
  void summary() const;

 private:
  bool on_;
  std::vector<int> failed_;  // in the order marked
};

}  // namespace tessera::run
