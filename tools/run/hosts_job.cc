#include "hosts_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "agent_wire.h"
#include "hosts_failure.h"
#include "remote_shell.h"
#include "settings.h"
#include "base/cpu.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_wire.h"
#include "proc.h"
#include "tessera/version.h"

namespace tessera::run {
namespace {
namespace tcp = bootstrap::tcp;

// The failures that arrive this soon after the first are weighed together (hosts_job.h says why): longer
// than a report takes to cross the agents' channels, short against the "few seconds" a job may take to end.
constexpr double kBlameSeconds = 0.5;
// Agents that have not said done this long after kEnd (their PEs had kSelfEndSeconds + kGraceSeconds to go)
// lose their stdin, which makes them end at once; their remote shells are killed kCutOffSeconds later.
constexpr double kForceSeconds = kSelfEndSeconds + kGraceSeconds + 3.0;
constexpr double kCutOffSeconds = 2.0;
// How long the remote shells may take to exit once their agents said done.
constexpr double kReapSeconds = 2.0;

uint64_t after(double seconds) { return now_ns() + static_cast<uint64_t>(seconds * 1e9); }

struct RemoteHost {
  HostPes pes;
  int index = 0;
  pid_t pid = -1;  // the remote shell, leader of a process group of its own
  int status = -1;  // its wait status once reaped
  int in = -1, out = -1;
  tcp::FrameReader reader{bootstrap::kMaxPayload};
  bool hello = false, done = false, gone = false;
};

struct PeState {
  int host = 0;
  bool ended = false;
};

class HostsJob {
 public:
  HostsJob(const Options& opt, const std::vector<HostPes>& hosts) : opt_(opt) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      hosts_.emplace_back();
      hosts_.back().pes = hosts[i];
      hosts_.back().index = static_cast<int>(i);
      for (int r = 0; r < hosts[i].count; ++r) pes_.push_back({static_cast<int>(i), false});
    }
  }
  ~HostsJob();
  int run();

 private:
  Status setup();
  Status spawn_agent(RemoteHost& h);
  JobSpec job_for(const RemoteHost& h) const;
  void send(RemoteHost& h, AgentMsg type, const std::vector<char>& payload = {});
  void on_readable(RemoteHost& h);
  void on_frame(RemoteHost& h, const tcp::Frame& f);
  void on_output(RemoteHost& h, const std::vector<char>& payload);
  void on_exit(RemoteHost& h, const std::vector<char>& payload);
  void on_gone(RemoteHost& h, const std::string& why);
  void continue_without(int rank, const std::string& host, const std::string& why);
  void on_signalfd();
  void failure(Failure::Kind kind, std::string text, int result, bool others_running);
  void own_cause(const std::string& text, int result);
  void settle(bool now);
  void end_job();
  // True while a PE other than `rank` and not on host `host` (-1: none) has not ended.
  bool running_besides(int rank, int host) const;
  bool all_finished() const;
  void reap_shells(bool block_until);

  Options opt_;
  std::vector<RemoteHost> hosts_;
  std::vector<PeState> pes_;  // [rank]
  std::string job_id_, secret_, self_, bootstrap_;
  std::vector<std::string> rsh_;
  int sigfd_ = -1;
  sigset_t old_mask_{};
  std::vector<Failure> failures_;
  uint64_t blame_until_ = 0;
  bool ends_job_ = false;  // something still ran at the first failure: the line says the job ends
  bool decided_ = false;  // the job's cause is printed; later failures are its consequences
  int result_ = 0;
  bool ending_ = false;
  uint64_t force_at_ = 0, cut_kill_at_ = 0;
  bool cut_ = false;
  Continuing continuing_;  // resilient mode (hosts_failure.h)
};

HostsJob::~HostsJob() {
  for (auto& h : hosts_) {
    if (h.in >= 0) ::close(h.in);
    if (h.out >= 0) ::close(h.out);
  }
  if (sigfd_ >= 0) ::close(sigfd_);
}

