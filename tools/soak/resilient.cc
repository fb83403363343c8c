// tessera-soak's resilient mode (soak.h): the communicator steps of the mix (blocking collectives of every
// kind, collectives on a comm stream, send/recv in a Group) on a communicator of the survivors, while PEs
// drawn from the seed die at steps drawn from it.
//
//   tessera-run -n 4 --on-failure continue tessera-soak --kill 1 --ops 400 [--seed S] [--stop]
//
// --stop: the victims stop (SIGSTOP) instead of dying; the launcher kills a PE stopped for half of
// TESSERA_TIMEOUT, and the survivors' waits see it failed from then on.
//
// Recovery follows ULFM's pattern: a PE whose call failed revokes the communicator (a peer may wait on a call
// this PE now skips), and every step ends with agree(this PE's step succeeded) on the communicator,
// which every survivor enters whatever happened in the step, and which gives every survivor the same answer.
// All succeeded: the next step. Otherwise every survivor shrinks the communicator and runs the same step again
// on the new one (its cases drawn for the new size and ranks). So a call that failed is never verified, a
// call that succeeded is (the library promises no partial success), and the survivors never part ways.
// The symmetric-memory steps are left out: OpenSHMEM's world-wide routines (shmem_barrier_all, shmem_malloc)
// have no error to return and end the job once the world has a failed member (docs/resilience.md).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <numeric>
#include <thread>

#include "soak.h"

