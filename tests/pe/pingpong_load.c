/* The ping-pong of issue "shared CPUs", for tests/scripts/shared_cpus_test.sh: PE 0 puts BYTES into PE 1's
 * buffer, shmem_fence, shmem_long_p of the round number into PE 1's flag, and waits for PE 1 to answer the
 * same way. First rounds for WARMUP seconds (the launcher watches the CPUs meanwhile), then ROUNDS timed
 * rounds. Every round's payload is checked on arrival. PE 0 prints the timed rounds' seconds and exits 1 when
 * they took longer than LIMIT seconds.
 *   pingpong_load BYTES ROUNDS WARMUP LIMIT */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long bytes;
static char* buf;
static char* src;
static long* flag;

/* Round v's payload to PE `to` is every byte (char)(v * 7 + to). */
static int payload_ok(long v, int me) {
  const char want = (char)(v * 7 + me);
  if (buf[0] == want && buf[bytes / 2] == want && buf[bytes - 1] == want) return 1;
  fprintf(stderr, "PE %d: round %ld: payload %d %d %d, expected %d\n", me, v, buf[0], buf[bytes / 2],
          buf[bytes - 1], want);
  return 0;
}

static void send(long signed_v, int to) {
  memset(src, (char)(labs(signed_v) * 7 + to), (size_t)bytes);
  shmem_putmem(buf, src, (size_t)bytes, to);
  shmem_fence();
  shmem_long_p(flag, signed_v, to);
}

/* Rounds until PE 0 ends the phase: after `seconds` (rounds == 0) or `rounds` rounds. Round numbers keep
 * counting across phases (*count); PE 0 sends the last round's number negated, and PE 1 echoes it. Returns
 * the rounds run, or -1 when a payload was wrong. */
static long phase(int me, double seconds, long rounds, long* count) {
  const double start = now_s();
  for (long n = 1;; ++n) {
    long v;
    if (me == 0) {
      const int last = rounds > 0 ? n >= rounds : now_s() - start >= seconds;
      v = last ? -++*count : ++*count;
      send(v, 1);
      shmem_long_wait_until(flag, SHMEM_CMP_EQ, v);
      if (!payload_ok(*count, 0)) return -1;
    } else {
      shmem_long_wait_until(flag, SHMEM_CMP_NE, *count);  /* the previous round's value, as echoed */
      v = shmem_long_atomic_fetch(flag, 1);
      if (!payload_ok(labs(v), 1)) return -1;
      send(v, 0);
      *count = v;
    }
    if (v < 0) {
      *count = labs(v);
      if (me == 1) shmem_long_atomic_set(flag, *count, 1);  /* the next phase waits for a change from it */
      return n;
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s BYTES ROUNDS WARMUP_SECONDS LIMIT_SECONDS\n", argv[0]);
    return 2;
  }
  bytes = atol(argv[1]);
  const long rounds = atol(argv[2]);
  const double warmup = atof(argv[3]), limit = atof(argv[4]);
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 2 || bytes < 1 || rounds < 1) {
    if (me == 0) fprintf(stderr, "%s: needs 2 PEs, BYTES >= 1 and ROUNDS >= 1\n", argv[0]);
    shmem_global_exit(2);
  }
  buf = shmem_malloc((size_t)bytes);
  flag = shmem_calloc(1, sizeof(long));
  src = malloc((size_t)bytes);
  if (!buf || !flag || !src) shmem_global_exit(2);
  shmem_barrier_all();
  long next = 0;
  if (phase(me, warmup, 0, &next) < 0) shmem_global_exit(1);
  shmem_barrier_all();
  const double t0 = now_s();
  const long n = phase(me, 0, rounds, &next);
  const double t = now_s() - t0;
  if (n < 0) shmem_global_exit(1);
  int rc = 0;
  if (me == 0) {
    printf("%ld rounds of %ld bytes: %.4f s (%.1f us per half round trip), limit %.2f s\n", n, bytes, t,
           t / (double)n / 2 * 1e6, limit);
    if (n != rounds || t > limit) rc = 1;
  }
  shmem_finalize();
  return rc;
}
