/* The hardware floor of an 8-byte ping-pong on this host: two processes, each pinned to one of the first two
 * CPUs it may use, pass a counter back and forth through one cache line of shared memory each way (store,
 * then spin on the peer's line). No library is involved, so no put-fence-flag-wait protocol between two PEs
 * on these CPUs can beat it. Prints the half round trip in nanoseconds, best of 5 runs of 100000 rounds.
 *   line_pingpong [--json]
 * On a virtual machine the figure changes with where the host places the two virtual CPUs (sharing a core or
 * not), so bench/rma_vs_oshmem.sh prints it next to the ping-pong of both libraries, measured in the same run. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kRounds = 100000, kRuns = 5 };

struct Lines {
  _Alignas(64) _Atomic long to_child;
  _Alignas(64) _Atomic long to_parent;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int nth_cpu(int n) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = 0, seen = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set) && seen++ == n) return c;
  return -1;
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("line_pingpong: sched_setaffinity");
}

int main(int argc, char** argv) {
  int json = argc > 1 && !strcmp(argv[1], "--json");
  int c0 = nth_cpu(0), c1 = nth_cpu(1);
  if (c0 < 0 || c1 < 0) {
    fprintf(stderr, "line_pingpong: needs two CPUs in its affinity mask\n");
    return 2;
  }
  struct Lines* l = mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (l == MAP_FAILED) {
    perror("line_pingpong: mmap");
    return 1;
  }
  const long total = (long)kRounds * kRuns;
  pid_t child = fork();
  if (child < 0) {
    perror("line_pingpong: fork");
    return 1;
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the parent's deadline */
    pin(c1);
    for (long i = 1; i <= total; ++i) {
      while (atomic_load_explicit(&l->to_child, memory_order_acquire) < i) __builtin_ia32_pause();
      atomic_store_explicit(&l->to_parent, i, memory_order_release);
    }
    _exit(0);
  }
  pin(c0);
  double best = 1e30;
  long i = 0;
  for (int run = 0; run < kRuns; ++run) {
    double t0 = now_s();
    for (long r = 0; r < kRounds; ++r) {
      ++i;
      atomic_store_explicit(&l->to_child, i, memory_order_release);
      for (unsigned long polls = 0; atomic_load_explicit(&l->to_parent, memory_order_acquire) < i;) {
        __builtin_ia32_pause();
        if (++polls % (1ul << 24) == 0 && now_s() - t0 > 10) {
          fprintf(stderr, "line_pingpong: CPU %d waited over 10 s for round %ld from the child on CPU %d\n", c0, i, c1);
          kill(child, SIGKILL);
          return 1;
        }
      }
    }
    double half_ns = (now_s() - t0) / kRounds / 2 * 1e9;
    if (half_ns < best) best = half_ns;
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "line_pingpong: the child process failed\n");
    return 1;
  }
  if (json) printf("{\"cpus\": [%d, %d], \"half_rtt_ns\": %.1f}\n", c0, c1, best);
  else printf("cache-line ping-pong between CPU %d and CPU %d: %.1f ns half round trip\n", c0, c1, best);
  return 0;
}