namespace tessera::soak {
namespace {

// A PE that dies: at which step, and how long into it (so that it dies inside a call, not between steps).
struct Death {
  int pe = -1;
  uint64_t step = 0;
  int delay_us = 0;
};

// Deaths fall in the first kDeathSteps steps, whatever --ops says, so that a replay with fewer steps
// (the line a wrong result prints) has the same deaths.
constexpr uint64_t kDeathSteps = 100;

// `kills` distinct PEs and their steps in [1, kDeathSteps], from the seed alone: every PE draws the same.
std::vector<Death> draw_deaths(const Soak& s, int kills) {
  Rng g{mix(s.seed ^ 0x6b696c6cull)};
  std::vector<int> pes(static_cast<size_t>(s.n));
  std::iota(pes.begin(), pes.end(), 0);
  for (size_t i = pes.size(); i > 1; --i) std::swap(pes[i - 1], pes[g.below(i)]);
  std::vector<Death> d(static_cast<size_t>(kills));
  for (int k = 0; k < kills; ++k)
    d[static_cast<size_t>(k)] = {.pe = pes[static_cast<size_t>(k)], .step = 1 + g.below(kDeathSteps),
                                 .delay_us = g.pick(2000)};
  return d;
}

// Whether the job's PEs are on several hosts (alike on every PE: each sees fewer PEs sharing its memory).
bool spans_hosts() {
  static const bool spans = shmem_team_n_pes(SHMEM_TEAM_SHARED) < shmem_n_pes();
  return spans;
}

// One step on c; throws PeerFailure when a member failed. check_stop: first agree whether time is up.
void step_on(Soak& s, coll::Comm& c, bool check_stop, bool time_up, bool& stop) {
  s.kind_name = nullptr;
  if (check_stop) {
    const int64_t mine = time_up ? 1 : 0;
    int64_t any = 0;
    c.allreduce(&mine, &any, 1, coll::DataType::kInt64, coll::RedOp::kMax);
    stop = any != 0;
    if (stop) return;
  }
  Rng g = s.shared();
  g.next();
  const int what = g.pick(9);
  if (what < 5) {
    s.kind_name = "comm-coll";
    comm_collective(s, g, c, kCommColl);
  } else if (what < 7) {
    s.kind_name = "stream";
    stream_collectives(s, g, c, kStream, false);
  } else if (what == 7) {
    s.kind_name = "send/recv";
    group_sendrecv(s, g, c, kCommColl);
  } else if (!spans_hosts()) {
    s.kind_name = "recv-any";
    recv_from_any(s, g, c, kCommColl);
  } else {  // a receive from any source needs every member on one host: a collective instead
    s.kind_name = "comm-coll";
    comm_collective(s, g, c, kCommColl);
  }
}

// The survivors' communicator. A member that dies during the shrink makes it fail alike on every other
// survivor (docs/resilience.md, "Shrink"), and they shrink again: at most once per member.
coll::Comm shrink(Soak& s, coll::Comm& c) {
  std::string last;
  for (int attempt = 0; attempt < c.size(); ++attempt) {
    try {
      return c.shrink();
    } catch (const PeerFailure& e) {
      last = e.what();
    }
  }
  s.fail("Comm::shrink", "a communicator of the survivors", "a failure at every attempt, the last: " + last);
}

}  // namespace

int run_resilient(Soak& s, uint64_t max_ops, double seconds, int kills, bool stop_them) {
  s.run_opts = " --on-failure continue";
  s.replay_opts = " --kill " + std::to_string(kills) + (stop_them ? " --stop" : "");
  coll::Comm c = coll::Comm::world();
  // The seed: the given one, or PE 0's, broadcast (no failure can have happened yet).
  c.broadcast(&s.seed, &s.seed, 1, coll::DataType::kUint64, 0);
  if (s.me == 0) {
    std::printf("tessera-soak: seed %" PRIu64 " on %d PEs (replay: tessera-run -n %d --on-failure continue "
                "tessera-soak --seed %" PRIu64 " --kill %d%s --ops N)\n",
                s.seed, s.n, s.n, s.seed, kills, stop_them ? " --stop" : "");
    std::fflush(stdout);
  }
  const std::vector<Death> deaths = draw_deaths(s, kills);
  if (s.me == 0) {
    std::string plan;
    for (const Death& d : deaths)
      plan += (plan.empty() ? "" : ", ") + std::string("PE ") + std::to_string(d.pe) + (stop_them ? " stops " : " dies ") +
              std::to_string(d.delay_us) + " us into step " + std::to_string(d.step);
    std::printf("tessera-soak: resilient mode: %s%s\n", plan.c_str(),
                stop_them ? " (stopped: SIGSTOP, killed by the launcher after half of TESSERA_TIMEOUT)" : "");
    std::fflush(stdout);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  uint64_t step = 0, redone = 0, shrinks = 0;
  // A victim's timer thread; the main thread signals itself if the timer has not fired within a few steps
  // (a thread that wakes late on CPUs the PEs keep busy), so that every drawn failure happens.
  const int sig = stop_them ? SIGSTOP : SIGKILL;
  static std::atomic<bool> fired{false};
  uint64_t armed_at = 0;
  bool armed = false;
  for (;;) {
    if (max_ops && step >= max_ops) break;
    s.step = step;
    for (const Death& d : deaths) {
      if (d.pe != s.me || d.step != step || armed) continue;
      armed = true;  // dies once: a step run again after a shrink does not arm it a second time
      armed_at = step;
      // SIGSTOP: the launcher kills a PE stopped for half of TESSERA_TIMEOUT, and it counts as failed then.
      std::thread([us = d.delay_us, sig] {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        fired.store(true);
        ::kill(::getpid(), sig);
      }).detach();
    }
    if (armed && step >= armed_at + 4 && !fired.exchange(true)) ::kill(::getpid(), sig);
    bool ok = true, stop = false;
    try {
      step_on(s, c, seconds > 0 && step % 8 == 0, seconds > 0 && elapsed() >= seconds, stop);
    } catch (const PeerFailure&) {
      ok = false;
      // Others may wait on what this PE now skips: a root whose recv_any failed takes no more messages, and
      // a large send waits for its receiver to take it. The revoke fails their waits.
      c.revoke();
    } catch (const Error& e) {
      s.fail("a call of the step", "success or a peer's failure", e.what());
    }
    // Every survivor comes here after every step, and all get the same answer.
    if (c.agree(ok ? 1 : 0) != 0) {
      if (stop) break;
      ++step;
      continue;
    }
    coll::Comm next = shrink(s, c);
    c = std::move(next);
    ++shrinks;
    ++redone;
    if (c.rank() == 0 && s.verbose)
      std::printf("[PE %d] step %" PRIu64 " (%s): a member failed; going on with %d PEs\n", s.me, step,
                  s.kind_name ? s.kind_name : "the time check", c.size());
  }
  const double secs = elapsed();
  // Totals over the survivors (a failure here too is agreed on and shrunk away).
  std::vector<uint64_t> tot(kNumCats);
  for (;;) {
    bool ok = true;
    try {
      c.allreduce(s.ops, tot.data(), kNumCats, coll::DataType::kUint64, coll::RedOp::kSum);
    } catch (const PeerFailure&) {
      ok = false;
    }
    if (c.agree(ok ? 1 : 0) != 0) break;
    coll::Comm next = shrink(s, c);
    c = std::move(next);
    ++shrinks;
  }
  const int died = s.n - c.size();
  if (c.rank() == 0) {
    uint64_t all = 0;
    std::string per;
    for (int k = 0; k < kNumCats; ++k) {
      all += tot[static_cast<size_t>(k)];
      if (tot[static_cast<size_t>(k)]) per += std::string(per.empty() ? "" : ", ") + cat_name(k) + " " + std::to_string(tot[static_cast<size_t>(k)]);
    }
    std::printf("tessera-soak: %s\n", per.c_str());
    std::printf("tessera-soak: resilient mode: %d of %d PEs died, %" PRIu64 " shrinks, %" PRIu64
                " steps run again on the survivors\n",
                died, s.n, shrinks, redone);
    std::printf("tessera-soak: seed %" PRIu64 ", %d PE%s, %" PRIu64 " steps, %.1f s: verified operations: %" PRIu64
                ", wrong results: 0\n",
                s.seed, s.n, s.n == 1 ? "" : "s", step, secs, all);
    std::fflush(stdout);
  }
  // Every victim whose step came before the last has died (its delay is far shorter than the steps left):
  // fewer deaths than that means a death went unnoticed.
  int due = 0;
  for (const Death& d : deaths) due += d.step + 1 < step;
  const int status = died >= due ? 0 : 1;
  if (status != 0 && c.rank() == 0)
    std::fprintf(stderr, "tessera-soak: %d PEs were to die by step %" PRIu64 " and %d did\n", due, step, died);
  c = coll::Comm();
  shmem_finalize();
  return status;
}

}  // namespace tessera::soak
