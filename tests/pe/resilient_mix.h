/* Shared by the fault-trial programs of resilient mode (resilient_mix.c: the C collective API;
 * resilient_mix_teams.c: OpenSHMEM teams): the calls' sizes, the values every member puts in and expects
 * back (a pure function of the member's world PE and the call's number, so any survivor can compute what
 * any member contributed), the clocks, and the ready file the driving script waits for.
 * The including program defines REQUIRE_PROGRAM and `me` first (require.h). */
#ifndef TESSERA_TESTS_PE_RESILIENT_MIX_H
#define TESSERA_TESTS_PE_RESILIENT_MIX_H
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "require.h"

#define SMALL_FLOATS 16384 /* 64 KiB */
#define BCAST_BYTES (256 * 1024)
#define GATHER_BYTES 4096
#define MAX_PES 64

static inline long long clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Call i's contributions: the 8 B sum's, element k of the 64 KiB sum's, byte k of the broadcast from root
 * PE `pe`, byte k of PE pe's gathered block. */
static inline double mix_scalar(int pe, long i) { return pe + 1 + (double)i; }
static inline float mix_float(int pe, int k, long i) { return (float)((pe + 1) * (k % 7 + 1) + (i % 5)); }
static inline unsigned char mix_bcast_byte(int pe, int k, long i) { return (unsigned char)(k * 31 + pe + i); }
static inline unsigned char mix_gather_byte(int pe, int k, long i) { return (unsigned char)(pe * 17 + k + i); }

/* Writes "pid" to READY_FILE.me: this PE is set up, and the script may kill it from now on. */
static inline void mix_ready(const char* ready_file) {
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", ready_file, me);
  FILE* f = fopen(path, "w");
  REQUIRE(f, "cannot write %s", path);
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
}
#endif