Status HostsJob::setup() {
  bool resilient = false;
  TS_RETURN_IF_ERROR(resolve_on_failure(opt_, &resilient));
  std::vector<std::string> names;
  for (const auto& h : hosts_) names.push_back(h.pes.name);
  auto to = [this](int host, AgentMsg t, const std::vector<char>& p) { send(hosts_[static_cast<size_t>(host)], t, p); };
  continuing_ = Continuing(resilient, std::move(names), to, bootstrap::random_hex(32));
  job_id_ = bootstrap::random_hex(tcp::kJobIdChars);
  secret_ = bootstrap::random_hex(bootstrap::kSecretChars);
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return sys_error("readlink /proc/self/exe (the agent is started by the launcher's own path)");
  self_.assign(path, static_cast<size_t>(n));
  rsh_ = rsh_words();
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  sigfd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) return sys_error("signalfd");
  signal(SIGPIPE, SIG_IGN);  // an agent that is gone shows as its channel's end
  return Status::ok();
}

Status HostsJob::spawn_agent(RemoteHost& h) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return sys_error("pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return sys_error("pipe");
  }
  std::vector<std::string> words = rsh_;
  words.push_back(h.pes.name);
  words.push_back(shell_quote(self_));
  words.push_back("--agent");
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return sys_error("fork");
  }
  if (pid == 0) {
    // A process group of its own: a Ctrl-C at the terminal reaches the launcher, which relays it, and not
    // the remote shells, whose death would look like lost hosts. No PR_SET_PDEATHSIG: when the launcher
    // dies, the agent must live on to end its PEs (it sees its stdin close).
    (void)::setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    signal(SIGPIPE, SIG_DFL);
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    write_all(STDERR_FILENO, fmt::format("tessera-run: cannot start the remote shell {} (TESSERA_RSH) for host {}: "
                                         "{}\n", words[0], h.pes.name, std::strerror(errno)));
    _exit(127);
  }
  (void)::setpgid(pid, pid);
  ::close(in[0]);
  ::close(out[1]);
  int fl = ::fcntl(out[0], F_GETFL);
  if (fl >= 0) (void)::fcntl(out[0], F_SETFL, fl | O_NONBLOCK);
  h.pid = pid;
  h.in = in[1];
  h.out = out[0];
  return Status::ok();
}

JobSpec HostsJob::job_for(const RemoteHost& h) const {
  JobSpec j;
  j.job_id = job_id_;
  j.host = h.pes.name;
  j.host_index = static_cast<uint32_t>(h.index);
  j.first_rank = static_cast<uint32_t>(h.pes.first);
  j.n_ranks = static_cast<uint32_t>(h.pes.count);
  j.size = static_cast<uint32_t>(pes_.size());
  j.bootstrap_host = hosts_.front().pes.name;
  char cwd[PATH_MAX];
  j.cwd = ::getcwd(cwd, sizeof cwd) ? cwd : "/";
  j.argv = opt_.argv;
  // The user's variables first, the job's after them (the later one wins where both set a name).
  j.env = opt_.env;
  j.env.push_back("TESSERA_SIZE=" + std::to_string(pes_.size()));
  j.env.push_back("TESSERA_JOB_SECRET=" + secret_);
  j.env.push_back("TESSERA_JOB_ID=" + job_id_);
  continuing_.fill(j, stop_limit_ns(opt_));
  return j;
}

void HostsJob::send(RemoteHost& h, AgentMsg type, const std::vector<char>& payload) {
  if (h.in < 0 || h.gone || h.done) return;
  (void)write_frame(h.in, type, payload);  // an agent that is gone is noticed on its stdout
}

bool HostsJob::running_besides(int rank, int host) const {
  for (size_t r = 0; r < pes_.size(); ++r)
    if (static_cast<int>(r) != rank && pes_[r].host != host && !pes_[r].ended) return true;
  return false;
}

void HostsJob::failure(Failure::Kind kind, std::string text, int result, bool others_running) {
  if (decided_) return;
  if (failures_.empty()) {
    blame_until_ = after(kBlameSeconds);
    // Whichever failure the line names, the job ended here if anything else still ran at the first one.
    ends_job_ = others_running;
  }
  failures_.push_back({kind, std::move(text), result});
  end_job();
}

