// The persistent worker pool behind launch() (see runtime.h for the contract).
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "base/trace.h"
#include "kernel/runtime/grid.h"
#include "kernel/runtime/runtime.h"
#include "sync/word_wait.h"

namespace tessera::kernel::rt {
namespace {

const config::Var<int64_t> kBlocks{"TESSERA_KERNEL_BLOCKS", 0,
                                   "Blocks of a kernel launch that asks for the default (0: usable CPUs)"};
const config::Var<int64_t> kMaxBlocks{"TESSERA_KERNEL_MAX_BLOCKS", 256,
                                      "Largest block_num a kernel launch may ask for"};
const config::Var<std::string> kPin{
    "TESSERA_KERNEL_PIN", "auto",
    "Pin kernel worker threads to CPUs (hwloc, cores first): on, off, or auto (pin while the PE is bound to one "
    "CPU, unless the job's PEs times the default block count outnumber this process's CPUs, where pinning "
    "would stack threads on one CPU)"};
const config::Var<uint64_t> kScratch{"TESSERA_KERNEL_SCRATCH", 0,
                                     "Bytes of per-block kernel scratch (0: half the L2 cache, at least 64K)"};
const config::Var<int64_t> kIdleSpinNs{"TESSERA_KERNEL_IDLE_SPIN_NS", 50000,
                                       "Nanoseconds an idle kernel worker spins for the next launch before it "
                                       "sleeps"};
const config::Var<std::string> kCombine{"TESSERA_KERNEL_COMBINE", "auto",
                                        "How operators combine per-block partials: auto, flat or tree"};

thread_local BlockContext* tl_block = nullptr;

void* alloc_aligned(size_t bytes) {
  void* p = std::aligned_alloc(kCacheLine, std::max<size_t>(kCacheLine, (bytes + kCacheLine - 1) & ~(kCacheLine - 1)));
  if (!p) log::fatal("kernel runtime: cannot allocate {} bytes", bytes);
  return p;
}

// PUs of the job in placement order: the first PU of every core, then the second, ...
std::vector<unsigned> placement_order() {
  std::vector<unsigned> order;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return order;
  if (hwloc_topology_load(topo) == 0) {
    // The job's CPUs, not this thread's binding: a PE bound to one CPU still spreads its blocks.
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    cpu_set_t job;
    if (job_cpu_set(&job)) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &job)) hwloc_bitmap_set(allowed, static_cast<unsigned>(c));
      hwloc_bitmap_and(allowed, allowed, hwloc_topology_get_allowed_cpuset(topo));
    }
    if (hwloc_bitmap_iszero(allowed)) hwloc_bitmap_copy(allowed, hwloc_topology_get_allowed_cpuset(topo));
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int level = 0; level < 8; ++level) {
      for (int c = 0; c < std::max(ncores, 1); ++c) {
        hwloc_obj_t core = ncores > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, c) : nullptr;
        hwloc_cpuset_t set = core ? core->cpuset : allowed;
        int seen = 0;
        for (int pu = hwloc_bitmap_first(set); pu >= 0; pu = hwloc_bitmap_next(set, pu)) {
          if (!hwloc_bitmap_isset(allowed, pu)) continue;
          if (seen++ == level) order.push_back(static_cast<unsigned>(pu));
        }
        if (!core) break;
      }
    }
    hwloc_bitmap_free(allowed);
  }
  hwloc_topology_destroy(topo);
  return order;
}

void pin_self(unsigned pu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(pu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) log::debug("kernel worker: cannot pin to CPU {}", pu);
}

[[noreturn]] void fail_exception(const char* kernel, int block, const char* what) {
  log::fatal("kernel '{}' block {}: exception escaped the kernel: {}", kernel, block, what);
}

void run_block(BlockContext& ctx, KernelFn fn, void* arg) {
  tl_block = &ctx;
  try {
    fn(ctx, arg);
  } catch (const std::exception& e) {
    fail_exception(ctx.kernel_name(), ctx.block_idx(), e.what());
  } catch (...) {
    fail_exception(ctx.kernel_name(), ctx.block_idx(), "(not a std::exception)");
  }
  tl_block = nullptr;
}

