/* Driven by tests/scripts/resilience_test.sh under tessera-run --on-failure continue (docs/resilience.md).
 *
 * resilient VICTIM [stop]: every PE runs allreduces on the world communicator; at call DIE_AT the PE VICTIM
 * kills itself (-1: nobody), or with `stop` stops itself (SIGSTOP) and is killed by the launcher; with
 * `barrier` the survivors then call shmem_barrier_all, which must end the job; with `wait` they wait for a
 * write the victim never makes (shmem_wait_until), which must end the job at its deadline naming the victim. The survivors must then see tesseraPeerFailed at that very call, naming the victim;
 * a communicator without the victim must go on working; they agree (bitwise AND of flags), shrink, check an
 * allreduce on the survivors, revoke the shrunk communicator (every member's pending call must fail with
 * tesseraRevoked), shrink that again and check it, and finalize. Each survivor prints one "resilient: ok"
 * line with the time from the victim's death to its first failed call and to its first good call after. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>
#include <tessera/coll.h>

#define REQUIRE_PROGRAM "resilient"
#include "require.h"

#define DIE_AT 20
#define CALLS 40

static long long died_ns; /* symmetric: the victim's clock at its death, put to every PE */

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int me;

/* Sum over `members` of (pe + 1) * scale, checked against an allreduce of every member's (me + 1) * scale. */
static void check_allreduce(tesseraComm_t comm, const int* members, int n, double scale, const char* what) {
  double v = (me + 1) * scale, sum = 0, want = 0;
  for (int i = 0; i < n; ++i) want += (members[i] + 1) * scale;
  tesseraResult_t rc = tesseraAllReduce(&v, &sum, 1, tesseraFloat64, tesseraSum, comm);
  REQUIRE(rc == tesseraSuccess, "%s: allreduce returned %d: %s", what, (int)rc, tesseraGetLastError());
  REQUIRE(sum == want, "%s: sum %g, expected %g", what, sum, want);
}

