// tessera-info: what the library would do, without running a job.
//   tessera-info --coll allreduce --bytes 1M --ranks 8    the algorithm table, each cost and the choice
//   tessera-info --coll all --bytes 64M --ranks 4          every collective
//   tessera-info --env                                     every TESSERA_* variable: value and help
//   tessera-info --model                                   the cost-model parameters in force
//   tessera-info                                           a summary of this host and build
// Selection is the library's own (same table, same model, same TESSERA_ALGO / TESSERA_DETERMINISTIC), so the
// choice printed is the one a job on this host makes.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "base/config.h"
#include "base/cpu.h"
#include "base/memcopy.h"
#include "coll/algo.h"
#include "coll/cma.h"
#include "coll/reduce/reduce.h"
#include "coll/select/select.h"
#include "placement.h"
#include "shmem.h"
#include "tessera/version.h"
#include "transport/transport.h"

using namespace tessera;
using namespace tessera::coll;

namespace {
constexpr const char* kUsage =
    "usage: tessera-info                  this host and build: version, CPUs, cost model, fast paths\n"
    "       tessera-info --coll <collective|all> [--bytes N] [--ranks N] [--buffsize N] [--oversubscribed]\n"
    "                    [--unbound]\n"
    "       tessera-info --env | --model | --version | --help\n"
    "  without --coll, --ranks N says where tessera-run would place N PEs (default: one per CPU)\n"
    "  --unbound: the PEs are not bound to one CPU each (tessera-run --bind-to none, TESSERA_BIND=none)\n"
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
  std::printf("placement of %d PEs (tessera-run --bind-to, TESSERA_BIND=%s): %s\n", n, run::bind_mode_name(mode),
              monitor.describe().c_str());
  if (mode != run::BindMode::kAuto || !layout.bound()) return;
  const run::CpuTimes a = run::sample_cpu_times(layout.cpus, {});
  ::usleep(200000);
  const double load = run::outside_cpus(a, run::sample_cpu_times(layout.cpus, {}));
  std::printf("  now: other processes use %.2f of CPUs %s, so a job started now would run %s\n", load,
              run::cpu_list(layout.cpus).c_str(),
              load >= run::PlacementPolicy::kShareCpus ? "unbound (as soon as tessera-run has sampled it)" : "bound");
}

void print_env() {
  std::printf("%-28s %-14s %s\n", "variable", "value", "meaning");
  for (const config::VarInfo* v : config::all()) {
    std::string name = v->name;
    for (const auto& a : v->aliases) name += " (" + a + ")";
    std::printf("%-28s %-14s %s\n", name.c_str(), v->current().c_str(), v->help.c_str());
  }
}

void print_coll(Kind k, size_t bytes, int ranks, size_t slot, bool oversub, bool bound, const ModelParams& m) {
  Shape s;
  s.kind = k;
  s.n = ranks;
  s.bytes = bytes;
  s.slot_bytes = slot;
  s.oversubscribed = oversub;
  s.bound = bound;
  // A communicator probes every pair of members; here only whether this process may use the syscall.
  static const uint64_t probe = 0x7e55e7a;
  s.cma = cma_enabled() && cma_probe(getpid(), &probe, probe);
  const bool det = deterministic_mode();
  Choice c = select(s, m, det);
  std::printf("%s, %zu bytes per rank, %d ranks, staging slot %zu bytes%s%s%s\n", kind_name(k), bytes, ranks, slot,
              oversub ? (bound ? ", oversubscribed" : ", oversubscribed, PEs not bound to CPUs") : "",
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

int main(int argc, char** argv) {
  std::string coll;
  size_t bytes = 1 << 20, buffsize = 0;
  int ranks = 0;
  bool env = false, model = false, oversub = false, oversub_set = false, bound = true;
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
    else if (a == "--env") env = true;
    else if (a == "--model") model = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("tessera-info (Tessera) %s\n", TESSERA_VERSION_STRING);
      return 0;
    }
    else usage("unknown option " + a);
  }
  if (env) {
    print_env();
    return 0;
  }
  ModelParams m = load_model();
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
  if (coll == "all") {
    for (int k = 0; k < kNumKinds; ++k)
      if (static_cast<Kind>(k) != Kind::kSendRecv) print_coll(static_cast<Kind>(k), bytes, ranks, slot, oversub, bound, m);
    return 0;
  }
  auto k = parse_kind(coll);
  if (!k || *k == Kind::kSendRecv) usage("unknown collective " + coll);
  print_coll(*k, bytes, ranks, slot, oversub, bound, m);
  return 0;
}
