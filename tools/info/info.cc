// tessera-info: what the library would do, without running a job.
//   tessera-info --coll allreduce --bytes 1M --ranks 8    the algorithm table, each cost and the choice
//   tessera-info --coll all --bytes 64M --ranks 4          every collective
//   tessera-info --env                                     every TESSERA_* variable: value and help
//   tessera-info --model                                   the cost-model parameters in force
//   tessera-info                                           a summary of this host and build
//   tessera-info --topo                                    this host's topology (hwloc), the rank table, the link
//   tessera-info --predict --hosts 1024 --ppn 8 --bytes 1G allreduce across hosts: each row's estimate
//   tessera-info --health [--job PID] [--overdue S] [--json]   a running job's PEs: state, call, overdue
// Selection is the library's own (same table, same model, same TESSERA_ALGO / TESSERA_DETERMINISTIC), so the
// choice printed is the one a job on this host makes.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/config.h"
#include "base/cpu.h"
#include "base/memcopy.h"
#include "coll/algo.h"
#include "coll/reduce/reduce.h"
#include "coll/select/link.h"
#include "coll/select/select.h"
#include "coll/single_copy.h"
#include "base/rank_table.h"
#include <hwloc.h>
#include "health_client.h"
#include "placement.h"
#include "trace_merge.h"
#include "shmem.h"
#include "tessera/version.h"
#include "transport/shm/peer_copy.h"
#include "transport/transport.h"

using namespace tessera;
using namespace tessera::coll;

namespace {
constexpr const char* kUsage =
    "usage: tessera-info                  this host and build: version, CPUs, cost model, fast paths\n"
    "       tessera-info --coll <collective|all> [--bytes N] [--ranks N] [--buffsize N] [--oversubscribed]\n"
    "                    [--unbound] [--symmetric]\n"
    "       tessera-info --env | --model | --topo | --version | --help\n"
    "       tessera-info --trace-summary FILE | --trace-merge DIR\n"
    "       tessera-info --health [--job PID] [--overdue SECONDS] [--json]\n"
    "  --health: a running job's health from its launcher: each PE's process and call, whom it waits for, the\n"
    "  PEs overdue (in one call longer than --overdue, default 1); the job of --job PID (a PE or tessera-run),\n"
    "  else the job this shell runs in, else this user's one running job; exit 0 healthy, 1 not, 2 no answer\n"
    "  --trace-summary: the top time sinks of a merged trace (TESSERA_TRACE; tessera-run writes DIR/trace.json)\n"
    "  --trace-merge: merges DIR/pe*.trace into DIR/trace.json (a job started by another launcher)\n"
    "       tessera-info --predict --hosts N --ppn N [--coll allreduce] [--bytes N] [--contention X]\n"
    "                    [--unbound] [--link us=L,gbps=B[,oneway_gbps=O][,host_gbps=H][,burst_gbps=F][,wake_us=W]]\n"
    "                    [--compress none|bf16|fp8|int8]\n"
    "  --predict: a collective's rows across hosts priced by the cost model and the link (TESSERA_LINK, the\n"
    "  rank table, or --link; measured at run time when none is given); --contention: the job's PEs per CPU of\n"
    "  the machine, when its hosts share one (namespaces, containers; default: ppn per CPU of this host);\n"
    "  --compress: the phase between hosts coded as tesseraCommSetCompression sets it (float32 sums), or for\n"
    "              allgather(v) as tesseraCommSetAllGatherCompression does\n"
    "  without --coll, --ranks N says where tessera-run would place N PEs (default: one per CPU)\n"
    "  --unbound: the PEs are not bound to one CPU each (tessera-run --bind-to none, TESSERA_BIND=none)\n"
    "  --symmetric: every member's buffers are symmetric (the OpenSHMEM collectives), which adds the in-place rows\n"
    "  --ranks: 1..4096 (default 8)\n"
    "  collectives: allreduce reduce_scatter allgather broadcast reduce gather scatter alltoall\n"
    "  alltoallv allgatherv reduce_scatterv gatherv scatterv barrier; sizes take K/M/G suffixes\n";

// A usage error: the message and the usage on stderr, exit 2.
[[noreturn]] void usage(const std::string& err) {
  std::fprintf(stderr, "tessera-info: %s\n%s", err.c_str(), kUsage);
  std::exit(2);
}

// What ompi_info prints first: the version, this host's CPUs and the fast paths a job here would use.
void print_summary() {
  std::printf("Tessera %s (OpenSHMEM %d.%d, C++ API, collectives, kernels)\n", TESSERA_VERSION_STRING,
              SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
  std::string cpu = "unknown";
  if (FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "model name", 10) == 0) {
        if (const char* c = std::strchr(line, ':')) cpu = c + 2;
        if (!cpu.empty() && cpu.back() == '\n') cpu.pop_back();
        break;
      }
    std::fclose(f);
  }
  std::printf("host: %s, %d usable CPUs (this process's affinity)\n", cpu.c_str(), usable_cpus());
  int yama = -1;  // ptrace scope: 0 lets PEs of one user read each other, 1 and above do not (Yama LSM)
  if (FILE* f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) {
    if (std::fscanf(f, "%d", &yama) != 1) yama = -1;
    std::fclose(f);
  }
  std::printf("single-copy path (process_vm_readv): %s\n",
              !cma_enabled() ? "off (TESSERA_COLL_CMA=0)"
              : yama > 0     ? "on, but Yama's ptrace_scope is above 0, so the probe at communicator creation will fail"
                             : "on (each communicator probes its members at creation)");
  // The table each PE walks at start-up, once per peer: the first that can reach the peer is its transport.
  int count = 0;
  const transport::Transport* const* table = transport::all(&count);
  std::printf("transports, in order of preference (TESSERA_LOG=2 shows each peer's):\n");
  for (int i = 0; i < count; ++i)
    std::printf("  %-6s %s\n", table[i]->name, table[i]->description);
  std::printf("variables: tessera-info --env; algorithms: tessera-info --coll all --bytes 1M --ranks 4\n");
}

