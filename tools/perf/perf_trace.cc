// tessera-perf trace: what one TESSERA_TRACE recording site costs, off and on (docs/trace_overhead.md).
//
// Off: a trace::Scope whose test of trace::g_on fails, as every site runs when tracing is off. On (only
// when the job was started with TESSERA_TRACE): a Scope that records, i.e. two clock reads and one event
// appended to the thread's buffer. The best of several rounds, in nanoseconds per site, so that other
// processes on the CPUs inflate the figure as little as possible. Events recorded here land in the trace
// like any other (category coll, name "perf trace site").
#include <shmem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/trace.h"
#include "perf/perf.h"

namespace {

// Best nanoseconds per Scope over `rounds` rounds of `n` Scopes.
double ns_per_site(int rounds, int n) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      tessera::trace::Scope s(tessera::trace::Cat::kColl, "perf trace site", nullptr, {.k0 = "i", .a0 = i});
      asm volatile("" ::: "memory");  // keeps the loop and the Scope's stores in place
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / n);
  }
  return best;
}

int run_trace(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::printf("usage: [TESSERA_TRACE=DIR] tessera-run -n 1 %s\n  ns per trace site, off (always) and on "
                  "(with TESSERA_TRACE)\n", argv[0]);
      return 0;
    }
  shmem_init();
  const bool on = tessera::trace::g_on;
  // Off: the same sites with the flag down (as in a job without TESSERA_TRACE), then restored.
  tessera::trace::g_on = false;
  const double off = ns_per_site(200, 20'000);
  tessera::trace::g_on = on;
  std::printf("# trace site, off: %.2f ns\n", off);
  // On: 100 rounds of 2000 events stay below a thread's buffer (later events would be dropped, which is
  // cheaper). Short rounds: on a loaded host the best of many short rounds is the one nobody preempted.
  if (on) std::printf("# trace site, on (one event recorded): %.2f ns\n", ns_per_site(100, 2'000));
  else std::printf("# trace site, on: not measured (start the job with TESSERA_TRACE=DIR)\n");
  shmem_finalize();
  return 0;
}

const tessera::perf::Registrar kReg{"trace", "cost of one TESSERA_TRACE recording site, off and on", &run_trace};

}  // namespace
