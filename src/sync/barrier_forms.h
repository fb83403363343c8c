// The barrier forms of Tessera, written once. Every barrier of the library runs one of the templates below;
// the template owns the structure (which member signals which, in which round, in which order it waits),
// the caller owns the words, the memory ordering of its signals and its waiting policy (deadline and the
// message naming the PE waited for, notify and wake-ups, yielding when PEs outnumber CPUs). The templates
// allocate nothing, lock nothing and make no call of their own: each inlines into its caller.
//
// Forms (n members, this one is r; members are numbered 0..n-1 within the barrier, not in the world)
//   flat           Every member publishes its arrival in a word of its own, then waits until it has seen
//                  every other member's. One transfer on the critical path; each member polls n - 1 words,
//                  so it suits few members whose words are all in this host's memory.
//   counter        Every member adds one to one central count; the member that knows the count complete
//                  opens a gate the others wait for. That opener is the last member to add (it learns so
//                  from the value its add returns) or a fixed member that waits for the others' adds. Two
//                  transfers on the critical path (the last add, then the gate) and one word polled by all,
//                  whatever n: large teams, and PEs that share CPUs (a waiter polls one line, not n - 1).
//   dissemination  ceil(log2 n) rounds (Hensgen, Finkel and Manber); in round k member r signals member
//                  r + 2^k and waits for the signal of member r - 2^k (mod n). After round k a member has
//                  heard, directly or through others, from the 2^(k+1) - 1 members before it, so after the
//                  last round from all of them. Every wait is on a word of the waiter's own (or a message
//                  to it) and every signal is one remote operation: the form for members on several hosts,
//                  where a flat poll or a central count would cross the network on every poll.
//
// Who uses which (docs/design.md, "Barriers", says the same for readers of the docs)
//   pgas::team_sync (pgas/team.cc): shmem_barrier_all (quiet, then the sync), shmem_sync_all,
//     shmem_team_sync, and the library's own syncs (shmem_init, allocation, team split and destroy, the
//     creation of a team's communicator). Flat up to 8 members on one host with CPUs of their own, counter
//     otherwise on one host (TESSERA_BARRIER forces either), dissemination over remote atomics for a team
//     with members on other hosts. It lives in pgas, below the engine, because shmem_init, allocation and the
//     making of every communicator need a barrier before any communicator exists; its words are the team's
//     sync slot in the reserved area, agreed during the split that made the team.
//   The engine's barrier rows (coll/algos/barrier.cc): shmem_barrier and shmem_sync over an active set,
//     tesseraBarrier, the C++ Comm::barrier. flat and dissemination over the steps of the communicator's
//     segment, flat over LL flags (barrier_ll, in the communicator's wait order); the cost model picks
//     among them per communicator. They run on the communicator's own words, so the call is checked against the calls of
//     the members it waits for (the engine's consistency check) and recorded in the flight recorder.
//   Across hosts, the row barrier_leaders (coll/hier): the host's members meet (an engine barrier on the
//     host's communicator), the hosts' leaders run dissemination over messages (net_barrier), the host's
//     members meet again.
//   The set-up of an active set (capi/active_set.cc, psync_barrier): counter with member 0 as the opener.
//     It runs before the set's communicator exists, with only the two words of the caller's pSync, which
//     must hold SHMEM_SYNC_VALUE again on return (OpenSHMEM): no monotonic gate and no slot, so member 0
//     waits for the count, puts it back and releases each member, which puts its flag back.
//
// Why shmem_barrier_all and shmem_barrier (active set) do not share one path, even over the same PEs:
// an active set is not a team, it has no sync slot (a slot is agreed by the members of a parent team, and
// an active set's members may call shmem_barrier with no collective of a wider team around it), so its
// barrier needs the communicator the pSync barrier makes, and runs there; shmem_barrier_all cannot run on
// an engine communicator, because it is needed before one exists (shmem_init, shmem_malloc, the making of
// the world communicator itself) and after they are released (shmem_finalize). Routing an active set that
// happens to be the whole job to team_sync would drop the engine's check that every member made the same
// call on that set. Both share this header: the forms and their structure are the same code.
#pragma once

namespace tessera::sync::barrier {

// ---- Dissemination: the member's partners (pure functions, tested for every r and k of n <= 64).
constexpr int dissemination_rounds(int n) {
  int k = 0;
  for (int d = 1; d < n; d <<= 1) ++k;
  return k;
}
// Round k (2^k < n): the member r signals, and the member whose signal r waits for.
constexpr int dissemination_to(int r, int k, int n) { return (r + (1 << k)) % n; }
constexpr int dissemination_from(int r, int k, int n) { return (r - (1 << k) % n + n) % n; }

// Dissemination among n members, this one r: for each round k, signal(k, to), then wait(k, from). The
// caller's signal must make its earlier writes visible to `to` (release or a message); its wait returns
// once `from`'s round-k signal of this barrier has arrived (acquire). A member's round-k word or message is
// written by one member once per barrier, so a count or a monotonic epoch tells barriers apart. Returns
// the number of rounds.
template <typename Signal, typename Wait>
int dissemination(int r, int n, Signal&& signal, Wait&& wait) {
  const int rounds = dissemination_rounds(n);
  for (int k = 0; k < rounds; ++k) {
    // round k: tell member r + 2^k that I have passed round k - 1, then hear the same from member r - 2^k
    signal(k, dissemination_to(r, k, n));
    wait(k, dissemination_from(r, k, n));
  }
  return rounds;
}

// ---- Flat.
// One wait per member: publish() (my arrival, release), then wait_for(m) for every other member m, in
// `others` order (each other member once: a communicator's wait order puts the members of my CPU first).
template <typename Others, typename Publish, typename WaitFor>
void flat_in_order(const Others& others, Publish&& publish, WaitFor&& wait_for) {
  // step 0: publish my arrival
  publish();
  // then see every other member's
  for (int m : others) wait_for(m);
}
// The same in rank order, for callers whose waits name the member (each wait has its own deadline).
template <typename Publish, typename WaitFor>
void flat(int r, int n, Publish&& publish, WaitFor&& wait_for) {
  publish();
  for (int m = 0; m < n; ++m)
    if (m != r) wait_for(m);
}
// One wait for all: publish(), then wait_all(all), where all() holds once arrived(m) (acquire) holds for
// every other member m; for callers with one deadline per barrier whose message lists every late member.
template <typename Publish, typename Arrived, typename WaitAll>
void flat_one_wait(int r, int n, Publish&& publish, Arrived&& arrived, WaitAll&& wait_all) {
  publish();
  wait_all([&] {
    for (int m = 0; m < n; ++m)
      if (m != r && !arrived(m)) return false;
    return true;
  });
}

// ---- Counter.
// arrive() adds this member to the central count (release) and returns true for exactly one member per
// barrier, the opener, and only once every member has added (acquire): the last to add, or a fixed member
// whose arrive() waits for the others' adds. The opener calls open() (publish the gate, wake the
// waiters); every other member calls wait_open(), which returns once the gate of this barrier is open.
template <typename Arrive, typename Open, typename WaitOpen>
void counter(Arrive&& arrive, Open&& open, WaitOpen&& wait_open) {
  if (arrive()) open();
  else wait_open();
}

}  // namespace tessera::sync::barrier
