#include "pgas/runtime.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/config.h"
#include "base/rank_table.h"
#include "base/trace.h"
#include "bootstrap/bootstrap.h"
#include "pgas/barrier.h"
#include "pgas/copy.h"
#include "pgas/copy_engine.h"
#include "pgas/data_segment.h"
#include "pgas/heap.h"
#include "pgas/layout.h"
#include "pgas/order.h"
#include "pgas/peers.h"
#include "pgas/resilient.h"
#include "pgas/team.h"
#include "tessera/version.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

namespace tessera::pgas {
Runtime detail::g_rt;
using detail::g_rt;

namespace {
const config::Var<uint64_t> kSymSize{
    "TESSERA_SYMMETRIC_SIZE", uint64_t{2} << 30,
    "Bytes of symmetric heap per PE (K/M/G suffixes). Backed lazily: only touched pages cost memory",
    {"SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"}};
const config::Var<int64_t> kLogLevel{"TESSERA_LOG", 1, "Log level: 0 errors, 1 warnings, 2 info, 3 debug"};
// OpenSHMEM: any value (even empty) turns these on; SMA_ names are the older spellings.
const config::Var<std::string> kShmemInfo{"SHMEM_INFO", "",
                                          "OpenSHMEM: when set (any value), PE 0 prints the library's environment "
                                          "variables at start",
                                          {"SMA_INFO"}};
const config::Var<std::string> kShmemVersion{"SHMEM_VERSION", "",
                                             "OpenSHMEM: when set (any value), PE 0 prints the library and "
                                             "specification versions at start",
                                             {"SMA_VERSION"}};
const config::Var<uint64_t> kStreamMin{
    "TESSERA_COPY_STREAMING_MIN", uint64_t{0},
    "Transfers of at least this many bytes use streaming (non-temporal) stores; 0: a quarter of the last-level "
    "cache, 1 to 16 MiB (base/memcopy.h)"};

std::mutex g_init_mu;
const bootstrap::Backend* g_boot = nullptr;
JobControl* g_private_control = nullptr;

constexpr size_t kMaxHeap = size_t{1} << 46;  // 64 TiB: beyond any mapping we could make

// Raises this host's abort word on behalf of `pe`; true for the first raiser.
bool raise_abort(int pe, int code, JobControl::ExitKind kind) {
  Runtime& r = g_rt;
  if (!r.control) return false;
  uint32_t expected = 0;
  const bool first = r.control->abort.compare_exchange_strong(expected, static_cast<uint32_t>(pe + 1));
  if (first) {
    r.control->exit_kind.store(kind);
    r.control->exit_code.store(code);
  }
  sync::notify_all();
  return first;
}

// A fatal error of this PE: this host's PEs see the abort word; other hosts hear it from the backend.
void abort_hook(int code) {
  if (raise_abort(g_rt.my_pe, code, JobControl::kExitFatal) && g_boot && g_boot->abort) g_boot->abort(code);
}

// The job ended on another host (bootstrap.h): end this host's waits as if `pe` had failed here.
void remote_abort(int pe, int code) { (void)raise_abort(pe < 0 ? g_rt.my_pe : pe, code, JobControl::kExitFatal); }

// The control segment this process mapped, kept for an init after the last finalize (OpenSHMEM 1.6): the
// host's leader removed its name once every PE had mapped it, and the mapping outlives finalize anyway.
struct KeptControl {
  void* map = nullptr;
  std::string name;
  size_t bytes = 0;
};
KeptControl g_kept_control;

// Job of one PE: private memory, no control segment from a launcher.
Status init_single(Runtime& r) {
  TS_ASSIGN_OR_RETURN(void* p, transport::shm::map_private(r.seg_size, kReservedBytes, kHeapAlignMax));
  r.bases.assign(1, nullptr);
  r.my_base = static_cast<char*>(p);
  r.machine_pes = 1;
  size_t bytes = JobControl::bytes_for(1);
  if (!g_private_control)  // kept from an earlier init (finalize)
    g_private_control = static_cast<JobControl*>(std::aligned_alloc(kCacheLine, (bytes + 63) & ~size_t{63}));
  std::memset(static_cast<void*>(g_private_control), 0, bytes);
  g_private_control->magic = JobControl::kMagic;
  g_private_control->n_pes = 1;
  r.control = g_private_control;
  // Globals are symmetric in place: no peer maps them, so nothing needs moving.
  if (symmetric_data_enabled()) {
    DataSegment data = find_data_segment();
    if (data.size) {
      r.data_base = data.base;
      r.data_size = data.size;
      r.data_bases.assign(1, nullptr);
    }
  }
  const std::string host = host_identity(r.my_pe);
  return connect_peers(r, &host, nullptr);
}

struct SegmentRecord {
  uint64_t seg_size;
  uint64_t data_size;
  char host[128];    // host identity (peers.h), which decides each peer's transport
  char machine[64];  // machine identity (peers.h): which PEs share this PE's CPUs
};

// The lowest PE of `pe`'s host.
int host_leader(const std::vector<std::string>& hosts, int pe) {
  for (int i = 0;; ++i)
    if (hosts[static_cast<size_t>(i)] == hosts[static_cast<size_t>(pe)]) return i;
}

Status init_job(Runtime& r, const bootstrap::JobInfo& info) {
  namespace shm = transport::shm;
  // My heap segment, and my data segment when globals are symmetric.
  // Under tessera-run their descriptors stay open until the mode is known: a resilient job publishes them
  // for a replacement (resilient.h).
  int heap_fd = -1, data_fd = -1;
  const bool keep = !info.control_name.empty();
  std::string my_name = shm::segment_name(r.job_id, std::to_string(r.my_pe));
  TS_ASSIGN_OR_RETURN(void* mine, shm::create(my_name, r.seg_size, kReservedBytes, kHeapAlignMax,
                                              keep ? &heap_fd : nullptr));
  DataSegment data;
  if (symmetric_data_enabled()) {
    data = find_data_segment();
    if (data.size)
      TS_RETURN_IF_ERROR(share_data_segment(data, shm::segment_name(r.job_id, "data-" + std::to_string(r.my_pe)),
                                            keep ? &data_fd : nullptr));
  }

  if (const RankTable* t = rank_table())
    for (const RankTable::Host& h : t->hosts)
      for (int pe : h.pes)
        if (pe >= r.n_pes)
          return invalid_arg("TESSERA_RANK_TABLE={}: host {} lists PE {}, but the job has {} PEs (0..{})", t->path,
                             h.name, pe, r.n_pes, r.n_pes - 1);
  SegmentRecord rec{};
  rec.seg_size = r.seg_size;
  rec.data_size = data.size;
  const std::string host = host_identity(r.my_pe);
  std::snprintf(rec.host, sizeof rec.host, "%s", host.c_str());
  std::snprintf(rec.machine, sizeof rec.machine, "%s", machine_identity().c_str());
  std::vector<SegmentRecord> all(static_cast<size_t>(r.n_pes));
  TS_RETURN_IF_ERROR(g_boot->allgather(&rec, all.data(), sizeof rec));
  std::vector<std::string> hosts(static_cast<size_t>(r.n_pes));
  for (int pe = 0; pe < r.n_pes; ++pe) {
    if (all[pe].seg_size != rec.seg_size)
      return invalid_arg("symmetric heap size differs: PE {} has {} bytes, PE {} has {} (set SHMEM_SYMMETRIC_SIZE "
                         "alike on every PE)", pe, all[pe].seg_size, r.my_pe, rec.seg_size);
    hosts[static_cast<size_t>(pe)].assign(all[pe].host, strnlen(all[pe].host, sizeof rec.host));
  }
  r.machine_pes = 0;
  for (int pe = 0; pe < r.n_pes; ++pe)
    r.machine_pes += strncmp(all[pe].machine, rec.machine, sizeof rec.machine) == 0;

  // Control segment: made by the launcher of this host; without one (PMIx, the TCP rendezvous) by the lowest
  // PE of each host, one per host: its words (abort, wait doorbells) are loads and stores of that host's PEs.
  const size_t ctl_bytes = JobControl::bytes_for(r.n_pes);
  const int leader = host_leader(hosts, r.my_pe);
  std::string ctl_name = info.control_name;
  void* ctl = nullptr;
  if (ctl_name.empty()) {
    ctl_name = shm::segment_name(r.job_id, fmt::format("control-{}", leader));
    if (r.my_pe == leader) {
      TS_ASSIGN_OR_RETURN(ctl, shm::create(ctl_name, ctl_bytes));
      auto* c = static_cast<JobControl*>(ctl);  // zero-filled: every other word starts at 0
      c->n_pes = static_cast<uint32_t>(r.n_pes);
      c->magic = JobControl::kMagic;
    }
    TS_RETURN_IF_ERROR(g_boot->barrier());
  }
  // A launcher's segment lives as long as the job, so an earlier init's mapping of it (finalize keeps it) is
  // the same object, whose name is gone. One the host's leader made is new at every init, even under the
  // same name (a job id given by TESSERA_JOB_ID): the earlier mapping stays (threads that outlive finalize
  // may hold pointers into it) but is not reused.
  if (!ctl && !info.control_name.empty() && g_kept_control.map && g_kept_control.name == ctl_name &&
      g_kept_control.bytes == ctl_bytes) {
    ctl = g_kept_control.map;
  } else if (!ctl) {
    TS_ASSIGN_OR_RETURN(ctl, shm::open_map(ctl_name, ctl_bytes));
    g_kept_control = {ctl, ctl_name, ctl_bytes};
  }
  r.control = static_cast<JobControl*>(ctl);
  if (r.control->magic != JobControl::kMagic || static_cast<int>(r.control->n_pes) != r.n_pes)
    return make_status(Code::kInternal, "control segment {} does not describe a job of {} PEs", ctl_name, r.n_pes);
  if (keep && r.control->resilient.load(std::memory_order_relaxed)) {
    publish_segments(r, heap_fd, data_fd);
  } else {
    if (heap_fd >= 0) ::close(heap_fd);
    if (data_fd >= 0) ::close(data_fd);
  }

  r.bases.assign(static_cast<size_t>(r.n_pes), nullptr);
  r.my_base = static_cast<char*>(mine);
  bool share_data = data.size != 0;
  for (int pe = 0; pe < r.n_pes; ++pe) share_data = share_data && all[pe].data_size == data.size;
  if (share_data) {
    r.data_base = data.base;
    r.data_size = data.size;
    r.data_bases.assign(static_cast<size_t>(r.n_pes), nullptr);
  }
  // Every peer's transport, chosen once; it maps (or registers) the peer's segments.
  TS_RETURN_IF_ERROR(connect_peers(r, hosts.data(), g_boot));
  // Everyone has mapped everything: remove the names so nothing can outlive the job.
  TS_RETURN_IF_ERROR(g_boot->barrier());
  (void)shm::unlink(my_name);
  if (data.size) (void)shm::unlink(shm::segment_name(r.job_id, "data-" + std::to_string(r.my_pe)));
  if (r.my_pe == leader) (void)shm::unlink(ctl_name);
  return Status::ok();
}

void print_info(const Runtime& r) {
  if (r.my_pe != 0) return;
  if (kShmemVersion.is_set())
    fmt::print(stdout, "Tessera {}: OpenSHMEM {}.{}\n", TESSERA_VERSION_STRING, 1, 5);
  if (kShmemInfo.is_set()) {
    fmt::print(stdout, "Tessera {} (OpenSHMEM 1.5), {} PE{}; environment:\n", TESSERA_VERSION_STRING, r.n_pes,
               r.n_pes == 1 ? "" : "s");
    for (const config::VarInfo* v : config::all()) {
      std::string names = v->name;
      for (const auto& a : v->aliases) names += ", " + a;
      fmt::print(stdout, "  {:<28} = {:<12} {}\n", names, v->current(), v->help);
    }
  }
  std::fflush(stdout);
}
}  // namespace



namespace {
// TESSERA_LOG=2: what the job got, once, from PE 0 (as NCCL_DEBUG=INFO does): version, PEs and host,
// bootstrap, each PE's CPU, the heap and the fast paths. Communicators add their own lines (coll/comm.cc).
void log_job(const Runtime& r) {
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  log::info("Tessera {} (OpenSHMEM 1.5): {} PE{} on {} ({}{}), bootstrap {}", TESSERA_VERSION_STRING, r.n_pes,
            r.n_pes == 1 ? "" : "s", r.n_hosts == 1 ? std::string("1 host") : fmt::format("{} hosts", r.n_hosts), host,
            r.n_hosts == 1 ? "" : " for PE 0", g_boot ? g_boot->name : "none");
  log::info("transports (PE 0's view): {}", describe_peers(r));
  std::string cpus;
  int unbound = 0;
  for (int pe = 0; pe < r.n_pes; ++pe) {
    const int c = sync::pe_cpu(pe);
    if (c < 0) ++unbound;
    else cpus += fmt::format("{}PE {} on CPU {}", cpus.empty() ? "" : ", ", pe, c);
  }
  log::info("binding: {}{}{} ({} usable CPUs for the {} PE{} of the job on this machine; tessera-run --bind-to, "
            "TESSERA_BIND)", cpus, cpus.empty() || !unbound ? "" : "; ",
            unbound ? fmt::format("{} PE{} not bound to one CPU", unbound, unbound == 1 ? "" : "s") : "",
            usable_cpus(), r.machine_pes, r.machine_pes == 1 ? "" : "s");
  log::info("symmetric heap {} per PE (SHMEM_SYMMETRIC_SIZE), user heap aligned to {}; globals {}",
            config::format_size(r.heap_size), config::format_size(kHeapAlignMax),
            r.data_size ? fmt::format("symmetric ({} shared)", config::format_size(r.data_size)) : "not symmetric");
  log::info("fast paths: waiters' fences {}, copy engine for large non-blocking puts {}",
            sync::g_asymmetric_fence ? "by membarrier (writers need no fence)" : "full (no membarrier)",
            engine::running() ? "running" : "off");
}
}  // namespace

Status init(int thread_level) {
  std::lock_guard lk(g_init_mu);
  Runtime& r = g_rt;
  if (r.init_count > 0) {
    ++r.init_count;  // nested pairs (OpenSHMEM 1.6): only the last finalize ends the library
    return Status::ok();
  }
  // Initializing again after the last finalize (OpenSHMEM 1.6 allows it) joins the job's start-up a second
  // time, through any bootstrap: tessera-run takes a rank again once its earlier connection has closed
  // (tools/run/server.cc), the TCP rendezvous's rank 0 serves the second join on the socket it kept
  // listening (bootstrap/tcp.cc), the PMIx client stays connected across finalize (bootstrap/pmix.cc), and
  // a job of one PE has nothing to join.
  ++r.init_count;
  log::set_level(static_cast<log::Level>(std::clamp<int64_t>(kLogLevel.get(), 0, 3)));
  TS_RETURN_IF_ERROR(config::check_unknown());
  bootstrap::set_abort_hook(remote_abort);
  g_boot = &bootstrap::select();
  bootstrap::JobInfo info;
  TS_RETURN_IF_ERROR(g_boot->init(&info));
  r.my_pe = info.rank;
  r.n_pes = info.size;
  r.job_id = info.job_id;
  r.thread_level = thread_level;
  log::set_pe(r.my_pe);
  if (r.my_pe == 0)  // one PE: the same line from every PE would repeat one typo N times
    for (const std::string& line : config::unknown_shmem_variables()) log::warn("{}", line);
  trace::init(r.my_pe);  // before the PE starts threads of its own (copy engine)

  uint64_t want = kSymSize.get();
  if (want > kMaxHeap)
    return invalid_arg("SHMEM_SYMMETRIC_SIZE={}: larger than the limit of {}", config::format_size(want),
                       config::format_size(kMaxHeap));
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  r.heap_size = (static_cast<size_t>(want) + page - 1) & ~(page - 1);
  r.seg_size = kReservedBytes + r.heap_size;
  uint64_t smin = kStreamMin.get();
  // kAuto copies stream from base's threshold (base/memcopy.h: where streaming stores start to win), or
  // from the variable's value. Set before any PE thread copies: copy() reads it without initialising it.
  if (smin) set_copy_stream_min(smin);
  else (void)copy_stream_min_init();

  if (incarnation() > 0) {
    TS_RETURN_IF_ERROR(init_replacement(r, info));
  } else if (info.size == 1 && info.control_name.empty()) {
    TS_RETURN_IF_ERROR(init_single(r));
  } else {
    TS_RETURN_IF_ERROR(init_job(r, info));
  }
  // Resilient mode: a connection to a PE that fails is dropped, not fatal (the calls on its communicators fail).
  transport::set_peer_loss_tolerated(r.control->resilient.load(std::memory_order_relaxed) != 0);
  Reserved* res = reserved_of(r.my_base);
  res->magic = Reserved::kMagic;
  res->heap_size = r.heap_size;

  sync::WaitContext wc;
  wc.abort_word = &r.control->abort;
  wc.exit_code = &r.control->exit_code;
  wc.cpus_shared = &r.control->cpus_shared;
  wc.wait_hist = r.control->wait_hist(r.my_pe);
  wc.pe_words = r.control->pe_words();
  wc.my_pe = r.my_pe;
  wc.n_pes = r.n_pes;
  wc.machine_pes = r.machine_pes;
  if (g_routed_count > 0) wc.progress = routed_progress;
  if (r.control) wc.failure_note = failure_note;
  sync::set_wait_context(wc);
  sync::set_where_context({.all = r.control->where(0), .mine = r.control->where(r.my_pe),
                           .deadline = &r.control->deadline_pe, .my_pe = r.my_pe});
  // The control segment starts zero-filled, where the words' initializers never ran: nobody of this PE
  // sleeps yet, so its watched range starts empty here.
  const int cpu = bound_cpu();
  wc.pe_words[r.my_pe].cpu_plus1.store(cpu >= 0 ? cpu + 1 : -1, std::memory_order_relaxed);
  wc.pe_words[r.my_pe].watch_lo.store(~uint64_t{0}, std::memory_order_relaxed);
  log::set_abort_hook(abort_hook);
  r.control->state(r.my_pe)->store(joining() ? JobControl::kJoining : JobControl::kInitialized);

  heap_init();
  teams_init();
  engine::start(r.machine_pes);
  r.initialized.store(true);
  r.ever_initialized.store(true);
  print_info(r);
  if (!joining()) barrier_all_internal();  // a replacement meets the others in a grow (resilient.h)
  if (r.my_pe == 0 && log::level() >= log::Level::kInfo) log_job(r);  // every PE has published its CPU
  return Status::ok();
}

void finalize() {
  std::lock_guard lk(g_init_mu);
  Runtime& r = g_rt;
  if (r.init_count == 0 || --r.init_count > 0) return;
  if (r.control->resilient.load(std::memory_order_relaxed)) leave_resilient(r);
  else barrier_all_internal();
  const sync::WaitStats& ws = sync::g_wait_stats;
  log::debug("waits past the first check: {} ended spinning, {} yielded, {} slept ({} futex waits; woken by "
             "the doorbell {}, at a slice's end {})",
             ws.spun.load(), ws.yielded.load(), ws.slept.load(), ws.futex_waits.load(), ws.woken_by_bell.load(),
             ws.woken_by_slice.load());
  engine::stop();
  trace::flush();
  r.control->state(r.my_pe)->store(JobControl::kFinalized);
  teams_fini();
  heap_fini();
  r.initialized.store(false);
  disconnect_peers(r);
  close_segments();
  transport::shm::unmap(r.my_base, r.seg_size);
  r.bases.clear();
  r.data_bases.clear();
  r.my_base = nullptr;
  // The data segment stays mapped: it holds the program's own globals.
  r.data_base = nullptr;
  r.data_size = 0;
  sync::set_wait_context(sync::WaitContext{});
  sync::set_where_context(sync::WhereContext{});
  log::set_abort_hook(nullptr);
  // The control words stay in place: threads that outlive finalize (kernel pool workers, comm streams) may
  // have loaded a pointer into them just before the context above was cleared. A job of one PE reuses its
  // private words at the next init; a launcher's segment (a cache line or two per PE) stays mapped until exit.
  r.control = nullptr;
  r.n_pes = 0;
  if (g_boot) g_boot->finalize();
}

void global_exit(int code) {
  Runtime& r = g_rt;
  std::fflush(nullptr);
  if (raise_abort(r.my_pe, code, JobControl::kExitGlobal) && g_boot && g_boot->abort) g_boot->abort(code);
  std::_Exit(code);
}

void fail_not_initialized(const char* routine) {
  log::fatal("{}: called before shmem_init (or after shmem_finalize)", routine);
}
void fail_bad_pe(const char* routine, int pe, int n_pes) {
  if (!g_rt.initialized.load()) fail_not_initialized(routine);
  log::fatal("{}: PE {} is out of range: the job has {} PEs (0..{})", routine, pe, n_pes, n_pes - 1);
}
void fail_bad_addr(const char* routine, const void* addr, size_t bytes) {
  Runtime& r = g_rt;
  if (!r.initialized.load()) fail_not_initialized(routine);
  std::string data = r.data_size ? fmt::format(" or the data segment [{}, {})", static_cast<void*>(r.data_base),
                                               static_cast<void*>(r.data_base + r.data_size))
                                 : std::string();
  log::fatal("{}: address {} ({} bytes) is outside the symmetric heap [{}, {}){}", routine, addr, bytes,
             static_cast<void*>(r.my_base + kReservedBytes), static_cast<void*>(r.my_base + r.seg_size), data);
}
void fail_null(const char* routine, const char* what, size_t bytes) {
  log::fatal("{}: {} is a null pointer with a size of {} bytes", routine, what, bytes);
}
void fail_bad_signal_op(const char* routine, int sig_op) {
  log::fatal("{}: signal operation {} is neither SHMEM_SIGNAL_SET ({}) nor SHMEM_SIGNAL_ADD ({})", routine, sig_op,
             int(transport::kSignalSet), int(transport::kSignalAdd));
}

char* remote_slow(const char* routine, const void* sym, size_t bytes, int pe) {
  Runtime& r = g_rt;
  size_t off = static_cast<size_t>(static_cast<const char*>(sym) - r.data_base);
  if (r.data_size && off < r.data_size && bytes <= r.data_size - off) {
    char* base = r.data_bases[static_cast<size_t>(pe)];
    return base ? base + off : nullptr;
  }
  // A zero-byte transfer touches nothing: any address will do (callers never dereference it). Null for a
  // peer without a mapping, whose routed path does nothing for zero bytes.
  if (bytes == 0 && r.initialized.load(std::memory_order_relaxed)) return r.bases[static_cast<size_t>(pe)];
  fail_bad_addr(routine, sym, bytes);
}

bool is_symmetric(const void* p, size_t bytes) {
  Runtime& r = g_rt;
  size_t off = static_cast<size_t>(static_cast<const char*>(p) - r.my_base);
  if (off < r.seg_size && bytes <= r.seg_size - off) return true;
  size_t doff = static_cast<size_t>(static_cast<const char*>(p) - r.data_base);
  return r.data_size && doff < r.data_size && bytes <= r.data_size - doff;
}

void fail_no_mapping(const char* routine, int pe) {
  log::fatal("{}: PE {} is reached through transport {}, which has no load/store mapping, and this routine "
             "needs one", routine, pe, g_rt.transports[static_cast<size_t>(pe)]->name);
}
void fail_misaligned(const char* routine, const void* addr, size_t align) {
  log::fatal("{}: address {} is not aligned to {} bytes, as an atomic operation requires", routine, addr, align);
}

const char* cmp_name(int cmp) {
  static const char* names[] = {"==", "!=", ">", ">=", "<", "<="};
  return static_cast<unsigned>(cmp) < 6 ? names[cmp] : "?";
}
void fail_bad_cmp(const char* routine, int cmp) {
  log::fatal("{}: comparison {} is not one of SHMEM_CMP_EQ..SHMEM_CMP_LE (0..5)", routine, cmp);
}

}  // namespace tessera::pgas
