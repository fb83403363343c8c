// The wait policy: spin briefly, then yield, then sleep on a futex, always under a deadline.
//
// Tessera's machines often run more PEs than cores (4 PEs on 2 cores in tests), where pure spinning
// starves the PE that would satisfy the wait. A waiter therefore
//   0. polls kEagerPolls times without a clock read, `pause` between polls after the first kTightPolls
//      (a running peer answers within a cache-line transfer: small collectives and ping-pongs end here),
//   1. spins with `pause` for TESSERA_WAIT_SPIN_NS (short: the fast case when the peer is running),
//   2. yields the CPU for TESSERA_WAIT_YIELD_NS,
//   3. parks on its PE's doorbell futex in growing slices (50 µs .. 4 ms), re-checking the condition after
//      every slice, so a missed wake-up costs at most one slice, never correctness. That also hides one from
//      the tests: with the test hook TESSERA_TEST_NO_RECHECK=1 a sleeper parks until its deadline instead,
//      so a writer that fails to ring ends the job with the deadline's message (lost_wakeup); WaitStats
//      counts whether a sleeping wait ended by the doorbell or by a slice (Wait.SleeperIsWokenByTheDoorbell).
// Writers that may satisfy a remote wait (put, atomic, signal) call notify(pe) after their stores: a full
// fence, then a relaxed load of the target's sleeper count (a line that is rarely written); the doorbell is
// rung only when somebody sleeps, and only once until a sleeper re-arms it (`rung`). No syscall on the hot
// path, even when the target sleeps in a barrier while it receives a stream of puts.
// When the job has more PEs than this host has CPUs, the spin phase is cut to TESSERA_WAIT_SPIN_NS / 20:
// the PE we wait for needs our CPU. While processes outside the job share its CPUs (tessera-run raised
// JobControl::cpus_shared, tools/run/placement.h), phases 1 and 2 are replaced, and never yield: a yield with
// nobody of the job on the CPU hands it to the outside process for a whole scheduler slice (milliseconds).
//   - PEs unbound (kSharedUnbound): shared_spin spins for a quarter of TESSERA_WAIT_SPIN_NS, yielding at once
//     whenever another PE of the job last ran on its CPU and is not asleep (it needs this CPU), then sleeps:
//     a sleeper frees its CPU for a PE that is waiting to run and, woken, is scheduled at once.
//   - PEs bound, one per CPU (kSharedBound): phase 1 spins for 10 x TESSERA_WAIT_SPIN_NS, then it sleeps. A
//     PE whose CPU the outside process also wants keeps it while it spins; once it lets go (a yield, or a
//     sleep), it gets it back only after the outside process's slice. A sleep still pays when every CPU has
//     a busy process: the sleeper's CPU goes to that process, and the scheduler gives it back to the PE
//     early, when it wakes, for the time it left.
//   - Bound while the outside processes leave the job a CPU (kSharedBoundSpare): phase 1 spins for
//     1000 x TESSERA_WAIT_SPIN_NS (20 ms), longer than the outside processes' slices. A PE that slept there
//     would leave a CPU idle, the scheduler would move the busy process onto it, and the PE, woken, would
//     find it there: beside one busy process on 2 CPUs, these spins sped up send/recv, mid-size ping-pongs
//     and allreduce; beside two they cost up to twice the time (docs/journal.md, "Shared CPUs";
//     docs/shared_cpus.md).
// Waits that get past the first polls while the CPUs are shared are counted by length (PeWaitHist): the
// launcher picks between the two from them.
//
// Every wait has a deadline (TESSERA_TIMEOUT seconds). On expiry the waiter's describe() text (what it
// waited for: address, value seen, value wanted) is printed with the PE number and the job is ended.
// While waiting, the job-abort word is watched: when another PE failed, the waiter exits at once with
// status 1 (the launcher has already said which PE failed). Either way the waiter first leaves its
// describe() text in its where-area (sync/where.h) for the launcher's hang report.
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/cpu.h"
#include "base/trace.h"
#include "sync/fail.h"
#include "sync/futex.h"
#include "sync/where.h"