class Pool {
 public:
  static Pool& get() {
    static Pool* p = new Pool();  // never destroyed: workers may still be parked at exit
    return *p;
  }

  Status launch(const LaunchOptions& opts, KernelFn fn, void* arg) {
    if (tl_block)
      return invalid_arg("launch of kernel '{}' from inside kernel '{}' (block {}): kernels cannot nest",
                         opts.name ? opts.name : "?", tl_block->kernel_name(), tl_block->block_idx());
    if (!fn) return invalid_arg("launch of kernel '{}': null kernel function", opts.name ? opts.name : "?");
    TS_ASSIGN_OR_RETURN(int n, resolve_block_num(opts.block_num, opts.name ? opts.name : "kernel"));
    const char* name = opts.name ? opts.name : "kernel";

    std::lock_guard<std::mutex> lock(mu_);
    // TESSERA_TRACE: the launch on the caller's track, each block on its thread's (kernel names may be
    // built at run time: interned once per launch, for the workers too).
    trace_name_ = trace::g_on ? trace::intern(name) : nullptr;
    trace::Scope traced(trace::Cat::kKernel, "launch", trace_name_, {.k0 = "blocks", .a0 = n});
    grow(n - 1);
    if (opts.workspace_bytes > ws_bytes_) {
      std::free(ws_);
      ws_bytes_ = std::max(opts.workspace_bytes, ws_bytes_ * 2);
      ws_ = alloc_aligned(ws_bytes_);
    }
    grid_.reset(n, n <= ncpu_, name, sync_counts_.get());
    fn_ = fn;
    arg_ = arg;
    name_ = name;
    ws_size_ = opts.workspace_bytes;
    remaining_.store(static_cast<uint32_t>(n - 1), std::memory_order_relaxed);
    block_num_.store(n, std::memory_order_relaxed);
    // More blocks than CPUs: blocks 1..n-1 go to whichever thread of the launch is free first (claims).
    const bool share = n > ncpu_ && n <= kMaxShared;
    const uint32_t next_seq = seq_.load(std::memory_order_relaxed) + 1;
    if (share) launch_ns_.store(fast_now_ns(), std::memory_order_relaxed);  // before the release below
    unclaimed_.store(uint64_t{next_seq} << 32 |
                         (share ? kShared | (((uint64_t{1} << n) - 1) & ~uint64_t{1}) : static_cast<uint64_t>(n)),
                     std::memory_order_release);
    const int my_cpu = sched_getcpu();
    launcher_cpu_.store(my_cpu, std::memory_order_relaxed);
    // The scheduler usually wakes a thread on or near the waker's CPU: until a woken worker runs and says
    // where it is, the others take it to be on this one (worker_on). Only when some worker was asleep: back
    // to back launches find every worker awake.
    const bool some_asleep = idle_sleepers_.load(std::memory_order_relaxed) != 0;
    // Publish the launch: workers acquire seq_ and then read the fields above.
    if (n > 1) sync::store_and_wake(seq_, next_seq, idle_sleepers_);
    if (n > 1 && some_asleep)
      for (int w = 0; w + 1 < n; ++w)
        if (worker_cpu_[w].cpu.load(std::memory_order_relaxed) < 0)
          worker_cpu_[w].cpu.store(my_cpu, std::memory_order_relaxed);

    BlockContext ctx;
    detail::Grid::bind(ctx, 0, n, scratch0_, scratch_bytes_, ws_, ws_size_, name, &grid_);
    {
      trace::Scope block(trace::Cat::kKernel, "block", trace_name_, {.k0 = "block", .a0 = 0});
      run_block(ctx, fn, arg);
    }
    // Blocks no worker has started yet run here, one after another, in this thread's scratch (block 0 is
    // over). An empty launch of 4 blocks on 2 CPUs then costs no process switch at all.
    for (int b; share && (b = claim(next_seq, -1)) > 0;) {
      detail::Grid::bind(ctx, b, n, scratch0_, scratch_bytes_, ws_, ws_size_, name, &grid_);
      trace::Scope block(trace::Cat::kKernel, "block", trace_name_, {.k0 = "block", .a0 = b});
      run_block(ctx, fn, arg);
      remaining_.fetch_sub(1, std::memory_order_acq_rel);
    }

    // Wait for blocks 1..n-1 (no deadline: a kernel may legitimately run long; stuck syncs time out).
    // With more blocks than CPUs, or a worker that last ran on this CPU, yield only to those workers: with
    // nobody of the job on this CPU a yield hands it to whatever else runs there for a whole scheduler slice
    // (docs/journal.md, "Shared CPUs"), so then spin briefly and sleep.
    bool spin = grid_.spin;
    uint64_t wait_from = 0;
    if (remaining_.load(std::memory_order_acquire) != 0) {
      if (share) wait_from = fast_now_ns();
      int me = sched_getcpu();  // block 0 may have run long enough to move
      if (spin) spin = !worker_on(me, n, -1);
      if (!spin) {
        const uint64_t end = now_ns() + sync::spin_ns();
        for (uint32_t i = 0; remaining_.load(std::memory_order_acquire) != 0; ++i) {
          if ((i & 7) != 7) {
            cpu_relax();
          } else if (worker_on(me, n, -1)) {
            sync::sched_yield_wrapper();
            me = sched_getcpu();
          } else if (now_ns() >= end) {
            break;
          }
        }
      }
    }
    for (uint32_t r; (r = remaining_.load(std::memory_order_acquire)) != 0;)
      sync::wait_while_equal(remaining_, r, done_sleepers_, {.spin = spin, .deadline = false, .yield = false},
                       [] { return std::string(); });
    // This thread ran out of blocks and then waited long for those the workers had claimed: a worker was
    // preempted holding one (or the blocks are long). Workers hold back their claims for a while (worker_main).
    if (wait_from) {
      const uint64_t now = fast_now_ns();
      if (now - wait_from > kSlowClaimNs) hold_claims_until_.store(now + kHoldClaimsNs, std::memory_order_relaxed);
    }
    return Status::ok();
  }