// The placement tessera-run would give a job of n PEs started now, and why (tools/run/placement.h): the
// policy, the layout, and the outside load sampled over 0.2 s.
void print_placement(int n) {
  const char* env = std::getenv("TESSERA_BIND");
  run::BindMode mode = run::BindMode::kAuto;
  if (env && !run::parse_bind_mode(env, &mode))
    std::printf("placement: TESSERA_BIND=\"%s\" is not auto, core or none: tessera-run would refuse it\n", env);
  std::atomic<uint32_t> word{0};
  run::Layout layout = run::plan_layout(n);
  run::PlacementMonitor monitor(mode, layout, &word, false);
  std::printf("placement of %d PE%s (tessera-run --bind-to, TESSERA_BIND=%s): %s\n", n, n == 1 ? "" : "s",
              run::bind_mode_name(mode), monitor.describe().c_str());
  if (mode != run::BindMode::kAuto || !layout.bound()) return;
  const run::CpuTimes a = run::sample_cpu_times(layout.cpus, {});
  ::usleep(200000);
  const double load = run::outside_cpus(a, run::sample_cpu_times(layout.cpus, {}));
  const bool spare = monitor.leaves_a_cpu(run::busy_neighbours({}));
  std::printf("  now: other processes use %.2f of CPUs %s, so a job started now would run %s\n", load,
              run::cpu_list(layout.cpus).c_str(),
              load < run::PlacementPolicy::kShareCpus ? "bound"
              : !monitor.stays_bound() ? "unbound (as soon as tessera-run has sampled it)"
              : spare ? "bound with waits that keep the CPU through the busy processes' slices (they leave the job a "
                        "CPU), unbound once most of its waits are a peer's large transfer"
                      : "bound with waits that keep the CPU for a while, then sleep (the busy processes leave the job "
                        "no CPU)");
}

void print_env() {
  std::printf("%-28s %-14s %s\n", "variable", "value", "meaning");
  for (const config::VarInfo* v : config::all()) {
    std::string name = v->name;
    std::string also;
    for (const auto& a : v->aliases) {
      name += " (" + a + ")";
      also += also.empty() ? "(also " : ", ";
      also += a;
    }
    // One line per variable, its columns aligned: aliases that do not fit in the name column open the meaning.
    std::string help = v->help;
    if (name.size() > 28) {
      name = v->name;
      help = also + ") " + help;
    }
    std::printf("%-28s %-14s %s\n", name.c_str(), v->current().c_str(), help.c_str());
  }
}

