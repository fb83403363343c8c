#include "pgas/copy_engine.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <thread>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "base/memcopy.h"
#include "base/trace.h"
#include "pgas/copy.h"
#include "sync/futex.h"
#include "sync/wait.h"

namespace tessera::pgas::engine {
namespace {
const config::Var<std::string> kMode{
    "TESSERA_COPY_ENGINE", "auto",
    "Copy-engine thread that shares large non-blocking puts/gets with the caller: on, off, auto (on when the "
    "job's PEs fit on this host's CPUs), or always (on, without pausing when no core is spare: for tests)"};
const config::Var<uint64_t> kMin{"TESSERA_COPY_ENGINE_MIN", uint64_t{256} << 10,
                                 "Non-blocking transfers of at least this many bytes go through the copy engine"};
const config::Var<uint64_t> kChunk{"TESSERA_COPY_ENGINE_CHUNK", uint64_t{64} << 10,
                                   "Bytes the caller or the copy engine claims at a time"};
const config::Var<int64_t> kTestHoldNs{
    "TESSERA_TEST_ENGINE_HOLD_NS", 0,
    "Test hook for ordering tests: when > 0, callers leave the last chunk of every job to the copy engine, "
    "which holds it this many nanoseconds before copying it, so a non-blocking put stays incomplete long enough "
    "for a missing fence or quiet to show. Needs TESSERA_COPY_ENGINE=always"};

constexpr size_t kRing = 64;  // jobs queued at once; a submit to a full ring first completes the oldest
// A caller that waits longer than this for a chunk the engine holds counts a stall (the engine was
// preempted: up to a scheduler slice, milliseconds). Stalls over 1/kStallBudget of a kStallWindowNs window
// start a back-off (100 ms, doubling up to 2 s while it keeps recurring), so on a host with no spare core
// stalls cost a few percent at most, and a stray one on a quiet host costs only itself.
constexpr uint64_t kStallNs = 50'000;
constexpr uint64_t kStallWindowNs = 100'000'000;
constexpr uint64_t kStallBudget = 20;
constexpr uint64_t kMinBackoffNs = 100'000'000;
constexpr uint64_t kMaxBackoffNs = 2'000'000'000;
// When the engine finds itself woken on the submitting thread's CPU, callers copy alone this long.
constexpr uint64_t kSharedCpuPauseNs = 2'000'000;

struct alignas(kCacheLine) Job {
  // Chunks not yet claimed, as pack(sequence, lo, hi) (see claim()).
  std::atomic<uint64_t> claim{0};
  std::atomic<uint32_t> done{0};  // chunks copied
  uint32_t nchunks = 0;
  char* dst = nullptr;
  const char* src = nullptr;
  size_t bytes = 0;
  uint64_t watch_off = 0;
  int notify_pe = -1;
  Stores stores = Stores::kCached;  // of every chunk: decided for the whole job
  std::atomic<int> caller_cpu{-1};  // where the submitting thread ran (read by the engine as a hint)
};

struct Engine {
  std::array<Job, kRing> ring;
  std::mutex mu;                        // submit and retire
  alignas(kCacheLine) std::atomic<uint64_t> head{0};  // next sequence to queue
  alignas(kCacheLine) std::atomic<uint64_t> tail{0};  // oldest sequence not retired
  alignas(kCacheLine) std::atomic<uint32_t> kick{0};  // futex word the idle engine sleeps on
  std::atomic<uint32_t> sleeping{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> by_engine{0};
  std::atomic<uint64_t> stalls{0};
  std::atomic<uint64_t> shared_cpu{0};
  size_t chunk = 64 << 10;
  std::mutex stall_mu;  // the stall window and back-off below
  uint64_t window_start = 0, window_stalled = 0, backoff_ns = 0, backoff_end = 0;
  std::atomic<uint64_t> backoffs{0};
  bool adaptive = true;     // pause when no core is spare
  uint32_t keep = 0;        // chunks at the back of a job that callers leave to the engine (test hook)
  uint64_t hold_ns = 0;     // how long the engine holds a chunk before copying it (test hook)
  int cpus = 1;             // usable CPUs of this process
  std::thread thread;
};

Engine* g_engine = nullptr;

// The claim word: tag (job sequence, 16 bits) | lo (24 bits) | hi (24 bits). Callers take chunks from the
// front (lo++), the engine from the back (--hi), until they meet: each thread keeps roughly the same part
// of a transfer from one call to the next, so a destination that is written again and again (a window of
// puts into one buffer) stays in the writing core's cache instead of moving between cores. The tag makes
// a claim on a slot that was retired and reused fail instead of taking a chunk of the newer job.
constexpr uint64_t kMaxChunks = (uint64_t{1} << 24) - 1;
inline uint64_t pack(uint64_t seq, uint64_t lo, uint64_t hi) { return (seq & 0xffff) << 48 | lo << 24 | hi; }

// Claims a chunk of job `seq` from the front (callers) or the back (engine); false when none is left.
// Callers leave the last `keep` chunks to the engine.
bool claim(Job& j, uint64_t seq, bool back, uint32_t keep, uint32_t* chunk) {
  uint64_t v = j.claim.load(std::memory_order_acquire);
  for (;;) {
    uint64_t lo = (v >> 24) & kMaxChunks, hi = v & kMaxChunks;
    if ((v >> 48) != (seq & 0xffff) || lo + (back ? 0 : keep) >= hi) return false;
    uint64_t next = back ? pack(seq, lo, hi - 1) : pack(seq, lo + 1, hi);
    if (j.claim.compare_exchange_weak(v, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      *chunk = static_cast<uint32_t>(back ? hi - 1 : lo);
      return true;
    }
  }
}

void copy_chunk(Engine& e, Job& j, uint32_t c) {
  size_t off = static_cast<size_t>(c) * e.chunk;
  size_t n = std::min(e.chunk, j.bytes - off);
  tessera::copy(j.dst + off, j.src + off, n, j.stores);
  // Once the last chunk is counted the submitter may retire the slot and refill it: what the wake-up needs
  // is read before the count.
  const int notify_pe = j.notify_pe;
  const uint64_t watch_off = j.watch_off;
  const size_t bytes = j.bytes;
  const uint32_t nchunks = j.nchunks;
  if (j.done.fetch_add(1, std::memory_order_acq_rel) + 1 == nchunks && notify_pe >= 0)
    sync::notify_range(notify_pe, watch_off, bytes);
}

// Copies chunks of job `seq` until none is left to claim; returns how many this thread copied.
uint64_t work_on(Engine& e, uint64_t seq, bool engine_thread = false) {
  Job& j = e.ring[seq % kRing];
  uint64_t n = 0;
  uint32_t c;
  while (claim(j, seq, engine_thread, engine_thread ? 0 : e.keep, &c)) {
    if (engine_thread && e.hold_ns) [[unlikely]] std::this_thread::sleep_for(std::chrono::nanoseconds(e.hold_ns));
    copy_chunk(e, j, c);
    ++n;
  }
  return n;
}

// Waits until every chunk of job `seq` (all claimed already) is copied. Only chunks the engine holds can be
// left: each is one bounded copy by a thread of this process, but that thread may have been preempted by
// another process in the middle of one. An occasional stall (a kernel thread ran) costs less than going
// without the engine; when stalls add up to more than kStallBudget of a kStallWindow the host has no spare
// core right now, and callers copy alone for a back-off period.
void wait_job(Engine& e, uint64_t seq) {
  Job& j = e.ring[seq % kRing];
  if (j.done.load(std::memory_order_acquire) == j.nchunks) return;
  uint64_t t0 = now_ns(), spins = 0;
  while (j.done.load(std::memory_order_acquire) != j.nchunks) {
    if (++spins < 1024) cpu_relax();
    else sched_yield();
  }
  uint64_t now = now_ns(), waited = now - t0;
  if (waited <= kStallNs || !e.adaptive) return;
  e.stalls.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lk(e.stall_mu);
  if (now - e.window_start > kStallWindowNs) {
    e.window_start = now;
    e.window_stalled = 0;
  }
  e.window_stalled += waited;
  if (e.window_stalled * kStallBudget <= kStallWindowNs) return;
  // Over budget: back off, doubling when the previous back-off ended less than a second ago.
  e.backoff_ns = now < e.backoff_end + 1'000'000'000 ? std::min(e.backoff_ns * 2, kMaxBackoffNs) : kMinBackoffNs;
  e.backoff_end = now + e.backoff_ns;
  g_paused_until_ns.store(e.backoff_end, std::memory_order_relaxed);
  e.window_start = now;
  e.window_stalled = 0;
  e.backoffs.fetch_add(1, std::memory_order_relaxed);
}

// Completes and retires every job below `upto` (the caller holds e.mu).
void complete_locked(Engine& e, uint64_t upto) {
  for (uint64_t s = e.tail.load(std::memory_order_relaxed); s < upto; ++s) {
    work_on(e, s);
    wait_job(e, s);
  }
  e.tail.store(upto, std::memory_order_release);
  g_pending.store(e.head.load(std::memory_order_relaxed) - upto, std::memory_order_release);
}

void engine_loop(Engine& e) {
  // The engine's use is a CPU the PE is not on: when the PE is bound to one CPU, the engine runs on the job's
  // other CPUs only (never woken onto its caller's CPU); otherwise on all of them.
  cpu_set_t own, job;
  if (sched_getaffinity(0, sizeof own, &own) == 0 && CPU_COUNT(&own) == 1 && job_cpu_set(&job)) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &own)) CPU_CLR(c, &job);
    if (CPU_COUNT(&job) > 0) sched_setaffinity(0, sizeof job, &job);
    else unbind_thread_to_job_cpus();
  } else {
    unbind_thread_to_job_cpus();
  }
  if (trace::g_on) trace::name_thread("copy engine");
  uint64_t next = 0;
  const uint64_t spin = sync::spin_ns();
  bool just_worked = false;  // spin for a follow-up job only right after one (never when merely woken)
  while (!e.stop.load(std::memory_order_acquire)) {
    uint64_t h = e.head.load(std::memory_order_acquire);
    next = std::max(next, e.tail.load(std::memory_order_acquire));
    bool shares_cpu = false;
    if (next < h) {
      // On the caller's own CPU the engine only time-shares it with the caller (and may preempt it while
      // holding a chunk): no spare core right now. Leave the job to the caller, pause the engine for a
      // while, and sleep at once.
      int cpu = sched_getcpu();
      for (; next < h; ++next) {
        if (e.adaptive && e.ring[next % kRing].caller_cpu.load(std::memory_order_relaxed) == cpu) {
          shares_cpu = true;
          continue;
        }
        // The slot is read only through claims (work_on): it may be retired and refilled meanwhile.
        trace::Scope traced(trace::Cat::kRma, "engine chunks");
        const uint64_t copied = work_on(e, next, true);
        traced.set_arg1("chunks", static_cast<int64_t>(copied));
        e.by_engine.fetch_add(copied, std::memory_order_relaxed);
      }
      if (!shares_cpu) {
        just_worked = true;
        continue;
      }
      e.shared_cpu.fetch_add(1, std::memory_order_relaxed);
      g_paused_until_ns.store(now_ns() + kSharedCpuPauseNs, std::memory_order_relaxed);
    }
    // Idle: after a job, spin a little for the next (a window of puts arrives back to back), then sleep
    // until kicked. An idle engine costs nothing: no periodic wake-up takes a CPU from a PE.
    uint32_t k = e.kick.load(std::memory_order_acquire);
    uint64_t t0 = now_ns();
    bool more = false;
    while (just_worked && !shares_cpu && now_ns() - t0 < spin) {
      if (e.head.load(std::memory_order_acquire) != h || e.stop.load(std::memory_order_relaxed)) {
        more = true;
        break;
      }
      cpu_relax();
    }
    if (more) continue;
    just_worked = false;
    e.sleeping.store(1, std::memory_order_seq_cst);
    if (e.head.load(std::memory_order_seq_cst) == h && !e.stop.load(std::memory_order_seq_cst))
      sync::futex_wait(&e.kick, k, uint64_t{3600} * 1'000'000'000);
    e.sleeping.store(0, std::memory_order_relaxed);
  }
}

void wake(Engine& e) {
  e.kick.fetch_add(1, std::memory_order_seq_cst);
  if (e.sleeping.load(std::memory_order_seq_cst)) sync::futex_wake(&e.kick, 1);
}
}  // namespace

std::atomic<uint64_t> g_pending{0};
size_t g_min_bytes = ~size_t{0};
std::atomic<uint64_t> g_paused_until_ns{0};

void start(int n_local) {
  config::one_of(kMode, {"auto", "on", "off", "always"});
  const std::string& mode = kMode.get();
  uint64_t chunk = kChunk.get();
  if (chunk < 4096 || chunk > (uint64_t{1} << 30))
    config::fatal_config(invalid_arg("TESSERA_COPY_ENGINE_CHUNK={}: must be between 4K and 1G", chunk));
  const int64_t hold = kTestHoldNs.get();
  if (hold < 0 || (hold > 0 && mode != "always"))
    config::fatal_config(invalid_arg("TESSERA_TEST_ENGINE_HOLD_NS={}: must be 0, or positive with "
                                     "TESSERA_COPY_ENGINE=always (an engine that may pause cannot be left chunks)",
                                     hold));
  if (mode == "off" || (mode == "auto" && n_local > usable_cpus())) return;
  g_engine = new Engine;
  g_engine->chunk = static_cast<size_t>(chunk);
  g_engine->adaptive = mode != "always";
  g_engine->keep = hold > 0 ? 1 : 0;
  g_engine->hold_ns = static_cast<uint64_t>(hold);
  g_engine->cpus = usable_cpus();
  g_min_bytes = std::max<size_t>(static_cast<size_t>(kMin.get()), 1);
  g_engine->thread = std::thread([e = g_engine] { engine_loop(*e); });
}

void stop() {
  if (!g_engine) return;
  drain();
  g_engine->stop.store(true, std::memory_order_seq_cst);
  wake(*g_engine);
  g_engine->thread.join();
  log::debug("copy engine: {} chunks copied by the engine thread, {} stalls, {} back-offs, {} wake-ups on the "
             "caller's CPU", g_engine->by_engine.load(), g_engine->stalls.load(), g_engine->backoffs.load(),
             g_engine->shared_cpu.load());
  delete g_engine;
  g_engine = nullptr;
  g_min_bytes = ~size_t{0};
}

namespace {
constexpr uint64_t kNoJob = ~uint64_t{0};

// Queues a job and wakes the engine; kNoJob when the transfer was copied here instead.
uint64_t submit_job(Engine& e, char* dst, const char* src, size_t bytes, int notify_pe, uint64_t watch_off) {
  size_t nchunks = (bytes + e.chunk - 1) / e.chunk;
  if (nchunks > kMaxChunks) {  // more chunks than the claim word counts (a terabyte): copy it here
    copy_bytes(dst, src, bytes);
    if (notify_pe >= 0) sync::notify_range(notify_pe, watch_off, bytes);
    return kNoJob;
  }
  uint64_t seq;
  {
    std::lock_guard lk(e.mu);
    seq = e.head.load(std::memory_order_relaxed);
    if (seq - e.tail.load(std::memory_order_relaxed) == kRing) complete_locked(e, seq - kRing + 1);
    Job& j = e.ring[seq % kRing];
    j.dst = dst;
    j.src = src;
    j.bytes = bytes;
    j.notify_pe = notify_pe;
    j.watch_off = watch_off;
    j.stores = stores_for(bytes);
    j.caller_cpu.store(sched_getcpu(), std::memory_order_relaxed);
    j.nchunks = static_cast<uint32_t>(nchunks);
    j.done.store(0, std::memory_order_relaxed);
    j.claim.store(pack(seq, 0, nchunks), std::memory_order_release);
    e.head.store(seq + 1, std::memory_order_release);
    g_pending.fetch_add(1, std::memory_order_release);
  }
  wake(e);
  return seq;
}
}  // namespace

// TESSERA_TRACE records the transfers that reach the engine (the large ones), not every put.
void submit(char* dst, const char* src, size_t bytes, int notify_pe, uint64_t watch_off) {
  trace::Scope traced(trace::Cat::kRma, notify_pe >= 0 ? "put_nbi" : "get_nbi", nullptr,
                      {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "pe", .a1 = notify_pe});
  Engine& e = *g_engine;
  uint64_t seq = submit_job(e, dst, src, bytes, notify_pe, watch_off);
  if (seq != kNoJob) work_on(e, seq);
}

void copy(char* dst, const char* src, size_t bytes, int notify_pe, uint64_t watch_off) {
  trace::Scope traced(trace::Cat::kRma, notify_pe >= 0 ? "put" : "get", nullptr,
                      {.k0 = "bytes", .a0 = static_cast<int64_t>(bytes), .k1 = "pe", .a1 = notify_pe});
  Engine& e = *g_engine;
  uint64_t seq = submit_job(e, dst, src, bytes, notify_pe, watch_off);
  if (seq == kNoJob) return;
  work_on(e, seq);
  wait_job(e, seq);
}

void drain() {
  if (!g_engine) return;
  Engine& e = *g_engine;
  trace::Scope traced(trace::Cat::kRma, "quiet", "copy engine drain");
  std::lock_guard lk(e.mu);
  complete_locked(e, e.head.load(std::memory_order_relaxed));
  // Streaming stores of either thread are drained by its own sfence (base/memcopy.h); the caller's quiet
  // supplies the full fence that orders them before what it does next.
}

bool spare_cpu() {
  if (!g_engine->adaptive) return true;
  const sync::WaitContext& ctx = sync::wait_context();
  if (!ctx.pe_words) return true;
  int awake = 1;  // this PE
  for (int p = 0; p < ctx.n_pes && awake < g_engine->cpus; ++p)
    if (p != ctx.my_pe && ctx.pe_words[p].sleepers.load(std::memory_order_relaxed) == 0) ++awake;
  return awake < g_engine->cpus;
}

bool running() { return g_engine != nullptr; }
uint64_t chunks_by_engine() { return g_engine ? g_engine->by_engine.load(std::memory_order_relaxed) : 0; }
uint64_t stalls() { return g_engine ? g_engine->stalls.load(std::memory_order_relaxed) : 0; }

}  // namespace tessera::pgas::engine
