#include "placement.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sync/wait.h"

namespace tessera::run {

bool parse_bind_mode(const std::string& s, BindMode* out) {
  if (s == "auto") *out = BindMode::kAuto;
  else if (s == "core") *out = BindMode::kCore;
  else if (s == "none") *out = BindMode::kNone;
  else return false;
  return true;
}

const char* bind_mode_name(BindMode m) {
  switch (m) {
    case BindMode::kAuto: return "auto";
    case BindMode::kCore: return "core";
    case BindMode::kNone: return "none";
  }
  return "?";
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(c);
  }
  return s;
}

// A forked child otherwise starts on its parent's CPU, and two PEs spinning there run at a fraction of their
// speed until the scheduler separates them, milliseconds later. With a whole multiple of the CPUs (4 PEs on
// 2), PE r goes to CPU r mod the count, so every CPU runs the same number of PEs and a PE that yields always
// hands its CPU to one that shares it. Other counts stay free: bound, 3 PEs on 2 CPUs would put two PEs on
// one CPU and one on the other, and the pair would set the pace of every collective.
Layout plan_layout(int n_pes) {
  Layout l;
  cpu_set_t all;
  if (::sched_getaffinity(0, sizeof all, &all) != 0) return l;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) l.cpus.push_back(c);
  const int ncpu = static_cast<int>(l.cpus.size());
  l.pe_cpu.assign(static_cast<size_t>(n_pes), -1);
  if (ncpu == 0 || (n_pes > ncpu && n_pes % ncpu != 0)) return l;
  for (int r = 0; r < n_pes; ++r) l.pe_cpu[static_cast<size_t>(r)] = l.cpus[static_cast<size_t>(r % ncpu)];
  return l;
}

namespace {
// The fields of /proc/PID/stat we read; false when the process is gone. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after its last closing parenthesis.
struct ProcStat {
  char state = '?';          // field 3
  uint64_t cpu_ticks = 0;    // fields 14 + 15, utime + stime: every thread of the process
  uint64_t start_ticks = 0;  // field 22, starttime: clock ticks after boot
};
bool read_proc_stat(pid_t pid, ProcStat* out) {
  const int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string s = read_proc_fd(fd);
  ::close(fd);
  const size_t close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) return false;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  for (int f = 3; f <= 22 && in >> field; ++f) {
    if (f == 3) out->state = field[0];
    if (f == 14 || f == 15) out->cpu_ticks += std::strtoull(field.c_str(), nullptr, 10);
    if (f == 22) out->start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return true;
}
}  // namespace

std::string read_proc_fd(int fd) {
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t k = ::read(fd, buf, sizeof buf);
    if (k > 0) s.append(buf, static_cast<size_t>(k));
    else if (k == 0) return s;
    else if (errno != EINTR) return {};
  }
}

CpuTimes sample_cpu_times(const std::vector<int>& cpus, const std::vector<pid_t>& pids) {
  CpuTimes t;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t.at_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  // /proc/stat: "cpuN user nice system idle iowait irq softirq steal ...". Busy: user, nice, system, irq and
  // softirq; time the hypervisor took (steal) is nobody's on this machine and binding cannot avoid it.
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream in(line.substr(3));
    int cpu;
    uint64_t user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
    in >> cpu >> user >> nice >> sys >> idle >> iowait >> irq >> softirq;
    for (int c : cpus)
      if (c == cpu) t.cpus_busy += user + nice + sys + irq + softirq;
  }
  for (pid_t pid : pids) {
    ProcStat st;
    if (pid > 0 && read_proc_stat(pid, &st)) t.procs += st.cpu_ticks;
  }
  return t;
}

double outside_cpus(const CpuTimes& a, const CpuTimes& b) {
  static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (b.at_ns <= a.at_ns) return 0;
  const double busy = static_cast<double>(b.cpus_busy) - static_cast<double>(a.cpus_busy);
  const double job = static_cast<double>(b.procs) - static_cast<double>(a.procs);
  const double seconds = static_cast<double>(b.at_ns - a.at_ns) * 1e-9;
  const double v = (busy - job) / ticks_per_s / seconds;
  return v > 0 ? v : 0;
}

PlacementMonitor::PlacementMonitor(BindMode mode, Layout layout, std::atomic<uint32_t>* shared_word, bool report,
                                   std::function<std::vector<PlacementPolicy::Waits>()> waits)
    : mode_(mode),
      layout_(std::move(layout)),
      shared_word_(shared_word),
      report_(report),
      waits_(std::move(waits)),
      policy_(layout_.bound() && layout_.pe_cpu.size() <= layout_.cpus.size()) {}

