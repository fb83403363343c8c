#include "job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/ranges.h>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_socket.h"
#include "hang_report.h"
#include "health.h"
#include "job_state.h"
#include "placement.h"
#include "settings.h"
#include "proc.h"
#include "server.h"
#include "trace_merge.h"
#include "transport/shm/segment.h"

namespace tessera::run {

namespace {
// A TCP port free on the loopback now, for torch.distributed's store (MASTER_PORT); "" if none.
std::string free_loopback_port() {
  Result<int> fd = bootstrap::tcp::listen_on(bootstrap::tcp::Address{"127.0.0.1", 0, ""});
  if (!fd.is_ok()) return "";
  Result<uint16_t> port = bootstrap::tcp::local_port(fd.value());
  ::close(fd.value());
  return port.is_ok() ? std::to_string(port.value()) : "";
}
}  // namespace

Status Job::setup() {
  BindMode mode;
  TS_RETURN_IF_ERROR(resolve_bind_mode(opt_, &mode));
  TS_RETURN_IF_ERROR(resolve_on_failure(opt_, &resilient_));
  if (opt_.restarts > 0 && !resilient_)
    return invalid_arg("--restarts {}: replacements take the place of failed PEs in a job that goes on after a "
                       "failure; add --on-failure continue", opt_.restarts);
  restarts_left_ = opt_.restarts;
  if (resilient_) stop_limit_ns_ = stop_limit_ns(opt_);
  job_id_ = bootstrap::random_hex(16);
  secret_ = bootstrap::random_hex(bootstrap::kSecretChars);
  ctl_name_ = transport::shm::segment_name(job_id_, transport::shm::kControlSegment);
  master_port_ = free_loopback_port();
  ctl_bytes_ = pgas::JobControl::bytes_for(opt_.n_pes);
  if (const int n = remove_segments_of_dead_jobs(); n > 0)
    log::info("tessera-run: removed what {} job(s) whose launcher was killed left in /dev/shm", n);
  // Its descriptor stays open for the replacements (--restarts), which inherit it: the PEs remove the name.
  TS_ASSIGN_OR_RETURN(void* p, transport::shm::create(ctl_name_, ctl_bytes_, 0, 0, &ctl_fd_));
  ctl_ = static_cast<pgas::JobControl*>(p);
  ctl_->launcher_pid = static_cast<int32_t>(::getpid());  // before the magic: a reader checks the magic first
  ctl_->launcher_pidns = pid_namespace();
  ctl_->magic = pgas::JobControl::kMagic;
  ctl_->n_pes = static_cast<uint32_t>(opt_.n_pes);
  ctl_->resilient.store(resilient_ ? 1 : 0);

  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  sigfd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) return sys_error("signalfd");
  signal(SIGPIPE, SIG_IGN);
  const bool report = opt_.report_bindings || log::level() >= log::Level::kInfo;
  // Each PE's wait counts as they stand (sync::PeWaitHist; the policy takes their differences).
  auto waits = [ctl = ctl_, n = opt_.n_pes] {
    std::vector<PlacementPolicy::Waits> w(static_cast<size_t>(n));
    for (int pe = 0; pe < n; ++pe) {
      const sync::PeWaitHist* h = ctl->wait_hist(pe);
      w[static_cast<size_t>(pe)] = {h->short_waits.load(std::memory_order_relaxed),
                                    h->mid_waits.load(std::memory_order_relaxed),
                                    h->long_waits.load(std::memory_order_relaxed)};
    }
    return w;
  };
  placement_ = std::make_unique<PlacementMonitor>(mode, plan_layout(opt_.n_pes), &ctl_->cpus_shared, report,
                                                  std::move(waits));
  if (report) std::fprintf(stderr, "tessera-run: placement: %s\n", placement_->describe().c_str());
  placement_->start();
  return Status::ok();
}

// Binds the child to the CPU plan_layout chose for it (placement.h says why), and tells it the job's CPUs for
// the threads it starts for itself (TESSERA_JOB_CPUS).
void Job::place_on_cpu(int rank) {
  const Layout& layout = placement_->layout();
  if (layout.cpus.empty()) return;
  ::setenv("TESSERA_JOB_CPUS", cpu_list(layout.cpus).c_str(), 1);
  const int cpu = layout.pe_cpu[static_cast<size_t>(rank)];
  if (!placement_->start_bound() || cpu < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)::sched_setaffinity(0, sizeof one, &one);
}

