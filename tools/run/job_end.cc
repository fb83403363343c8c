// Ending the job: a PE's exit seen by the launcher (a failure ends the job, or in resilient mode the job goes
// on without the PE), the abort word and the signals that follow it, and the hang report.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "hang_report.h"
#include "health.h"
#include "job_state.h"
#include "proc.h"
#include "server.h"
#include "sync/futex.h"

namespace tessera::run {

// Wakes every PE's sleeping waiters, so that they look at the control words again.
void Job::ring_all() {
  for (int p = 0; p < opt_.n_pes; ++p) {
    ctl_->pe_words()[p].rung.store(1);
    ctl_->pe_words()[p].doorbell.fetch_add(1);
    sync::futex_wake(&ctl_->pe_words()[p].doorbell);
  }
}

void Job::end_job(int failed_pe) {
  if (ending_) return;
  ending_ = true;
  // A wait passed its deadline, or the job its --timeout: the hang report follows once the PEs in waits have
  // described them (they do as they see the abort word), or after a second at most.
  if (ctl_ && (timed_out_ || ctl_->deadline_pe.load() != 0)) report_at_ = now_ns() + 1'000'000'000ull;
  if (ctl_) {
    uint32_t expected = 0;
    if (ctl_->abort.compare_exchange_strong(expected, static_cast<uint32_t>(failed_pe + 1))) {
      ctl_->exit_kind.store(pgas::JobControl::kExitFatal);
      ctl_->exit_code.store(1);
    }
    ring_all();
  }
  // PEs waiting in Tessera see the abort word at once and end themselves, flushing what they printed; give
  // them a moment before SIGTERM, whose default action would drop their buffered output.
  term_at_ = ctl_ ? now_ns() + static_cast<uint64_t>(kSelfEndSeconds * 1e9) : now_ns();
  unparked_at_ = ctl_ ? now_ns() + static_cast<uint64_t>(kUnparkedEndSeconds * 1e9) : 0;
  if (!ctl_) send_term();
}

// PEs still running with no thread parked in a Tessera wait are outside the library and will not see the
// abort word (proc.h): SIGTERM now. The others keep until term_at_ to end themselves.
void Job::term_unparked() {
  unparked_at_ = 0;
  for (size_t r = 0; r < pes_.size(); ++r)
    if (pes_[r].running && ctl_->pe_words()[r].sleepers.load(std::memory_order_acquire) == 0)
      ::kill(pes_[r].pid, SIGTERM);
}

void Job::send_term() {
  for (auto& p : pes_)
    if (p.running) ::kill(p.pid, SIGTERM);
  term_at_ = 0;
  unparked_at_ = 0;
  kill_at_ = now_ns() + static_cast<uint64_t>(kGraceSeconds * 1e9);
}

void Job::on_child_exit(int rank, int status) {
  Pe& pe = pes_[static_cast<size_t>(rank)];
  pe.running = false;
  pe.status = status;
  if (ctl_ && ctl_->exit_kind.load() == pgas::JobControl::kExitGlobal) {
    // Some PE called shmem_global_exit: every PE ends with its status, which is no failure of theirs.
    int caller = static_cast<int>(ctl_->abort.load()) - 1;
    int code = ctl_->exit_code.load();
    if (!have_failure_) {
      have_failure_ = true;
      result_ = code;
      if (code != 0 || running_count() > 0)
        std::fprintf(stderr, "tessera-run: PE %d called shmem_global_exit(%d); ending the job\n", caller, code);
    }
    end_job(caller);
    return;
  }
  if (ending_) return;  // ended by us, or after the first failure
  std::string why;
  if (pe.killed_stopped) {
    why = fmt::format("stayed stopped for {:.1f} s (half of TESSERA_TIMEOUT) and was killed",
                      static_cast<double>(stop_limit_ns_) / 1e9);
  } else if (WIFSIGNALED(status)) {
    why = fmt::format("killed by signal {} ({})", WTERMSIG(status), signal_name(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    why = fmt::format("exited with status {}", WEXITSTATUS(status));
  } else if (const uint32_t s = ctl_ ? ctl_->state(rank)->load() : 0;
             running_count() > 0 && (s == pgas::JobControl::kInitialized || s == pgas::JobControl::kRestarting ||
                                     s == pgas::JobControl::kJoining)) {
    why = "exited without calling shmem_finalize";
  }
  if (why.empty()) return;
  have_failure_ = true;
  result_ = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : exit_status_of(status);
  if (const uint32_t d = ctl_ ? ctl_->deadline_pe.load() : 0; d != 0 && running_count() > 0) {
    // The PE whose wait expired, not whichever PE ended first on its abort: the hang report follows.
    std::fprintf(stderr, "tessera-run: the wait of PE %u passed its deadline (TESSERA_TIMEOUT); ending the job\n",
                 d - 1);
    end_job(static_cast<int>(d) - 1);
  } else if (resilient_ && ctl_ && running_count() > 0 && ctl_->abort.load() == 0) {
    // (A PE that set the abort word ended the job on purpose: a fatal error, which resilient mode keeps.)
    continue_without(rank, why);
  } else if (running_count() > 0) {
    std::fprintf(stderr, "tessera-run: PE %d %s; ending the job\n", rank, why.c_str());
    end_job(rank);
  } else {
    std::fprintf(stderr, "tessera-run: PE %d %s\n", rank, why.c_str());
  }
}

// Resilient mode: `rank` is marked failed (its index, then its state, then the count: JobControl) and every
// PE's doorbell rung, so that waits on it wake and fail; the job goes on. Its status counts only if no PE
// survives it.
void Job::continue_without(int rank, const std::string& why) {
  have_failure_ = false;
  result_ = 0;
  // With a replacement to come (--restarts), its incarnation first and the state kRestarting at once, never
  // kFailed in between: a grow's leader that saw kFailed would leave the replacement out.
  const bool again = restarts_left_ > 0;
  if (again) ctl_->incarnation(rank)->store(ctl_->incarnation(rank)->load() + 1);
  ctl_->fail_index(rank)->store(static_cast<uint32_t>(failed_.size()));
  ctl_->state(rank)->store(again ? pgas::JobControl::kRestarting : pgas::JobControl::kFailed);
  ctl_->failures.fetch_add(1, std::memory_order_release);
  failed_.push_back(rank);
  ring_all();
  const int left = running_count();
  std::fprintf(stderr, "tessera-run: PE %d %s; the job continues on %d PE%s (--on-failure continue)\n", rank,
               why.c_str(), left, left == 1 ? "" : "s");
  if (again) restart(rank);
}

// --restarts: a replacement under the failed PE's number (pgas/resilient.h), whose incarnation and state
// kRestarting (which a grow's leader waits on until the replacement has published its segments) are stored
// already; the failed process's connection and output end first.
void Job::restart(int rank) {
  --restarts_left_;
  server_->forget(rank);
  Pe& pe = pes_[static_cast<size_t>(rank)];
  for (int* fd : {&pe.out_fd, &pe.err_fd}) {
    if (*fd < 0) continue;
    ::fcntl(*fd, F_SETFL, O_NONBLOCK);  // what the dead process wrote, without waiting on a child of its
    char buf[65536];
    for (ssize_t n; (n = ::read(*fd, buf, sizeof buf)) > 0;) (fd == &pe.out_fd ? pe.out_buf : pe.err_buf).append(buf, static_cast<size_t>(n));
    flush_output(rank, fd == &pe.err_fd, true);
    ::close(*fd);
    *fd = -1;
  }
  const uint32_t k = ctl_->incarnation(rank)->load();
  pe.stopped_since = 0;
  pe.killed_stopped = false;
  if (Status st = spawn(rank, sock_); !st.is_ok()) {
    ctl_->state(rank)->store(pgas::JobControl::kFailed);
    std::fprintf(stderr, "tessera-run: cannot start a replacement for PE %d: %s\n", rank, st.message().c_str());
    return;
  }
  restarted_.push_back(rank);
  std::fprintf(stderr, "tessera-run: started a replacement for PE %d (incarnation %u; %d more restart%s allowed)\n",
               rank, k, restarts_left_, restarts_left_ == 1 ? "" : "s");
}

// Resilient mode: a PE stopped (SIGSTOP, a debugger) for half of TESSERA_TIMEOUT is killed, so that it
// fails as a whole (it can no longer wake and write into what the survivors have moved on from) while the
// survivors' waits, whose deadline is the whole TESSERA_TIMEOUT, are still running.
void Job::check_stopped(uint64_t now) {
  if (now < stop_check_at_) return;
  stop_check_at_ = now + 100'000'000ull;
  for (size_t r = 0; r < pes_.size(); ++r) {
    Pe& pe = pes_[r];
    if (!pe.running || pe.killed_stopped) continue;
    if (stopped_too_long(pe.pid, &pe.stopped_since, now, stop_limit_ns_)) {
      pe.killed_stopped = true;
      ::kill(pe.pid, SIGKILL);
    }
  }
}

// Prints the hang report once it is complete (hang_report_settled) or its second has passed.
void Job::print_hang_report() {
  std::vector<bool> exited;
  for (const Pe& p : pes_) exited.push_back(!p.running);
  const uint64_t now = now_ns();
  if (now < report_at_ && !hang_report_settled(ctl_, exited)) return;
  report_at_ = 0;
  const uint32_t d = ctl_->deadline_pe.load();
  const std::string why = d ? fmt::format("the wait of PE {} passed its deadline (TESSERA_TIMEOUT)", d - 1)
                            : fmt::format("the job passed its --timeout of {:.0f} s", opt_.timeout_s);
  write_all(STDERR_FILENO, hang_report(ctl_, why, now));
}

}  // namespace tessera::run