std::string PlacementMonitor::describe() const {
  const size_t n = layout_.pe_cpu.size();
  const std::string cpus = cpu_list(layout_.cpus);
  if (mode_ == BindMode::kNone)
    return fmt::format("{} PE{} run{} on every CPU of the job ({}): --bind-to none", n, n == 1 ? "" : "s",
                       n == 1 ? "s" : "", cpus);
  if (!layout_.bound())
    return fmt::format("{} PEs run on every CPU of the job ({}): {} PEs on {} CPUs are not a whole multiple of "
                       "them, and bound, some CPUs would carry more PEs than others", n, cpus, n,
                       layout_.cpus.size());
  std::string where;
  for (size_t r = 0; r < n && r < 8; ++r) where += fmt::format("{}PE {} on CPU {}", r ? ", " : "", r, layout_.pe_cpu[r]);
  if (n > 8) where += ", ...";
  if (mode_ == BindMode::kCore) return fmt::format("{}: bound, whatever else runs (--bind-to core)", where);
  if (n > layout_.cpus.size())
    return fmt::format("{}: bound while processes outside the job leave CPUs {} idle; unbound when they use {:.2f} "
                       "of a CPU or more (--bind-to auto)", where, cpus, PlacementPolicy::kShareCpus);
  return fmt::format("{}: bound while processes outside the job leave CPUs {} idle; when they use {:.2f} of a CPU "
                     "or more, bound while the PEs' hand-offs are short and unbound while most of every PE's waits "
                     "last {}-{} us and the busy processes leave a CPU (--bind-to auto)", where, cpus,
                     PlacementPolicy::kShareCpus,
                     sync::kShortWaitNs / 1000, sync::kLongWaitNs / 1000);
}

PlacementPolicy::Action PlacementPolicy::add_sample(const CpuTimes& s, const std::vector<pid_t>& pids) {
  if (pids != pids_) window_.clear(), pids_ = pids;
  window_.push_back(s);
  if (window_.size() > static_cast<size_t>(kWindowSamples) + 1) window_.pop_front();
  if (window_.size() < 2) return Action::kNone;
  if (state_ == State::kQuiet) {
    if (window_.size() <= static_cast<size_t>(kWindowSamples)) return Action::kNone;
    load_ = outside_cpus(window_.front(), window_.back());
    if (load_ < kShareCpus) return Action::kNone;
    start_shared();
    streak_ = 0;
    return stay_bound_ ? Action::kShareBound : Action::kUnbind;
  }
  load_ = outside_cpus(window_[window_.size() - 2], window_.back());
  quiet_ = load_ < kQuietCpus ? quiet_ + 1 : 0;
  if (quiet_ >= kQuietSamples) {
    state_ = State::kQuiet;
    window_.clear();
    return Action::kRebind;
  }
  return Action::kNone;
}

// While shared with one PE per CPU: bound or unbound by the lengths of the last interval's waits. The
// hand-offs of one PE working while the other waits (a ping-pong of large messages) give every PE mostly
// mid-length waits; in a collective, bound, the PE beside the outside process is the slow one and its own
// waits are short or too few to count, while its peer waits for it. Intervals with too few waits to tell
// change nothing.
PlacementPolicy::Action PlacementPolicy::add_waits(const std::vector<Waits>& per_pe) {
  if (prev_waits_.size() != per_pe.size()) prev_waits_.assign(per_pe.size(), Waits{});
  last_delta_ = {};
  bool all_transfer = !per_pe.empty();  // every PE mostly waits for a peer's large transfer
  for (size_t pe = 0; pe < per_pe.size(); ++pe) {
    const Waits& w = per_pe[pe];
    Waits& p = prev_waits_[pe];
    // The counts are the PEs' 32-bit counters, which wrap.
    const auto diff = [](uint64_t now, uint64_t before) { return uint64_t{static_cast<uint32_t>(now - before)}; };
    const Waits d{diff(w.short_waits, p.short_waits), diff(w.mid_waits, p.mid_waits),
                  diff(w.long_waits, p.long_waits)};
    p = w;
    last_delta_.short_waits += d.short_waits, last_delta_.mid_waits += d.mid_waits;
    last_delta_.long_waits += d.long_waits;
    const uint64_t n = d.short_waits + d.mid_waits + d.long_waits;
    all_transfer = all_transfer && n >= kMinPeWaits && 2 * d.mid_waits > n;
  }
  if (!stay_bound_ || state_ == State::kQuiet) {
    streak_ = unbound_for_ = 0;
    return Action::kNone;
  }
  const uint64_t total = last_delta_.short_waits + last_delta_.mid_waits + last_delta_.long_waits;
  State want = state_;
  if (state_ == State::kSharedUnbound && ++unbound_for_ >= kProbeSamples) {
    // Unbound, a collective's waits can look like transfers too (both PEs share CPUs with the outside
    // process): try bound again now and then; hand-offs that still call for unbound come back within
    // kSwitchSamples intervals.
    streak_ = unbound_for_ = 0;
    state_ = State::kSharedBound;
    probe_ = true;
    return Action::kBindShared;
  }
  // Bound, a job leaves when every PE waits for transfers; unbound, where every wait costs a wake-up or a
  // switch and a collective's waits look like transfers too, it comes back when most waits are short (or
  // on the probe above).
  if (state_ == State::kSharedBound && all_transfer && room_) want = State::kSharedUnbound;
  if (state_ == State::kSharedUnbound &&
      (!room_ || (total >= kMinWaits && 2 * last_delta_.short_waits > total)))
    want = State::kSharedBound;
  if (want == state_) {
    streak_ = 0;
    return Action::kNone;
  }
  if (++streak_ < kSwitchSamples) return Action::kNone;
  streak_ = unbound_for_ = 0;
  state_ = want;
  probe_ = false;
  return want == State::kSharedUnbound ? Action::kUnbind : Action::kBindShared;
}

