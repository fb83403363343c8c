#include "agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "agent_wire.h"
#include "health.h"
#include "heartbeat.h"
#include "host_control.h"
#include "base/cpu.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_socket.h"
#include "bootstrap/tcp_wire.h"
#include "proc.h"
#include "tessera/version.h"

namespace tessera::run {
namespace {
namespace tcp = bootstrap::tcp;

constexpr int kIn = STDIN_FILENO;
constexpr int kOut = STDOUT_FILENO;
constexpr uint64_t kDrainNs = 2'000'000'000ull;  // output of ended PEs, held open by what they started

uint64_t after(double seconds) { return now_ns() + static_cast<uint64_t>(seconds * 1e9); }

// Variables a PE must not inherit from the agent's own environment, which the remote shell may have passed
// on from the launcher's: those of the single-host launcher and of PMIx would pick another bootstrap
// backend (bootstrap.h lists them before the TCP rendezvous), and TESSERA_HOST_ID would hide the host's
// real identity, which decides that peers on other hosts go through UCX. A --env given to the launcher is
// applied after this, and wins.
constexpr const char* kNotInherited[] = {"TESSERA_JOB_SOCKET", "TESSERA_JOB_RANK", "TESSERA_JOB_SIZE",
                                         "TESSERA_JOB_CONTROL", "TESSERA_HOST_ID",  "PMIX_RANK",
                                         "PMIX_NAMESPACE"};

struct LocalPe {
  int rank = 0;
  pid_t pid = -1;        // also its process group
  bool running = false;
  bool signalled = false;  // the agent sent it a signal: its end is not its own failure
  bool killed_stopped = false;  // resilient mode: killed after it stayed stopped (check_stopped)
  bool fenced = false;          // resilient mode: killed because its host was cut off (kKill)
  uint64_t stopped_since = 0;
  int fd[2] = {-1, -1};    // stdout, stderr
  LineBuffer lines[2];
};

class Agent {
 public:
  int run();

 private:
  Status setup();
  void on_frame(const tcp::Frame& f);
  void on_job(const std::vector<char>& payload);
  void on_start(const std::vector<char>& payload);
  Status spawn(LocalPe& pe);
  void on_signalfd();
  void on_output(LocalPe& pe, int which);
  void send(AgentMsg type, const std::vector<char>& payload = {});
  void fail(const std::string& text);
  void launcher_gone();
  void signal_all(int sig);
  int running() const;
  bool outputs_open() const;
  bool finished(uint64_t now);
  void kill_leftovers();  // SIGKILL to every PE's process group (the PEs themselves have ended)

  void publish(const LocalPe& pe);  // resilient mode: its records, if they changed, to the launcher
  void check_stopped(uint64_t now);  // resilient mode: a PE stopped too long is killed
  uint64_t stop_check_at_ = 0;
  std::optional<JobSpec> job_;
  HostControl control_;
  Heartbeat heartbeat_;  // resilient mode
  std::string bootstrap_;
  uint32_t store_port_ = 0;  // torch's MASTER_PORT on the first host
  std::vector<LocalPe> pes_;
  tcp::FrameReader reader_{bootstrap::kMaxPayload};
  int sigfd_ = -1;
  int devnull_ = -1;
  sigset_t old_mask_{};
  bool in_open_ = true;    // the launcher's channel
  bool out_ok_ = true;
  bool started_ = false;   // PEs spawned
  bool ending_ = false;
  uint64_t term_at_ = 0, kill_at_ = 0, drain_until_ = 0;
};

Status Agent::setup() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  sigfd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) return sys_error("signalfd");
  signal(SIGPIPE, SIG_IGN);  // a launcher that is gone shows as EPIPE on the channel
  devnull_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull_ < 0) return sys_error("open /dev/null");
  int fl = ::fcntl(kIn, F_GETFL);
  if (fl >= 0) (void)::fcntl(kIn, F_SETFL, fl | O_NONBLOCK);
  return Status::ok();
}

void Agent::send(AgentMsg type, const std::vector<char>& payload) {
  if (!out_ok_) return;
  if (!write_frame(kOut, type, payload).is_ok()) launcher_gone();
}

// The agent cannot go on: the launcher prints `text` naming this host and ends the job; this host's PEs
// end now.
void Agent::fail(const std::string& text) {
  send(AgentMsg::kError, Writer().str(text).bytes());
  if (!ending_) {
    ending_ = true;
    signal_all(SIGTERM);
    kill_at_ = after(kGraceSeconds);
  }
}

