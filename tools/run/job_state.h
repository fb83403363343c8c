// tessera-run's job on one host (job.cc: start, event loop, output, clean-up; job_end.cc: a PE's exit, ending
// the job, and resilient mode's going on without a failed PE). Private to tessera-run.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "job.h"
#include "options.h"
#include "pgas/runtime.h"
#include "placement.h"

namespace tessera::run {

class BootstrapServer;

class Job {
 public:
  explicit Job(const Options& opt) : opt_(opt), pes_(static_cast<size_t>(opt.n_pes)) {}
  ~Job() { cleanup(); }
  int run();
  // Every PE process started, running or not (their trace files carry these pids).
  std::vector<pid_t> pids() const {
    std::vector<pid_t> v;
    for (const Pe& p : pes_)
      if (p.pid > 0) v.push_back(p.pid);
    return v;
  }

 private:
  Status setup();
  Status spawn(int rank, const std::string& sock);
  void place_on_cpu(int rank);
  std::vector<pid_t> running_pids() const;
  void on_signalfd();
  void on_child_exit(int rank, int status);
  void on_output(int rank, int fd, bool is_err);
  void flush_output(int rank, bool is_err, bool all);
  void end_job(int failed_pe);
  void ring_all();
  void continue_without(int rank, const std::string& why);
  void restart(int rank);
  void check_stopped(uint64_t now);
  void send_term();
  void term_unparked();
  int running_count() const;
  void cleanup();
  void print_hang_report();

  Options opt_;
  std::vector<Pe> pes_;
  std::string job_id_, secret_, ctl_name_;
  std::string master_port_;  // torch.distributed's store (spawn: torch_environment)
  std::unique_ptr<PlacementMonitor> placement_;  // the policy, the layout it chose, and its watch
  pgas::JobControl* ctl_ = nullptr;
  size_t ctl_bytes_ = 0;
  int ctl_fd_ = -1;  // the control segment, open for replacements to inherit
  BootstrapServer* server_ = nullptr;
  int sigfd_ = -1;
  sigset_t old_mask_{};
  bool ending_ = false;
  bool have_failure_ = false;
  bool resilient_ = false;     // --on-failure continue
  std::vector<int> failed_;    // PEs marked kFailed, in order (resilient mode)
  int restarts_left_ = 0;      // --restarts: replacements still to start
  std::vector<int> restarted_;  // PEs a replacement was started for, in order
  std::string sock_;            // the bootstrap socket, for replacements
  uint64_t stop_limit_ns_ = 0;  // resilient mode: a PE stopped this long is killed (half of TESSERA_TIMEOUT)
  uint64_t stop_check_at_ = 0;  // next look at the PEs' process states
  int result_ = 0;
  uint64_t term_at_ = 0;   // when to SIGTERM the PEs that did not end on the abort word (0: not pending)
  uint64_t unparked_at_ = 0;  // when to SIGTERM the PEs with no thread parked in a wait (0: not pending)
  uint64_t kill_at_ = 0;   // when to SIGKILL the stragglers (0: not yet)
  bool cleaned_ = false;
  bool timed_out_ = false;  // the job passed --timeout
  uint64_t report_at_ = 0;  // when to print the hang report at the latest (0: none pending)
};

}  // namespace tessera::run
