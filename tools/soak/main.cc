// tessera-soak: options, the step loop, the stop agreement and the summary (soak.h states the contracts).
//
//   tessera-run -n 4 tessera-soak [--seed S] [--ops N] [--seconds T] [--verbose]
//   tessera-run -n 4 --on-failure continue tessera-soak --kill K [...]   (resilient mode: resilient.cc)
//
// Stops after N steps or T seconds, whichever comes first (neither: 1000 steps). Prints the seed first, and
// at the end the number of verified operations; exits 0 only if every result was right.
#include <CLI/CLI.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>

#include "soak.h"
#include "tessera/version.h"

namespace tessera::soak {
namespace {

// The step kinds, in the order of Cat: name (summary and messages), relative frequency, step.
struct StepKind {
  const char* name;
  int weight;
  void (*run)(Soak&);
};
const StepKind kKinds[] = {
    {.name = "put", .weight = 8, .run = step_put},
    {.name = "get", .weight = 6, .run = step_get},
    {.name = "strided", .weight = 5, .run = step_strided},
    {.name = "p/g", .weight = 5, .run = step_pg},
    {.name = "atomics", .weight = 8, .run = step_atomics},
    {.name = "signal", .weight = 6, .run = step_signal},
    {.name = "wait", .weight = 6, .run = step_wait},
    {.name = "teams", .weight = 4, .run = step_teams},
    {.name = "shmem-coll", .weight = 8, .run = step_shmem_coll},
    {.name = "comm-coll", .weight = 12, .run = step_comm_coll},
    {.name = "algo", .weight = 14, .run = step_algo},
    {.name = "stream", .weight = 5, .run = step_stream},
    {.name = "kernel", .weight = 6, .run = step_kernel},
};
static_assert(std::size(kKinds) == kNumCats, "one row per Cat");

int pick_cat(Rng g) {
  int total = 0;
  for (const StepKind& k : kKinds) total += k.weight;
  int x = g.pick(total);
  for (int c = 0; c < kNumCats; ++c) {
    if (x < kKinds[c].weight) return c;
    x -= kKinds[c].weight;
  }
  return 0;
}

void alloc_arena(Arena& a, int n) {
  auto get = [](size_t bytes) {
    void* p = shmem_calloc(1, bytes);
    if (!p) {
      std::fprintf(stderr, "tessera-soak: shmem_calloc(%zu) failed (TESSERA_HEAP_SIZE too small?)\n", bytes);
      shmem_global_exit(2);
    }
    return static_cast<char*>(p);
  };
  a.rma_dst = get(Arena::kRmaBytes + 2 * Arena::kGuard);
  a.rma_src = get(Arena::kRmaBytes);
  a.strided = reinterpret_cast<int64_t*>(get(Arena::kStrided * 8));
  a.slots = reinterpret_cast<int64_t*>(get(static_cast<size_t>(n) * 8));
  a.sigs = reinterpret_cast<uint64_t*>(get(static_cast<size_t>(n) * 8));
  a.amo = reinterpret_cast<int64_t*>(get(16 * 8));
  a.coll_send = get(Arena::kCollBytes);
  a.coll_recv = get(Arena::kCollBytes);
  a.scratch = reinterpret_cast<int64_t*>(get(16 * 8));
}

void free_arena(Arena& a) {
  for (void* p : {static_cast<void*>(a.rma_dst), static_cast<void*>(a.rma_src), static_cast<void*>(a.strided),
                  static_cast<void*>(a.slots), static_cast<void*>(a.sigs), static_cast<void*>(a.amo),
                  static_cast<void*>(a.coll_send), static_cast<void*>(a.coll_recv), static_cast<void*>(a.scratch)})
    shmem_free(p);
}

// Whether any PE wants to stop (its clock passed --seconds): a max-reduction, so all PEs agree.
bool agree_stop(Soak& s, bool mine) {
  s.a.scratch[0] = mine ? 1 : 0;
  shmem_int64_max_reduce(SHMEM_TEAM_WORLD, s.a.scratch + 1, s.a.scratch, 1);
  return s.a.scratch[1] != 0;
}

}  // namespace

const char* cat_name(int c) { return kKinds[c].name; }

void Soak::fail(const char* op, const std::string& expected, const std::string& got) const {
  std::fprintf(stderr,
               "tessera-soak: WRONG RESULT on PE %d at step %" PRIu64 " (%s): %s: expected %s, got %s\n"
               "replay: tessera-run -n %d%s tessera-soak --seed %" PRIu64 " --ops %" PRIu64 "%s\n",
               me, step, kind_name ? kind_name : cat_name(pick_cat(shared())), op, expected.c_str(), got.c_str(), n,
               run_opts.c_str(), seed, step + 1, replay_opts.c_str());
  std::fflush(stderr);
  shmem_global_exit(1);
  std::abort();  // shmem_global_exit does not return; this keeps [[noreturn]] honest if it ever did
}

void Soak::check_bytes(const void* got, const void* want, size_t bytes, int cat, const char* op) {
  if (std::memcmp(got, want, bytes) != 0) {
    const auto* g = static_cast<const unsigned char*>(got);
    const auto* w = static_cast<const unsigned char*>(want);
    size_t i = 0;
    while (g[i] == w[i]) ++i;
    fail(op, "byte " + std::to_string(i) + " of " + std::to_string(bytes) + " = " + hex(w[i]), hex(g[i]));
  }
  count(cat);
}

void Soak::log(const char* what) const {
  if (verbose) std::printf("[PE %d] step %" PRIu64 " %s: %s\n", me, step, cat_name(pick_cat(shared())), what);
}

void fill_pattern(void* p, size_t bytes, uint64_t key) {
  auto* c = static_cast<char*>(p);
  size_t j = 0;
  for (; j + 8 <= bytes; j += 8) {
    const uint64_t w = mix(key + j / 8);
    std::memcpy(c + j, &w, 8);
  }
  if (j < bytes) {
    const uint64_t w = mix(key + j / 8);
    std::memcpy(c + j, &w, bytes - j);
  }
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

int run(int argc, char** argv) {
  CLI::App app{"tessera-soak: a seeded random mix of RMA, atomics, signals, waits, teams, collectives, "
               "comm streams and kernels, every result verified"};
  uint64_t seed = 0;
  uint64_t max_ops = 0;
  double seconds = 0;
  bool verbose = false;
  int64_t inject = -1;
  int kills = 0;
  bool stop_them = false;
  app.set_version_flag("--version", std::string("tessera-soak (Tessera) ") + TESSERA_VERSION_STRING);
  auto* seed_opt = app.add_option("--seed", seed, "seed of the run (default: random, printed)");
  app.add_option("--ops", max_ops, "stop after this many steps (default 1000 unless --seconds is given)");
  app.add_option("--seconds", seconds, "stop after this many seconds (whichever of --ops/--seconds comes first)");
  app.add_flag("--verbose", verbose, "print every step");
  app.add_option("--kill", kills,
                 "resilient mode (tessera-run --on-failure continue): K PEs drawn from the seed die at steps drawn "
                 "from it (in the first 100), and the others run the communicator steps on, shrinking "
                 "the communicator after each failure")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--stop", stop_them,
               "with --kill: the PEs stop (SIGSTOP) instead of dying; the launcher kills them after half of "
               "TESSERA_TIMEOUT");
  // Test hook (hidden): perturb one expected value on PE 0 at this step, to prove a wrong result is caught.
  app.add_option("--inject-error", inject)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (max_ops == 0 && seconds <= 0) max_ops = 1000;

  shmem_init();
  Soak s;
  s.me = shmem_my_pe();
  s.n = shmem_n_pes();
  s.verbose = verbose;
  s.inject_step = inject;
  if (s.n > 64) {  // the wait step's target sets are 64-bit masks
    if (s.me == 0) std::fprintf(stderr, "tessera-soak: at most 64 PEs (this job has %d)\n", s.n);
    shmem_finalize();
    return 2;
  }
  if (kills > 0) {
    if (kills > s.n - 2) {  // two survivors at least, so that something is still exchanged
      if (s.me == 0) std::fprintf(stderr, "tessera-soak: --kill %d on %d PEs: at most %d (two must survive)\n", kills,
                                  s.n, std::max(0, s.n - 2));
      shmem_finalize();
      return 2;
    }
    if (s.me == 0) s.seed = seed_opt->count() != 0 ? seed : std::random_device{}() * 0x100000001ull ^ std::random_device{}();
    return run_resilient(s, max_ops, seconds, kills, stop_them);
  }
  alloc_arena(s.a, s.n);
  // The seed: the given one, or PE 0's random one broadcast, so every PE runs the same sequence.
  if (seed_opt->count() == 0 && s.me == 0) seed = std::random_device{}() * 0x100000001ull ^ std::random_device{}();
  s.a.scratch[0] = static_cast<int64_t>(seed);
  shmem_barrier_all();
  shmem_int64_broadcast(SHMEM_TEAM_WORLD, s.a.scratch + 1, s.a.scratch, 1, 0);
  s.seed = static_cast<uint64_t>(s.a.scratch[1]);
  if (s.me == 0) {
    std::printf("tessera-soak: seed %" PRIu64 " on %d PE%s (replay: tessera-run -n %d tessera-soak --seed %" PRIu64
                " --ops N)\n",
                s.seed, s.n, s.n == 1 ? "" : "s", s.n, s.seed);
    std::fflush(stdout);
  }
  shmem_barrier_all();

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  uint64_t steps = 0;
  for (;; ++steps) {
    if (max_ops && steps >= max_ops) break;
    // Every 8 steps the PEs agree whether time is up (a PE's own clock alone would split them).
    if (seconds > 0 && steps % 8 == 0 && agree_stop(s, elapsed() >= seconds)) break;
    s.step = steps;
    const int cat = pick_cat(s.shared());
    if (s.me == 0) s.log("start");
    kKinds[cat].run(s);
    shmem_barrier_all();  // the step's contract: every PE leaves it together, every put complete
  }
  const double secs = elapsed();

  // Totals over all PEs.
  uint64_t* tot = static_cast<uint64_t*>(shmem_malloc(2 * kNumCats * sizeof(uint64_t)));
  for (int c = 0; c < kNumCats; ++c) tot[c] = s.ops[c];
  shmem_barrier_all();
  shmem_uint64_sum_reduce(SHMEM_TEAM_WORLD, tot + kNumCats, tot, kNumCats);
  if (s.me == 0) {
    uint64_t all = 0;
    std::string per;
    for (int c = 0; c < kNumCats; ++c) {
      all += tot[kNumCats + c];
      per += std::string(c ? ", " : "") + cat_name(c) + " " + std::to_string(tot[kNumCats + c]);
    }
    std::printf("tessera-soak: %s\n", per.c_str());
    std::printf("tessera-soak: seed %" PRIu64 ", %d PE%s, %" PRIu64 " steps, %.1f s: verified operations: %" PRIu64
                ", wrong results: 0\n",
                s.seed, s.n, s.n == 1 ? "" : "s", steps, secs, all);
    std::printf("tessera-soak: algorithms forced: %s\n", coll_coverage().c_str());
    std::fflush(stdout);
  }
  shmem_free(tot);
  coll_teardown();
  free_arena(s.a);
  shmem_finalize();
  return 0;
}

}  // namespace tessera::soak

int main(int argc, char** argv) { return tessera::soak::run(argc, argv); }