int main(int argc, char** argv) {
  const int victim = argc > 1 ? atoi(argv[1]) : -1;
  const int stop = argc > 2 && strcmp(argv[2], "stop") == 0;
  const int barrier = argc > 2 && strcmp(argv[2], "barrier") == 0;
  const int wait = argc > 2 && strcmp(argv[2], "wait") == 0;
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes();
  REQUIRE(n >= 3 && victim < n, "needs 3 or more PEs and a victim below %d (got %d)", n, victim);
  tesseraComm_t world, others = NULL;
  REQUIRE(tesseraCommInitAll(&world) == tesseraSuccess, "%s", tesseraGetLastError());
  /* The PEs but the victim: unaffected by its death. */
  tesseraComm_t split;
  REQUIRE(tesseraCommSplit(world, me == victim ? TESSERA_SPLIT_NOCOLOR : 0, me, &split) == tesseraSuccess, "%s",
          tesseraGetLastError());
  others = split;
  int all[64], survivors[64], n_surv = 0;
  for (int i = 0; i < n; ++i) {
    all[i] = i;
    if (i != victim) survivors[n_surv++] = i;
  }

  int failed_at = -1;
  long long detect_ns = 0;
  for (int i = 0; i < CALLS; ++i) {
    if (me == victim && i == DIE_AT) {
      died_ns = now_ns();
      for (int pe = 0; pe < n; ++pe)
        if (pe != me) shmem_longlong_p(&died_ns, died_ns, pe);
      shmem_quiet();
      raise(stop ? SIGSTOP : SIGKILL); /* stopped: the launcher kills it at half of TESSERA_TIMEOUT */
    }
    double v = (me + 1) * (double)(i + 1), sum = 0, want = n * (n + 1) / 2.0 * (i + 1);
    tesseraResult_t rc = tesseraAllReduce(&v, &sum, 1, tesseraFloat64, tesseraSum, world);
    if (rc != tesseraSuccess) {
      detect_ns = now_ns();
      REQUIRE(rc == tesseraPeerFailed, "call %d returned %d: %s", i, (int)rc, tesseraGetLastError());
      char pe_text[32];
      snprintf(pe_text, sizeof pe_text, "PE %d ", victim);
      REQUIRE(strstr(tesseraGetLastError(), pe_text) && strstr(tesseraGetLastError(), "tesseraAllReduce"),
              "the error names neither the call nor PE %d: %s", victim, tesseraGetLastError());
      failed_at = i;
      break;
    }
    REQUIRE(sum == want, "call %d: sum %g, expected %g", i, sum, want);
  }
  if (victim < 0) {
    REQUIRE(failed_at < 0, "a call failed with nobody dead: %s", tesseraGetLastError());
    check_allreduce(others, all, n, 1, "the split communicator");
    tesseraCommDestroy(others);
    tesseraCommDestroy(world);
    shmem_finalize();
    printf("resilient: ok PE %d (no failure)\n", me);
    return 0;
  }
  REQUIRE(failed_at == DIE_AT, "the failure surfaced at call %d, expected %d", failed_at, DIE_AT);
  if (barrier) {
    /* An OpenSHMEM barrier over the world cannot complete and has no error to return: the job must end
     * at once, naming the PE (resilience_test.sh checks). */
    shmem_barrier_all();
    REQUIRE(0, "shmem_barrier_all returned with PE %d dead", victim);
  }
  if (wait) {
    /* A point-to-point wait for a write only the victim would make: no call watches it, so it ends the job
     * at its deadline (TESSERA_TIMEOUT), and the message must say that PE VICTIM failed earlier. */
    static int never; /* symmetric */
    shmem_int_wait_until(&never, SHMEM_CMP_EQ, 1);
    REQUIRE(0, "shmem_int_wait_until returned with PE %d dead and nobody writing", victim);
  }
  /* The broken communicator fails at once from now on. */
  double x = 1, y = 0;
  REQUIRE(tesseraAllReduce(&x, &y, 1, tesseraFloat64, tesseraSum, world) == tesseraPeerFailed,
          "a later call on the broken communicator: %s", tesseraGetLastError());
  int failed[8], n_failed = -1;
  REQUIRE(tesseraCommFailed(world, failed, 8, &n_failed) == tesseraSuccess, "%s", tesseraGetLastError());
  REQUIRE(n_failed == 1 && failed[0] == victim, "tesseraCommFailed: %d PEs, first %d", n_failed, failed[0]);
  /* Send/recv: with the failed PE it fails at once, naming it; between survivors it still works (the
   * broken communicator's pairs keep their channels). */
  REQUIRE(tesseraSend(&x, 1, tesseraFloat64, victim, world) == tesseraPeerFailed &&
              strstr(tesseraGetLastError(), "send to rank"),
          "a send to the failed PE: %s", tesseraGetLastError());
  REQUIRE(tesseraRecv(&y, 1, tesseraFloat64, victim, world) == tesseraPeerFailed, "a recv from the failed PE: %s",
          tesseraGetLastError());
  {
    int pos = 0;
    while (survivors[pos] != me) ++pos;
    const int to = survivors[(pos + 1) % n_surv], from = survivors[(pos + n_surv - 1) % n_surv];
    double out = 100 + me, in = -1;
    tesseraGroupStart();
    tesseraSend(&out, 1, tesseraFloat64, to, world);
    tesseraRecv(&in, 1, tesseraFloat64, from, world);
    REQUIRE(tesseraGroupEnd() == tesseraSuccess, "send/recv between survivors: %s", tesseraGetLastError());
    REQUIRE(in == 100 + from, "received %g from PE %d, expected %d", in, from, 100 + from);
  }
  {
    /* A group that has a pair with the failed PE: a ring over the whole world (1 MiB, so each message
     * travels in pieces). The victim's neighbours fail, naming it, and still complete their other pair:
     * the victim's successor sends on, so the next rank's receive completes rather than waiting for a
     * message that was abandoned. */
    enum { kRing = 1 << 17 };
    static double out[kRing], in[kRing];
    const int to = (me + 1) % n, from = (me + n - 1) % n;
    for (int i = 0; i < kRing; ++i) out[i] = me * 1e6 + i, in[i] = -1;
    tesseraGroupStart();
    tesseraSend(out, kRing, tesseraFloat64, to, world);
    tesseraRecv(in, kRing, tesseraFloat64, from, world);
    const tesseraResult_t rc = tesseraGroupEnd();
    if (to == victim || from == victim)
      REQUIRE(rc == tesseraPeerFailed && strstr(tesseraGetLastError(), "the group's other operations completed"),
              "a ring through the failed PE %d (to %d, from %d): %d, %s", victim, to, from, rc, tesseraGetLastError());
    else
      REQUIRE(rc == tesseraSuccess, "a ring through the failed PE, pair %d -> %d -> %d: %s", from, me, to,
              tesseraGetLastError());
    if (from != victim)
      for (int i = 0; i < kRing; ++i)
        REQUIRE(in[i] == from * 1e6 + i, "ring element %d from PE %d: %g", i, from, in[i]);
  }
  /* A communicator without the victim is unaffected. */
  check_allreduce(others, survivors, n_surv, 2, "the communicator without the victim");

  /* Agree: every survivor clears its own bit; the AND has every survivor's bit cleared. */
  int flag = 0xff & ~(1 << me), want_flag = 0xff;
  for (int i = 0; i < n_surv; ++i) want_flag &= ~(1 << survivors[i]);
  REQUIRE(tesseraCommAgree(world, &flag) == tesseraSuccess, "agree: %s", tesseraGetLastError());
  REQUIRE(flag == want_flag, "agree gave %#x, expected %#x", flag, want_flag);

  tesseraComm_t shrunk;
  REQUIRE(tesseraCommShrink(world, &shrunk) == tesseraSuccess, "shrink: %s", tesseraGetLastError());
  int size = -1, rank = -1;
  tesseraCommCount(shrunk, &size);
  tesseraCommUserRank(shrunk, &rank);
  REQUIRE(size == n_surv && survivors[rank] == me, "shrunk: %d ranks (rank %d), expected %d", size, rank, n_surv);
  check_allreduce(shrunk, survivors, n_surv, 3, "the shrunk communicator");
  const long long recovered_ns = now_ns();
  for (int i = 0; i < 50; ++i) check_allreduce(shrunk, survivors, n_surv, i, "the shrunk communicator, again");

  /* Revoke: rank 0 of the shrunk communicator revokes it while the others wait in an allreduce that it never
   * joins; they must return tesseraRevoked naming it. First a call on another communicator, so that nobody is
   * still finishing the loop's last call when rank 0 revokes: a call in flight at a revocation may fail on
   * some members (rank 0's part done, another's data still on the wire between hosts). */
  check_allreduce(others, survivors, n_surv, 4, "the communicator without the victim, before the revocation");
  if (rank == 0) {
    REQUIRE(tesseraCommRevoke(shrunk) == tesseraSuccess, "revoke: %s", tesseraGetLastError());
  } else {
    REQUIRE(tesseraAllReduce(&x, &y, 1, tesseraFloat64, tesseraSum, shrunk) == tesseraRevoked,
            "a call pending at the revocation: %s", tesseraGetLastError());
    REQUIRE(strstr(tesseraGetLastError(), "revoked by rank 0"), "the error does not name the revoker: %s",
            tesseraGetLastError());
  }
  REQUIRE(tesseraAllReduce(&x, &y, 1, tesseraFloat64, tesseraSum, shrunk) == tesseraRevoked,
          "a call after the revocation: %s", tesseraGetLastError());
  tesseraComm_t again;
  REQUIRE(tesseraCommShrink(shrunk, &again) == tesseraSuccess, "shrink after revoke: %s", tesseraGetLastError());
  tesseraCommCount(again, &size);
  REQUIRE(size == n_surv, "shrinking the revoked communicator kept %d of %d", size, n_surv);
  check_allreduce(again, survivors, n_surv, 5, "the communicator shrunk after the revocation");

  tesseraCommDestroy(again);
  tesseraCommDestroy(shrunk);
  tesseraCommDestroy(others);
  tesseraCommDestroy(world);
  shmem_finalize();
  printf("resilient: ok PE %d: failure seen %.1f ms after the death, first good call on the survivors %.1f ms after\n",
         me, (detect_ns - died_ns) / 1e6, (recovered_ns - died_ns) / 1e6);
  return 0;
}