  bool claims_held_back() const { return fast_now_ns() < hold_claims_until_.load(std::memory_order_relaxed); }
  void hold_claims_for_test(uint64_t window_ns) {
    claim_window_ns_.store(window_ns ? window_ns : kSharedClaimNs, std::memory_order_relaxed);
    hold_claims_until_.store(window_ns ? UINT64_MAX : 0, std::memory_order_relaxed);
  }

 private:
  Pool() {
    scratch_bytes_ = scratch_bytes();
    ncpu_ = usable_cpus();  // read once: no syscall per launch
    scratch0_ = alloc_aligned(scratch_bytes_);
    max_ = max_block_num();
    sync_counts_ = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(max_));
    worker_cpu_ = std::make_unique<WorkerCpu[]>(static_cast<size_t>(max_));
    order_ = placement_order();
    config::one_of(kPin, {"auto", "on", "off"});
    const std::string& mode = kPin.get();
    // PEs of a job usually share the host: PE p's workers start after PE p-1's, so they do not collide.
    const sync::WaitContext& wc = sync::wait_context();
    const int npes = std::max(1, wc.n_pes.load()), per_pe = std::max(1, resolve_block_num(kAutoBlocks, "pin").is_ok()
                                                                    ? resolve_block_num(kAutoBlocks, "pin").value() : 1);
    pin_base_ = wc.my_pe * per_pe;
    if (mode == "off" || (mode == "auto" && static_cast<size_t>(npes * per_pe) > order_.size())) order_.clear();
    pin_always_ = mode == "on";
  }

  // The launch word (unclaimed_) says what a worker is to do in launch `seq`: the launch's sequence number
  // (32 bits) over, for a launch of more blocks than CPUs (up to kMaxShared), kShared and one bit per block
  // not yet started, else the launch's block count. Sharing by claims: a thread that finishes a block
  // claims another, so blocks need not wait for a thread of their own to be scheduled; every block still
  // gets a thread while others wait in sync() (n threads, each in one block at a time, the workers all
  // woken). Blocks make no assumption about the thread they run on (kernel.hpp). The word is written before
  // the launch is published and read by a worker only with the sequence number it woke for: a worker that
  // looks while the next launch is being set up sees another number and leaves it alone (it would otherwise
  // run a block of that launch unclaimed).
  static constexpr int kMaxShared = 31;
  static constexpr uint64_t kShared = uint64_t{1} << 31;
  static constexpr uint64_t kBlockBits = kShared - 1;
  static constexpr uint64_t kSharedClaimNs = 2000;  // see worker_main (claim_window_ns_)
  static constexpr uint64_t kSlowClaimNs = 200'000;  // a wait for claimed blocks this long holds claims back
  static constexpr uint64_t kHoldClaimsNs = 1'000'000'000;  // for this long
  static bool of_launch(uint64_t v, uint32_t seq) { return v >> 32 == seq; }

  // Claims block `want` (>= 1) of launch `seq`, or with want -1 the highest one not yet started; returns
  // the block, or -1 when there is none (or the launch is over).
  int claim(uint32_t seq, int want) {
    uint64_t v = unclaimed_.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t bits = v & kBlockBits;
      if (!of_launch(v, seq) || !(v & kShared) || bits == 0) return -1;
      const int b = want > 0 ? want : 63 - __builtin_clzll(bits);
      if (want > 0 && !(bits & (uint64_t{1} << b))) return -1;
      if (unclaimed_.compare_exchange_weak(v, v & ~(uint64_t{1} << b), std::memory_order_acq_rel,
                                           std::memory_order_acquire))
        return b;
    }
  }

  // A worker of a launch of n blocks other than `self` last ran on `cpu` and is not asleep.
  bool worker_on(int cpu, int n, int self) const {
    for (int w = 0; w + 1 < n; ++w)
      if (w != self && worker_cpu_[w].cpu.load(std::memory_order_relaxed) == cpu) return true;
    return false;
  }

  // Ensures `count` workers exist (worker w runs block w + 1).
  void grow(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      int w = static_cast<int>(workers_.size());
      // Workers follow the PE: pinned only while the PE is bound to one CPU. tessera-run starts a job unbound
      // when processes outside it are running (and unpins a running job's workers when they appear), and a
      // block pinned to the CPU such a process runs on would wait out its scheduler slice: 4 blocks on 2 CPUs
      // beside one busy process took milliseconds per launch pinned, microseconds unpinned.
      const bool follow_pe = !pin_always_ && (sync::cpus_shared() || bound_cpu() < 0);
      int pu = order_.empty() || follow_pe
                   ? -1 : static_cast<int>(order_[static_cast<size_t>(pin_base_ + w + 1) % order_.size()]);
      // The worker starts from the current sequence number, so it cannot miss the launch that created it.
      const uint32_t seq = seq_.load(std::memory_order_relaxed);
      workers_.emplace_back([this, w, pu, seq] { worker_main(w, pu, seq); });
      workers_.back().detach();
    }
  }

  void worker_main(int w, int pu, uint32_t seen) {
    if (pu >= 0) pin_self(static_cast<unsigned>(pu));
    else unbind_thread_to_job_cpus();  // not the caller's CPU only, when the PE is bound to one
    void* scratch = alloc_aligned(scratch_bytes_);
    std::memset(scratch, 0, scratch_bytes_);  // first touch on this worker's CPU
    const int my_block = w + 1;
    if (trace::g_on) trace::name_thread(fmt::format("kernel block {}", my_block));
    const uint64_t idle_spin = static_cast<uint64_t>(std::max<int64_t>(0, kIdleSpinNs.get()));
    bool yield_to_job = false;  // the last launch this worker ran had more blocks than CPUs
    for (;;) {
      // Idle: spin briefly (back-to-back launches), then park without deadline. After a launch with more
      // blocks than CPUs, a worker spinning on a CPU that a block of the same launch still needs would hold
      // that block, and so the launch, back for the whole spin: it yields to such blocks (below). While
      // processes outside the job use its CPUs, a spinning idle worker holds a CPU the PE may be waiting
      // for behind them: spin a tenth as long.
      uint32_t s = seq_.load(std::memory_order_acquire);
      if (s == seen) {
        const uint64_t end = now_ns() + (sync::cpus_shared() ? idle_spin / 10 : idle_spin);
        for (uint32_t i = 0; (s = seq_.load(std::memory_order_acquire)) == seen; ++i) {
          // Give the CPU away only to a thread of the job that last ran here: after a launch of more blocks
          // than CPUs a block of it, else the launching thread (when processes outside the job took the
          // other CPUs, the scheduler may have put both here). Nobody of the job here: keep spinning, as a
          // yield would hand the CPU to whatever else runs.
          bool yield = false;
          if ((i & 7) == 7 && (yield_to_job || (i & 63) == 63)) {
            const int cpu = sched_getcpu();
            worker_cpu_[w].cpu.store(cpu, std::memory_order_relaxed);
            yield = cpu == launcher_cpu_.load(std::memory_order_relaxed) ||
                    (yield_to_job && worker_on(cpu, block_num_.load(std::memory_order_relaxed), w));
          }
          if (yield) sync::sched_yield_wrapper();
          else cpu_relax();
          if ((i & 7) == 7 && now_ns() >= end) break;
        }
        if (s == seen) {
          worker_cpu_[w].cpu.store(-1, std::memory_order_relaxed);  // asleep: nobody yields to it
          idle_sleepers_.fetch_add(1, std::memory_order_seq_cst);
          while ((s = seq_.load(std::memory_order_seq_cst)) == seen) sync::futex_wait(&seq_, seen, 1'000'000'000);
          idle_sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
      }
      seen = s;
      // A launch that shares its blocks out: this worker's own block if nobody has started it, then any
      // other not yet started. A successful claim pins the launch (it cannot end before the block does), so
      // its fields are read after it.
      const uint64_t v = unclaimed_.load(std::memory_order_acquire);
      if (!of_launch(v, s)) continue;  // over already, the next one being set up
      if (v & kShared) {
        // A launch that shares its blocks out has more threads than CPUs, so a worker that claims a block
        // may be preempted holding it, and the launch then waits out a scheduler slice (milliseconds beside
        // busy outside processes). Once that has happened (launch()), a worker leaves the launching thread
        // kSharedClaimNs to run the blocks itself and claims only what is left then: short blocks never
        // leave the launching thread, long ones start at most that much later. Beside busy processes it cut
        // the slow batches of empty launches; always holding back would slow idle launches, so it waits for a
        // slow claim (docs/journal.md, "Shared CPUs"; docs/shared_cpus.md).
        if (fast_now_ns() < hold_claims_until_.load(std::memory_order_relaxed))
          for (const uint64_t t0 = launch_ns_.load(std::memory_order_relaxed),
                              window = claim_window_ns_.load(std::memory_order_relaxed);
               fast_now_ns() - t0 < window;) {
            if ((unclaimed_.load(std::memory_order_acquire) & kBlockBits) == 0) break;
            cpu_relax();
          }
        for (int b = claim(s, my_block); b > 0 || (b = claim(s, -1)) > 0; b = -1)
          run_worker_block(w, b, scratch, &yield_to_job);
        continue;
      }
      // Not shared: my own block, if the launch has it (the launch cannot end without it).
      if (my_block < static_cast<int>(v & kBlockBits)) run_worker_block(w, my_block, scratch, &yield_to_job);
    }
  }

  // Worker w runs block b of the launch in flight, then counts it done.
  void run_worker_block(int w, int b, void* scratch, bool* yield_to_job) {
    worker_cpu_[w].cpu.store(sched_getcpu(), std::memory_order_relaxed);
    BlockContext ctx;
    detail::Grid::bind(ctx, b, block_num_.load(std::memory_order_relaxed), scratch, scratch_bytes_, ws_, ws_size_,
                       name_, &grid_);
    {
      trace::Scope block(trace::Cat::kKernel, "block", trace_name_, {.k0 = "block", .a0 = b});
      run_block(ctx, fn_, arg_);
    }
    *yield_to_job = !grid_.spin;  // read while the launch is still in flight: no launch can reset it yet
    if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        done_sleepers_.load(std::memory_order_seq_cst) != 0)
      sync::futex_wake(&remaining_);
  }

  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<unsigned> order_;  // PUs to pin workers to; empty: no pinning
  int pin_base_ = 0;             // this PE's first slot in order_
  bool pin_always_ = false;      // TESSERA_KERNEL_PIN=on: pinned whatever the PE's own placement
  int max_ = 256;
  int ncpu_ = 1;
  size_t scratch_bytes_ = 0;
  void* scratch0_ = nullptr;
  void* ws_ = nullptr;
  size_t ws_bytes_ = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> sync_counts_;
  // The CPU each worker last ran on (-1: not yet), a line each: workers write theirs at every block start.
  struct alignas(kCacheLine) WorkerCpu {
    std::atomic<int> cpu{-1};
  };
  std::unique_ptr<WorkerCpu[]> worker_cpu_;

  // The launch in flight (written under mu_ before seq_ is bumped).
  KernelFn fn_ = nullptr;
  void* arg_ = nullptr;
  const char* name_ = "";
  const char* trace_name_ = nullptr;  // name_ interned for TESSERA_TRACE (null when tracing is off)
  size_t ws_size_ = 0;
  detail::Grid grid_;
  alignas(kCacheLine) std::atomic<int> block_num_{0};
  std::atomic<int> launcher_cpu_{-1};  // the CPU the last launch came from (idle workers leave it alone)
  alignas(kCacheLine) std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> idle_sleepers_{0};
  alignas(kCacheLine) std::atomic<uint64_t> unclaimed_{0};  // the launch word (see kShared)
  std::atomic<uint64_t> launch_ns_{0};  // when the last launch that shares its blocks out was published
  std::atomic<uint64_t> hold_claims_until_{0};  // workers hold back their claims until then (worker_main)
  std::atomic<uint64_t> claim_window_ns_{kSharedClaimNs};  // how long they leave the launching thread then
  alignas(kCacheLine) std::atomic<uint32_t> remaining_{0};
  std::atomic<uint32_t> done_sleepers_{0};
};

}  // namespace