void Agent::launcher_gone() {
  in_open_ = false;
  out_ok_ = false;
  if (!ending_ || term_at_) {
    ending_ = true;
    term_at_ = 0;
    signal_all(SIGTERM);
    kill_at_ = after(kGraceSeconds);
  }
}

void Agent::signal_all(int sig) {
  for (auto& pe : pes_) {
    if (!pe.running) continue;
    pe.signalled = true;
    (void)::kill(-pe.pid, sig);
  }
}

int Agent::running() const {
  int n = 0;
  for (auto& pe : pes_) n += pe.running;
  return n;
}

bool Agent::outputs_open() const {
  for (auto& pe : pes_)
    if (pe.fd[0] >= 0 || pe.fd[1] >= 0) return true;
  return false;
}

void Agent::on_job(const std::vector<char>& payload) {
  if (job_) return fail("a second job description");
  job_ = decode_job(payload);
  if (!job_) return fail("the job description is malformed");
  if (!tcp::valid_job_id(job_->job_id)) {
    const std::string id = job_->job_id;
    job_.reset();  // names nothing this agent may remove
    return fail(fmt::format("job id {:?} is not {} lowercase hex digits", id, tcp::kJobIdChars));
  }
  if (::chdir(job_->cwd.c_str()) != 0)
    return fail(fmt::format("cannot enter the launcher's working directory {}: {} (the launcher expects the same "
                            "paths on every host)", job_->cwd, std::strerror(errno)));
  pes_.resize(job_->n_ranks);
  for (uint32_t i = 0; i < job_->n_ranks; ++i) pes_[i].rank = static_cast<int>(job_->first_rank + i);
  if (job_->resilient) {
    if (Status st = control_.create(job_->job_id, job_->host_index, job_->size); !st.is_ok())
      return fail(fmt::format("cannot make the host's control segment: {}", st.message()));
    // A host silent for a quarter of the stop limit (an eighth of TESSERA_TIMEOUT), at least a second:
    // found and fenced well within the survivors' deadline.
    const uint64_t silence = std::max<uint64_t>(1'000'000'000ull, uint64_t{job_->stop_limit_ms} * 250'000);
    if (Status st = heartbeat_.open(job_->hb_token, job_->host_index, silence); !st.is_ok())
      return fail(st.message());
    send(AgentMsg::kHbPort, Writer().u32(heartbeat_.port()).bytes());
  }
  if (job_->host_index != 0) return;
  // The first host's agent finds the rendezvous a port: one the kernel has free on the address rank 0 will
  // listen on, closed again for rank 0 to take. A port the launcher drew at random could be in use on that
  // host, which only this host can see; the probe leaves a short window in which another process could take
  // the port, which rank 0 then reports as "address in use", ending the job with that message.
  // Two ports, both held while probing so that they differ: Tessera's rendezvous and torch's store.
  tcp::Address a;
  a.host = job_->bootstrap_host;
  uint32_t ports[2] = {0, 0};
  int fds[2] = {-1, -1};
  std::string error;
  for (int i = 0; i < 2 && error.empty(); ++i) {
    Result<int> fd = tcp::listen_on(a);
    if (!fd.is_ok()) {
      error = fd.status().message();
      break;
    }
    fds[i] = fd.value();
    Result<uint16_t> port = tcp::local_port(fds[i]);
    if (port.is_ok()) ports[i] = port.value();
    else error = port.status().message();
  }
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  if (!error.empty()) return fail(error);
  send(AgentMsg::kPort, Writer().u32(ports[0]).u32(ports[1]).bytes());
}

void Agent::on_start(const std::vector<char>& payload) {
  Reader r(payload);
  bootstrap_ = r.str();
  store_port_ = r.u32();
  if (!r.ok_and_done() || !job_ || started_) return fail("an unexpected start message");
  started_ = true;
  for (auto& pe : pes_) {
    if (Status st = spawn(pe); !st.is_ok()) return fail(fmt::format("starting PE {}: {}", pe.rank, st.message()));
  }
}