struct CollQuery {
  size_t bytes, slot;
  int ranks;
  bool oversub, bound, symmetric;
};

// `net`: a communicator that spans hosts (--predict), whose rows are listed instead of the engine's.
void print_coll(Kind k, const CollQuery& q, const ModelParams& m, const NetShape* net = nullptr) {
  Shape s{.kind = k, .n = q.ranks, .bytes = q.bytes, .slot_bytes = q.slot, .oversubscribed = q.oversub,
          .bound = q.bound, .symmetric = q.symmetric, .net = net};
  // A communicator probes every pair of members; here only whether this process may use the syscall.
  static const uint64_t probe = 0x7e55e7a;
  s.cma = cma_enabled() && transport::shm::peer_probe(getpid(), &probe, probe);
  const bool det = deterministic_mode();
  Choice c = select(s, m, det);
  std::printf("%s, %zu bytes per rank, %d ranks, staging slot %zu bytes%s%s%s%s\n", kind_name(k), q.bytes, q.ranks,
              q.slot, q.oversub ? (q.bound ? ", oversubscribed" : ", oversubscribed, PEs not bound to CPUs") : "",
              q.symmetric ? ", symmetric buffers" : "",
              det ? ", TESSERA_DETERMINISTIC=1" : "",
              s.cma ? "" : ", no single-copy path (process_vm_readv unavailable or TESSERA_COLL_CMA=0)");
  std::printf("  %-14s %12s  %-9s %s\n", "algorithm", "cost (us)", "", "description");
  for (const Candidate& cand : candidates(s, m, det)) {
    std::string note = !cand.supported ? "n/a" : !cand.allowed ? "excluded" : cand.algo == c.algo ? "<- chosen" : "";
    std::printf("  %-14s %12.2f  %-9s %s\n", cand.algo->name, cand.cost * 1e6, note.c_str(), cand.algo->description);
  }
  std::printf("  choice: %s (%s)\n\n", c.algo ? c.algo->name : "none", c.why.c_str());
}
}  // namespace

// What Tessera sees of this host (hwloc) and of the job's hosts (the rank table, the link).
void print_topology() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return;
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    std::printf("topology: hwloc could not load this host's topology\n");
    return;
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  auto count = [&](hwloc_obj_type_t t) { return hwloc_get_nbobjs_by_type(topo, t); };
  std::printf("host %s: %d packages, %d NUMA nodes, %d cores, %d hardware threads\n", host, count(HWLOC_OBJ_PACKAGE),
              count(HWLOC_OBJ_NUMANODE), count(HWLOC_OBJ_CORE), count(HWLOC_OBJ_PU));
  for (hwloc_obj_type_t t : {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE}) {
    const int n = count(t);
    if (n == 0) continue;
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, t, 0);
    std::printf("  %s: %d x %s\n", t == HWLOC_OBJ_L1CACHE ? "L1d" : t == HWLOC_OBJ_L2CACHE ? "L2" : "L3", n,
                config::format_size(o->attr->cache.size).c_str());
  }
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo, o)) != nullptr;) {
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK && o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, o);
    char cpus[128] = "?";
    if (near && near->cpuset) hwloc_bitmap_list_snprintf(cpus, sizeof cpus, near->cpuset);
    std::printf("  NIC %s (%s), near CPUs %s\n", o->name ? o->name : "?",
                o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ? "network" : "RDMA", cpus);
  }
  hwloc_topology_destroy(topo);
  if (const RankTable* t = rank_table()) {
    std::printf("rank table %s: %zu hosts\n", t->path.c_str(), t->hosts.size());
    for (const RankTable::Host& h : t->hosts) {
      std::string nics, pes;
      for (const auto& n : h.nics) nics += (nics.empty() ? "" : ",") + n;
      for (int p : h.pes) pes += (pes.empty() ? "" : ",") + std::to_string(p);
      std::printf("  %s: PEs %s; NICs %s\n", h.name.c_str(), pes.c_str(), nics.empty() ? "(UCX's choice)" : nics.c_str());
    }
  } else {
    std::printf("rank table: none (TESSERA_RANK_TABLE): PEs share memory with the PEs of their own host name and "
                "boot id\n");
  }
  const LinkParams l = configured_link();
  std::printf("link between hosts: %s\n", std::strcmp(l.source, "default") == 0
                                               ? "measured when a job's first communicator that spans hosts is made"
                                               : describe(l).c_str());
}