void HostsJob::own_cause(const std::string& text, int result) {
  if (!decided_ && failures_.empty()) {
    decided_ = true;
    result_ = result;
    std::fprintf(stderr, "tessera-run: %s; ending the job\n", text.c_str());
  }
  end_job();
}

// Prints the job's cause once the blame window has closed (or at once when `now`).
void HostsJob::settle(bool now) {
  if (decided_ || failures_.empty() || (!now && now_ns() < blame_until_)) return;
  const Failure* best = &choose_cause(failures_);
  decided_ = true;
  result_ = best->result;
  std::fprintf(stderr, "tessera-run: %s%s\n", best->text.c_str(), ends_job_ ? "; ending the job" : "");
}

void HostsJob::end_job() {
  if (ending_) return;
  ending_ = true;
  for (auto& h : hosts_) send(h, AgentMsg::kEnd);
  force_at_ = after(kForceSeconds);
}

void HostsJob::on_output(RemoteHost& h, const std::vector<char>& payload) {
  Reader r(payload);
  const uint32_t rank = r.u32(), stream = r.u32();
  std::string text = r.str();
  if (!r.ok_and_done() || (stream != 1 && stream != 2)) return;
  if (opt_.tag_output) {
    const std::string tag = fmt::format("[{}:{}] ", h.pes.name, rank);
    std::string tagged;
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      size_t end = nl == std::string::npos ? text.size() : nl + 1;
      tagged += tag;
      tagged.append(text, start, end - start);
      start = end;
    }
    text = std::move(tagged);
  }
  write_all(stream == 1 ? STDOUT_FILENO : STDERR_FILENO, text);
}