Status Agent::spawn(LocalPe& pe) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sys_error("pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]), ::close(out[1]);
    return sys_error("pipe");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return sys_error("fork");
  }
  if (pid == 0) {
    // Child: a process group of its own (signals reach what it starts), dies with the agent, and never
    // holds the agent's channel (stdin and stdout are replaced).
    (void)::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    signal(SIGPIPE, SIG_DFL);
    ::dup2(devnull_, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    for (const char* name : kNotInherited) ::unsetenv(name);
    for (const auto& kv : job_->env) ::putenv(const_cast<char*>(kv.c_str()));
    no_ucx_error_handlers();
    one_blas_thread_per_pe(static_cast<int>(pes_.size()));
    ::setenv("TESSERA_BOOTSTRAP", bootstrap_.c_str(), 1);
    ::setenv("TESSERA_RANK", std::to_string(pe.rank).c_str(), 1);
    if (control_.on()) ::setenv("TESSERA_JOB_CONTROL", control_.name().c_str(), 1);
    // What torch.distributed's env:// start-up reads, as on one host (job.cc), unless the user set it.
    torch_environment(pe.rank, static_cast<int>(job_->size), pe.rank - static_cast<int>(job_->first_rank),
                      static_cast<int>(job_->n_ranks), job_->bootstrap_host, std::to_string(store_port_));
    std::vector<char*> argv;
    for (const auto& a : job_->argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string why = exec_program(argv.data());
    write_all(STDERR_FILENO, fmt::format("tessera-run: cannot start {} on host {}: {}\n", job_->argv[0], job_->host,
                                         why));
    _exit(127);
  }
  (void)::setpgid(pid, pid);  // also here, so that no signal can reach the group before the child made it
  ::close(out[1]);
  ::close(err[1]);
  pe.pid = pid;
  pe.running = true;
  pe.fd[0] = out[0];
  pe.fd[1] = err[0];
  return Status::ok();
}

void Agent::on_frame(const tcp::Frame& f) {
  switch (static_cast<AgentMsg>(f.type)) {
    case AgentMsg::kJob: return on_job(f.payload);
    case AgentMsg::kStart: return on_start(f.payload);
    case AgentMsg::kSignal: {
      Reader r(f.payload);
      const int sig = static_cast<int>(r.u32());
      if (r.ok_and_done() && sig > 0 && sig < NSIG) signal_all(sig);
      return;
    }
    case AgentMsg::kPeFailed: {
      Reader r(f.payload);
      const uint32_t rank = r.u32(), index = r.u32();
      if (!r.ok_and_done() || !control_.on()) return fail("an unexpected failure message");
      control_.mark_failed(rank, index);
      return;
    }
    case AgentMsg::kPublish:
      if (!control_.apply(f.payload)) return fail("a malformed record message");
      return;
    case AgentMsg::kPeers:
      if (Status st = heartbeat_.set_peers(f.payload, now_ns()); !st.is_ok()) return fail(st.message());
      return;
    case AgentMsg::kKill:  // fenced: this host lost its link to the others
      for (auto& pe : pes_)
        if (pe.running) pe.fenced = true, (void)::kill(-pe.pid, SIGKILL);
      return;
    case AgentMsg::kEnd:
      if (!ending_) {
        ending_ = true;
        term_at_ = after(kSelfEndSeconds);
      }
      return;
    default:
      return fail(fmt::format("an unknown message (type {}) from the launcher", static_cast<uint32_t>(f.type)));
  }
}

void Agent::on_signalfd() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGCHLD) continue;  // reaped below
    fail(fmt::format("its agent received {}", signal_name(static_cast<int>(si.ssi_signo))));
  }
  for (;;) {
    int status;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    for (auto& pe : pes_) {
      if (pe.pid != pid || !pe.running) continue;
      pe.running = false;
      publish(pe);  // its last records reach every host before its failure mark does
      const uint32_t by_agent = pe.fenced ? 3 : pe.killed_stopped ? 2 : pe.signalled;
      send(AgentMsg::kExit, Writer().u32(static_cast<uint32_t>(pe.rank)).i32(status).u32(by_agent).bytes());
    }
  }
}

// As tessera-run on one host (job_end.cc): a PE stopped (SIGSTOP, a debugger) for half of TESSERA_TIMEOUT
// is killed, so that it fails as a whole while the survivors' waits, whose deadline is the whole timeout,
// still run.
void Agent::check_stopped(uint64_t now) {
  if (now < stop_check_at_ || !job_ || !job_->stop_limit_ms) return;
  stop_check_at_ = now + 100'000'000ull;
  for (auto& pe : pes_) {
    if (!pe.running || pe.killed_stopped) continue;
    if (stopped_too_long(pe.pid, &pe.stopped_since, now, uint64_t{job_->stop_limit_ms} * 1'000'000)) {
      pe.killed_stopped = true;
      (void)::kill(pe.pid, SIGKILL);
    }
  }
}