int busy_neighbours(const std::vector<pid_t>& job) {
  static const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double uptime = 0;
  {
    std::ifstream up("/proc/uptime");
    up >> uptime;
  }
  const pid_t self = ::getpid();
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == self || std::find(job.begin(), job.end(), pid) != job.end()) continue;
    ProcStat st;
    if (!read_proc_stat(pid, &st) || st.state != 'R') continue;
    const double cpu = static_cast<double>(st.cpu_ticks) / hz, start = static_cast<double>(st.start_ticks) / hz;
    const double age = uptime - start;
    if (age >= 1.0 && cpu >= 0.5 * age) ++n;
  }
  ::closedir(d);
  return n;
}

bool PlacementMonitor::start() {
  if (!watching()) return false;
  const int n = busy_neighbours({});
  if (n == 0) return false;
  policy_.start_shared();
  policy_.set_room(leaves_a_cpu(n));
  const bool bound = policy_.state() == PlacementPolicy::State::kSharedBound;
  shared_word_->store(bound ? bound_word() : sync::kSharedUnbound, std::memory_order_relaxed);
  if (report_)
    std::fprintf(stderr, "tessera-run: placement: %d busy process%s beside the job at its start; the PEs start "
                 "%s\n", n, n == 1 ? "" : "es",
                 bound ? ("bound, one per CPU, and their waits keep the CPU" + spare_text()).c_str() : "unbound");
  return !bound;
}

void PlacementMonitor::started(int rank, pid_t pid) {
  if (watching() && policy_.state() == PlacementPolicy::State::kSharedUnbound)
    widened_[pid] = layout_.pe_cpu[static_cast<size_t>(rank)];
}

uint32_t PlacementMonitor::bound_word() const { return policy_.room() ? sync::kSharedBoundSpare : sync::kSharedBound; }

std::string PlacementMonitor::spare_text() const {
  if (!policy_.room()) return "";
  return fmt::format(" (for up to {} ms while the busy processes leave the job a CPU)",
                     sync::spin_factor(sync::kSharedBoundSpare) * sync::spin_ns() / 1000000);
}

std::string PlacementMonitor::waits_text() const {
  const PlacementPolicy::Waits& d = policy_.last_waits();
  return fmt::format("of the PEs' last {} ms of waits, {} under {} us, {} up to {} ms, {} longer",
                     kHandOffPeriodMs, d.short_waits, sync::kShortWaitNs / 1000, d.mid_waits,
                     sync::kLongWaitNs / 1000000, d.long_waits);
}