void HostsJob::on_exit(RemoteHost& h, const std::vector<char>& payload) {
  Reader r(payload);
  const int rank = static_cast<int>(r.u32());
  const int status = r.i32();
  const uint32_t by_agent = r.u32();
  if (!r.ok_and_done() || rank < h.pes.first || rank >= h.pes.first + h.pes.count) {
    on_gone(h, fmt::format("its agent reported the end of PE {}, not one of its PEs", rank));
    return;
  }
  pes_[static_cast<size_t>(rank)].ended = true;
  if (by_agent == 1) return;  // the job was ending already
  const bool signalled = WIFSIGNALED(status);
  if (!signalled && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (continuing_.on() && !ending_ && running_besides(rank, -1))
    return continue_without(rank, h.pes.name, by_agent == 3 ? "was killed: its host was fenced" : by_agent != 2 ? describe_status(status)
        : fmt::format("stayed stopped for {:.1f} s (half of TESSERA_TIMEOUT) and was killed", stop_limit_ns(opt_) / 1e9));
  failure(signalled ? Failure::kPeSignal : Failure::kPeStatus,
          fmt::format("PE {} on host {} {}", rank, h.pes.name, describe_status(status)), exit_status_of(status),
          running_besides(rank, -1));
}

// Resilient mode: `rank` failed; the job goes on, and every agent marks it (hosts_failure.h).
void HostsJob::continue_without(int rank, const std::string& host, const std::string& why) {
  int left = 0;
  for (const PeState& p : pes_) left += !p.ended;
  const std::vector<char> mark = continuing_.fail(rank, host, why, left);
  for (auto& other : hosts_) send(other, AgentMsg::kPeFailed, mark);
}

void HostsJob::on_gone(RemoteHost& h, const std::string& why) {
  if (h.out >= 0) ::close(h.out);
  if (h.in >= 0) ::close(h.in);
  h.out = h.in = -1;
  const bool was_done = h.done;
  h.gone = true;
  std::vector<int> lost;  // its PEs that had not ended
  for (int r = h.pes.first; r < h.pes.first + h.pes.count; ++r) {
    if (!pes_[static_cast<size_t>(r)].ended) lost.push_back(r);
    pes_[static_cast<size_t>(r)].ended = true;
  }
  if (was_done) return;
  // A remote shell whose agent is gone has nothing left to do. Only while it is unreaped: until then its
  // pid, and so its process group's id, cannot be anyone else's.
  if (h.pid > 0 && h.status < 0) (void)::kill(-h.pid, SIGKILL);
  if (cut_) return;  // cut off by the launcher: the cause is printed already
  if (continuing_.on() && !ending_ && h.hello && running_besides(-1, h.index)) {
    // Resilient mode: its PEs end with their agent (PDEATHSIG, or the agent's stdin closing): each failed.
    for (int r : lost) continue_without(r, h.pes.name, "was lost with its host (" + (why.empty() ? "its agent's connection closed" : why) + ")");
    return;
  }
  std::string text;
  if (!why.empty()) {
    text = fmt::format("host {} ({}): {}", h.pes.name, h.pes.ranks(), why);
  } else if (h.hello) {
    text = fmt::format("host {} ({}) disappeared: its agent's connection closed", h.pes.name, h.pes.ranks());
  } else {
    text = fmt::format("host {} ({}): its agent did not start (`{} {} {} --agent` ended without a word from it; the "
                       "remote shell's own message, if any, is above)",
                       h.pes.name, h.pes.ranks(), fmt::join(rsh_, " "), h.pes.name, shell_quote(self_));
  }
  failure(Failure::kHostLost, std::move(text), 1, running_besides(-1, h.index));
}

void HostsJob::on_frame(RemoteHost& h, const tcp::Frame& f) {
  Reader r(f.payload);
  switch (static_cast<AgentMsg>(f.type)) {
    case AgentMsg::kHello: {
      const uint32_t protocol = r.u32();
      const std::string version = r.str();
      if (!r.ok_and_done() || protocol != kAgentProtocol)
        return on_gone(h, fmt::format("its agent (tessera-run {}) speaks protocol {}, this launcher ({}) {}: install "
                                      "the same tessera-run at {} on every host",
                                      version, protocol, TESSERA_VERSION_STRING, kAgentProtocol, self_));
      h.hello = true;
      return;
    }
    case AgentMsg::kPort: {
      const uint32_t port = r.u32(), store_port = r.u32();
      if (!r.ok_and_done() || h.index != 0 || !bootstrap_.empty() || port == 0 || port > 65535 || store_port == 0 ||
          store_port > 65535)
        return on_gone(h, "its agent sent an unexpected port message");
      bootstrap_ = fmt::format("tcp://{}:{}", h.pes.name, port);
      if (ending_) return;
      for (auto& other : hosts_) send(other, AgentMsg::kStart, Writer().str(bootstrap_).u32(store_port).bytes());
      return;
    }
    case AgentMsg::kOutput: return on_output(h, f.payload);
    case AgentMsg::kExit: return on_exit(h, f.payload);
    case AgentMsg::kError: {
      const std::string text = r.str();
      failure(Failure::kHostLost, fmt::format("host {} ({}): {}", h.pes.name, h.pes.ranks(), text), 1,
              running_besides(-1, h.index));
      return;
    }
    case AgentMsg::kDone: h.done = true; return;
    default:
      if (continuing_.on_frame(h.index, static_cast<AgentMsg>(f.type), f.payload, now_ns())) return;  // resilient mode
      return on_gone(h, fmt::format("its agent sent an unknown message (type {})", static_cast<uint32_t>(f.type)));
  }
}

void HostsJob::on_readable(RemoteHost& h) {
  char buf[65536];
  const ssize_t n = ::read(h.out, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) return on_gone(h, "");
  h.reader.feed(buf, static_cast<size_t>(n));
  tcp::Frame f;
  tcp::FrameReader::Next next;
  while (!h.gone && (next = h.reader.next(&f)) == tcp::FrameReader::Next::kFrame) on_frame(h, f);
  if (!h.gone && next == tcp::FrameReader::Next::kTooLarge) on_gone(h, "its agent sent an oversized message");
}

void HostsJob::on_signalfd() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == sizeof si) {
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) continue;  // reaped below
    // SIGINT and SIGTERM go on to the PEs as they are; a hangup or quit ends them as SIGTERM would.
    const int relay = sig == SIGINT || sig == SIGTERM ? sig : SIGTERM;
    for (auto& h : hosts_) send(h, AgentMsg::kSignal, Writer().u32(static_cast<uint32_t>(relay)).bytes());
    own_cause(fmt::format("received {}", signal_name(sig)), 128 + sig);
  }
  reap_shells(false);
}

