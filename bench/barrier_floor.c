/* The floor of a barrier of N processes on this host: each process stores its barrier number in a cache line
 * of its own, then polls the other processes' lines until all show that number. No library is involved.
 * Process i is pinned to the i-th CPU of the affinity mask, modulo the CPU count (the layout tessera-run and
 * mpirun use). When processes outnumber CPUs, a process first waits for the processes on its own CPU,
 * yielding the CPU after every failed poll (they need it), then for those on other CPUs by spinning (they
 * are running; yielding would only run another waiting process of this CPU). Yielding on every failed poll
 * instead measured 2.19-2.54 us against 1.61-1.66 for 4 processes on 2 CPUs. Otherwise it spins. Prints
 * the time per barrier in microseconds, best of 5 runs of 20000 barriers, as a line of
 * bench/coll_compare.sh's results:
 *   barrier_floor NP   ->   {"lib":"floor","coll":"barrier","np":NP,"bytes":8,"time_us":...}
 * With more processes than CPUs each barrier costs at least one process switch per CPU (1-2 us on the
 * virtual machines we measure on), which no library can avoid. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBarriers = 20000, kRuns = 5, kMaxProcs = 64 };

struct Line {
  _Alignas(64) _Atomic long n;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const int np = argc > 1 ? atoi(argv[1]) : 0;
  if (np < 2 || np > kMaxProcs) {
    fprintf(stderr, "barrier_floor: usage: barrier_floor NP (2..%d processes)\n", kMaxProcs);
    return 2;
  }
  cpu_set_t set;
  int cpus[CPU_SETSIZE], ncpu = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    perror("barrier_floor: sched_getaffinity");
    return 1;
  }
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus[ncpu++] = c;
  const int yield = np > ncpu;
  struct Line* lines = mmap(NULL, sizeof(struct Line) * kMaxProcs, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (lines == MAP_FAILED) {
    perror("barrier_floor: mmap");
    return 1;
  }
  pid_t kids[kMaxProcs];
  int me = 0;
  for (int i = 1; i < np; ++i) {
    pid_t p = fork();
    if (p < 0) {
      perror("barrier_floor: fork");
      for (int k = 1; k < i; ++k) kill(kids[k], SIGKILL);
      return 1;
    }
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the parent's deadline */
      me = i;
      break;
    }
    kids[i] = p;
  }
  CPU_ZERO(&set);
  CPU_SET(cpus[me % ncpu], &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("barrier_floor: sched_setaffinity");
  double best = 1e30;
  long b = 0;
  const double start = now_s();
  for (int run = 0; run < kRuns; ++run) {
    const double t0 = now_s();
    for (long r = 0; r < kBarriers; ++r) {
      ++b;
      atomic_store_explicit(&lines[me].n, b, memory_order_release);
      /* pass 0: the processes on my CPU, pass 1: the others (one pass when no process shares a CPU) */
      for (int pass = 0; pass < 2; ++pass)
      for (int p = 0; p < np; ++p) {
        const int mine = p % ncpu == me % ncpu;
        if (p == me || mine != (pass == 0)) continue;
        for (unsigned long polls = 0; atomic_load_explicit(&lines[p].n, memory_order_acquire) < b;) {
          if (yield && mine) sched_yield();
          else __builtin_ia32_pause();
          if (++polls % (1ul << 20) == 0 && now_s() - start > 60) {
            fprintf(stderr, "barrier_floor: process %d waited over 60 s for process %d at barrier %ld\n", me, p, b);
            if (me == 0)
              for (int k = 1; k < np; ++k) kill(kids[k], SIGKILL);
            return 1;
          }
        }
      }
    }
    const double us = (now_s() - t0) / kBarriers * 1e6;
    if (us < best) best = us;
  }
  if (me != 0) _exit(0);
  int failed = 0;
  for (int k = 1; k < np; ++k) {
    int status = 0;
    if (waitpid(kids[k], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) {
    fprintf(stderr, "barrier_floor: a child process failed\n");
    return 1;
  }
  printf("{\"lib\":\"floor\",\"coll\":\"barrier\",\"np\":%d,\"bytes\":8,\"time_us\":%.3f}\n", np, best);
  return 0;
}
