// Where tessera-run places the PEs of a job, and when it changes its mind.
//
// Policy (TESSERA_BIND / --bind-to):
//   auto (default)  each PE starts bound to a CPU of its own (PE r on CPU r mod the count when the PEs are a
//                   whole multiple of the CPUs; other counts run free). While the PEs run, the launcher samples
//                   every kSamplePeriodMs how much of the job's CPUs processes outside the job use. When they
//                   use at least kShareCpus of a CPU (over the last kWindowSamples intervals), it raises
//                   JobControl::cpus_shared: waits then never yield (a yield hands the CPU to the outside
//                   process for a whole slice; sync/wait.h). Then, with one PE per CPU:
//                   - the PEs stay bound (kSharedBound) while their hand-offs are short: a PE beside the
//                     outside process keeps its CPU while it spins, and two PEs on two CPUs hand off in
//                     cache-line time whenever both run; while the busy processes leave the job a CPU
//                     (kSharedBoundSpare), waits spin through the outside processes' slices;
//                   - the launcher unbinds them (kSharedUnbound: every thread of every PE bound to one CPU,
//                     the PE's own and pinned kernel workers, widened to all the job's CPUs) once most of
//                     every PE's waits last kShortWaitNs..kLongWaitNs (sync::PeWaitHist) for kSwitchSamples
//                     intervals of kHandOffPeriodMs in a row (counts read from the control segment, no /proc:
//                     cheap enough to follow a job's phases): one PE works on a large transfer while the
//                     other waits, and unbound the working PE gets the CPU the outside process leaves;
//                     bound, it would share its own;
//                     Only while the busy processes outside leave a CPU for the job (busy_neighbours(),
//                     once a second): without one, unbound PEs only add switches.
//                   - unbound, it binds them again once most waits are short for as many intervals, and
//                     tries them bound every kProbeSamples intervals (unbound, a collective's waits look
//                     like transfers too).
//                   With more PEs than CPUs it unbinds them at once (a bound PE would wait out a scheduler
//                   slice behind the outside process while another CPU sits idle).
//                   After kQuietSamples samples in a row with less than kQuietCpus outside use, it binds
//                   every thread again and lowers the word.
//   core            bound as above, whatever else runs.
//   none            every PE runs on every CPU of the job.
// docs/journal.md ("Shared CPUs") and docs/shared_cpus.md have the measurements behind the thresholds.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tessera::run {

enum class BindMode { kAuto, kCore, kNone };

// Parses core|none|auto; false for anything else.
bool parse_bind_mode(const std::string& s, BindMode* out);
const char* bind_mode_name(BindMode m);

// The CPUs a job of n PEs gets (the launcher's affinity) and the CPU each rank starts on (-1: not bound,
// when n is above the CPU count and not a whole multiple of it).
struct Layout {
  std::vector<int> cpus;
  std::vector<int> pe_cpu;
  bool bound() const { return !pe_cpu.empty() && pe_cpu.front() >= 0; }
};
Layout plan_layout(int n_pes);
// "0,1" for {0, 1}.
std::string cpu_list(const std::vector<int>& cpus);

// Busy time of the given CPUs and of the given processes (all their threads), in clock ticks.
struct CpuTimes {
  uint64_t cpus_busy = 0;
  uint64_t procs = 0;
  uint64_t at_ns = 0;
};
CpuTimes sample_cpu_times(const std::vector<int>& cpus, const std::vector<pid_t>& pids);

// What is left to read of an open file under /proc: "" on any error, never an exception. The processes the
// monitor reads may end at any moment: a read of /proc/PID/stat opened just before its process was reaped
// fails with ESRCH (which a std::istreambuf_iterator over a std::ifstream turns into an exception, and the
// launcher into std::terminate).
std::string read_proc_fd(int fd);
// How many CPUs' worth of time processes other than `pids` used on `cpus` between two samples.
double outside_cpus(const CpuTimes& a, const CpuTimes& b);
// Processes other than this one and the job's (`job`) that are runnable now, older than a second, and have
// used at least half a CPU on average since they started (/proc/PID/stat): a busy neighbour, not a process
// starting up.
int busy_neighbours(const std::vector<pid_t>& job);

// A job's waits so far by length, summed over its PEs (sync::PeWaitHist).
struct WaitCounts {
  uint64_t short_waits = 0, mid_waits = 0, long_waits = 0;
};

// The decision alone, fed with samples (unit-tested with made-up ones: tests/unit/run/placement_test.cc).
class PlacementPolicy {
 public:
  // The decision to unbind looks at the last kWindowSamples intervals: long enough that a process starting
  // up next to the job (a shell, a Python reading its output) does not count, short enough that a busy
  // neighbour costs the job a fraction of a second bound.
  static constexpr int kWindowSamples = 5;
  static constexpr double kShareCpus = 0.5;
  static constexpr int kQuietSamples = 10;
  static constexpr double kQuietCpus = 0.1;
  static constexpr int kSwitchSamples = 3;
  static constexpr uint64_t kMinWaits = 10;   // per interval, below which the hand-offs say nothing
  static constexpr uint64_t kMinPeWaits = 3;  // per PE and interval, to count as waiting for transfers
  static constexpr int kProbeSamples = 100;   // intervals unbound before trying bound again (2 s)
  // kShareBound: outside load, the PEs stay bound; kUnbind: widen them; kBindShared: outside load still, but
  // bind them again (their hand-offs are short); kRebind: quiet again, bind them (if widened).
  enum class Action { kNone, kShareBound, kUnbind, kBindShared, kRebind };
  enum class State { kQuiet, kSharedBound, kSharedUnbound };
  using Waits = WaitCounts;

