// tessera-soak: a seeded, reproducible random mix of the library's operations, each result verified.
//
// Contracts shared by the step files:
// - A run is a sequence of steps 0, 1, 2, ...; step k of seed S is the same on every run, whatever --ops or
//   --seconds say, because every random choice of the step comes from generators that are pure functions of
//   (S, k) and, for per-PE choices, of the PE: Soak::shared() is identical on every PE (so collective
//   decisions agree), Soak::rng_of(p) is PE p's own and can be recomputed by any other PE (so a target knows
//   what its sources sent without being told).
// - Every step is entered by all PEs together (the previous step ended with shmem_barrier_all, which also
//   completes every earlier put), and verifies its results against values computed locally from the seed.
// - A wrong result calls Soak::fail(): it prints the PE, step, operation, expected and got values and the
//   replay command line, then ends the job (shmem_global_exit), so peers do not wait for it.
// - Blocking waits are the library's (TESSERA_TIMEOUT deadline) or the soak's own polling loops, which give
//   up after Soak::kPollDeadline and report a hang through fail().
#pragma once
#include <shmem.h>
#include <tessera/coll.hpp>

#include "coll/algo.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::soak {

// splitmix64's finaliser: a bijection of 64-bit words that spreads every input bit over the output.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A splitmix64 stream. below(0) and below(1) are 0.
struct Rng {
  uint64_t s;
  uint64_t next() { return mix(s += 0x9e3779b97f4a7c15ull); }
  uint64_t below(uint64_t n) { return n <= 1 ? 0 : next() % n; }
  int pick(int n) { return static_cast<int>(below(static_cast<uint64_t>(n))); }
  bool coin() { return next() & 1; }
  // A size in [lo, hi], log-uniform: small and large sizes both occur often.
  size_t log_size(size_t lo, size_t hi) {
    int bits_lo = 0, bits_hi = 0;
    while ((size_t{1} << bits_lo) < lo) ++bits_lo;
    while ((size_t{1} << bits_hi) < hi) ++bits_hi;
    const int b = bits_lo + pick(bits_hi - bits_lo + 1);
    const size_t top = std::min(hi, (size_t{1} << b));
    const size_t bottom = b == 0 ? 1 : std::max(lo, (size_t{1} << (b - 1)));
    return bottom + below(top - bottom + 1);
  }
};

// Step categories, in the order of the weight table (main.cc) and of the summary.
enum Cat : int { kPut, kGet, kStrided, kPG, kAtomics, kSignal, kWait, kTeams, kShmemColl, kCommColl, kAlgo,
                 kStream, kKernel, kNumCats };
const char* cat_name(int c);

// Symmetric buffers, allocated once (shmem_malloc, so at the same offsets on every PE).
struct Arena {
  static constexpr size_t kRmaBytes = size_t{1} << 20;  // the largest RMA transfer
  static constexpr size_t kGuard = 64;                  // bytes around a put checked to be untouched
  static constexpr size_t kStrided = 4096;              // int64 elements of the strided target
  static constexpr size_t kCollBytes = size_t{4} << 20; // symmetric collective buffers (send and recv)
  char* rma_dst = nullptr;   // kGuard + kRmaBytes + kGuard
  char* rma_src = nullptr;   // kRmaBytes: what peers get from
  int64_t* strided = nullptr;
  int64_t* slots = nullptr;  // one per PE: p/g and wait targets, written by PE s at [s]
  uint64_t* sigs = nullptr;  // one per PE: signal words
  int64_t* amo = nullptr;    // atomic words (atomics.cc)
  char* coll_send = nullptr;
  char* coll_recv = nullptr;
  int64_t* scratch = nullptr;  // small symmetric words for the soak's own agreements (16)
};

class Soak {
 public:
  static constexpr std::chrono::seconds kPollDeadline{120};

  uint64_t seed = 0;
  uint64_t step = 0;
  int me = 0, n = 1;
  bool verbose = false;
  // Resilient mode: what the replay line adds for tessera-run and for tessera-soak, and the step's kind.
  std::string run_opts, replay_opts;
  const char* kind_name = nullptr;
  int64_t inject_step = -1;  // hidden test hook: step at which PE 0 perturbs one expected value
  Arena a;
  uint64_t ops[kNumCats] = {};  // verified operations on this PE, per category