Status Job::spawn(int rank, const std::string& sock) {
  Pe& pe = pes_[static_cast<size_t>(rank)];
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (opt_.tag_output && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0))
    return sys_error("pipe");
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork");
  if (pid == 0) {
    // Child: die with the launcher, restore signals, wire output, exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (opt_.tag_output) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
    }
    for (const auto& kv : opt_.env) ::putenv(const_cast<char*>(kv.c_str()));
    no_ucx_error_handlers();
    one_blas_thread_per_pe(opt_.n_pes);
    ::setenv("TESSERA_BIND", bind_mode_name(placement_->mode()), 1);
    ::setenv("TESSERA_JOB_SOCKET", sock.c_str(), 1);
    ::setenv("TESSERA_JOB_SECRET", secret_.c_str(), 1);
    ::setenv("TESSERA_JOB_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("TESSERA_JOB_SIZE", std::to_string(opt_.n_pes).c_str(), 1);
    ::setenv("TESSERA_JOB_ID", job_id_.c_str(), 1);
    ::setenv("TESSERA_JOB_CONTROL", ctl_name_.c_str(), 1);
    ::setenv("TESSERA_INCARNATION", std::to_string(ctl_->incarnation(rank)->load()).c_str(), 1);
    if (ctl_->incarnation(rank)->load() > 0)  // a replacement maps the control segment through it (resilient.h)
      ::setenv("TESSERA_JOB_CONTROL_FD", std::to_string(::dup(ctl_fd_)).c_str(), 1);
    torch_environment(rank, opt_.n_pes, rank, opt_.n_pes, "127.0.0.1", master_port_);
    place_on_cpu(rank);
    std::vector<char*> argv;
    for (const auto& a : opt_.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string why = exec_program(argv.data());
    std::string msg = fmt::format("tessera-run: cannot start {}: {}\n", opt_.argv[0], why);
    write_all(STDERR_FILENO, msg);
    _exit(127);
  }
  pe.pid = pid;
  pe.running = true;
  placement_->started(rank, pid);
  if (opt_.tag_output) {
    ::close(out[1]);
    ::close(err[1]);
    pe.out_fd = out[0];
    pe.err_fd = err[0];
  }
  return Status::ok();
}

std::vector<pid_t> Job::running_pids() const {
  std::vector<pid_t> pids;
  for (auto& p : pes_) pids.push_back(p.running ? p.pid : -1);
  return pids;
}

int Job::running_count() const {
  int n = 0;
  for (auto& p : pes_) n += p.running;
  return n;
}

void Job::on_signalfd() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGCHLD) continue;  // reaped below
    if (!have_failure_) {
      have_failure_ = true;
      result_ = 128 + static_cast<int>(si.ssi_signo);
      std::fprintf(stderr, "tessera-run: received %s; ending the job\n", signal_name(static_cast<int>(si.ssi_signo)).c_str());
    }
    end_job(-1);
  }
  for (;;) {
    int status;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    for (size_t r = 0; r < pes_.size(); ++r)
      if (pes_[r].pid == pid && pes_[r].running) on_child_exit(static_cast<int>(r), status);
  }
}

void Job::flush_output(int rank, bool is_err, bool all) {
  Pe& pe = pes_[static_cast<size_t>(rank)];
  std::string& buf = is_err ? pe.err_buf : pe.out_buf;
  std::string out;
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    out += fmt::format("[PE {}] ", rank) + buf.substr(start, nl - start + 1);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    out += fmt::format("[PE {}] {}\n", rank, buf);
    buf.clear();
  }
  if (!out.empty()) write_all(is_err ? STDERR_FILENO : STDOUT_FILENO, out);
}

void Job::on_output(int rank, int fd, bool is_err) {
  Pe& pe = pes_[static_cast<size_t>(rank)];
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    (is_err ? pe.err_buf : pe.out_buf).append(buf, static_cast<size_t>(n));
    flush_output(rank, is_err, false);
    return;
  }
  if (n < 0 && errno == EINTR) return;
  flush_output(rank, is_err, true);
  ::close(fd);
  (is_err ? pe.err_fd : pe.out_fd) = -1;
}