void HostsJob::reap_shells(bool block_until) {
  const uint64_t deadline = block_until ? after(kReapSeconds) : 0;
  for (;;) {
    bool left = false;
    for (auto& h : hosts_) {
      if (h.pid <= 0 || h.status >= 0) continue;
      int status;
      const pid_t p = ::waitpid(h.pid, &status, WNOHANG);
      if (p == h.pid) h.status = status;
      else left = true;
    }
    if (!left || !block_until) return;
    if (now_ns() >= deadline) {
      for (auto& h : hosts_)
        if (h.pid > 0 && h.status < 0) (void)::kill(-h.pid, SIGKILL);
      for (auto& h : hosts_)
        if (h.pid > 0 && h.status < 0) (void)::waitpid(h.pid, &h.status, 0);
      return;
    }
    ::usleep(10000);
  }
}

bool HostsJob::all_finished() const {
  for (auto& h : hosts_)
    if (!h.done && !h.gone) return false;
  return true;
}

int HostsJob::run() {
  if (Status st = setup(); !st.is_ok()) {
    std::fprintf(stderr, "tessera-run: %s\n", st.message().c_str());
    return 1;
  }
  for (auto& h : hosts_) {
    if (ending_) {
      h.gone = true;  // not started: an earlier host's could not be
      continue;
    }
    if (Status st = spawn_agent(h); !st.is_ok()) {
      h.gone = true;
      failure(Failure::kHostLost,
              fmt::format("host {} ({}): cannot start its remote shell: {}", h.pes.name, h.pes.ranks(), st.message()),
              1, true);
      continue;
    }
    send(h, AgentMsg::kJob, encode_job(job_for(h)));
  }
  const uint64_t deadline = opt_.timeout_s > 0 ? after(opt_.timeout_s) : 0;
  while (!all_finished()) {
    settle(false);
    const uint64_t now = now_ns();
    (void)continuing_.fence_due(now);
    if (deadline && now >= deadline && !ending_)
      own_cause(fmt::format("job timed out after {:.0f} s (--timeout)", opt_.timeout_s), 124);
    if (force_at_ && now >= force_at_ && !cut_) {
      // Agents that do not finish: their stdin closes, which ends their PEs at once.
      cut_ = true;
      for (auto& h : hosts_)
        if (!h.done && !h.gone && h.in >= 0) ::close(h.in), h.in = -1;
      cut_kill_at_ = after(kCutOffSeconds);
    }
    if (cut_kill_at_ && now >= cut_kill_at_) {
      for (auto& h : hosts_)
        if (!h.done && !h.gone) {
          std::fprintf(stderr, "tessera-run: host %s: its agent did not end within %.0f s of the job's end; "
                       "killed its remote shell\n", h.pes.name.c_str(), kForceSeconds + kCutOffSeconds);
          on_gone(h, "");
        }
      break;
    }
    std::vector<pollfd> fds{{sigfd_, POLLIN, 0}};
    std::vector<RemoteHost*> who{nullptr};
    for (auto& h : hosts_)
      if (h.out >= 0) fds.push_back({h.out, POLLIN, 0}), who.push_back(&h);
    int wait_ms = 200;
    if ((!failures_.empty() && !decided_) || continuing_.deciding()) wait_ms = 20;
    const int r = ::poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno != EINTR) break;
    for (size_t i = 0; r > 0 && i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!who[i]) on_signalfd();
      else if (who[i]->out >= 0) on_readable(*who[i]);
    }
  }
  settle(true);
  for (auto& h : hosts_)
    if (h.in >= 0) ::close(h.in), h.in = -1;  // every agent has said done: their shells may end
  reap_shells(true);
  if (!decided_) continuing_.summary();
  return decided_ ? result_ : 0;
}

}  // namespace

int run_hosts_job(const Options& opt, const std::vector<HostPes>& hosts) {
  HostsJob job(opt, hosts);
  return job.run();
}

}  // namespace tessera::run