namespace tessera::sync {

// Per-PE words that live in the job's control segment (or in private memory for a job of one PE).
struct alignas(kCacheLine) PeWaitWords {
  std::atomic<uint32_t> doorbell{0};   // bumped (and futex-woken) by writers when sleepers > 0
  std::atomic<uint32_t> sleepers{0};   // threads of this PE parked on doorbell
  std::atomic<uint32_t> rung{0};       // 1: the doorbell was rung since a sleeper last re-armed it
  // Where this PE runs, written once at start-up: 0 not yet known, -1 not bound to one CPU, else the CPU
  // it is bound to plus 1 (barriers wait for the members of their own CPU first: pgas/team.cc).
  std::atomic<int32_t> cpu_plus1{0};
  // Union of the symmetric offsets the sleepers watch (Watch below); empty when nobody sleeps.
  std::atomic<uint64_t> watch_lo{~uint64_t{0}};
  std::atomic<uint64_t> watch_hi{0};
  // While the job's CPUs are shared (cpus_shared()): the CPU this PE's waiting thread last ran on, plus 1;
  // 0 while it sleeps on the doorbell. A waiter on that CPU yields to it at once (shared_spin).
  std::atomic<int32_t> run_cpu{0};
  char pad[kCacheLine - 36];
};
static_assert(sizeof(PeWaitWords) == kCacheLine);

// What a waiter watches, as a range of symmetric offsets (pgas::watch_offset): writers that know what they
// wrote (notify_range) wake it only when their bytes overlap. kAny: every writer wakes it; kNone: only
// unconditional notify() does (barriers, whose releaser notifies each member).
struct Watch {
  uint64_t lo, hi;
  static constexpr Watch any() { return {0, ~uint64_t{0}}; }
  static constexpr Watch none() { return {~uint64_t{0}, 0}; }
};

// A field of the wait context: written by init and finalize while threads that outlive them (the UCX
// progress thread during start-up, kernel pool workers, comm streams) read it. Release stores and acquire
// loads: plain moves on x86, no race, and a reader that sees a pointer sees what was set up before it.
template <typename T>
class Published {
 public:
  constexpr Published(T v = T{}) : v_(v) {}
  Published(const Published& o) : v_(o.load()) {}
  Published& operator=(const Published& o) { store(o.load()); return *this; }
  Published& operator=(T v) { store(v); return *this; }
  operator T() const { return load(); }
  T operator->() const requires std::is_pointer_v<T> { return load(); }
  T load() const { return v_.load(std::memory_order_acquire); }
  void store(T v) { v_.store(v, std::memory_order_release); }