// The rows across hosts of collective `k` for `hosts` hosts of `ppn` PEs, as a job would price them.
void print_prediction(Kind k, int hosts, int ppn, size_t bytes, size_t slot, const ModelParams& m,
                      const LinkParams& l, double contention, bool bound, Compress compress) {
  NetShape net;
  const bool gathers = k == Kind::kAllgather || k == Kind::kAllgatherv;
  (gathers ? net.gather_compress : net.compress) = compress;
  net.hosts = hosts;
  net.ppn = ppn;
  net.equal = true;
  net.contention = contention > 0 ? contention : std::max(1.0, static_cast<double>(ppn) / usable_cpus());
  net.link = l;
  std::printf("%d hosts x %d PEs = %d PEs\nlink: %s\nlocal: %s\n", hosts, ppn, hosts * ppn, describe(l).c_str(),
              describe(m).c_str());
  if (compress != Compress::kNone && gathers)
    std::printf("between hosts: float32 blocks coded as %s (tesseraCommSetAllGatherCompression)\n",
                compress_name(compress));
  else if (compress != Compress::kNone)
    std::printf("between hosts: float32 sums coded as %s (tesseraCommSetCompression; priced for float32 sum)\n",
                compress_name(compress));
  // A host's members outnumber its CPUs, or the job's PEs the machine's (hosts sharing one): as a job sees it.
  print_coll(k, CollQuery{bytes, slot, hosts * ppn, ppn > usable_cpus() || net.contention > 1, bound, false}, m, &net);
}