int Job::run() {
  if (Status st = setup(); !st.is_ok()) {
    std::fprintf(stderr, "tessera-run: %s\n", st.message().c_str());
    return 1;
  }
  BootstrapServer server(opt_.n_pes, secret_);
  server_ = &server;
  server.set_health([this](uint64_t overdue_ns, bool json) {
    std::vector<PeProcess> procs;
    for (const Pe& p : pes_) procs.push_back({p.pid, p.running});
    const Health h = health_report(ctl_, job_id_, procs, now_ns(), overdue_ns);
    return json ? h.json + "\n" : h.text;
  });
  auto sock = server.listen();
  if (!sock.is_ok()) {
    std::fprintf(stderr, "tessera-run: %s\n", sock.status().message().c_str());
    return 1;
  }
  sock_ = sock.value();
  for (int r = 0; r < opt_.n_pes; ++r) {
    if (Status st = spawn(r, sock.value()); !st.is_ok()) {
      std::fprintf(stderr, "tessera-run: starting PE %d: %s\n", r, st.message().c_str());
      have_failure_ = true;
      result_ = 1;
      end_job(r);
      break;
    }
  }
  const uint64_t start = now_ns();
  const uint64_t deadline = opt_.timeout_s > 0 ? start + static_cast<uint64_t>(opt_.timeout_s * 1e9) : 0;
  for (;;) {
    bool outputs_open = false;
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> who;  // (rank, 0 out / 1 err / -1 server / -2 client)
    fds.push_back({sigfd_, POLLIN, 0});
    who.push_back({-1, -3});
    fds.push_back({server.listen_fd(), POLLIN, 0});
    who.push_back({-1, -1});
    for (int fd : server.client_fds()) {
      fds.push_back({fd, POLLIN, 0});
      who.push_back({-1, -2});
    }
    for (size_t r = 0; r < pes_.size(); ++r) {
      if (pes_[r].out_fd >= 0) fds.push_back({pes_[r].out_fd, POLLIN, 0}), who.push_back({int(r), 0});
      if (pes_[r].err_fd >= 0) fds.push_back({pes_[r].err_fd, POLLIN, 0}), who.push_back({int(r), 1});
      outputs_open = outputs_open || pes_[r].out_fd >= 0 || pes_[r].err_fd >= 0;
    }
    if (report_at_) print_hang_report();
    if (running_count() == 0 && !outputs_open) break;
    uint64_t now = now_ns();
    if (deadline && now >= deadline && !ending_) {
      if (!have_failure_) {
        have_failure_ = true;
        result_ = 124;
        timed_out_ = true;
        std::fprintf(stderr, "tessera-run: job timed out after %.0f s (--timeout); ending the job\n", opt_.timeout_s);
      }
      end_job(-1);
    }
    if (resilient_ && !ending_ && running_count() > 1) check_stopped(now);
    if (unparked_at_ && now >= unparked_at_) term_unparked();
    if (term_at_ && now >= term_at_) send_term();
    if (kill_at_ && now >= kill_at_) {
      for (auto& p : pes_)
        if (p.running) ::kill(p.pid, SIGKILL);
      kill_at_ = 0;
    }
    int wait_ms = term_at_ ? 20 : resilient_ ? 100 : 200;
    if (running_count() == 0) wait_ms = 50;  // draining output of exited PEs
    if (!ending_ && running_count() > 0) {
      placement_->tick(running_pids(), now);
      if (uint64_t next = placement_->next_tick_ns())
        wait_ms = std::min<int>(wait_ms, static_cast<int>((next > now ? next - now : 0) / 1000000) + 1);
    }
    int r = ::poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno != EINTR) break;
    for (size_t i = 0; r > 0 && i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [rank, kind] = who[i];
      if (kind == -3) on_signalfd();
      else if (kind == -1) server.on_accept();
      else if (kind == -2) server.on_readable(fds[i].fd);
      else on_output(rank, fds[i].fd, kind == 1);
    }
    if (running_count() == 0 && outputs_open) {
      // Children are gone; give pipes a moment to drain, but never wait on grandchildren forever.
      static uint64_t drain_until = 0;
      if (!drain_until) drain_until = now_ns() + 2'000'000'000ull;
      if (now_ns() > drain_until) break;
    }
  }
  server_ = nullptr;
  if (!failed_.empty() && !have_failure_) {
    std::vector<int> pes = failed_;
    std::sort(pes.begin(), pes.end());
    pes.erase(std::unique(pes.begin(), pes.end()), pes.end());
    const std::string replaced =
        restarted_.empty() ? "" : fmt::format(" ({} replacement{} started: --restarts)", restarted_.size(),
                                              restarted_.size() > 1 ? "s" : "");
    std::fprintf(stderr, "tessera-run: the job went on without PE%s %s%s, and its other PEs ended normally\n",
                 pes.size() > 1 ? "s" : "", fmt::format("{}", fmt::join(pes, ", ")).c_str(), replaced.c_str());
  }
  return have_failure_ ? result_ : 0;
}

void Job::cleanup() {
  if (cleaned_) return;
  cleaned_ = true;
  for (auto& p : pes_) {
    if (p.running) ::kill(p.pid, SIGKILL);
    if (p.running) ::waitpid(p.pid, nullptr, 0);
  }
  if (ctl_) transport::shm::unmap(ctl_, ctl_bytes_);
  if (ctl_fd_ >= 0) ::close(ctl_fd_);
  if (!job_id_.empty()) {
    (void)transport::shm::unlink(ctl_name_);
    remove_job_segments(job_id_);
  }
  if (sigfd_ >= 0) ::close(sigfd_);
}

int run_job(const Options& opt) {
  Job job(opt);
  const int rc = job.run();
  // TESSERA_TRACE: the PEs wrote their files at finalize (or exit); one trace of the whole job from them.
  // A failed merge is reported but does not change the job's status.
  if (const std::string dir = job_trace_dir(opt.env); !dir.empty()) {
    std::string what;
    if (Status st = merge_traces(dir, job.pids(), &what); st.is_ok())
      std::fprintf(stderr, "tessera-run: %s\n", what.c_str());
    else
      std::fprintf(stderr, "tessera-run: TESSERA_TRACE: %s\n", st.message().c_str());
  }
  return rc;
}

}  // namespace tessera::run