void Agent::publish(const LocalPe& pe) {
  if (!control_.on()) return;
  if (std::vector<char> p = control_.changed(static_cast<uint32_t>(pe.rank)); !p.empty()) send(AgentMsg::kPublish, p);
}

void Agent::on_output(LocalPe& pe, int which) {
  char buf[65536];
  const ssize_t n = ::read(pe.fd[which], buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n > 0) pe.lines[which].feed(buf, static_cast<size_t>(n));
  const bool eof = n <= 0;
  std::string text = pe.lines[which].take(eof);
  if (!text.empty())
    send(AgentMsg::kOutput, Writer().u32(static_cast<uint32_t>(pe.rank)).u32(which + 1).str(text).bytes());
  if (eof) {
    ::close(pe.fd[which]);
    pe.fd[which] = -1;
  }
}

// True once there is nothing left to do: every PE ended and its output is read (or held open too long by
// something it started), or the job ended before its PEs started. What a PE started and left holding its
// output is killed at once when the job is ending (its output no longer matters, and waiting for it would
// hold up the job's end); after a clean end it has kDrainNs to finish.
bool Agent::finished(uint64_t now) {
  if (!started_) return ending_ || !in_open_;
  if (running() > 0) return false;
  if (!outputs_open()) return true;
  if (ending_ || !in_open_) kill_leftovers();
  if (!drain_until_) drain_until_ = now + kDrainNs;
  return now >= drain_until_;
}

void Agent::kill_leftovers() {
  for (auto& pe : pes_)
    if (pe.pid > 0) (void)::kill(-pe.pid, SIGKILL);
}

int Agent::run() {
  if (Status st = setup(); !st.is_ok()) {
    std::fprintf(stderr, "tessera-run --agent: %s\n", st.message().c_str());
    return 1;
  }
  send(AgentMsg::kHello, Writer().u32(kAgentProtocol).str(TESSERA_VERSION_STRING).bytes());
  for (;;) {
    const uint64_t now = now_ns();
    if (finished(now)) break;
    if (term_at_ && now >= term_at_) {
      term_at_ = 0;
      signal_all(SIGTERM);
      kill_at_ = after(kGraceSeconds);
    }
    if (kill_at_ && now >= kill_at_) {
      kill_at_ = 0;
      signal_all(SIGKILL);
    }
    std::vector<pollfd> fds{{sigfd_, POLLIN, 0}};
    std::vector<std::pair<LocalPe*, int>> who{{nullptr, -1}};
    if (in_open_) fds.push_back({kIn, POLLIN, 0}), who.push_back({nullptr, -2});
    if (heartbeat_.fd() >= 0) fds.push_back({heartbeat_.fd(), POLLIN, 0}), who.push_back({nullptr, -3});
    for (auto& pe : pes_)
      for (int w = 0; w < 2; ++w)
        if (pe.fd[w] >= 0) fds.push_back({pe.fd[w], POLLIN, 0}), who.push_back({&pe, w});
    int wait_ms = term_at_ || kill_at_ || drain_until_ ? 20 : 500;
    if (control_.on()) {
      // Resilient mode: the PEs' records are looked at every few milliseconds (an agreement across hosts
      // waits for them).
      for (auto& pe : pes_)
        if (pe.running) publish(pe);
      check_stopped(now);
      for (uint32_t host : heartbeat_.tick(now)) send(AgentMsg::kLinkLost, Writer().u32(host).bytes());
      wait_ms = 2;
    }
    const int r = ::poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno != EINTR) break;
    for (size_t i = 0; r > 0 && i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [pe, w] = who[i];
      if (w == -1) {
        on_signalfd();
      } else if (w == -3) {
        heartbeat_.on_readable(now_ns());
      } else if (w == -2) {
        char buf[65536];
        const ssize_t n = ::read(kIn, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
          launcher_gone();
          continue;
        }
        reader_.feed(buf, static_cast<size_t>(n));
        tcp::Frame f;
        tcp::FrameReader::Next next;
        while ((next = reader_.next(&f)) == tcp::FrameReader::Next::kFrame) on_frame(f);
        if (next == tcp::FrameReader::Next::kTooLarge) launcher_gone();
      } else {
        on_output(*pe, w);
      }
    }
  }
  // Whatever a PE started that outlived it ends with the job: nothing of the job stays on this host.
  kill_leftovers();
  if (job_) remove_job_segments(job_->job_id);
  send(AgentMsg::kDone);
  return 0;
}

}  // namespace

int run_agent() {
  Agent agent;
  return agent.run();
}

}  // namespace tessera::run