int max_block_num() {
  static const int v = static_cast<int>(std::clamp<int64_t>(kMaxBlocks.get(), 1, 4096));
  return v;
}

size_t scratch_bytes() {
  static const size_t v = [] {
    uint64_t s = kScratch.get();
    if (s == 0) s = std::max<size_t>(l2_cache_bytes() / 2, 64 << 10);
    return static_cast<size_t>(std::max<uint64_t>(s, 4096));
  }();
  return v;
}

Result<int> resolve_block_num(int requested, const char* what) {
  int n = requested;
  if (requested == kAutoBlocks) {
    int64_t env = kBlocks.get();
    n = env > 0 ? static_cast<int>(std::min<int64_t>(env, max_block_num())) : usable_cpus();
  }
  if (n < 1 || n > max_block_num())
    return invalid_arg("{}: block_num={} must be in 1..{} (TESSERA_KERNEL_MAX_BLOCKS)", what, requested,
                       max_block_num());
  return n;
}

Combine resolve_combine(Combine c, int block_num) {
  if (c == Combine::kAuto) {
    static const Combine env = [] {
      constexpr Combine kByIndex[] = {Combine::kAuto, Combine::kFlat, Combine::kTree};
      return kByIndex[config::one_of(kCombine, {"auto", "flat", "tree"})];
    }();
    c = env;
  }
  if (c == Combine::kAuto) c = block_num > 8 ? Combine::kTree : Combine::kFlat;
  return c;
}

Status launch(const LaunchOptions& opts, KernelFn fn, void* arg) { return Pool::get().launch(opts, fn, arg); }
bool claims_held_back() { return Pool::get().claims_held_back(); }
void hold_claims_for_test(uint64_t window_ns) { Pool::get().hold_claims_for_test(window_ns); }

}  // namespace tessera::kernel::rt

namespace tessera::kernel {
BlockContext* current_block() noexcept { return rt::tl_block; }
}  // namespace tessera::kernel