int main(int argc, char** argv) {
  std::string coll;
  size_t bytes = 1 << 20, buffsize = 0;
  int ranks = 0;
  bool env = false, model = false, oversub = false, oversub_set = false, bound = true, topo = false, predict = false,
       symmetric = false, health = false, json = false;
  long job_pid = 0;
  Compress compress = Compress::kNone;
  double overdue_s = 1.0;
  int hosts = 0, ppn = 1;
  std::string link;
  double contention = 0;
  auto whole = [&](const std::string& opt, const char* v, long lo, long hi) {
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || r < lo || r > hi)
      usage(opt + " " + v + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int>(r);
  };
  // A real number in [lo, hi], or a usage error naming the option, the value and what it must be.
  auto real = [&](const std::string& opt, const std::string& v, double lo, double hi, const char* must) {
    char* end = nullptr;
    const double r = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(r >= lo) || !(r <= hi)) usage(opt + " " + v + ": " + must);
    return r;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto size = [&](const char* v) {
      auto r = config::parse_size(a, v);
      if (!r.is_ok()) usage(r.status().message());
      return static_cast<size_t>(r.value());
    };
    if (a == "--coll") coll = val();
    else if (a == "--bytes") bytes = size(val());
    else if (a == "--ranks") {
      const char* v = val();
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (end == v || *end != '\0' || r < 1 || r > 4096)
        usage(std::string("--ranks ") + v + ": expected a whole number from 1 to 4096");
      ranks = static_cast<int>(r);
    }
    else if (a == "--buffsize") buffsize = size(val());
    else if (a == "--oversubscribed") oversub = oversub_set = true;
    else if (a == "--unbound") bound = false;
    else if (a == "--symmetric") symmetric = true;
    else if (a == "--env") env = true;
    else if (a == "--topo") topo = true;
    else if (a == "--predict") predict = true;
    else if (a == "--hosts") hosts = whole(a, val(), 1, 1 << 20);
    else if (a == "--ppn") ppn = whole(a, val(), 1, 4096);
    else if (a == "--link") link = val();
    else if (a == "--compress") {
      const std::string v = val();
      int found = -1;
      for (int c = 0; c < kNumCompress; ++c)
        if (v == compress_name(static_cast<Compress>(c))) found = c;
      if (found < 0) usage("--compress " + v + ": expected none, bf16, fp8 or int8");
      compress = static_cast<Compress>(found);
    }
    else if (a == "--contention") contention = real(a, val(), 1, 4096, "PEs per CPU, a number from 1 to 4096");
    else if (a == "--model") model = true;
    else if (a == "--health") health = true;
    else if (a == "--json") json = true;
    else if (a == "--job") job_pid = whole(a, val(), 1, 1 << 30);
    else if (a == "--overdue") overdue_s = real(a, val(), 0.001, 1e6, "seconds, a number from 0.001 to 1000000");
    else if (a == "--trace-summary" || a == "--trace-merge") {
      const char* v = val();
      std::string what;
      Status st = a == "--trace-summary" ? run::print_trace_summary(v, stdout) : run::merge_traces(v, {}, &what);
      if (!st.is_ok()) {
        std::fprintf(stderr, "tessera-info: %s\n", st.message().c_str());
        return 1;
      }
      if (!what.empty()) std::printf("%s\n", what.c_str());
      return 0;
    }
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("tessera-info (Tessera) %s\n", TESSERA_VERSION_STRING);
      return 0;
    }
    else usage("unknown option " + a);
  }
  if (health) return info::health_main(job_pid, overdue_s, json);
  if ((json || job_pid || overdue_s != 1.0) && !health) usage("--json, --job and --overdue go with --health");
  if (env) {
    print_env();
    return 0;
  }
  if (topo) {
    print_topology();
    return 0;
  }
  ModelParams m = load_model();
  if (predict) {
    if (hosts < 1) usage("--predict needs --hosts N");
    if (static_cast<long>(hosts) * ppn > (1L << 24))
      usage("--hosts " + std::to_string(hosts) + " x --ppn " + std::to_string(ppn) + " is more than 2^24 PEs");
    const auto kind = parse_kind(coll.empty() ? "allreduce" : coll);
    if (!kind || *kind == Kind::kSendRecv) usage("unknown collective " + coll);
    if (!link.empty()) setenv("TESSERA_LINK", link.c_str(), 1);
    LinkParams l = configured_link();
    if (!link.empty()) std::snprintf(l.source, sizeof l.source, "--link");  // its source, not the variable it went through
    const size_t slot = buffsize ? buffsize / 4 : (size_t{8} << 20) / 4;  // TESSERA_BUFFSIZE default / kSlots
    print_prediction(*kind, hosts, ppn, bytes, slot, m, l, contention, bound, compress);
    return 0;
  }
  if (model || coll.empty()) {
    if (!model) {
      print_summary();
      print_placement(ranks > 0 ? ranks : usable_cpus());
    }
    const std::string copies = g_copy_avx2 ? "AVX2 loop from 2 KiB, memcpy below; streaming stores from " +
                                                 config::format_size(copy_stream_min()) + " (base/memcopy.h)"
                                           : "memcpy";
    std::printf("cost model: %s\nreduction kernels: %s\ndata copies: %s\n", describe(m).c_str(), reduce_isa(),
                copies.c_str());
    if (coll.empty()) return 0;
  }
  if (ranks <= 0) ranks = 8;
  if (!oversub_set) oversub = ranks > usable_cpus();
  if (!buffsize) {
    // The communicator's slot: TESSERA_BUFFSIZE / 4, rounded to pages (see comm.cc).
    for (const config::VarInfo* v : config::all())
      if (v->name == "TESSERA_BUFFSIZE") buffsize = config::parse_size(v->name, v->current()).value();
    if (!buffsize) buffsize = 8 << 20;
  }
  size_t slot = (buffsize / 4 + 4095) / 4096 * 4096;
  const CollQuery q{bytes, slot, ranks, oversub, bound, symmetric};
  if (coll == "all") {
    for (int k = 0; k < kNumKinds; ++k)
      if (static_cast<Kind>(k) != Kind::kSendRecv) print_coll(static_cast<Kind>(k), q, m);
    return 0;
  }
  auto k = parse_kind(coll);
  if (!k || *k == Kind::kSendRecv) usage("unknown collective " + coll);
  print_coll(*k, q, m);
  return 0;
}