  Rng shared() const { return Rng{mix(seed ^ mix(step * 0x100000001b3ull + 1))}; }
  Rng rng_of(int pe) const { return Rng{mix(shared().s ^ mix(0x5eed0000ull + static_cast<uint64_t>(pe)))}; }
  // A key naming (step, pe, what): seeds the data patterns a PE sends.
  uint64_t key(int pe, uint64_t what) const { return mix(rng_of(pe).s ^ mix(what * 0x9e37ull + 7)); }

  // True once, on PE 0, at the first check with a hook at or after the injected step: the caller then
  // perturbs its expected value, which the check must catch. Only for the test that proves a wrong result
  // is reported.
  bool inject() {
    if (inject_step < 0 || me != 0 || step < static_cast<uint64_t>(inject_step)) return false;
    inject_step = -1;
    return true;
  }

  void count(int cat, uint64_t k = 1) { ops[cat] += k; }
  [[noreturn]] void fail(const char* op, const std::string& expected, const std::string& got) const;
  // fail() unless ok; counts one verified op of `cat` otherwise.
  void check(bool ok, int cat, const char* op, const std::string& expected, const std::string& got) {
    if (!ok) fail(op, expected, got);
    count(cat);
  }
  // Compares bytes; on a mismatch names the first differing byte.
  void check_bytes(const void* got, const void* want, size_t bytes, int cat, const char* op);
  void log(const char* what) const;
};

// A data pattern: 8-byte words mix(key + j), cut to `bytes`.
void fill_pattern(void* p, size_t bytes, uint64_t key);
std::string hex(uint64_t v);

// The step kinds (one file each).
void step_put(Soak& s);
void step_get(Soak& s);
void step_strided(Soak& s);
void step_pg(Soak& s);
void step_atomics(Soak& s);
void step_signal(Soak& s);
void step_wait(Soak& s);
void step_teams(Soak& s);
void step_shmem_coll(Soak& s);
void step_comm_coll(Soak& s);
void step_algo(Soak& s);
void step_stream(Soak& s);
void step_kernel(Soak& s);

// One random collective of the C++ Comm API on c (blocking; of `kind`, or drawn from g), verified as `cat`.
void comm_collective(Soak& s, Rng& g, coll::Comm& c, int cat);
void comm_collective(Soak& s, Rng& g, coll::Comm& c, coll::Kind kind, int cat);
// send/recv in a Group (every rank to rank + d, from rank - d), and one message from every rank to a root
// that takes them by recv_any: on c, verified as `cat`.
void group_sendrecv(Soak& s, Rng& g, coll::Comm& c, int cat);
void recv_from_any(Soak& s, Rng& g, coll::Comm& c, int cat);
// 1..4 collectives on a comm stream of c with an event and a host item after each; order and results
// verified as `cat`. barrier_check: sometimes a barrier on the stream too, checked by a put through the
// world's symmetric memory (so only on a communicator of every PE, with shmem_barrier_all usable).
void stream_collectives(Soak& s, Rng& g, coll::Comm& c, int cat, bool barrier_check);

// Resilient mode (--kill K, under tessera-run --on-failure continue): the communicator steps only, on a
// communicator that the survivors shrink whenever a member fails; K PEs drawn from the seed die (or stop:
// stop_them) at steps drawn from it. Returns the exit status (resilient.cc).
int run_resilient(Soak& s, uint64_t max_ops, double seconds, int kills, bool stop_them);

// The world communicator of the collective steps is destroyed here (before shmem_finalize); the coverage
// line names how often each (collective, algorithm) was forced.
void coll_teardown();
std::string coll_coverage();

// Runs one random OpenSHMEM team collective on `team` (a member's call; team rank r of size sz) and verifies
// it; used on the world team and on split teams.
void team_collective(Soak& s, Rng& g, shmem_team_t team, int cat);

}  // namespace tessera::soak