 private:
  std::atomic<T> v_;
};

// How this PE's waits that got past the first polls ended while the job's CPUs were shared, by length: what
// tessera-run's choice between bound and unbound PEs rests on (tools/run/placement.h). Counts only grow
// (wrapping); the launcher takes differences. In the PE's state line of the control segment
// (pgas::JobControl), which no other PE reads.
struct PeWaitHist {
  std::atomic<uint32_t> short_waits;  // under kShortWaitNs: a hand-off of a few cache lines or kilobytes
  std::atomic<uint32_t> mid_waits;    // kShortWaitNs .. kLongWaitNs: a peer's transfer of a large message
  std::atomic<uint32_t> long_waits;   // longer: a peer that computes, or that waited out a scheduler slice
};
inline constexpr uint64_t kShortWaitNs = 16'000;
inline constexpr uint64_t kLongWaitNs = 4'000'000;
// JobControl::cpus_shared: nobody outside the job uses its CPUs; outside processes do and tessera-run
// unbound the PEs; outside processes do and the PEs stay bound, one per CPU (with a CPU left for the job by
// the busy processes, or not).
enum SharedMode : uint32_t { kNotShared = 0, kSharedUnbound = 1, kSharedBound = 2, kSharedBoundSpare = 3 };
// Phase 1's length in TESSERA_WAIT_SPIN_NS for each SharedMode (see the top of this file).
inline constexpr uint64_t spin_factor(uint32_t mode) {
  return mode == kSharedBoundSpare ? 1000 : mode == kSharedBound ? 10 : 1;
}

struct WaitContext {
  Published<std::atomic<uint32_t>*> abort_word;  // nonzero: the job is ending (value: failed PE + 1)
  Published<std::atomic<int32_t>*> exit_code;    // status to exit with when the job is ending
  Published<const std::atomic<uint32_t>*> cpus_shared;  // a SharedMode: whether outside processes use the job's CPUs
  Published<PeWaitHist*> wait_hist;              // this PE's (null without tessera-run)
  Published<PeWaitWords*> pe_words;              // one per PE of the job
  Published<int> my_pe = 0;
  Published<int> n_pes = 1;
  Published<int> machine_pes = 1;  // PEs of the job on this machine (pgas::Runtime::machine_pes)
  // Set when some peer is on another host: advances the transports that carry its writes, called on every
  // poll of the spin and yield phases, so that a waiter handles what arrives itself instead of waiting for
  // the transport's progress thread to be woken and scheduled (transport.h); a sleeper calls it after each
  // slice too (without that thread it is all that advances the transports).
  Published<void (*)()> progress;
  // Resilient mode: text naming the PEs that failed while the job went on ("" when none), added to a
  // deadline's message, since a wait no call watches (shmem_wait_until, say) may wait for a write that a
  // failed PE will never make.
  Published<std::string (*)()> failure_note;
};

// Installed by the PGAS layer at init; before that, waits use private words.
void set_wait_context(const WaitContext& ctx);
// More PEs of the job run on this machine than it has CPUs for them (set by set_wait_context).
bool oversubscribed();
extern WaitContext g_wait_context;
inline const WaitContext& wait_context() { return g_wait_context; }
// The CPU world PE `pe` published at start-up (PeWaitWords::cpu_plus1): -1 when it is not bound to one CPU
// or has not published yet (every PE has once the job's first barrier is done).
inline int pe_cpu(int pe) {
  const PeWaitWords* w = wait_context().pe_words;
  const int32_t c = w ? w[pe].cpu_plus1.load(std::memory_order_relaxed) : 0;
  return c > 0 ? c - 1 : -1;
}
// As wait_until, giving the CPU away after every failed check: for a wait on a PE that may need this CPU.
template <typename Done, typename Describe>
void wait_yielding(Done&& done, Describe&& describe, Watch watch = Watch::any());

// How waits ended, counted off the fast path (a wait that succeeds at once or while spinning is not
// counted): printed at TESSERA_LOG=3 by finalize, to tell a job that spins from one that keeps sleeping.
struct WaitStats {
  std::atomic<uint64_t> spun{0};      // waits that passed the first check and ended while spinning
  std::atomic<uint64_t> yielded{0};   // waits that reached the yield phase
  std::atomic<uint64_t> slept{0};     // waits that reached the futex phase
  std::atomic<uint64_t> futex_waits{0};
  // How the waits that parked at least once ended: the doorbell had moved since the waiter last parked (a
  // writer rang it), or it had not (the condition held at a slice's end with nobody ringing: a lost wake-up,
  // unless no PE's writer is meant to ring, as before init). Locked adds: they sit next to a syscall.
  std::atomic<uint64_t> woken_by_bell{0};
  std::atomic<uint64_t> woken_by_slice{0};
};
extern WaitStats g_wait_stats;
// A plain load and store, not a locked add (which costs as much as the rest of a small collective's wait):
// two threads of one PE counting at the same instant may lose a count, which statistics can afford.
inline void count_wait(std::atomic<uint64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
// Polls of a wait's first phase (no clock read), the first kTightPolls of them without a pause.
inline constexpr uint32_t kEagerPolls = 64;
inline constexpr uint32_t kTightPolls = 16;

// Processes outside the job use its CPUs now (JobControl::cpus_shared; kNotShared without tessera-run).
inline uint32_t shared_mode() {
  const std::atomic<uint32_t>* w = g_wait_context.cpus_shared;
  return w ? w->load(std::memory_order_relaxed) : kNotShared;
}
inline bool cpus_shared() { return shared_mode() != kNotShared; }

// Tunables (from the environment, parsed once).
uint64_t spin_ns();
uint64_t yield_ns();
uint64_t timeout_ns();
// The test hook TESSERA_TEST_NO_RECHECK (parsed once; read by sleeping waits only): a waiter parked on a futex
// sleeps until its deadline or a wake-up, not for a slice. Waits without a doorbell (before init) keep
// their slices: nothing could wake them.
bool no_recheck();

inline void ring(PeWaitWords& w) {
  // The writer's stores are globally visible before it reads `rung`: a sleeper re-arms (a locked exchange)
  // before it re-checks, so either the re-check sees the stores or this load sees the re-arm. Only writers
  // that found a sleeper get here: the fence is rare, next to a syscall.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Once per re-arm: a stream of writes to a PE that sleeps costs a load each, not a syscall each.
  if (w.rung.load(std::memory_order_relaxed) == 0 && w.rung.exchange(1, std::memory_order_seq_cst) == 0) {
    w.doorbell.fetch_add(1, std::memory_order_release);
    futex_wake(&w.doorbell);
    // The scheduler usually wakes a thread on or near the waker's CPU: until the woken PE runs and says
    // where it is, waiters here take it to be on this CPU.
    if (cpus_shared()) w.run_cpu.store(sched_getcpu() + 1, std::memory_order_relaxed);
  }
}

// Store->load ordering between a writer (data stores, then a load of the sleeper count) and a waiter
// (sleeper count store, then loads of the data). Where the kernel offers membarrier(GLOBAL_EXPEDITED), the
// waiter pays for both sides once per sleeping wait, right after it registers as a sleeper (a writer whose
// stores could still sit in its store buffer then drains them, and any later writer sees the registration),
// and writers need only a compiler barrier; otherwise every writer issues a full fence. Once per wait, not
// per re-arm: the call interrupts every CPU that last ran a PE, an idle one too, and on a virtual machine
// waking a halted vCPU takes long enough that a transfer whose waits re-arm dozens of times (a 4 MiB
// send/recv) slowed down several times over (docs/journal.md, "Wait policy"). The re-arms are covered by the
// fence in ring().
extern Published<bool> g_asymmetric_fence;
inline void writer_fence() {
  if (g_asymmetric_fence) std::atomic_signal_fence(std::memory_order_seq_cst);
  else std::atomic_thread_fence(std::memory_order_seq_cst);
}
void waiter_fence();

// Wakes sleepers of `pe` if there are any. Call after the stores that a waiter on `pe` may be watching.
// The fence makes those stores globally visible before the sleeper count is read (store->load order):
// otherwise a waiter that registers and re-checks at that moment sees neither the data nor a wake-up.
inline void notify(int pe) {
  PeWaitWords* w = wait_context().pe_words;
  writer_fence();
  if (w && w[pe].sleepers.load(std::memory_order_relaxed) != 0) ring(w[pe]);
}

// As notify(), for a write of [offset, offset + bytes) in symmetric offsets: sleepers that watch other
// bytes are left asleep (a PE asleep in a barrier is not woken by every put it receives).
inline void notify_range(int pe, uint64_t offset, uint64_t bytes) {
  PeWaitWords* w = wait_context().pe_words;
  writer_fence();
  if (w && w[pe].sleepers.load(std::memory_order_relaxed) != 0 &&
      offset < w[pe].watch_hi.load(std::memory_order_relaxed) &&
      offset + bytes > w[pe].watch_lo.load(std::memory_order_relaxed))
    ring(w[pe]);
}
// Rings every PE's doorbell (job abort, global events).
void notify_all();

void sched_yield_wrapper();
void sleep_ns(uint64_t ns);

// Shared CPUs (PeWaitWords::run_cpu): this thread's CPU, published for the other PEs' waiters; whether another
// PE of the job last ran on `cpu` and is not asleep.
int publish_cpu();
void publish_asleep();
bool job_pe_on_cpu(int cpu);

// Phases 1-2 while the CPUs are shared (see the top of this file). True when done() became true.
template <typename Done>
[[gnu::noinline]] bool shared_spin(Done& done, uint64_t start) {
  int cpu = publish_cpu();
  const uint64_t spin_end = start + spin_ns() / 4;
  const uint64_t yield_end = start + yield_ns();
  for (uint32_t i = 0;; ++i) {
    cpu_relax();
    if (done()) return true;
    if ((i & 7) != 7) continue;
    const uint64_t now = fast_now_ns();
    if (job_pe_on_cpu(cpu) && now < yield_end) {
      sched_yield_wrapper();
      if (done()) return true;
      cpu = publish_cpu();
    } else if (now >= spin_end) {
      return false;
    }
  }
}

// Counts a wait that ended while the CPUs were shared, by its length (PeWaitHist).
inline void count_shared_wait(uint64_t start) {
  PeWaitHist* h = wait_context().wait_hist;
  if (!h) return;
  const uint64_t d = fast_now_ns() - start;
  std::atomic<uint32_t>& c = d < kShortWaitNs ? h->short_waits : d < kLongWaitNs ? h->mid_waits : h->long_waits;
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Abort handling used by the wait loop. A waiter passes its describe() text, which is first left in its
// where-area (sync/where.h) for the launcher's hang report.
[[noreturn]] void exit_for_abort(uint32_t abort_value);
[[noreturn]] void exit_for_abort(uint32_t abort_value, const std::string& what);
[[noreturn]] void deadline_expired(const std::string& what, double seconds);
// Under TESSERA_TEST_NO_RECHECK: a sleeper found its condition true with nobody having woken it. Ends the job
// as deadline_expired does, saying so.
[[noreturn]] void lost_wakeup(const std::string& what, double seconds);

void watch_begin(PeWaitWords* me, Watch w);  // registers as a sleeper watching w
void watch_end(PeWaitWords* me);

// The phases after the first polls, out of line: the callers' fast path stays small (no register saves or
// stack frame for the spin, yield and sleep loops and the deadline message).
template <typename Done, typename Describe>
[[gnu::noinline]] void wait_until_slow(Done& done, Describe& describe, Watch watch) {
  const WaitContext& ctx = wait_context();
  const uint64_t start = fast_now_ns();
  trace::WaitSpan traced{start};  // TESSERA_TRACE: one event for this wait, with the last phase reached
  const uint32_t mode = ctx.pe_words ? shared_mode() : kNotShared;
  const bool shared = mode != kNotShared;
  // Shared and bound, phase 1 spins longer and phase 2 is skipped (see the top of this file).
  const uint64_t spin_end = start + spin_factor(mode) * spin_ns();
  if (mode == kSharedUnbound && shared_spin(done, start)) {
    count_wait(g_wait_stats.spun);
    count_shared_wait(start);
    return;
  }
  // Phase 1: spin.
  for (uint32_t i = 0; mode != kSharedUnbound; ++i) {
    cpu_relax();
    if (ctx.progress) ctx.progress();
    if (done()) {
      count_wait(g_wait_stats.spun);
      if (shared) count_shared_wait(start);
      return;
    }
    if ((i & 63) == 63 && fast_now_ns() >= spin_end) break;
  }
  count_wait(g_wait_stats.yielded);
  traced.phase = trace::kYield;
  // Phase 2: yield.
  const uint64_t yield_end = spin_end + yield_ns();
  const uint64_t deadline = start + timeout_ns();
  for (; !shared;) {
    __builtin_ia32_pause();
    sched_yield_wrapper();
    if (ctx.progress) ctx.progress();
    if (done()) return;
    if (ctx.abort_word) {
      uint32_t a = ctx.abort_word->load(std::memory_order_relaxed);
      if (a) exit_for_abort(a, describe());
    }
    if (FailWatch* f = t_fail_watch; f && f->tripped()) [[unlikely]] f->raise();
    if (now_ns() >= yield_end) break;
  }
  // Phase 3: park on the doorbell in growing slices (without them under TESSERA_TEST_NO_RECHECK).
  PeWaitWords* me = ctx.pe_words ? &ctx.pe_words[ctx.my_pe] : nullptr;
  const bool recheck = !me || !no_recheck();
  uint64_t slice = 50'000;
  bool parked = false;
  uint32_t bell = 0;  // the doorbell as sampled before the last park
  count_wait(g_wait_stats.slept);
  traced.phase = trace::kSleep;
  if (me) {
    watch_begin(me, watch);
    waiter_fence();  // every writer's earlier stores are now visible, or it will see us asleep
  }
  for (;;) {
    // Re-arm (a locked exchange: the condition below is read after it), then sample the doorbell.
    if (me) me->rung.exchange(0, std::memory_order_seq_cst);
    const uint32_t bell_now = me ? me->doorbell.load(std::memory_order_acquire) : 0;
    if (ctx.progress) ctx.progress();
    if (done()) {
      // A ring that lands between a slice's end and this re-check counts as the doorbell's: what is counted
      // is whether a writer rang, not which of the two the futex returned on. The doorbell is read again
      // here: the progress call above may itself have landed the write and rung (a PE with peers on other
      // hosts whose progress thread had no CPU before the slice ended).
      if (parked)
        ((me ? me->doorbell.load(std::memory_order_acquire) : bell_now) != bell ? g_wait_stats.woken_by_bell
                                                                                 : g_wait_stats.woken_by_slice)
            .fetch_add(1, std::memory_order_relaxed);
      // Without slices, a sleep that ended with the doorbell unmoved ended at the deadline (or early, by a
      // signal): the condition came true and nobody rang. Counted as success, it would pass the test.
      if (parked && !recheck && bell_now == bell) {
        watch_end(me);
        lost_wakeup(describe(), static_cast<double>(now_ns() - start) / 1e9);
      }
      break;
    }
    bell = bell_now;
    if (ctx.abort_word) {
      uint32_t a = ctx.abort_word->load(std::memory_order_relaxed);
      if (a) {
        if (me) watch_end(me);
        exit_for_abort(a, describe());
      }
    }
    if (FailWatch* f = t_fail_watch; f && f->tripped()) [[unlikely]] {
      if (me) watch_end(me);
      f->raise();
    }
    uint64_t now = now_ns();
    if (now >= deadline) {
      if (me) watch_end(me);
      deadline_expired(describe(), static_cast<double>(now - start) / 1e9);
    }
    g_wait_stats.futex_waits.fetch_add(1, std::memory_order_relaxed);
    if (shared) publish_asleep();
    const uint64_t nap = recheck ? slice : deadline - now;
    if (me) futex_wait(&me->doorbell, bell, nap);
    else sleep_ns(nap);
    parked = true;
    if (shared) publish_cpu();
    if (slice < 4'000'000) slice *= 2;
  }
  if (me) watch_end(me);
  if (shared) count_shared_wait(start);
}

// Blocks until done() is true. describe() builds the text printed when the deadline expires.
template <typename Done, typename Describe>
inline void wait_until(Done&& done, Describe&& describe, Watch watch = Watch::any()) {
  if (done()) return;
  // Phase 0: polls without a clock read (each poll far cheaper than one). The first kTightPolls back to
  // back: a peer on a nearby core answers within one cache-line transfer, which can take less than a
  // `pause`. Then with a pause between polls: a poller that re-reads the line the moment it is invalidated
  // competes with the writer's own transfer, which slows a flag exchange between CCXs, where the hop is
  // long (docs/journal.md, "Wait policy"; bench/barrier_floor.c pauses too).
  for (uint32_t i = 0; i < kEagerPolls; ++i) {
    if (i >= kTightPolls) cpu_relax();
    else std::atomic_signal_fence(std::memory_order_seq_cst);
    if (done()) {
      count_wait(g_wait_stats.spun);
      return;
    }
  }
  wait_until_slow(done, describe, watch);
}

template <typename Done, typename Describe>
void wait_yielding(Done&& done, Describe&& describe, Watch watch) {
  wait_until([&] { if (done()) return true; sched_yield(); return false; }, describe, watch);
}

}  // namespace tessera::sync