void PlacementMonitor::tick(const std::vector<pid_t>& pids_by_rank, uint64_t now_ns) {
  if (!watching() || now_ns < next_ns_) return;
  if (now_ns >= next_load_ns_) {
    next_load_ns_ = now_ns + static_cast<uint64_t>(kSamplePeriodMs) * 1000000ull;
    act(policy_.add_sample(sample_cpu_times(layout_.cpus, pids_by_rank), pids_by_rank), pids_by_rank);
  }
  // Hand-offs are followed closely only while they decide something.
  const bool hand_offs = waits_ && policy_.stay_bound() && policy_.shared();
  if (hand_offs && now_ns >= next_room_ns_) {  // a scan of /proc: once a second
    next_room_ns_ = now_ns + 1000000000ull;
    policy_.set_room(leaves_a_cpu(busy_neighbours(pids_by_rank)));
    if (policy_.state() == PlacementPolicy::State::kSharedBound &&
        shared_word_->exchange(bound_word(), std::memory_order_relaxed) != bound_word() && report_)
      std::fprintf(stderr, "tessera-run: placement: the PEs stay bound; their waits keep the CPU%s\n",
                   policy_.room() ? spare_text().c_str() : " for a while, then sleep (no CPU is left for the job)");
  }
  if (waits_) act(policy_.add_waits(waits_()), pids_by_rank);
  next_ns_ = hand_offs ? now_ns + static_cast<uint64_t>(kHandOffPeriodMs) * 1000000ull : next_load_ns_;
}

void PlacementMonitor::act(PlacementPolicy::Action a, const std::vector<pid_t>& pids_by_rank) {
  switch (a) {
    case PlacementPolicy::Action::kShareBound:
      shared_word_->store(bound_word(), std::memory_order_relaxed);
      if (report_)
        std::fprintf(stderr, "tessera-run: placement: processes outside the job use %.2f of CPUs %s; the PEs stay "
                     "bound, one per CPU, and their waits keep the CPU%s\n", policy_.load(),
                     cpu_list(layout_.cpus).c_str(), spare_text().c_str());
      break;
    case PlacementPolicy::Action::kUnbind: unbind(pids_by_rank); break;
    case PlacementPolicy::Action::kBindShared: rebind(bound_word()); break;
    case PlacementPolicy::Action::kRebind: rebind(sync::kNotShared); break;
    case PlacementPolicy::Action::kNone: break;
  }
}

void PlacementMonitor::unbind(const std::vector<pid_t>& pids_by_rank) {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c : layout_.cpus) CPU_SET(c, &all);
  widened_.clear();
  for (size_t r = 0; r < pids_by_rank.size(); ++r) {
    const pid_t pid = pids_by_rank[r];
    if (pid <= 0) continue;
    DIR* d = ::opendir(fmt::format("/proc/{}/task", pid).c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      cpu_set_t now;
      if (tid <= 0 || ::sched_getaffinity(tid, sizeof now, &now) != 0) continue;
      // Every thread bound to one CPU: the PE's own, and kernel workers pinned to theirs. Threads that run
      // on several CPUs already were placed so on purpose and keep their set.
      if (CPU_COUNT(&now) != 1) continue;
      int cpu = 0;
      while (!CPU_ISSET(cpu, &now)) ++cpu;
      if (::sched_setaffinity(tid, sizeof all, &all) == 0) widened_[tid] = cpu;
    }
    ::closedir(d);
  }
  shared_word_->store(sync::kSharedUnbound, std::memory_order_relaxed);
  if (report_)
    std::fprintf(stderr, "tessera-run: placement: processes outside the job use %.2f of CPUs %s; %zu threads of "
                 "the PEs now run on all of them%s\n", policy_.load(), cpu_list(layout_.cpus).c_str(),
                 widened_.size(), policy_.stay_bound() ? (" (" + waits_text() + ")").c_str() : "");
}

void PlacementMonitor::rebind(uint32_t word) {
  size_t n = 0;
  for (auto [tid, cpu] : widened_) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    n += ::sched_setaffinity(tid, sizeof one, &one) == 0;  // a thread that ended since: nothing to do
  }
  widened_.clear();
  shared_word_->store(word, std::memory_order_relaxed);
  if (!report_) return;
  if (word == sync::kNotShared)
    std::fprintf(stderr, "tessera-run: placement: CPUs %s quiet again (%.2f used outside the job); %zu threads of "
                 "the PEs bound to their CPU again\n", cpu_list(layout_.cpus).c_str(), policy_.load(), n);
  else
    std::fprintf(stderr, "tessera-run: placement: %s; %zu threads of the PEs bound to their CPU again, beside "
                 "processes that use %.2f of CPUs %s\n",
                 policy_.probing() ? "trying the PEs bound again after 2 s unbound"
                                   : ("the PEs' hand-offs are short (" + waits_text() + ")").c_str(),
                 n, policy_.load(), cpu_list(layout_.cpus).c_str());
}

}  // namespace tessera::run