  // stay_bound: the layout has one PE per CPU, so that the PEs may stay bound beside outside load.
  explicit PlacementPolicy(bool stay_bound = false) : stay_bound_(stay_bound) {}
  // `pids` are the processes the sample's `procs` covers: when they change (a PE ended), the window starts
  // again, as the ended PE's time left the sum. Never kBindShared.
  Action add_sample(const CpuTimes& s, const std::vector<pid_t>& pids);
  // Each PE's wait counts (sync::PeWaitHist: 32-bit counters, which may wrap), every hand-off interval:
  // kUnbind, kBindShared or kNone (only while shared with one PE per CPU).
  Action add_waits(const std::vector<Waits>& per_pe);
  // PlacementMonitor::start found busy neighbours: the job starts shared, bound or not as above.
  void start_shared() { state_ = stay_bound_ ? State::kSharedBound : State::kSharedUnbound, quiet_ = 0; }
  State state() const { return state_; }
  bool shared() const { return state_ != State::kQuiet; }
  bool stay_bound() const { return stay_bound_; }
  double load() const { return load_; }  // outside CPUs behind the last decision
  const Waits& last_waits() const { return last_delta_; }  // of the last interval, behind a switch
  bool probing() const { return probe_; }  // the last kBindShared was a probe, not the hand-offs' call
  // Whether the busy processes outside the job leave a CPU for it (busy_neighbours() + 1 <= CPUs). Without
  // one, unbound PEs only add switches: a 1 MiB ping-pong beside two busy processes on 2 CPUs made 10-14
  // hand-offs in 20 ms unbound against 115-175 bound. Unbinding for transfers needs it.
  void set_room(bool room) { room_ = room; }
  bool room() const { return room_; }

 private:
  bool stay_bound_;
  std::deque<CpuTimes> window_;
  std::vector<pid_t> pids_;
  State state_ = State::kQuiet;
  int quiet_ = 0;
  double load_ = 0;
  std::vector<Waits> prev_waits_;
  Waits last_delta_;  // summed over the PEs
  int streak_ = 0;       // intervals in a row whose hand-offs favour the other shared state
  int unbound_for_ = 0;  // intervals since the PEs were unbound for their hand-offs
  bool probe_ = false;
  bool room_ = true;
};

class PlacementMonitor {
 public:
  static constexpr int kSamplePeriodMs = 100;
  static constexpr int kHandOffPeriodMs = 20;

  // shared_word: JobControl::cpus_shared. waits: each PE's PeWaitHist counts (null: none known).
  // report: print the placement and every change to stderr.
  PlacementMonitor(BindMode mode, Layout layout, std::atomic<uint32_t>* shared_word, bool report,
                   std::function<std::vector<PlacementPolicy::Waits>()> waits = {});
  // Before the PEs start: when busy_neighbours() finds processes that have kept a CPU busy for a while, the
  // PEs start unbound rather than wait out the first samples bound. True then.
  bool start();
  // The PE of `rank` started as `pid`; when it started unbound, binding it later means its main thread.
  void started(int rank, pid_t pid);
  // Whether the PEs start bound to layout.pe_cpu.
  bool start_bound() const {
    return mode_ != BindMode::kNone && policy_.state() != PlacementPolicy::State::kSharedUnbound;
  }
  // Call when next_tick_ns() is due with the running PEs' pids by rank (-1 for PEs that ended).
  void tick(const std::vector<pid_t>& pids_by_rank, uint64_t now_ns);
  // When the next tick is due (0: never; the policy does not watch).
  uint64_t next_tick_ns() const { return watching() ? next_ns_ : 0; }
  // One line: the placement the job got and why.
  std::string describe() const;
  BindMode mode() const { return mode_; }
  // One PE per CPU: beside outside load the PEs may stay bound (PlacementPolicy).
  bool stays_bound() const { return policy_.stay_bound(); }
  // Whether `busy` busy processes outside the job (busy_neighbours()) leave it a CPU of its own.
  bool leaves_a_cpu(int busy) const { return busy + 1 <= static_cast<int>(layout_.cpus.size()); }
  const Layout& layout() const { return layout_; }

 private:
  bool watching() const { return mode_ == BindMode::kAuto && layout_.bound(); }
  void unbind(const std::vector<pid_t>& pids_by_rank);
  void rebind(uint32_t word);
  std::string waits_text() const;
  // The word for bound PEs: kSharedBoundSpare while the busy processes leave the job a CPU (waits spin
  // through their slices), else kSharedBound; and the text that says which.
  uint32_t bound_word() const;
  std::string spare_text() const;
  void act(PlacementPolicy::Action a, const std::vector<pid_t>& pids_by_rank);

  BindMode mode_;
  Layout layout_;
  std::atomic<uint32_t>* shared_word_;
  bool report_;
  std::function<std::vector<PlacementPolicy::Waits>()> waits_;
  PlacementPolicy policy_;
  uint64_t next_ns_ = 0;       // the next tick
  uint64_t next_load_ns_ = 0;  // the next CPU-time sample
  uint64_t next_room_ns_ = 0;  // the next count of busy neighbours (PlacementPolicy::set_room)
  std::map<pid_t, int> widened_;  // thread id -> the CPU it was bound to
};

}  // namespace tessera::run
