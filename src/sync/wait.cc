#include "sync/wait.h"
#include "sync/peer.h"

#include <cstdio>

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "base/config.h"
#include "base/log.h"

namespace tessera::sync {
namespace {
const config::Var<double> kTimeout{
    "TESSERA_TIMEOUT", 300.0,
    "Seconds any blocking wait (barrier, wait_until, collective) may take before the job is ended with a "
    "message saying what was awaited"};
const config::Var<int64_t> kSpinNs{"TESSERA_WAIT_SPIN_NS", 20000,
                                   "Nanoseconds a waiter spins before it starts yielding the CPU"};
const config::Var<int64_t> kYieldNs{"TESSERA_WAIT_YIELD_NS", 200000,
                                    "Nanoseconds a waiter yields the CPU before it sleeps on a futex"};

const config::Var<bool> kWriterFences{
    "TESSERA_WRITER_FENCES", false,
    "Order wake-ups with a full fence in every writer instead of membarrier() in sleeping waiters"};
const config::Var<bool> kTestNoRecheck{
    "TESSERA_TEST_NO_RECHECK", false,
    "Test hook for lost wake-ups: a waiter asleep on a futex sleeps until its deadline (TESSERA_TIMEOUT) or a "
    "wake-up instead of re-checking after each slice, and a sleep that ends with nobody having woken it ends the "
    "job with the deadline's message (what was awaited, and that it came true unannounced) instead of costing a "
    "slice. Across hosts it needs the UCX progress thread; waits on a word (kernel barriers, stream events) see "
    "the job's abort only when woken"};
}  // namespace

WaitContext g_wait_context;
WaitStats g_wait_stats;
namespace {
Published<bool> g_oversubscribed = false;
}

Published<bool> g_asymmetric_fence = false;

void set_wait_context(const WaitContext& ctx) {
  g_wait_context = ctx;
  g_oversubscribed = ctx.machine_pes > usable_cpus();
  // Every PE of the job runs this on the same kernel, so all of them make the same choice.
  static const bool asym = [] {
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) || kWriterFences.get()) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
  }();
  g_asymmetric_fence = asym && ctx.pe_words != nullptr;
}

bool oversubscribed() { return g_oversubscribed; }

void waiter_fence() {
  if (g_asymmetric_fence) syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
  else std::atomic_thread_fence(std::memory_order_seq_cst);
}

uint64_t spin_ns() {
  static const uint64_t configured = static_cast<uint64_t>(std::max<int64_t>(0, kSpinNs.get()));
  static const bool explicit_value = kSpinNs.is_set();
  // Oversubscribed (more PEs than CPUs): the peer we wait for needs our CPU, so spin only briefly.
  if (!explicit_value && g_oversubscribed) return configured / 20;
  return configured;
}
uint64_t yield_ns() {
  static const uint64_t v = static_cast<uint64_t>(std::max<int64_t>(0, kYieldNs.get()));
  return v;
}
bool no_recheck() {
  static const bool v = kTestNoRecheck.get();
  return v;
}
uint64_t timeout_ns() {
  static const uint64_t v = [] {
    double t = kTimeout.get();
    if (t <= 0) config::fatal_config(invalid_arg("TESSERA_TIMEOUT={}: must be a positive number of seconds", t));
    return static_cast<uint64_t>(t * 1e9);
  }();
  return v;
}

void watch_begin(PeWaitWords* me, Watch w) {
  me->sleepers.fetch_add(1, std::memory_order_seq_cst);
  uint64_t lo = me->watch_lo.load(std::memory_order_relaxed);
  while (w.lo < lo && !me->watch_lo.compare_exchange_weak(lo, w.lo)) {
  }
  uint64_t hi = me->watch_hi.load(std::memory_order_relaxed);
  while (w.hi > hi && !me->watch_hi.compare_exchange_weak(hi, w.hi)) {
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void watch_end(PeWaitWords* me) {
  // The last sleeper out empties the range. A thread registering at that very moment may lose its range:
  // it is then woken by its next slice, never lost.
  if (me->sleepers.fetch_sub(1, std::memory_order_seq_cst) == 1) {
    me->watch_lo.store(~uint64_t{0}, std::memory_order_relaxed);
    me->watch_hi.store(0, std::memory_order_relaxed);
  }
}

void notify_all() {
  if (!g_wait_context.pe_words) return;
  for (int p = 0; p < g_wait_context.n_pes; ++p) {
    g_wait_context.pe_words[p].rung.store(1);
    g_wait_context.pe_words[p].doorbell.fetch_add(1);
    futex_wake(&g_wait_context.pe_words[p].doorbell);
  }
}

void sched_yield_wrapper() { sched_yield(); }

int publish_cpu() {
  const int cpu = sched_getcpu();
  PeWaitWords* w = g_wait_context.pe_words;
  if (w) w[g_wait_context.my_pe].run_cpu.store(cpu + 1, std::memory_order_relaxed);
  return cpu;
}

void publish_asleep() {
  PeWaitWords* w = g_wait_context.pe_words;
  if (w) w[g_wait_context.my_pe].run_cpu.store(0, std::memory_order_relaxed);
}

bool job_pe_on_cpu(int cpu) {
  const PeWaitWords* w = g_wait_context.pe_words;
  if (!w || cpu < 0) return false;
  for (int p = 0; p < g_wait_context.n_pes; ++p)
    if (p != g_wait_context.my_pe && w[p].run_cpu.load(std::memory_order_relaxed) == cpu + 1) return true;
  return false;
}

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  nanosleep(&ts, nullptr);
}

void exit_for_abort(uint32_t abort_value, const std::string& what) {
  where_settle(what, false);  // the launcher's hang report shows what this PE waited for
  exit_for_abort(abort_value);
}

void exit_for_abort(uint32_t abort_value) {
  // The launcher (or the failing PE) already printed why; say briefly why this PE stops.
  if (log::level() >= log::Level::kInfo)
    log::write_line(log::Level::kInfo, fmt::format("ending: PE {} ended the job", abort_value - 1));
  int code = g_wait_context.exit_code ? g_wait_context.exit_code->load() : 1;
  ::fflush_unlocked(stdout);  // keep what this PE printed (see log::fatal_message)
  ::fflush_unlocked(stderr);
  std::_Exit(code);
}

void peer_vanished(const std::string& what) {
  if (wait_context().abort_word)
    wait_until([] { return false; }, [&] { return fmt::format("the job to end after {}", what); }, Watch::none());
  log::fatal("{}", what);
}

void deadline_expired(const std::string& what, double seconds) {
  where_settle(what, true);
  const std::string note = g_wait_context.failure_note ? g_wait_context.failure_note() : std::string();
  log::fatal("timed out after {:.1f} s (TESSERA_TIMEOUT={}) waiting for {}{}", seconds, kTimeout.get(), what, note);
}

void lost_wakeup(const std::string& what, double seconds) {
  deadline_expired(fmt::format("{}; that holds now, but nothing woke the waiter (a lost wake-up: "
                               "TESSERA_TEST_NO_RECHECK=1 left it no re-check slice)",
                               what),
                   seconds);
}

}  // namespace tessera::sync
